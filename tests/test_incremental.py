"""A reducer that remembers its last list plans exactly as a fresh one would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig

from .strategies import (
    Call,
    Element,
    conversations,
    logical_tokens,
    render_dialogue,
    rendered,
    shapes,
)
from .test_properties import reducers


def chunks(messages: list[Any], sizes: list[int]) -> list[list[Any]]:
    out, at = [], 0
    for size in sizes:
        out.append(messages[at : at + size])
        at += size
    out.append(messages[at:])
    return out


@settings(max_examples=250, deadline=None)
@given(conversations(max_turns=12), shapes, reducers(), st.lists(st.integers(1, 4), max_size=30))
def test_turn_by_turn_equals_fresh_plans(records, shape, reducer, sizes):
    """Growing a chat turn by turn through one reducer gives, at every turn, the same
    survivors as a brand-new reducer given the same list in one call."""
    config = reducer.config
    messages = rendered(records, shape)
    history: list[Any] = []
    for new in chunks(messages, sizes):
        kept = reducer.reduce(existing=history, new=new)
        fresh = MessageReducer(config=config).reduce(existing=history, new=new)
        assert [id(m) for m in kept.surviving] == [id(m) for m in fresh.surviving]
        assert [id(m) for m in kept.pruned] == [id(m) for m in fresh.pruned]
        history = kept.surviving


@settings(max_examples=150, deadline=None)
@given(conversations(max_turns=12), shapes, reducers(), st.lists(st.integers(1, 4), max_size=30))
def test_windows_dropped_by_seq_range_plan_as_fresh(records, shape, reducer, sizes):
    """The same, with every prune of a whole window dropping its links by seq range (the
    path ``PlanState.prune`` takes for windows of 16 messages or more)."""
    from unittest import mock

    from agentstate_reducer import planner

    with mock.patch.object(planner, "_FORGET_BY_RANGE", 0):
        test_turn_by_turn_equals_fresh_plans.hypothesis.inner_test(  # type: ignore[attr-defined]
            records, shape, reducer, sizes
        )


@settings(max_examples=200, deadline=None)
@given(conversations(max_turns=10), shapes, reducers(), st.data())
def test_a_changed_list_is_planned_afresh(records, shape, reducer, data):
    """Handing the reducer a list that is not an extension of its last output (an edit,
    a removal, another conversation) still gives the fresh plan."""
    config = reducer.config
    messages = rendered(records, shape)
    first = reducer.reduce(existing=messages)
    edited = list(first.surviving)
    if edited:
        del edited[data.draw(st.integers(0, len(edited) - 1))]
    other = rendered(data.draw(conversations(max_turns=6)), shape)
    for candidate in (edited, other, messages):
        kept = reducer.reduce(existing=candidate)
        fresh = MessageReducer(config=config).reduce(existing=candidate)
        assert [id(m) for m in kept.surviving] == [id(m) for m in fresh.surviving]


def test_the_returned_list_can_be_changed_by_the_caller() -> None:
    """The reducer keeps its own copy: appending to a returned list in place is seen."""
    reducer = MessageReducer(config=ReducerConfig(min_messages=2, max_messages=4))
    history = [{"role": "user", "content": str(n)} for n in range(4)]
    out = reducer.reduce(existing=history).surviving
    out.append({"role": "user", "content": "4"})
    assert [m["content"] for m in reducer.reduce(existing=out).surviving] == ["0", "3", "4"]


def test_a_window_past_the_question_marks_the_new_opener_as_a_fresh_plan_does() -> None:
    """A prune whose window passes the newest question (the tool loop of the newest turn)
    can leave an ai message with a thinking block right after the question: the turn's
    opener, kept while the turn goes on. The plan remembered for the next reduce marks it
    as a fresh plan of the kept list does, so the next turn keeps it too (a hypothesis
    example of tests/test_hot_path.py found it unmarked: the next reduce pruned it, where a
    fresh reducer kept it)."""
    from agentstate_reducer.planner import PlanState

    long = "a" * 40
    elements = [
        Element("question", text="a"),
        Element("reply", calls=(Call("c0", "lookup", {"q": "a"}),)),
        Element("results", results=(("c0", "lookup", long),)),
        Element("reply", reasoning="a", calls=(Call("c1", "lookup", {"q": "a"}),)),
        Element("results", results=(("c1", "lookup", long),)),
        Element("reply", calls=(Call("c2", "lookup", {"q": "a"}),)),
    ]
    messages, _ = render_dialogue(elements, "langchain")
    config = ReducerConfig(
        format="chat", preserve_first=False, max_tokens=20, target_tokens=6,
        token_counter=logical_tokens,
    )  # fmt: skip
    reducer = MessageReducer(config=config)
    first = reducer.reduce(existing=[], new=messages[:4])
    assert first.pruned  # the window passed the question: the first call and its result
    session = reducer._plans.current()
    assert session is not None
    fresh = PlanState(session.state._limits)
    reader = reducer._reader
    fresh.extend(*reader.read(first.surviving, str))
    ours = session.state
    assert fresh._opener != -1  # the thinking reply now opens the turn
    assert ours._seq.index(ours._opener) == fresh._seq.index(fresh._opener)
    then = reducer.reduce(existing=first.surviving, new=messages[4:])
    again = MessageReducer(config=config).reduce(existing=first.surviving, new=messages[4:])
    assert [id(m) for m in then.surviving] == [id(m) for m in again.surviving]
    assert first.surviving[1] in then.surviving  # the opener, while its turn goes on

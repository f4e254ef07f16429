"""A reducer that remembers its last list plans exactly as a fresh one would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig

from .strategies import conversations, rendered, shapes
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

"""The channel reducer merges exactly like ``add_messages``, then bounds the list."""

from __future__ import annotations

import gc
import re
import weakref
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import langgraph_reducer

from .strategies import POOL_IDS, build_update, update_sequences

EXAMPLES = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
KNOWN_IDS = {*POOL_IDS, "never-seen"}


def normal(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Messages as comparable data; ids generated at random become ``"<generated>"``."""
    out = []
    for message in messages:
        data = message.model_dump()
        if data.get("id") not in KNOWN_IDS:
            data["id"] = "<generated>"
        out.append((type(message).__name__, data))
    return out


def outcome(merge: Any, state: list[Any], update: Any) -> tuple[str, Any]:
    """``("ok", new_state)`` or ``("error", (type, text))`` of one merge."""
    try:
        return "ok", merge(state, update)
    except Exception as exc:
        return "error", (type(exc).__name__, str(exc))


@EXAMPLES
@given(sequence=update_sequences, fmt=st.sampled_from([None, None, "langchain-openai"]))
def test_without_pruning_it_is_add_messages(sequence: list[Any], fmt: str | None) -> None:
    """Property: with a reducer that never prunes (max_messages=None), folding any sequence
    of updates through our channel reducer gives, after every update, the same messages as
    folding it through ``add_messages`` (same types, contents, tool calls, the same explicit
    ids and generated ids in the same places), and raises the same error when it raises."""
    ours = langgraph_reducer(MessageReducer(max_messages=None), format=fmt)  # type: ignore[arg-type]
    theirs = add_messages(format=fmt)
    state_a: list[Any] = []
    state_b: list[Any] = []
    for update in sequence:
        got_a = outcome(theirs, state_a, build_update(update, state_a))
        got_b = outcome(ours, state_b, build_update(update, state_b))
        assert got_a[0] == got_b[0]
        if got_a[0] == "error":
            assert got_a[1] == got_b[1]
            return
        state_a, state_b = got_a[1], got_b[1]
        assert normal(state_b) == normal(state_a)
        if fmt is None:
            assert all(isinstance(m, BaseMessage) and m.id for m in state_b)


@EXAMPLES
@given(sequence=update_sequences)
@example(
    sequence=[
        ("human", "", None, "obj"),
        [("remove", ("all",)), ("remove", ("index", 1)), ("remove", ("index", 1))],
    ]
)
def test_every_replay_of_the_updates_gives_the_same_ids(sequence: list[Any]) -> None:
    """Property: folding the same updates (fresh objects each time, as a replay loads them
    from a saver) into the same non-empty list gives the same ids both times, no two
    messages of a list share a generated id, and the objects a node wrote are not changed (an
    id-less message stays id-less: the list holds a copy with the id). (With
    ``format="langchain-openai"`` LangGraph's formatting drops ids from the list.)"""
    start = [HumanMessage("start", id="start")]

    def fold() -> list[list[str]]:
        merge = langgraph_reducer(MessageReducer(max_messages=None))
        state: list[Any] = list(start)
        ids: list[list[str]] = []
        explicit: set[str] = set()  # ids an update carried (a RemoveMessage names one)
        for recipe in sequence:
            if not state:
                break  # into an empty list the ids are random, as add_messages makes them
            update = build_update(recipe, state)
            written = list(update) if isinstance(update, list) else [update]
            before = [getattr(m, "id", "n/a") for m in written]
            explicit.update(i for i in before if isinstance(i, str))
            result = outcome(merge, state, update)
            assert [getattr(m, "id", "n/a") for m in written] == before
            if result[0] == "error":
                break
            state = result[1]
            # Generated ids are unique (explicit ones may repeat: REMOVE_ALL_MESSAGES
            # stores the rest of its update verbatim, as add_messages does, and a
            # RemoveMessage there may name a generated id).
            generated = [m.id for m in state if m.id not in KNOWN_IDS | {"start"} | explicit]
            assert len(set(generated)) == len(generated)
            ids.append([m.id for m in state])
        return ids

    assert fold() == fold()


limits = st.tuples(st.integers(0, 4), st.integers(1, 6)).filter(lambda t: t[0] <= t[1])


@EXAMPLES
@given(
    sequence=update_sequences,
    window=limits,
    preserve_first=st.booleans(),
    cascade=st.booleans(),
    summarize=st.booleans(),
)
def test_with_pruning_it_is_reduce_of_add_messages(
    sequence: list[Any],
    window: tuple[int, int],
    preserve_first: bool,
    cascade: bool,
    summarize: bool,
) -> None:
    """Property: for any reducer configuration, each update's result equals
    ``reducer.reduce(add_messages(state, update)).surviving`` computed by an independent
    reducer of the same configuration (same messages, with injected summaries in the same
    places), errors included; every stored message, summaries too, carries an id, and a
    ``RemoveMessage`` naming any stored id removes exactly that message."""

    def config() -> ReducerConfig:
        return ReducerConfig(
            min_messages=window[0],
            max_messages=window[1],
            preserve_first=preserve_first,
            cascade_tool_messages=cascade,
            summarize_fn=(lambda pruned: f"{len(pruned)} gone") if summarize else None,
            inject_summary=summarize,
        )

    ours = langgraph_reducer(MessageReducer(config=config()))
    oracle = MessageReducer(config=config())
    state: list[Any] = []
    for update in sequence:
        expected = outcome(
            lambda s, u: oracle.reduce(add_messages(list(s), u)).surviving,
            state,
            build_update(update, state),
        )
        got = outcome(ours, state, build_update(update, state))
        assert got[0] == expected[0]
        if got[0] == "error":
            assert got[1] == expected[1]
            return
        assert normal(got[1]) == normal(expected[1])
        state = got[1]
        assert all(isinstance(m, BaseMessage) and m.id for m in state)
    for message in state:
        after = ours(state, RemoveMessage(id=message.id))
        assert message.id not in {m.id for m in after}


_pool_messages = st.builds(
    lambda kind, text, msg_id: {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage}[
        kind
    ](content=text, id=msg_id),
    st.sampled_from(["human", "ai", "system"]),
    st.sampled_from(["a", "b"]),
    st.sampled_from(POOL_IDS),
)
_pool_items = _pool_messages | st.builds(
    lambda target: RemoveMessage(id=target), st.sampled_from([*POOL_IDS, REMOVE_ALL_MESSAGES])
)


@EXAMPLES
@given(st.lists(st.lists(_pool_items, max_size=4) | _pool_items, min_size=1, max_size=8))
def test_append_mode_matches_add_messages_on_messages_with_ids(sequence: list[Any]) -> None:
    """Property: on updates made of messages that all carry ids (replacements, removals,
    remove-all), ``merge="append"`` keeps the very same objects, in the same order, that
    ``add_messages`` keeps, and raises the same error for an unknown id."""
    ours = langgraph_reducer(MessageReducer(max_messages=None), merge="append")
    state_a: list[Any] = []
    state_b: list[Any] = []
    for update in sequence:
        got_a = outcome(add_messages, state_a, update)
        got_b = outcome(ours, state_b, update)
        assert got_a[0] == got_b[0]
        if got_a[0] == "error":
            assert got_a[1] == got_b[1]
            return
        state_a, state_b = got_a[1], got_b[1]
        assert [id(m) for m in state_b] == [id(m) for m in state_a]


_dicts = st.builds(
    lambda role, text: {"role": role, "content": text},
    st.sampled_from(["user", "assistant", "system"]),
    st.text(max_size=5),
)


@EXAMPLES
@given(st.lists(st.lists(_dicts, max_size=4) | _dicts, min_size=1, max_size=8))
def test_append_mode_keeps_dicts_as_given(sequence: list[Any]) -> None:
    """Property: with ``merge="append"`` and a reducer that never prunes, updates of plain
    dicts without ids are appended as the very same dict objects, unconverted and without
    ids added: the state is the concatenation of the updates."""
    ours = langgraph_reducer(MessageReducer(max_messages=None), merge="append")
    state: list[Any] = []
    expected: list[Any] = []
    for update in sequence:
        state = ours(state, update)
        expected += update if isinstance(update, list) else [update]
    assert [id(m) for m in state] == [id(m) for m in expected]
    assert all("id" not in m for m in state)


def test_first_call_gets_an_empty_list_and_single_messages_are_wrapped() -> None:
    """LangGraph starts a channel with ``[]`` and may pass one message instead of a list."""
    merge = MessageReducer(min_messages=1, max_messages=2).as_langgraph_reducer()
    state = merge([], ("user", "hi"))
    assert [(m.type, m.content) for m in state] == [("human", "hi")]
    assert state[0].id
    state = merge(state, "again")
    state = merge(state, {"role": "assistant", "content": "ok"})
    # Over max_messages, but "again" is the newest human message and is never pruned.
    assert [m.content for m in state] == ["hi", "again", "ok"]


@pytest.mark.parametrize("merge", ["add_messages", "append"])
@pytest.mark.parametrize(
    ("existing", "update", "named"),
    [
        ([], None, "got update=None"),
        (None, [], "got existing=None"),
        (None, None, "got existing=None and update=None"),
    ],
)
def test_none_arguments_raise_a_clear_value_error(
    merge: Any, existing: Any, update: Any, named: str
) -> None:
    """Calling the reducer with None for either list is a ValueError (as add_messages'
    own) naming what was None, what LangGraph passes and what to pass, in both modes;
    ``(None, None)`` included, which add_messages answers with a partial of itself."""
    function = langgraph_reducer(MessageReducer(), merge=merge)
    with pytest.raises(ValueError, match=re.escape(named) + r": LangGraph calls it with the "):
        function(existing, update)
    with pytest.raises(ValueError, match=r"pass two lists of messages \(for example"):
        MessageReducer(min_messages=1, max_messages=2).as_langgraph_reducer(merge=merge)(
            existing, update
        )


def test_same_reducer_and_options_give_the_same_function() -> None:
    """LangGraph compares channel reducers by identity across schemas."""
    reducer = MessageReducer(max_messages=5)
    assert reducer.as_langgraph_reducer() is reducer.as_langgraph_reducer()
    assert reducer.as_langgraph_reducer() is langgraph_reducer(reducer, merge="add_messages")
    assert reducer.as_langgraph_reducer(merge="append") is not reducer.as_langgraph_reducer()
    assert MessageReducer().as_langgraph_reducer() is not reducer.as_langgraph_reducer()


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"merge": "concat"}, "merge must be 'add_messages' or 'append', got 'concat'"),
        ({"format": "openai"}, "format must be None or 'langchain-openai', got 'openai'"),
        ({"merge": "append", "format": "langchain-openai"}, "merge='append' never does"),
    ],
)
def test_bad_options_are_named(options: dict[str, Any], text: str) -> None:
    """Misuse errors name the bad value and the accepted ones."""
    with pytest.raises(ValueError, match=text.replace("(", r"\(")):
        langgraph_reducer(MessageReducer(), **options)


def _dict_summary(summary: str, pruned_count: int) -> list[Any]:
    return [{"role": "user", "content": f"summary: {summary}"}]


def test_summaries_from_a_dict_factory_become_messages_with_ids() -> None:
    """In add_messages mode a factory's dict summary is converted and given an id, and a
    RemoveMessage for that id removes it."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=3,
            summarize_fn=lambda pruned: "earlier",
            inject_summary=True,
            summary_message_factory=_dict_summary,
        )
    )
    merge = reducer.as_langgraph_reducer()
    state = merge([], [("system", "s"), ("user", "1"), ("ai", "2"), ("user", "3"), ("ai", "4")])
    summary = next(m for m in state if "summary: earlier" in str(m.content))
    assert isinstance(summary, HumanMessage) and summary.id
    assert summary not in merge(state, RemoveMessage(id=summary.id))


def test_summaries_in_append_mode_stay_dicts_and_get_ids() -> None:
    """In append mode the summary stays a dict, gains an id, and can be removed by it."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=3,
            summarize_fn=lambda pruned: "earlier",
            inject_summary=True,
            summary_message_factory=_dict_summary,
        )
    )
    merge = reducer.as_langgraph_reducer(merge="append")
    history = [{"role": "system", "content": "s"}] + [
        {"role": "user" if n % 2 else "assistant", "content": str(n)} for n in range(1, 5)
    ]
    state = merge([], history)
    summary = next(m for m in state if "summary" in m["content"])
    assert isinstance(summary, dict) and summary["id"]
    assert all(isinstance(m, dict) for m in state)
    assert summary not in merge(state, RemoveMessage(id=summary["id"]))


def test_cached_channel_reducers_do_not_keep_their_reducer_alive() -> None:
    """Reusing the function per reducer must not leak reducers created per request."""
    reducer = MessageReducer(max_messages=3)
    reducer.as_langgraph_reducer()
    alive = weakref.ref(reducer)
    del reducer
    gc.collect()
    assert alive() is None

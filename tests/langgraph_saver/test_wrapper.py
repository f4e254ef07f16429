"""The wrapper's contract: one reduction, delegation, versions, refusals."""

from __future__ import annotations

import sqlite3
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from agentstate_reducer.langgraph import CheckpointReduction, ReducingCheckpointSaver
from tests.langgraph_saver._graphs import (
    MAX,
    Memory,
    agent_graph,
    assert_bounded,
    config,
    reducer,
    stored_lists,
    turn,
)

# -- one reduction, never two ------------------------------------------------------------


def test_wrapping_a_saver_that_reduces_with_the_same_reducer_is_a_pass_through() -> None:
    """Wrapping twice with one reducer reduces once: hooks see each message once."""
    memory = Memory()
    r = reducer(memory)
    inner = InMemorySaver()
    once = ReducingCheckpointSaver(inner, r)
    twice = ReducingCheckpointSaver(once, r)
    assert once.reduces and not twice.reduces
    assert twice.message_reduction is once.message_reduction
    graph = agent_graph(twice)
    for n in range(20):
        graph.invoke(turn(n), config("t"))
    newest = graph.get_state(config("t")).values["messages"]
    assert len(memory.ids) == len(set(memory.ids))
    assert len(memory.ids) + len(newest) == 80


def test_a_saver_reducing_with_another_reducer_is_refused() -> None:
    """A different reducer object, or another channel, is a clear ValueError."""
    inner = ReducingCheckpointSaver(InMemorySaver(), reducer())
    with pytest.raises(ValueError, match="already reduces messages"):
        ReducingCheckpointSaver(inner, reducer())
    with pytest.raises(ValueError, match="twice"):
        ReducingCheckpointSaver(inner, inner.message_reduction.reducer, messages_key="history")


def test_a_saver_exposing_message_reduction_is_recognised() -> None:
    """Any saver (the Cosmos ones) that sets ``message_reduction`` counts as reducing."""
    r = reducer()
    inner = InMemorySaver()
    inner.message_reduction = CheckpointReduction(r)  # type: ignore[attr-defined]
    assert not ReducingCheckpointSaver(inner, r).reduces
    with pytest.raises(ValueError):
        ReducingCheckpointSaver(inner, reducer())


def test_bad_arguments_are_named() -> None:
    """A wrong inner saver, reducer or key type is a TypeError naming what was expected; an
    empty key is a ValueError."""
    with pytest.raises(TypeError, match="BaseCheckpointSaver"):
        ReducingCheckpointSaver(object(), reducer())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MessageReducer"):
        ReducingCheckpointSaver(InMemorySaver(), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="messages_key"):
        ReducingCheckpointSaver(InMemorySaver(), reducer(), messages_key=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="messages_key"):
        ReducingCheckpointSaver(InMemorySaver(), reducer(), messages_key="")


# -- delegation ----------------------------------------------------------------------------


def test_delegates_serde_versions_config_specs_and_backend_helpers() -> None:
    """serde, config_specs, version format and backend helpers (setup, conn) are the inner's."""
    inner = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    wrapper = ReducingCheckpointSaver(inner, reducer())
    assert wrapper.serde is inner.serde
    assert wrapper.config_specs == inner.config_specs
    assert (
        wrapper.get_next_version(None, None).split(".")[0]
        == inner.get_next_version(None, None).split(".")[0]
    )
    wrapper.setup()  # not defined by the wrapper: the inner saver's
    assert inner.is_setup
    assert wrapper.conn is inner.conn


def test_with_allowlist_clones_the_inner_saver_and_keeps_the_original() -> None:
    """Compiling a graph narrows a strict serializer on a clone; the wrapper follows it."""
    inner = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    original_serde = inner.serde
    wrapper = ReducingCheckpointSaver(inner, reducer())
    clone = wrapper.with_allowlist([("my_module", "MyType")])
    assert isinstance(clone, ReducingCheckpointSaver)
    assert clone.inner is not inner and clone.serde is clone.inner.serde
    assert wrapper.inner is inner and inner.serde is original_serde
    assert clone.message_reduction is wrapper.message_reduction
    assert type(clone) is type(wrapper)
    permissive = ReducingCheckpointSaver(InMemorySaver(), reducer())
    assert permissive.with_allowlist([("my_module", "MyType")]) is permissive


def test_context_manager_use_returns_the_wrapper() -> None:
    """``with wrapper`` enters the inner saver and yields the wrapper."""
    wrapper = ReducingCheckpointSaver(InMemorySaver(), reducer())
    with wrapper as entered:
        assert entered is wrapper


async def test_async_context_manager_use_returns_the_wrapper() -> None:
    """``async with wrapper`` enters the inner saver and yields the wrapper."""
    wrapper = ReducingCheckpointSaver(InMemorySaver(), reducer())
    async with wrapper as entered:
        assert entered is wrapper


def test_a_saver_that_is_no_context_manager_gives_a_wrapper_that_is_none() -> None:
    """SqliteSaver is no context manager, so neither is the wrapper around it."""
    inner = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    wrapper = ReducingCheckpointSaver(inner, reducer())
    assert not hasattr(wrapper, "__enter__")
    # `with` on an object without __enter__: TypeError from Python 3.11, AttributeError before.
    with pytest.raises((TypeError, AttributeError)), wrapper:  # type: ignore[attr-defined]
        pass


# -- what apply stores ---------------------------------------------------------------------


def _checkpoint(messages: list[Any], version: str = "1") -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages, "other": "x"}
    checkpoint["channel_versions"] = {"messages": version, "other": "1"}
    checkpoint["versions_seen"] = {"node": {"messages": version}, "other_node": {"other": "1"}}
    return checkpoint


def _chat(n: int) -> list[Any]:
    return [
        HumanMessage(f"q{i}", id=f"h{i}") if i % 2 == 0 else AIMessage(f"a{i}", id=f"a{i}")
        for i in range(n)
    ]


def test_apply_returns_the_same_checkpoint_when_nothing_changes() -> None:
    """A list within bounds: apply hands back the very checkpoint it was given."""
    reduction = CheckpointReduction(reducer())
    checkpoint = _checkpoint(_chat(MAX))
    assert reduction.apply(config("t"), checkpoint, {"messages": "1"}) is checkpoint


def test_apply_returns_a_reduced_copy_and_leaves_the_input_alone() -> None:
    """A list over the bound: a reduced copy; the checkpoint and versions given are unchanged."""
    reduction = CheckpointReduction(reducer())
    messages = _chat(MAX + 5)
    checkpoint = _checkpoint(messages)
    versions = {"messages": "1"}
    stored = reduction.apply(config("t"), checkpoint, versions)
    assert stored is not checkpoint
    assert len(stored["channel_values"]["messages"]) <= MAX
    assert stored["channel_values"]["other"] == "x"
    assert checkpoint["channel_values"]["messages"] is messages and len(messages) == MAX + 5
    assert versions == {"messages": "1"}


def test_a_list_stored_before_the_wrapper_gets_a_fresh_version() -> None:
    """The message channel did not change in this put, but its value is over the bound and
    not known to be reduced: it gets a new version (written, and seen by whoever saw the
    old one), so a blob saver stores the reduced list instead of pointing at the old blob."""
    inner = InMemorySaver()
    reduction = CheckpointReduction(reducer(), next_version=inner.get_next_version)
    old = inner.get_next_version(None, None)
    checkpoint = _checkpoint(_chat(MAX + 5), old)
    versions: dict[str, Any] = {"other": "1"}
    stored = reduction.apply(config("t", checkpoint_id="parent"), checkpoint, versions)
    new = stored["channel_versions"]["messages"]
    assert new != old and versions == {"other": "1", "messages": new}
    assert stored["versions_seen"]["node"]["messages"] == new
    assert stored["versions_seen"]["other_node"] == {"other": "1"}
    assert checkpoint["channel_versions"]["messages"] == old


def test_a_deterministic_version_counter_is_never_used_for_a_fresh_version() -> None:
    """A counter without randomness would hand the run the same version later for another
    value, so the version stays and only the inline value is reduced."""
    reduction = CheckpointReduction(reducer(), next_version=lambda current, _: int(current) + 1)
    checkpoint = _checkpoint(_chat(MAX + 5), "3")
    versions: dict[str, Any] = {}
    stored = reduction.apply(config("t"), checkpoint, versions)
    assert stored["channel_versions"]["messages"] == "3" and versions == {}
    assert len(stored["channel_values"]["messages"]) <= MAX


def test_values_that_are_not_lists_pass_untouched() -> None:
    """A message channel holding something other than a list is stored as is."""
    reduction = CheckpointReduction(reducer())
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": "not a list"}
    assert reduction.apply(config("t"), checkpoint, {}) is checkpoint


def test_a_thread_stored_bare_is_bounded_by_its_next_step(
    sync_inner: BaseCheckpointSaver[Any],
) -> None:
    """A long thread written without the wrapper, then a step that writes another channel
    only: the checkpoint it stores already holds the reduced list, read back from the
    inner saver, and the graph has nothing left to run."""

    class State(TypedDict):
        messages: Annotated[list[Any], add_messages]
        mood: str

    def note(state: State) -> dict[str, Any]:
        return {"mood": state["mood"] + "!"}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    cfg = config("legacy")
    builder.compile(checkpointer=sync_inner).invoke({"messages": _chat(40), "mood": "ok"}, cfg)
    before = sync_inner.get_tuple(cfg)
    assert before is not None and len(before.checkpoint["channel_values"]["messages"]) == 40

    graph = builder.compile(checkpointer=ReducingCheckpointSaver(sync_inner, reducer()))
    graph.invoke({"mood": "calm"}, cfg)
    after = sync_inner.get_tuple(cfg)
    assert after is not None
    assert len(after.checkpoint["channel_values"]["messages"]) <= MAX
    assert after.checkpoint["channel_values"]["mood"] == "calm!"
    assert graph.get_state(cfg).next == ()
    # Older checkpoints keep what they stored.
    assert len(before.checkpoint["channel_values"]["messages"]) == 40
    old = sync_inner.get_tuple(before.config)
    assert old is not None and len(old.checkpoint["channel_values"]["messages"]) == 40


def test_another_messages_key(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """``messages_key`` names the channel to bound; others are left alone."""

    class State(TypedDict):
        history: Annotated[list[Any], add_messages]
        notes: Annotated[list[Any], add_messages]

    def reply(state: State) -> dict[str, Any]:
        return {"history": [AIMessage("ok")], "notes": [AIMessage("note")]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(
        checkpointer=ReducingCheckpointSaver(sync_inner, reducer(), messages_key="history")
    )
    cfg = config("key")
    for n in range(20):
        graph.invoke({"history": [HumanMessage(f"q{n}")]}, cfg)
    assert_bounded(stored_lists(sync_inner.list(cfg), "history"))
    newest = sync_inner.get_tuple(cfg)
    assert newest is not None and len(newest.checkpoint["channel_values"]["notes"]) == 20


def _append_all(state: list[Any], writes: Any) -> list[Any]:
    for write in writes:
        state = add_messages(state, write)
    return state


class DeltaState(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(_append_all, snapshot_frequency=2)]


def test_a_delta_channel_is_refused_with_a_clear_error() -> None:
    """A DeltaChannel keeps its history in the writes table: refuse rather than pretend."""
    builder: StateGraph[Any] = StateGraph(DeltaState)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("ok")]})
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=ReducingCheckpointSaver(InMemorySaver(), reducer()))
    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        for n in range(3):
            graph.invoke({"messages": [HumanMessage(f"q{n}")]}, config("delta"))

"""Properties of the wrapper over random conversations fed to a real graph in random chunks."""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import ReducingCheckpointSaver
from agentstate_reducer.messages import id_of
from tests.langgraph_saver._graphs import Memory, assert_no_orphan_results, config
from tests.strategies import conversations, rendered
from tests.test_properties import tokens_of

STORABLE_SHAPES = ("openai", "langchain_dict", "serialized", "langchain")


class FeedState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    tail: list[Any]


def _feed_graph(saver: ReducingCheckpointSaver) -> Any:
    """Each invoke stores the input chunk, then a node appends a second chunk (two puts
    over overlapping lists, as a run writes them)."""

    def respond(state: FeedState) -> dict[str, Any]:
        return {"messages": state["tail"], "tail": []}

    builder: StateGraph[Any] = StateGraph(FeedState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder.compile(checkpointer=saver)


INNER_SAVERS: dict[str, Callable[[], BaseCheckpointSaver[Any]]] = {
    "memory": InMemorySaver,
    "sqlite": lambda: SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False)),
}


@st.composite
def feeds(draw: st.DrawFn) -> tuple[list[Any], list[tuple[int, int, bool]], int, int]:
    """A rendered conversation, the chunks it arrives in (input part, node part, whether
    a new process takes over first), and a window: (min, max) messages, or, with a
    negative min, token mode with max tokens."""
    shape = draw(st.sampled_from(STORABLE_SHAPES))
    messages = rendered(draw(conversations(max_turns=14).filter(bool)), shape)
    chunks: list[tuple[int, int, bool]] = []
    left = len(messages)
    while left > 0:
        first = draw(st.integers(1, min(left, 5)))
        second = draw(st.integers(0, min(left - first, 5)))
        chunks.append((first, second, draw(st.booleans())))
        left -= first + second
    if draw(st.booleans()):
        return messages, chunks, -1, draw(st.integers(10, 120))
    high = draw(st.integers(2, 12))
    low = draw(st.integers(0, high))
    return messages, chunks, low, high


def _config(low: int, high: int, **hooks: Any) -> ReducerConfig:
    if low < 0:
        return ReducerConfig(max_tokens=high, token_counter=tokens_of, **hooks)
    return ReducerConfig(min_messages=low, max_messages=high, **hooks)


def _reducer(memory: Memory, low: int, high: int) -> MessageReducer:
    return MessageReducer(config=_config(low, high, on_prune=[memory]))


@pytest.mark.parametrize("saver", sorted(INNER_SAVERS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feed=feeds())
def test_every_message_is_stored_or_remembered_exactly_once(
    saver: str, feed: tuple[list[Any], list[tuple[int, int, bool]], int, int]
) -> None:
    """Whatever the saver (InMemory, SQLite), the mode (count, tokens), the shape, chunking
    and process restarts (a new reducer and wrapper, so no dedupe memory carries over):
    each message ends up either in the newest stored list or in long-term memory, exactly
    once; every stored list is one the reducer accepts as is (it would prune nothing more),
    keeps input order, and has no orphan tool result."""
    messages, chunks, low, high = feed
    memory = Memory()
    inner = INNER_SAVERS[saver]()
    graph = _feed_graph(ReducingCheckpointSaver(inner, _reducer(memory, low, high)))
    cfg = config("prop")
    position = 0
    for first, second, restart in chunks:
        if restart:
            graph = _feed_graph(ReducingCheckpointSaver(inner, _reducer(memory, low, high)))
        part, tail = messages[position : position + first], messages[position + first :][:second]
        position += first + second
        graph.invoke({"messages": part, "tail": tail}, cfg)

    judge = MessageReducer(config=_config(low, high))
    order = {id_of(m): n for n, m in enumerate(messages)}
    for stored in inner.list(cfg):
        kept = stored.checkpoint["channel_values"].get("messages")
        if kept is None:
            continue
        assert judge.plan(kept).pruned == []
        positions = [order[id_of(m)] for m in kept]
        assert positions == sorted(positions)
        assert_no_orphan_results(kept)

    newest_tuple = inner.get_tuple(cfg)
    assert newest_tuple is not None
    newest = {id_of(m) for m in newest_tuple.checkpoint["channel_values"]["messages"]}
    delivered = memory.ids
    assert len(delivered) == len(set(delivered))
    assert not newest & set(delivered)
    assert newest | set(delivered) == set(order)

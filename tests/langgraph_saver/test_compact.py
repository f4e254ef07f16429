"""Compacting a thread stored before the wrapper was added (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from agentstate_reducer.langgraph import (
    ReducingCheckpointSaver,
    acompact_thread,
    compact_thread,
)
from tests.langgraph_saver._graphs import (
    MAX,
    Memory,
    agent_builder,
    agent_graph,
    approval_graph,
    assert_bounded,
    assert_each_once,
    assert_provider_valid,
    config,
    reducer,
    stored_lists,
    turn,
)

TURNS = 25


def test_compact_thread_writes_a_reduced_newest_checkpoint(
    sync_db_inner: BaseCheckpointSaver[Any],
) -> None:
    """The newest checkpoint becomes the reduced list, older ones stay, the pruned messages
    reach memory once, a second compaction has nothing to do, and the wrapped graph
    resumes from the compacted list."""
    cfg = config("old")
    bare = agent_graph(sync_db_inner)
    for n in range(TURNS):
        bare.invoke(turn(n), cfg)
    before = list(sync_db_inner.list(cfg))
    assert len(before[0].checkpoint["channel_values"]["messages"]) == 4 * TURNS

    memory = Memory()
    r = reducer(memory)
    written = compact_thread(sync_db_inner, config("old", memory_namespace="alice"), r)
    assert written is not None
    newest = sync_db_inner.get_tuple(cfg)
    assert newest is not None
    assert (
        newest.config["configurable"]["checkpoint_id"] == written["configurable"]["checkpoint_id"]
    )
    assert newest.parent_config is not None
    assert (
        newest.parent_config["configurable"]["checkpoint_id"]
        == before[0].config["configurable"]["checkpoint_id"]
    )
    kept = newest.checkpoint["channel_values"]["messages"]
    assert len(kept) <= MAX
    assert_provider_valid(kept)
    assert memory.namespaces == {"alice"}
    assert_each_once(
        memory, {m.id for m in before[0].checkpoint["channel_values"]["messages"]}, kept
    )
    assert len(list(sync_db_inner.list(cfg))) == len(before) + 1
    assert compact_thread(sync_db_inner, cfg, r) is None

    graph = agent_graph(ReducingCheckpointSaver(sync_db_inner, r))
    assert graph.get_state(cfg).next == ()
    out = graph.invoke(turn(TURNS), cfg)
    assert out["messages"][0].id == kept[0].id
    assert len(out["messages"]) <= MAX + 4
    assert_bounded(stored_lists(sync_db_inner.list(cfg, limit=4)))


async def test_acompact_thread_writes_a_reduced_newest_checkpoint(
    async_db_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin on AsyncSqliteSaver and AsyncPostgresSaver."""
    cfg = config("old")
    bare = agent_graph(async_db_inner, is_async=True)
    for n in range(TURNS):
        await bare.ainvoke(turn(n), cfg)
    memory = Memory()
    r = reducer(memory)
    assert await acompact_thread(async_db_inner, cfg, r) is not None
    newest = await async_db_inner.aget_tuple(cfg)
    assert newest is not None
    kept = newest.checkpoint["channel_values"]["messages"]
    assert len(kept) <= MAX
    assert len(memory.ids) + len(kept) == 4 * TURNS
    assert await acompact_thread(async_db_inner, cfg, r) is None
    graph = agent_graph(ReducingCheckpointSaver(async_db_inner, r), is_async=True)
    out = await graph.ainvoke(turn(TURNS), cfg)
    assert out["messages"][0].id == kept[0].id


def test_compact_through_the_wrapper_reduces_once(sync_db_inner: BaseCheckpointSaver[Any]) -> None:
    """Passing the wrapper itself works and writes to its inner saver."""
    cfg = config("old")
    bare = agent_graph(sync_db_inner)
    for n in range(TURNS):
        bare.invoke(turn(n), cfg)
    memory = Memory()
    r = reducer(memory)
    wrapper = ReducingCheckpointSaver(sync_db_inner, r)
    assert compact_thread(wrapper, cfg, r) is not None
    newest = sync_db_inner.get_tuple(cfg)
    assert newest is not None
    assert len(memory.ids) + len(newest.checkpoint["channel_values"]["messages"]) == 4 * TURNS


def test_compact_writes_nothing_when_a_hook_fails(sync_db_inner: BaseCheckpointSaver[Any]) -> None:
    """A failing hook makes compact_thread raise and write nothing; a retry delivers once."""
    cfg = config("old")
    bare = agent_graph(sync_db_inner)
    for n in range(TURNS):
        bare.invoke(turn(n), cfg)
    count = len(list(sync_db_inner.list(cfg)))
    memory = Memory()
    memory.failing = True
    r = reducer(memory)
    with pytest.raises(Exception, match="long-term memory store is down"):
        compact_thread(sync_db_inner, cfg, r)
    assert len(list(sync_db_inner.list(cfg))) == count
    memory.failing = False
    assert compact_thread(sync_db_inner, cfg, r) is not None
    assert len(memory.ids) == len(set(memory.ids)) > 0


def test_compact_refuses_a_thread_waiting_on_an_interrupt(
    sync_db_inner: BaseCheckpointSaver[Any],
) -> None:
    """Pending writes (an interrupt) would be hidden by a new checkpoint: refuse, clearly.
    (durability="sync": RedisSaver hides writes stored before their checkpoint, as "async"
    stores them at times, and the interrupt would not be pending; docs/guides/limits.md.)"""
    cfg = config("waiting")
    graph = approval_graph(sync_db_inner)
    for n in range(4):
        graph.invoke(turn(n), cfg, durability="sync")
        graph.invoke(Command(resume="ok"), cfg, durability="sync")
    graph.invoke(turn(4), cfg, durability="sync")
    with pytest.raises(ValueError, match="pending write"):
        compact_thread(sync_db_inner, cfg, reducer())


def test_compact_thread_needs_a_thread_and_tolerates_an_empty_one(
    sync_db_inner: BaseCheckpointSaver[Any],
) -> None:
    """No thread_id is a ValueError naming it; a thread with no checkpoint needs nothing."""
    with pytest.raises(ValueError, match="thread_id"):
        compact_thread(sync_db_inner, {"configurable": {}}, reducer())
    assert compact_thread(sync_db_inner, config("nobody"), reducer()) is None


def test_compact_keeps_what_runs_next(sync_db_inner: BaseCheckpointSaver[Any]) -> None:
    """A thread paused by ``interrupt_before`` (no pending writes) still has the same next
    step after compaction, and resuming runs it."""
    cfg = config("paused")
    graph = agent_builder().compile(checkpointer=sync_db_inner, interrupt_before=["tools"])
    for n in range(TURNS):
        graph.invoke(turn(n), cfg)
        if n < TURNS - 1:
            graph.invoke(None, cfg)
    assert graph.get_state(cfg).next == ("tools",)
    assert compact_thread(sync_db_inner, cfg, reducer()) is not None
    assert graph.get_state(cfg).next == ("tools",)
    assert len(graph.get_state(cfg).values["messages"]) <= MAX
    out = graph.invoke(None, cfg)
    assert out["messages"][-1].content.startswith("The sum is")

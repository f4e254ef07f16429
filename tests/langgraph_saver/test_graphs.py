"""Real graphs through the wrapper: long runs stay bounded, resume, time travel, subgraphs,
interrupts, dict-shaped messages. Every bound is checked on what the inner saver stored."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agentstate_reducer.langgraph import ReducingCheckpointSaver
from tests.langgraph_saver._graphs import (
    MAX,
    Memory,
    agent_builder,
    agent_graph,
    all_ids,
    approval_graph,
    assert_bounded,
    assert_each_once,
    assert_provider_valid,
    config,
    dict_graph,
    parent_graph,
    reducer,
    stored_lists,
    turn,
)
from tests.scripted_model import add, calculator_model

TURNS = 200


def test_hundreds_of_turns_stay_bounded_sync(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """After 200 tool-calling turns every stored checkpoint holds at most MAX messages, the
    graph's state is the reduced list, and each message is stored or remembered once."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)))
    cfg = config("long")
    for n in range(TURNS):
        graph.invoke(turn(n), cfg)
    stored = stored_lists(sync_inner.list(cfg))
    assert_bounded(stored)
    newest = graph.get_state(cfg).values["messages"]
    assert len(newest) <= MAX
    assert_provider_valid(newest)
    assert newest[-4].id == f"h{TURNS - 1}"
    assert newest[-1].content.startswith("The sum is")
    assert_each_once(memory, all_ids(stored) | set(memory.ids), newest)
    assert len(memory.ids) + len(newest) == 4 * TURNS
    assert memory.namespaces == {("memories", "long")}


async def test_hundreds_of_turns_stay_bounded_async(async_inner: BaseCheckpointSaver[Any]) -> None:
    """The async twin: 200 turns through aput, bounded, each message stored or remembered once."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(async_inner, reducer(memory)), is_async=True)
    cfg = config("long")
    for n in range(TURNS):
        await graph.ainvoke(turn(n), cfg)
    stored = stored_lists([t async for t in async_inner.alist(cfg)])
    assert_bounded(stored)
    newest = (await graph.aget_state(cfg)).values["messages"]
    assert len(memory.ids) + len(newest) == 4 * TURNS
    assert_each_once(memory, all_ids(stored) | set(memory.ids), newest)


def test_a_new_process_resumes_from_the_reduced_list(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """A fresh wrapper and graph (nothing remembered in memory) load the reduced list, and
    the model is called with it, not with the whole history."""
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer()))
    cfg = config("resume")
    for n in range(30):
        graph.invoke(turn(n), cfg)
    stored_before = sync_inner.get_tuple(cfg)
    assert stored_before is not None
    assert len(stored_before.checkpoint["channel_values"]["messages"]) <= MAX

    fresh = agent_graph(ReducingCheckpointSaver(sync_inner, reducer()))
    out = fresh.invoke(turn(30), cfg)
    assert len(out["messages"]) <= MAX + 4
    assert out["messages"][0].id == stored_before.checkpoint["channel_values"]["messages"][0].id
    assert_bounded(stored_lists(sync_inner.list(cfg)))


async def test_a_new_process_resumes_from_the_reduced_list_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin: a fresh wrapper and graph resume from the reduced list."""
    graph = agent_graph(ReducingCheckpointSaver(async_inner, reducer()), is_async=True)
    cfg = config("resume")
    for n in range(30):
        await graph.ainvoke(turn(n), cfg)
    stored_before = await async_inner.aget_tuple(cfg)
    assert stored_before is not None
    kept = stored_before.checkpoint["channel_values"]["messages"]
    assert len(kept) <= MAX

    fresh = agent_graph(ReducingCheckpointSaver(async_inner, reducer()), is_async=True)
    out = await fresh.ainvoke(turn(30), cfg)
    assert len(out["messages"]) <= MAX + 4
    assert out["messages"][0].id == kept[0].id


def test_bare_saver_grows_without_the_wrapper(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """Control: the same graph on the bare saver stores every message in its newest checkpoint."""
    graph = agent_graph(sync_inner)
    cfg = config("bare")
    for n in range(10):
        graph.invoke(turn(n), cfg)
    newest = sync_inner.get_tuple(cfg)
    assert newest is not None
    assert len(newest.checkpoint["channel_values"]["messages"]) == 40


def test_time_travel_and_forks_stay_bounded(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """get_state_history lists reduced checkpoints; resuming an older one forks a bounded
    branch and leaves the original head alone; update_state on an old checkpoint is reduced."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)))
    cfg = config("travel")
    for n in range(12):
        graph.invoke(turn(n), cfg)
    history = list(graph.get_state_history(cfg))
    assert len(history) >= 12 * 4
    assert all(len(s.values.get("messages", [])) <= MAX for s in history)
    head = graph.get_state(cfg)

    older = next(s for s in history if s.metadata and s.metadata["step"] == 20)
    forked = graph.invoke(turn(100), older.config)
    assert forked["messages"][-1].content.startswith("The sum is")
    assert (
        graph.get_state(cfg).config["configurable"]["checkpoint_id"]
        != head.config["configurable"]["checkpoint_id"]
    )
    original = graph.get_state(head.config)
    assert [m.id for m in original.values["messages"]] == [m.id for m in head.values["messages"]]

    replay = graph.invoke(None, history[-8].config)
    assert replay["messages"]
    updated = graph.update_state(
        older.config, {"messages": [HumanMessage(f"edit {i}") for i in range(MAX)]}
    )
    assert len(graph.get_state(updated).values["messages"]) <= MAX
    assert_bounded(stored_lists(sync_inner.list(cfg)))
    assert len(memory.ids) == len(set(memory.ids))


async def test_time_travel_and_forks_stay_bounded_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin: aget_state_history, a fork from an older checkpoint, aupdate_state."""
    graph = agent_graph(ReducingCheckpointSaver(async_inner, reducer()), is_async=True)
    cfg = config("travel")
    for n in range(12):
        await graph.ainvoke(turn(n), cfg)
    history = [s async for s in graph.aget_state_history(cfg)]
    assert all(len(s.values.get("messages", [])) <= MAX for s in history)
    head = await graph.aget_state(cfg)
    older = next(s for s in history if s.metadata and s.metadata["step"] == 20)
    await graph.ainvoke(turn(100), older.config)
    original = await graph.aget_state(head.config)
    assert [m.id for m in original.values["messages"]] == [m.id for m in head.values["messages"]]
    updated = await graph.aupdate_state(
        older.config, {"messages": [HumanMessage(f"edit {i}") for i in range(MAX)]}
    )
    assert len((await graph.aget_state(updated)).values["messages"]) <= MAX
    assert_bounded(stored_lists([t async for t in async_inner.alist(cfg)]))


def test_subgraph_namespaces_are_reduced(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """A subgraph's own checkpoints (their own namespace) are reduced as well."""
    graph = parent_graph(ReducingCheckpointSaver(sync_inner, reducer()))
    cfg = config("nested")
    for n in range(15):
        graph.invoke(turn(n), cfg)
    tuples = list(sync_inner.list(config("nested")))
    inside = [
        t for t in tuples if t.config["configurable"]["checkpoint_ns"].startswith("assistant:")
    ]
    assert len(inside) >= 15 * 4
    assert_bounded(stored_lists(inside))
    assert_bounded(stored_lists(tuples))
    assert len(graph.get_state(cfg).values["messages"]) <= MAX


async def test_subgraph_namespaces_are_reduced_async(async_inner: BaseCheckpointSaver[Any]) -> None:
    """Async twin of the subgraph test."""
    graph = parent_graph(ReducingCheckpointSaver(async_inner, reducer()), is_async=True)
    cfg = config("nested")
    for n in range(15):
        await graph.ainvoke(turn(n), cfg)
    tuples = [t async for t in async_inner.alist(config("nested"))]
    inside = [
        t for t in tuples if t.config["configurable"]["checkpoint_ns"].startswith("assistant:")
    ]
    assert len(inside) >= 15 * 4
    assert_bounded(stored_lists(inside))
    assert len((await graph.aget_state(cfg)).values["messages"]) <= MAX


def test_interrupts_resume_through_the_wrapper(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """A human approval before each tool call: every turn interrupts, resumes with
    Command(resume=...), and the stored lists stay bounded throughout."""
    graph = approval_graph(ReducingCheckpointSaver(sync_inner, reducer()))
    cfg = config("approve")
    for n in range(20):
        first = graph.invoke(turn(n), cfg)
        assert "__interrupt__" in first
        assert graph.get_state(cfg).next == ("approve",)
        done = graph.invoke(Command(resume="ok"), cfg)
        assert done["messages"][-1].content.startswith("The sum is")
    assert_bounded(stored_lists(sync_inner.list(cfg)))


async def test_interrupts_resume_through_the_wrapper_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin of the interrupt test."""
    graph = approval_graph(ReducingCheckpointSaver(async_inner, reducer()))
    cfg = config("approve")
    for n in range(20):
        first = await graph.ainvoke(turn(n), cfg)
        assert "__interrupt__" in first
        done = await graph.ainvoke(Command(resume="ok"), cfg)
        assert done["messages"][-1].content.startswith("The sum is")
    assert_bounded(stored_lists([t async for t in async_inner.alist(cfg)]))


@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "no-ids"])
def test_dict_shaped_messages(sync_inner: BaseCheckpointSaver[Any], with_ids: bool) -> None:
    """OpenAI-shaped dicts in a plain list channel are bounded and handed over once each,
    with or without ids (the wrapper reduces each run's growth once)."""
    memory = Memory()
    graph = dict_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)), with_ids=with_ids)
    cfg = config("dicts")
    for n in range(40):
        graph.invoke({"messages": [{"role": "user", "content": f"q{n}", "id": f"u{n}"}]}, cfg)
    stored = stored_lists(sync_inner.list(cfg))
    assert_bounded(stored)
    newest = graph.get_state(cfg).values["messages"]
    assert len(memory.ids) + len(newest) == 40 * 4
    for messages in stored:  # no tool result without its call
        calls = {c["id"] for m in messages for c in m.get("tool_calls", [])}
        assert all(m["tool_call_id"] in calls for m in messages if m["role"] == "tool")


@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_every_durability_mode_stays_bounded(
    sync_inner: BaseCheckpointSaver[Any], durability: Any
) -> None:
    """``durability="exit"`` writes one checkpoint per run (the whole run's list at once),
    ``"sync"`` waits for each put: both stay bounded and hand each message over once."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)))
    cfg = config("durable")
    for n in range(30):
        graph.invoke(turn(n), cfg, durability=durability)
    assert_bounded(stored_lists(sync_inner.list(cfg)))
    newest = graph.get_state(cfg).values["messages"]
    assert len(memory.ids) + len(newest) == 30 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


def test_token_mode_bounds_stored_tokens(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """With a token window the stored lists stay under ``max_tokens``."""
    memory = Memory()
    r = reducer(memory, max_tokens=300, target_tokens=200)
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, r))
    cfg = config("tokens")
    for n in range(40):
        graph.invoke(turn(n), cfg)
    stored = stored_lists(sync_inner.list(cfg))
    assert max(sum(r.count_tokens(m) for m in messages) for messages in stored) <= 300
    newest = graph.get_state(cfg).values["messages"]
    assert len(memory.ids) + len(newest) == 40 * 4


def test_interrupt_before_pauses_and_resumes(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """``interrupt_before`` (a static breakpoint) pauses each turn before the tool runs;
    the paused state is bounded and resuming with ``None`` runs the tool."""
    graph = agent_builder().compile(
        checkpointer=ReducingCheckpointSaver(sync_inner, reducer()), interrupt_before=["tools"]
    )
    cfg = config("breakpoint")
    for n in range(20):
        graph.invoke(turn(n), cfg)
        paused = graph.get_state(cfg)
        assert paused.next == ("tools",)
        assert len(paused.values["messages"]) <= MAX
        out = graph.invoke(None, cfg)
        assert out["messages"][-1].content.startswith("The sum is")
    assert_bounded(stored_lists(sync_inner.list(cfg)))


def test_a_langchain_agent_through_the_wrapper(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """``langchain.agents.create_agent`` with the wrapper as its checkpointer: 60 tool-calling
    turns, every stored checkpoint bounded, each message stored or remembered once."""
    memory = Memory()
    agent = create_agent(
        calculator_model(),
        [add],
        checkpointer=ReducingCheckpointSaver(sync_inner, reducer(memory)),
    )
    cfg = config("agent")
    for n in range(60):
        agent.invoke(turn(n), cfg)
    assert_bounded(stored_lists(sync_inner.list(cfg)))
    newest = agent.get_state(cfg).values["messages"]
    assert_provider_valid(newest)
    assert len(memory.ids) + len(newest) == 60 * 4


def test_many_threads_at_once_through_one_wrapper() -> None:
    """Eight threads driving eight conversations through one wrapper concurrently: each
    stays bounded and hands each of its messages over once, under its own namespace."""
    memory = Memory()
    inner = InMemorySaver()
    graph = agent_graph(ReducingCheckpointSaver(inner, reducer(memory)))

    def converse(name: str) -> None:
        for n in range(25):
            graph.invoke({"messages": [HumanMessage(f"q{n}", id=f"{name}-h{n}")]}, config(name))

    names = [f"user{i}" for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(converse, names))
    for name in names:
        assert_bounded(stored_lists(inner.list(config(name))))
        newest = graph.get_state(config(name)).values["messages"]
        mine = [b for ns, b in memory.batches if ns == ("memories", name)]
        delivered = [m.id for batch in mine for m in batch]
        assert len(delivered) == len(set(delivered))
        assert len(delivered) + len(newest) == 25 * 4

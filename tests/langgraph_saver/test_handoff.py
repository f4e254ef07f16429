"""Long-term memory hand-off through the wrapper: once each, never lost.

A run writes several checkpoints over overlapping lists; each pruned message must reach
``on_prune`` exactly once, with the run's namespace. A memory store that goes down never
costs the user's turn (the checkpoint is stored unpruned and the hand-off retried on later
puts), whatever LangGraph's durability mode; failing the step instead is opt-in.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from agentstate_reducer import Handoff, PruneHookError, SummaryError
from agentstate_reducer.langgraph import ReducingCheckpointSaver
from agentstate_reducer.messages import is_summary
from tests.langgraph_saver._graphs import (
    MAX,
    Memory,
    agent_graph,
    assert_bounded,
    assert_each_once,
    assert_nothing_lost_or_twice,
    config,
    reducer,
    stored_lists,
    ticks_while,
    turn,
)


def test_namespace_comes_from_the_run_config(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """``configurable.memory_namespace`` is handed to the hooks as given."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)))
    cfg = config("ns", memory_namespace=("users", "alice"))
    for n in range(10):
        graph.invoke(turn(n), cfg)
    assert memory.batches
    assert memory.namespaces == {("users", "alice")}


def test_custom_namespace_key(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """The reducer's ``namespace_key`` names the configurable key read."""
    memory = Memory()
    graph = agent_graph(
        ReducingCheckpointSaver(
            sync_inner, reducer(memory, handoff=Handoff(namespace_key="user_ns", retry_backoff=0))
        )
    )
    for n in range(10):
        graph.invoke(turn(n), config("ns", user_ns="bob", memory_namespace="ignored"))
    assert memory.namespaces == {"bob"}


def test_once_each_with_a_new_wrapper_every_turn(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """Several processes taking turns on one thread (a new wrapper and graph per turn,
    nothing remembered between them but the reducer): still once each."""
    memory = Memory()
    shared = reducer(memory)
    cfg = config("workers")
    for n in range(40):
        agent_graph(ReducingCheckpointSaver(sync_inner, shared)).invoke(turn(n), cfg)
    newest = agent_graph(sync_inner).get_state(cfg).values["messages"]
    assert len(memory.ids) + len(newest) == 40 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


def _created(inner: BaseCheckpointSaver[Any], cfg: dict[str, Any]) -> set[str]:
    """Every message id the thread holds: its newest stored list, the pending writes, and
    the input of a run whose first step did not finish (the input checkpoint keeps it in
    its ``__start__`` channel; resuming runs ``__start__`` again unless its writes are
    read back). The Redis savers at times return no pending writes for that checkpoint:
    LangGraph stores the first step's writes while the checkpoint's own put is still
    under way, whatever the durability, and a put that lands second marks the checkpoint
    ``has_writes: false`` (docs/guides/limits.md)."""
    newest = inner.get_tuple(cfg)
    assert newest is not None
    values = newest.checkpoint["channel_values"]
    ids = {m.id for m in values["messages"]}
    start = values.get("__start__")
    if isinstance(start, dict):
        ids |= {m.id for m in start.get("messages", [])}
    for _, channel, value in newest.pending_writes or []:
        if channel == "messages":
            ids |= {m.id for m in value}
    return ids


DURABILITIES = ["sync", "async", "exit"]


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_memory_outage_never_costs_the_users_turn(
    sync_inner: BaseCheckpointSaver[Any], durability: str
) -> None:
    """The store goes down for four turns and comes back: every invoke succeeds and stores
    the user's new message, the stored list grows past the bound meanwhile, and once the
    store is back every message reaches it exactly once and the list is bounded again."""
    memory = Memory()
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(memory)))
    cfg = config("outage")
    for n in range(3):
        graph.invoke(turn(n), cfg, durability=durability)
    memory.failing = True
    for n in range(3, 7):
        graph.invoke(turn(n), cfg, durability=durability)
        stored = graph.get_state(cfg).values["messages"]
        assert f"h{n}" in {m.id for m in stored}, "the user's message was not stored"
    assert memory.failures >= 1 and not memory.batches
    assert len(graph.get_state(cfg).values["messages"]) == 7 * 4, "stored unpruned meanwhile"
    memory.failing = False
    for n in range(7, 12):
        graph.invoke(turn(n), cfg, durability=durability)
    newest = graph.get_state(cfg).values["messages"]
    assert len(newest) <= MAX
    assert len(memory.ids) + len(newest) == 12 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


@pytest.mark.parametrize("durability", DURABILITIES)
async def test_a_memory_outage_never_costs_the_users_turn_async(
    async_inner: BaseCheckpointSaver[Any], durability: str
) -> None:
    """Async twin, with a coroutine hook: awaited by aput, never blocking the loop."""
    memory = Memory()

    async def remember(messages: list[Any], namespace: Any) -> None:
        await asyncio.sleep(0)
        memory(messages, namespace)

    graph = agent_graph(
        ReducingCheckpointSaver(async_inner, reducer(on_prune=[remember])), is_async=True
    )
    cfg = config("outage")
    for n in range(3):
        await graph.ainvoke(turn(n), cfg, durability=durability)
    memory.failing = True
    for n in range(3, 7):
        await graph.ainvoke(turn(n), cfg, durability=durability)
    assert memory.failures >= 1
    assert len((await graph.aget_state(cfg)).values["messages"]) == 7 * 4
    memory.failing = False
    for n in range(7, 12):
        await graph.ainvoke(turn(n), cfg, durability=durability)
    newest = (await graph.aget_state(cfg)).values["messages"]
    assert len(newest) <= MAX
    assert len(memory.ids) + len(newest) == 12 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


def test_on_prune_error_raise_fails_the_step_and_loses_nothing(
    sync_inner: BaseCheckpointSaver[Any],
) -> None:
    """Opt-in: with ``on_prune_error="raise"`` a failing hook fails invoke, the checkpoint
    that would prune is not written (the messages are still stored), and resuming
    delivers them, once."""
    memory = Memory()
    graph = agent_graph(
        ReducingCheckpointSaver(sync_inner, reducer(memory), on_prune_error="raise")
    )
    cfg = config("flaky")
    for n in range(3):
        graph.invoke(turn(n), cfg)
    assert not memory.batches

    memory.failing = True
    with pytest.raises(PruneHookError):
        graph.invoke(turn(3), cfg)
    assert memory.failures >= 1
    held = _created(sync_inner, cfg)
    assert {"h0", "h1", "h2", "h3"} <= held, "a message the failed hook did not take is gone"
    assert_bounded(stored_lists(sync_inner.list(cfg)))

    memory.failing = False
    graph.invoke(None, cfg)  # retry the failed step
    for n in range(4, 12):
        graph.invoke(turn(n), cfg)
    newest = graph.get_state(cfg).values["messages"]
    assert "h1" in memory.ids  # h0 is the pinned first message
    assert len(memory.ids) + len(newest) == 12 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


async def test_on_prune_error_raise_fails_the_step_and_loses_nothing_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin: aput raises, nothing is lost, resuming delivers once."""
    memory = Memory()
    graph = agent_graph(
        ReducingCheckpointSaver(async_inner, reducer(memory), on_prune_error="raise"),
        is_async=True,
    )
    cfg = config("flaky")
    for n in range(3):
        await graph.ainvoke(turn(n), cfg)
    memory.failing = True
    with pytest.raises(PruneHookError):
        await graph.ainvoke(turn(3), cfg)
    newest_tuple = await async_inner.aget_tuple(cfg)
    assert newest_tuple is not None
    assert "h1" in {m.id for m in newest_tuple.checkpoint["channel_values"]["messages"]}

    memory.failing = False
    await graph.ainvoke(None, cfg)
    for n in range(4, 12):
        await graph.ainvoke(turn(n), cfg)
    newest = (await graph.aget_state(cfg)).values["messages"]
    assert len(memory.ids) + len(newest) == 12 * 4
    assert_each_once(memory, set(memory.ids) | {m.id for m in newest}, newest)


def _summarizer(calls: list[int], broken: dict[str, bool]) -> Any:
    def summarize(messages: list[Any]) -> str:
        if broken["on"]:
            raise RuntimeError("model overloaded")
        calls.append(sum(not is_summary(m) for m in messages))
        return f"{len(messages)} earlier messages about sums"

    return summarize


def test_a_failing_summary_keeps_the_turn_and_summarises_once_back(
    sync_inner: BaseCheckpointSaver[Any],
) -> None:
    """summarize_fn raising (an LLM outage) stores the turn unpruned; once it works, each
    prune calls it once, for exactly the messages that went to memory."""
    calls: list[int] = []
    broken = {"on": False}
    memory = Memory()
    r = reducer(memory, summarize_fn=_summarizer(calls, broken), inject_summary=True)
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, r))
    cfg = config("summary")
    for n in range(3):
        graph.invoke(turn(n), cfg)
    broken["on"] = True
    graph.invoke(turn(3), cfg)
    assert "h3" in {m.id for m in graph.get_state(cfg).values["messages"]}
    assert not memory.batches
    broken["on"] = False
    for n in range(4, 20):
        graph.invoke(turn(n), cfg)
    stored = stored_lists(sync_inner.list(cfg))
    assert_bounded(stored[:1])
    # One summary per prune event, not one per checkpoint written.
    assert len(calls) == len(memory.batches)
    assert sum(calls) == len(memory.ids)
    assert sum(is_summary(m) for m in stored[0]) == 1
    assert any("earlier messages about sums" in str(m.content) for m in stored[0])


def test_a_failing_summary_fails_the_step_when_asked(sync_inner: BaseCheckpointSaver[Any]) -> None:
    """With ``on_prune_error="raise"``, summarize_fn raising fails the step with
    SummaryError; nothing pruned is lost, and the retried step goes on."""
    calls: list[int] = []
    broken = {"on": False}
    memory = Memory()
    r = reducer(memory, summarize_fn=_summarizer(calls, broken), inject_summary=True)
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, r, on_prune_error="raise"))
    cfg = config("summary")
    for n in range(3):
        graph.invoke(turn(n), cfg)
    broken["on"] = True
    with pytest.raises(SummaryError):
        graph.invoke(turn(3), cfg)
    assert "h1" in _created(sync_inner, cfg)
    broken["on"] = False
    graph.invoke(None, cfg)
    for n in range(4, 20):
        graph.invoke(turn(n), cfg)
    assert len(calls) == len(memory.batches)
    assert sum(calls) == len(memory.ids)


async def test_a_slow_hook_does_not_stall_the_event_loop() -> None:
    """aput runs a reduce that calls hooks in a worker thread: while a hook blocks for
    0.4 s, other coroutines keep running."""

    def slow(messages: list[Any], namespace: Any) -> None:
        time.sleep(0.4)

    graph = agent_graph(
        ReducingCheckpointSaver(InMemorySaver(), reducer(on_prune=[slow])), is_async=True
    )
    cfg = config("slow")
    for n in range(3):
        await graph.ainvoke(turn(n), cfg)  # 12 messages: the next turn prunes
    ticks = await ticks_while(graph.ainvoke(turn(3), cfg), at_least=0.4)
    assert ticks >= 15, f"the event loop stalled: {ticks} ticks in a 0.4 s hook"


def test_a_store_left_alone_after_a_failure_costs_no_summaries(
    sync_inner: BaseCheckpointSaver[Any],
) -> None:
    """While the memory store waits out its ``retry_backoff``, a prune could not be handed
    over, so the saver stores every turn unpruned without asking the summarizer for a
    summary it would throw away: one summary for the failing call, none after it."""
    calls: list[int] = []
    memory = Memory()
    r = reducer(
        memory,
        summarize_fn=_summarizer(calls, {"on": False}),
        inject_summary=True,
        handoff=Handoff(retry_backoff=60),
    )
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, r))
    cfg = config("left-alone")
    for n in range(3):
        graph.invoke(turn(n), cfg)
    before = len(calls)
    memory.failing = True
    for n in range(3, 9):
        graph.invoke(turn(n), cfg)
    assert memory.failures == 1  # called once, then left alone for the wait
    assert len(calls) - before <= memory.failures
    ids = {m.id for m in graph.get_state(cfg).values["messages"]}
    assert {f"h{n}" for n in range(3, 9)} <= ids  # every turn stored, nothing pruned away
    assert r.handoff_status().last_error is not None


# -- one conversation, several writers: the middleware and the saver, two requests ------------


class Hanging(Memory):
    """A memory store that, while ``slow``, hangs for a second on each call and then
    times out (raises), as a store behind a 1 s client timeout does."""

    def __init__(self) -> None:
        super().__init__()
        self.slow = False

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        if self.slow:
            time.sleep(1.0)
            self.failures += 1
            raise TimeoutError("memory store timed out after 1 s")
        super().__call__(messages, namespace)


def _agent(saver: BaseCheckpointSaver[Any], store: Hanging) -> Any:
    from langchain.agents import create_agent

    from agentstate_reducer.langgraph import ReducerMiddleware
    from tests.scripted_model import add, calculator_model

    shared = reducer(on_prune=[store], preserve_first="system")
    wrapped = ReducingCheckpointSaver(saver, shared)
    agent = create_agent(
        calculator_model(), [add], middleware=[ReducerMiddleware(shared)], checkpointer=wrapped
    )
    return agent


SLOW_TURNS = (4, 5)


def test_middleware_and_saver_sharing_a_reducer_lose_nothing_when_a_hook_hangs(
    sync_inner: BaseCheckpointSaver[Any],
) -> None:
    """The README's pairing: ReducerMiddleware and ReducingCheckpointSaver share one
    reducer under durability="async", so the middleware's reduce and the saver's put
    (on LangGraph's background thread) prune the same messages at once. The store hangs a
    second and times out for two turns: whichever reduce meets the other's hand-off waits
    for it and keeps the messages; nothing is lost and nothing reaches the store twice."""
    store = Hanging()
    agent = _agent(sync_inner, store)
    cfg = config("shared")
    for n in range(12):
        store.slow = n in SLOW_TURNS
        agent.invoke(turn(n), cfg, durability="async")
    assert store.failures, "the store must have timed out"
    assert_nothing_lost_or_twice(sync_inner.list(cfg), store.ids)
    assert len(agent.get_state(cfg).values["messages"]) <= MAX + 4


async def test_middleware_and_saver_sharing_a_reducer_lose_nothing_when_a_hook_hangs_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin (abefore_model and aput: the waits happen on the event loop)."""
    store = Hanging()
    agent = _agent(async_inner, store)
    cfg = config("ashared")
    for n in range(12):
        store.slow = n in SLOW_TURNS
        await agent.ainvoke(turn(n), cfg, durability="async")
    assert store.failures
    tuples = [t async for t in async_inner.alist(cfg)]
    assert_nothing_lost_or_twice(tuples, store.ids)


class FirstCallHangs(Memory):
    """A store whose first call after ``arm()`` hangs a second and times out; the others
    go through (one request of two timed out)."""

    def __init__(self) -> None:
        super().__init__()
        self._armed = False
        self._guard = threading.Lock()

    def arm(self) -> None:
        self._armed = True

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        with self._guard:
            hang, self._armed = self._armed, False
        if hang:
            time.sleep(1.0)
            self.failures += 1
            raise TimeoutError("memory store timed out after 1 s")
        super().__call__(messages, namespace)


@pytest.mark.parametrize("durability", DURABILITIES)
def test_a_double_submitted_request_loses_nothing(
    sync_inner: BaseCheckpointSaver[Any], durability: str
) -> None:
    """The same request submitted twice at once on one thread (two concurrent invokes
    through the wrapper): both runs' puts prune the same messages; the one that meets the
    other's hand-off waits for it (which times out) and keeps them. Nothing is lost on
    the branch the thread goes on from, nothing reaches the store twice."""
    store = FirstCallHangs()
    # Two runs of one thread may start from each other's checkpoints, mid-turn at times
    # (a tool call whose result the other run has not stored yet): a lenient model.
    graph = agent_graph(ReducingCheckpointSaver(sync_inner, reducer(store)), strict=False)
    cfg = config(f"double-{durability}")
    for n in range(2):
        graph.invoke(turn(n), cfg, durability=durability)
    store.arm()
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            graph.invoke(turn(2), cfg, durability=durability)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    runs = [threading.Thread(target=submit) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(30)
    assert not errors, errors
    for n in range(3, 8):
        graph.invoke(turn(n), cfg, durability=durability)
    assert_nothing_lost_or_twice(sync_inner.list(cfg), store.ids)


async def test_a_double_submitted_request_loses_nothing_async(
    async_inner: BaseCheckpointSaver[Any],
) -> None:
    """Async twin: two ainvokes of one request at once on one event loop."""
    memory = FirstCallHangs()

    async def remember(messages: list[Any], namespace: Any) -> None:
        await asyncio.to_thread(memory, messages, namespace)

    graph = agent_graph(
        ReducingCheckpointSaver(async_inner, reducer(on_prune=[remember])),
        is_async=True,
        strict=False,
    )
    cfg = config("adouble")
    for n in range(2):
        await graph.ainvoke(turn(n), cfg)
    memory.arm()
    await asyncio.gather(graph.ainvoke(turn(2), cfg), graph.ainvoke(turn(2), cfg))
    for n in range(3, 8):
        await graph.ainvoke(turn(n), cfg)
    tuples = [t async for t in async_inner.alist(cfg)]
    assert_nothing_lost_or_twice(tuples, memory.ids)

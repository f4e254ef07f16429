"""Retention, forks and deletes against LangGraph's own ordering and against a second
writer, on the loopback server with the real SDK (issue 19).

* pending writes stored before their checkpoint (``durability="async"``) survive the
  clean-up of ``keep_checkpoints``: an interrupt stays visible, a finished branch does not run
  again after a crash;
* a second process (its own saver, client and session) running retention, forking or deleting
  the thread never leaves it unreadable: readers never see a missing document, a run inside
  a node when its thread is deleted fails with a clear error and the thread id stays usable.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from agentstate_cosmosdb import (
    AsyncCosmosDBSaver,
    CosmosCheckpointRemovedError,
    CosmosDBSaver,
    CosmosThreadDeletedError,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from . import _workers
from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


def _worker_args(server: CosmosTestServer, container: str, **more: Any) -> dict[str, Any]:
    return {
        "endpoint": server.endpoint,
        "key": server.key,
        "ca_file": str(server.ca_file),
        "database": DATABASE,
        "container": container,
        **more,
    }


# --------------------------------------------------------------------------------------------
# Pending writes stored before their checkpoint
# --------------------------------------------------------------------------------------------


def approval_graph(saver: Any) -> Any:
    """START -> work -> ask (interrupt) -> END: the interrupt is a pending write of the
    checkpoint after ``work``, stored while that checkpoint may still be on its way."""

    def work(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="did the work")]}

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [HumanMessage(content=f"approved: {answer}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("work", work)
    builder.add_node("ask", ask)
    builder.add_edge(START, "work")
    builder.add_edge("work", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


RUNS = 4


@pytest.mark.parametrize("durability", ["async", "sync", "exit"])
@pytest.mark.parametrize("keep", [1, 3])
def test_an_interrupt_stays_pending_under_retention_sync(
    server: CosmosTestServer, keep: int, durability: str
) -> None:
    """CosmosDBSaver(keep_checkpoints=1 and 3), every durability mode: after each of several
    turns (so clean-up has older checkpoints to remove) the run stops at the interrupt,
    ``get_state().interrupts`` shows it, and resuming it completes the turn."""
    with CosmosDBSaver(
        DATABASE, new_container(), keep_checkpoints=keep, **saver_kwargs(server)
    ) as saver:
        graph = approval_graph(saver)
        for run in range(RUNS):
            config = {"configurable": {"thread_id": f"approve-{run}"}}
            for turn in range(3):
                graph.invoke(
                    {"messages": [HumanMessage(content=f"go {turn}")]},
                    config,
                    durability=durability,
                )
                state = graph.get_state(config)
                assert [i.value for i in state.interrupts] == ["approve?"], (run, turn)
                assert state.next == ("ask",)
                graph.invoke(Command(resume="yes"), config, durability=durability)
                done = graph.get_state(config)
                assert not done.interrupts and not done.next
                assert done.values["messages"][-1].content == "approved: yes"


@pytest.mark.parametrize("durability", ["async", "sync", "exit"])
@pytest.mark.parametrize("keep", [1, 3])
async def test_an_interrupt_stays_pending_under_retention_async(
    server: CosmosTestServer, keep: int, durability: str
) -> None:
    """The same with AsyncCosmosDBSaver (all of a step's writes in flight at once)."""
    async with AsyncCosmosDBSaver(
        DATABASE, new_container(), keep_checkpoints=keep, **saver_kwargs(server)
    ) as saver:
        graph = approval_graph(saver)
        for run in range(RUNS):
            config = {"configurable": {"thread_id": f"approve-async-{run}"}}
            for turn in range(3):
                await graph.ainvoke(
                    {"messages": [HumanMessage(content=f"go {turn}")]},
                    config,
                    durability=durability,
                )
                state = await graph.aget_state(config)
                assert [i.value for i in state.interrupts] == ["approve?"], (run, turn)
                await graph.ainvoke(Command(resume="yes"), config, durability=durability)
                done = await graph.aget_state(config)
                assert not done.interrupts and not done.next


def test_an_interrupt_stays_pending_with_the_wrappers_keep_checkpoints(
    server: CosmosTestServer,
) -> None:
    """ReducingCheckpointSaver(CosmosDBSaver, keep_checkpoints=1): the wrapper prunes the
    thread to its latest checkpoint with the saver's prune after every put, under
    durability="async"; the interrupt stays pending after every turn."""
    from agentstate_reducer import MessageReducer
    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as inner:
        saver = ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=1)
        graph = approval_graph(saver)
        for run in range(RUNS):
            config = {"configurable": {"thread_id": f"wrapped-{run}"}}
            for turn in range(3):
                graph.invoke(
                    {"messages": [HumanMessage(content=f"go {turn}")]}, config, durability="async"
                )
                assert [i.value for i in graph.get_state(config).interrupts] == ["approve?"]
                graph.invoke(Command(resume="yes"), config, durability="async")


def test_throttled_requests_during_retention_lose_nothing(server: CosmosTestServer) -> None:
    """429 TooManyRequests injected at the start of every run (two in a row; the tests give the
    SDK two retries), with keep_checkpoints=2 under durability="async": the SDK retries them,
    every turn completes, the interrupt is pending after each, and the thread reads whole."""
    with CosmosDBSaver(
        DATABASE, new_container(), keep_checkpoints=2, **saver_kwargs(server)
    ) as saver:
        graph = approval_graph(saver)
        config = {"configurable": {"thread_id": "throttled"}}
        for turn in range(4):
            server.throttle(2, retry_after_ms=20)
            graph.invoke(
                {"messages": [HumanMessage(content=f"go {turn}")]}, config, durability="async"
            )
            assert [i.value for i in graph.get_state(config).interrupts] == ["approve?"]
            server.throttle(2, retry_after_ms=20)
            graph.invoke(Command(resume="yes"), config, durability="async")
        assert server.stats().get("throttled", 0) > 0
        assert _read_everything(saver, config) == 2
        assert len(graph.get_state(config).values["messages"]) == 12


@pytest.mark.parametrize("durability", ["async", "sync"])
def test_a_finished_branch_never_runs_again_after_a_crash(
    server: CosmosTestServer, tmp_path: Path, durability: str
) -> None:
    """Two parallel branches; ``fast`` finishes (its side effect happens, its writes are
    stored), then the process dies inside ``slow``. Another process resumes the thread with
    ``invoke(None)``: ``slow`` runs, ``fast`` does not run again (its side effect happened
    once), in every run, with keep_checkpoints=3 cleaning up after each checkpoint."""
    container = new_container()
    for run in range(3):
        thread = f"crash-{durability}-{run}"
        effects = tmp_path / f"effects-{run}.txt"
        config = {"configurable": {"thread_id": thread}}
        with CosmosDBSaver(DATABASE, container, keep_checkpoints=3, **saver_kwargs(server)) as s:
            warm = _workers.branch_graph(s, tmp_path / "warm.txt", crash=False)
            for _ in range(2):  # older checkpoints for the clean-up to remove
                warm.invoke({"log": []}, config, durability=durability)
        worker = _workers.start(
            "crash",
            **_worker_args(
                server,
                container,
                thread=thread,
                keep=3,
                durability=durability,
                side_effects=str(effects),
            ),
        )
        status, report = _workers.finish(worker)
        assert status == 17, report
        assert effects.read_text().splitlines() == ["fast"]
        with CosmosDBSaver(DATABASE, container, keep_checkpoints=3, **saver_kwargs(server)) as s:
            graph = _workers.branch_graph(s, effects, crash=False)
            assert graph.get_state(config).next == ("slow",), run
            out = graph.invoke(None, config, durability=durability)
            assert sorted(out["log"][-2:]) == ["fast", "slow"]
        assert effects.read_text().splitlines() == ["fast"], f"fast ran again in run {run}"


# --------------------------------------------------------------------------------------------
# A second process: retention, forks, delete_thread
# --------------------------------------------------------------------------------------------


def _read_everything(saver: CosmosDBSaver, config: Any) -> int:
    """Read the latest checkpoint and every listed one whole; the number listed."""
    assert saver.get_tuple(config) is not None
    listed = list(saver.list(config))
    for tup in listed:
        again = saver.get_tuple(tup.config)
        # Retention in the other process may remove it after it was listed: gone is fine,
        # a partial read never is (a missing document raises).
        assert again is None or again.checkpoint["id"] == tup.checkpoint["id"]
    return len(listed)


@pytest.mark.parametrize("keep", [1, 3])
def test_forks_and_reads_beside_a_writer_with_retention_in_another_process(
    server: CosmosTestServer, keep: int
) -> None:
    """Process 2 chats on a thread with keep_checkpoints; meanwhile this process forks
    from older checkpoints (update_state on one it listed) and lists and reads the thread
    over and over. No read ever meets a missing document, neither process's runs fail, and
    afterwards the thread and every listed checkpoint read whole. A fork whose checkpoint
    retention removed between the list and the update (LangGraph then finds nothing under its
    id and would update an empty state) is refused, never stored as the thread's latest."""
    container = new_container()
    thread = f"forks-{keep}"
    config = {"configurable": {"thread_id": thread}}
    with CosmosDBSaver(DATABASE, container, keep_checkpoints=keep, **saver_kwargs(server)) as saver:
        graph = _workers.chat_graph(saver)
        graph.invoke({"messages": [HumanMessage(content="start")]}, config)
        worker = _workers.start(
            "chat", **_worker_args(server, container, thread=thread, keep=keep, turns=40)
        )
        forks = 0
        try:
            while worker.poll() is None:
                _read_everything(saver, config)
                older = [t.config for t in saver.list(config)][1:]
                if older:
                    try:
                        graph.update_state(older[-1], {"messages": [AIMessage(content="fork")]})
                    except CosmosCheckpointRemovedError as exc:
                        assert exc.checkpoint_id == older[-1]["configurable"]["checkpoint_id"]
                        assert saver.get_tuple(older[-1]) is None
                        continue
                    forks += 1
        finally:
            status, report = _workers.finish(worker)
        assert status == 0 and report["errors"] == [], report
        assert forks > 0
        for tup in saver.list(config):
            assert saver.get_tuple(tup.config) is not None
        state = graph.get_state(config)
        assert state.values["messages"]
        graph.invoke({"messages": [HumanMessage(content="after")]}, config)
        assert graph.get_state(config).values["messages"][-1].content == "re: after"


def test_writers_in_three_processes_with_retention_never_fail(server: CosmosTestServer) -> None:
    """Three processes chat on one thread at once with keep_checkpoints=1 (each run's puts
    race the other's clean-up): no run of either fails, and the thread reads whole."""
    container = new_container()
    thread = "three-writers"
    workers = [
        _workers.start("chat", **_worker_args(server, container, thread=thread, keep=1, turns=30))
        for _ in range(3)
    ]
    reports = [_workers.finish(w) for w in workers]
    for status, report in reports:
        assert status == 0 and report["errors"] == [], report
    with CosmosDBSaver(DATABASE, container, keep_checkpoints=1, **saver_kwargs(server)) as s:
        config = {"configurable": {"thread_id": thread}}
        assert _read_everything(s, config) >= 1


@pytest.mark.parametrize("durability", ["async", "sync"])
def test_delete_thread_while_a_run_is_inside_a_node(
    server: CosmosTestServer, tmp_path: Path, durability: str
) -> None:
    """Process 2 runs a turn whose node waits; this process deletes the thread meanwhile.
    The run then fails with CosmosThreadDeletedError (nothing of it stored); the thread is
    empty, and its id works again: a new turn starts a fresh thread that reads whole."""
    container = new_container()
    thread = f"deleted-under-a-run-{durability}"
    config = {"configurable": {"thread_id": thread}}
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        graph = _workers.chat_graph(saver)
        for turn in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
        gate, started = tmp_path / "gate", tmp_path / "started"
        worker = _workers.start(
            "blocked",
            **_worker_args(
                server,
                container,
                thread=thread,
                gate=str(gate),
                started=str(started),
                durability=durability,
            ),
        )
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the run is inside its node now (its input checkpoint is stored)
        saver.delete_thread(thread)
        gate.write_text("go")
        _, report = _workers.finish(worker)
        assert report.get("error") == CosmosThreadDeletedError.__name__, report
        assert "deleted" in report["message"]
        assert saver.get_tuple(config) is None
        assert list(saver.list(config)) == []
        assert [d["kind"] for d in saver.thread_documents(thread)] == []
        graph.invoke({"messages": [HumanMessage(content="new start")]}, config)
        state = graph.get_state(config)
        assert [m.content for m in state.values["messages"]] == ["new start", "re: new start"]
        assert json.dumps([t.checkpoint["id"] for t in saver.list(config)])

"""``ReducingCheckpointSaver(keep_checkpoints=)`` against LangGraph's own ordering (issue 19):
under ``durability="async"`` a task's writes for checkpoint k are stored before checkpoint k
itself, so a clean-up that ran in between must not take them. Checked on PostgreSQL (the
savers of langgraph-checkpoint that can prune; InMemorySaver and SqliteSaver cannot, and
keep_checkpoints refuses them), sync and async, in every durability mode; and a DeltaChannel
graph with keep_checkpoints refused before anything is stored."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from agentstate_reducer import MessageReducer
from agentstate_reducer.langgraph import ReducingCheckpointSaver

pytestmark = pytest.mark.postgres

RUNS = 4

PRUNES = PostgresSaver.prune is not BaseCheckpointSaver.prune
"""langgraph-checkpoint-postgres before 3.2 cannot prune, and 3.2 needs a newer
langgraph-checkpoint than the core's floor: at the lowest versions keep_checkpoints is refused
there, and these tests check that refusal instead."""


def refused_here(inner: Any, keep: int) -> bool:
    """True, after checking keep_checkpoints is refused with its clear error, where the
    installed PostgreSQL saver cannot prune."""
    if PRUNES:
        return False
    with pytest.raises(NotImplementedError, match="implements neither prune nor aprune"):
        ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=keep)
    return True


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


@pytest.mark.parametrize("durability", ["async", "sync", "exit"])
@pytest.mark.parametrize("keep", [1, 3])
def test_an_interrupt_stays_pending_with_keep_checkpoints(
    postgres_conninfo: str, keep: int, durability: str
) -> None:
    """PostgresSaver wrapped with keep_checkpoints=1 and 3: after every turn of several runs
    the interrupt is pending (``get_state().interrupts``), and resuming completes the turn."""
    with PostgresSaver.from_conn_string(postgres_conninfo) as inner:
        inner.setup()
        if refused_here(inner, keep):
            return
        saver = ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=keep)
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
                graph.invoke(Command(resume="yes"), config, durability=durability)
                assert graph.get_state(config).values["messages"][-1].content == "approved: yes"


@pytest.mark.parametrize("durability", ["async", "sync", "exit"])
@pytest.mark.parametrize("keep", [1, 3])
async def test_an_interrupt_stays_pending_with_keep_checkpoints_async(
    postgres_conninfo: str, keep: int, durability: str
) -> None:
    """The same with AsyncPostgresSaver."""
    async with AsyncPostgresSaver.from_conn_string(postgres_conninfo) as inner:
        await inner.setup()
        if refused_here(inner, keep):
            return
        saver = ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=keep)
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


class BranchState(TypedDict):
    log: Annotated[list[str], operator.add]


def test_a_finished_branch_does_not_run_again_after_a_failure(postgres_conninfo: str) -> None:
    """START -> first -> (fast, slow): ``fast`` finishes and its writes are stored (under
    durability="async", before the checkpoint they belong to), ``slow`` fails. Resuming
    with invoke(None) runs ``slow`` only: keep_checkpoints=3's clean-up kept ``fast``'s
    writes, in every run."""
    calls: list[str] = []
    failing = [True]

    def first(state: BranchState) -> dict[str, Any]:
        return {"log": ["first"]}

    def fast(state: BranchState) -> dict[str, Any]:
        calls.append("fast")
        return {"log": ["fast"]}

    def slow(state: BranchState) -> dict[str, Any]:
        if failing[0]:
            import time

            time.sleep(0.3)
            raise RuntimeError("slow failed")
        return {"log": ["slow"]}

    builder = StateGraph(BranchState)
    for name, fn in (("first", first), ("fast", fast), ("slow", slow)):
        builder.add_node(name, fn)
    builder.add_edge(START, "first")
    builder.add_edge("first", "fast")
    builder.add_edge("first", "slow")
    builder.add_edge("fast", END)
    builder.add_edge("slow", END)
    with PostgresSaver.from_conn_string(postgres_conninfo) as inner:
        inner.setup()
        if refused_here(inner, 3):
            return
        graph = builder.compile(
            checkpointer=ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=3)
        )
        for run in range(RUNS):
            config = {"configurable": {"thread_id": f"branches-{run}"}}
            failing[0] = False
            for _ in range(2):
                graph.invoke({"log": []}, config, durability="async")
            failing[0] = True
            calls.clear()
            with pytest.raises(RuntimeError, match="slow failed"):
                graph.invoke({"log": []}, config, durability="async")
            assert calls == ["fast"]
            failing[0] = False
            assert graph.get_state(config).next == ("slow",), run
            graph.invoke(None, config, durability="async")
            assert calls == ["fast"], f"fast ran again in run {run}"


def _extend(state: Sequence[str] | None, writes: Sequence[Sequence[str]]) -> list[str]:
    return [*(state or []), *(item for write in writes for item in write)]


class DeltaState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    items: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=4)]


def test_keep_checkpoints_refuses_a_delta_channel_before_storing(postgres_conninfo: str) -> None:
    """keep_checkpoints cannot bound a thread whose DeltaChannel rebuilds its value from older
    checkpoints: the first put raises NotImplementedError naming the channel, and nothing is
    stored. Without keep_checkpoints the same graph runs (PostgresSaver supports it)."""

    def add(state: DeltaState) -> dict[str, Any]:
        return {"items": [f"item {len(state['items'])}"]}

    builder = StateGraph(DeltaState)
    builder.add_node("add", add)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    with PostgresSaver.from_conn_string(postgres_conninfo) as inner:
        inner.setup()
        if refused_here(inner, 2):
            return
        kept = builder.compile(
            checkpointer=ReducingCheckpointSaver(inner, MessageReducer(4, 8), keep_checkpoints=2)
        )
        config = {"configurable": {"thread_id": "delta"}}
        with pytest.raises(NotImplementedError, match="DeltaChannel") as info:
            kept.invoke({"messages": [], "items": ["a"]}, config)
        assert "'items'" in str(info.value) and "keep_checkpoints" in str(info.value)
        assert inner.get_tuple(config) is None
        assert list(inner.list(config)) == []
        plain = builder.compile(checkpointer=ReducingCheckpointSaver(inner, MessageReducer(4, 8)))
        for _ in range(3):
            plain.invoke({"messages": [], "items": ["a"]}, {"configurable": {"thread_id": "d2"}})
        assert len(plain.get_state({"configurable": {"thread_id": "d2"}}).values["items"]) == 6


def _late_resume_turns(graph: Any, config: Any) -> Any:
    """Two approval turns on ``config``; returns the config a UI kept from the first."""
    graph.invoke({"messages": [HumanMessage(content="go 0")]}, config)
    held = graph.get_state(config).config
    graph.invoke(Command(resume="yes"), config)
    graph.invoke({"messages": [HumanMessage(content="go 1")]}, config)
    graph.invoke(Command(resume="yes"), config)
    return held


def test_a_late_resume_from_a_pruned_checkpoint_is_refused(postgres_conninfo: str) -> None:
    """keep_checkpoints=2 pruned the checkpoint a UI's config names: resuming with it is
    refused (ValueError naming thread and ids, nothing stored) instead of restarting the
    thread from an empty state; the latest state keeps every message."""
    with PostgresSaver.from_conn_string(postgres_conninfo) as inner:
        inner.setup()
        if refused_here(inner, 2):
            return
        saver = ReducingCheckpointSaver(inner, MessageReducer(40, 80), keep_checkpoints=2)
        graph = approval_graph(saver)
        config = {"configurable": {"thread_id": f"late-{uuid.uuid4().hex}"}}
        held = _late_resume_turns(graph, config)
        before = graph.get_state(config)
        with pytest.raises(ValueError, match="drop checkpoint_id") as info:
            graph.invoke(Command(resume="late"), held)
        after = graph.get_state(config)
    assert held["configurable"]["checkpoint_id"] in str(info.value)
    assert before.config["configurable"]["checkpoint_id"] in str(info.value)
    assert after.config == before.config
    assert [m.content for m in after.values["messages"]] == [
        m.content for m in before.values["messages"]
    ]
    assert len(after.values["messages"]) == 6


async def test_a_late_resume_from_a_pruned_checkpoint_is_refused_async(
    postgres_conninfo: str,
) -> None:
    """The same with AsyncPostgresSaver (its aget_tuple checks the parent)."""
    async with AsyncPostgresSaver.from_conn_string(postgres_conninfo) as inner:
        await inner.setup()
        if refused_here(inner, 2):
            return
        saver = ReducingCheckpointSaver(inner, MessageReducer(40, 80), keep_checkpoints=2)
        graph = approval_graph(saver)
        config = {"configurable": {"thread_id": f"late-async-{uuid.uuid4().hex}"}}
        await graph.ainvoke({"messages": [HumanMessage(content="go 0")]}, config)
        held = (await graph.aget_state(config)).config
        await graph.ainvoke(Command(resume="yes"), config)
        await graph.ainvoke({"messages": [HumanMessage(content="go 1")]}, config)
        await graph.ainvoke(Command(resume="yes"), config)
        before = await graph.aget_state(config)
        with pytest.raises(ValueError, match="drop checkpoint_id"):
            await graph.ainvoke(Command(resume="late"), held)
        after = await graph.aget_state(config)
    assert after.config == before.config
    assert len(after.values["messages"]) == 6

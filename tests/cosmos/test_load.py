"""Load: many threads at once, and many writers racing on one thread's head."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.graph import END, START, MessagesState, StateGraph

from .conftest import CosmosTestServer

pytestmark = pytest.mark.cosmos

THREADS = 32
TURNS = 20


def reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}


def build(saver: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def expected(thread: int) -> list[str]:
    return [x for t in range(TURNS) for x in (f"{thread}:{t}", f"re: {thread}:{t}")]


async def test_32_threads_of_20_turns_lose_nothing(async_saver: AsyncCosmosDBSaver) -> None:
    """32 conversations of 20 turns each, all at once on one async saver: every message of
    every turn is there, in order, and every thread has its 60 checkpoints."""
    graph = build(async_saver)

    async def conversation(thread: int) -> None:
        config = {"configurable": {"thread_id": f"load-{thread}"}}
        for turn in range(TURNS):
            await graph.ainvoke({"messages": [HumanMessage(content=f"{thread}:{turn}")]}, config)

    await asyncio.gather(*(conversation(i) for i in range(THREADS)))
    for thread in range(THREADS):
        config = {"configurable": {"thread_id": f"load-{thread}"}}
        state = await graph.aget_state(config)
        assert [m.content for m in state.values["messages"]] == expected(thread)
        count = len([t async for t in async_saver.alist(config)])
        assert count == TURNS * 3


def test_32_threads_of_20_turns_lose_nothing_sync(sync_saver: CosmosDBSaver) -> None:
    """The same with the sync saver shared by 32 OS threads."""
    graph = build(sync_saver)

    def conversation(thread: int) -> None:
        config = {"configurable": {"thread_id": f"load-sync-{thread}"}}
        for turn in range(TURNS):
            graph.invoke({"messages": [HumanMessage(content=f"{thread}:{turn}")]}, config)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(conversation, range(THREADS)))
    for thread in range(THREADS):
        config = {"configurable": {"thread_id": f"load-sync-{thread}"}}
        state = graph.get_state(config)
        assert [m.content for m in state.values["messages"]] == expected(thread)


def test_racing_writers_leave_the_newest_head(server: CosmosTestServer) -> None:
    """Several savers (as several processes would) put checkpoints of one thread at once: the
    head ends at the newest checkpoint id, never an older one, and every put is listed."""
    from .conftest import DATABASE, new_container, saver_kwargs

    container = new_container()
    savers = [CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) for _ in range(4)]
    ids = [str(uuid6(clock_seq=i)) for i in range(40)]

    def put(i: int) -> None:
        saver = savers[i % len(savers)]
        checkpoint = generate_checkpoint(
            checkpoint_id=ids[i], channel_values={"ch": i}, channel_versions={"ch": str(i)}
        )
        saver.put(generate_config("race"), checkpoint, generate_metadata(step=i), {"ch": str(i)})

    try:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, range(len(ids))))
        latest = savers[0].get_tuple(generate_config("race"))
        assert latest is not None
        assert latest.checkpoint["id"] == max(ids)
        assert latest.checkpoint["channel_values"]["ch"] == ids.index(max(ids))
        assert len(list(savers[1].list(generate_config("race")))) == len(ids)
    finally:
        for saver in savers:
            saver.close()

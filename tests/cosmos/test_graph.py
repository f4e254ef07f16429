"""A real LangGraph graph (StateGraph with add_messages) run through both savers."""

from __future__ import annotations

from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


def echo(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    return {"messages": [AIMessage(content=f"echo: {last.content}")]}


def build(saver: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("echo", echo)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    return builder.compile(checkpointer=saver)


def test_sync_graph_keeps_history_across_savers(server: CosmosTestServer) -> None:
    """Turns run through one saver are all there for a fresh saver on the same container."""
    container = new_container()
    config = {"configurable": {"thread_id": "chat/1"}}
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        graph = build(saver)
        for turn in range(5):
            graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as fresh:
        graph = build(fresh)
        state = graph.get_state(config)
        contents = [m.content for m in state.values["messages"]]
        assert contents == [x for t in range(5) for x in (f"q{t}", f"echo: q{t}")]
        history = list(graph.get_state_history(config))
        assert len(history) == 5 * 3
        # Time travel: the state as of an earlier checkpoint is served from its own documents.
        older = history[4]
        assert graph.get_state(older.config).values["messages"] == older.values["messages"]
        graph.invoke({"messages": [HumanMessage(content="q5")]}, config)
        assert len(graph.get_state(config).values["messages"]) == 12


async def test_async_graph_keeps_history_across_savers(server: CosmosTestServer) -> None:
    """The same with AsyncCosmosDBSaver and ainvoke."""
    container = new_container()
    config = {"configurable": {"thread_id": "chat/2"}}
    async with AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        graph = build(saver)
        for turn in range(5):
            await graph.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
    async with AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as fresh:
        graph = build(fresh)
        state = await graph.aget_state(config)
        contents = [m.content for m in state.values["messages"]]
        assert contents == [x for t in range(5) for x in (f"q{t}", f"echo: q{t}")]
        history = [s async for s in graph.aget_state_history(config)]
        assert len(history) == 5 * 3


async def test_sync_saver_serves_ainvoke(sync_saver: CosmosDBSaver) -> None:
    """The sync saver's async methods work (they run in worker threads)."""
    graph = build(sync_saver)
    config = {"configurable": {"thread_id": "mixed"}}
    await graph.ainvoke({"messages": [HumanMessage(content="hi")]}, config)
    state = graph.get_state(config)
    assert [m.content for m in state.values["messages"]] == ["hi", "echo: hi"]


async def test_async_saver_refuses_sync_calls_on_its_loop(
    async_saver: AsyncCosmosDBSaver,
) -> None:
    """A sync call from the saver's own event loop raises a clear error instead of deadlocking."""
    import asyncio

    config = {"configurable": {"thread_id": "t"}}
    await async_saver.aget_tuple(config)
    with pytest.raises(asyncio.InvalidStateError, match="different thread"):
        async_saver.get_tuple(config)
    # From another thread it works.
    assert await asyncio.to_thread(async_saver.get_tuple, config) is None


def test_thread_documents_are_the_threads_own(sync_saver: CosmosDBSaver) -> None:
    """thread_documents returns every document of one thread and none of another's."""
    graph = build(sync_saver)
    for thread in ("a/b", "a\\b"):
        graph.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": thread}})
    docs = sync_saver.thread_documents("a/b")
    assert docs and {d["thread_id"] for d in docs} == {"a/b"}
    sync_saver.delete_thread("a/b")
    assert sync_saver.thread_documents("a/b") == []


async def test_athread_documents(async_saver: AsyncCosmosDBSaver) -> None:
    """athread_documents returns the thread's stored documents, all of that thread only."""
    graph = build(async_saver)
    await graph.ainvoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})
    docs = await async_saver.athread_documents("t")
    assert docs and {d["thread_id"] for d in docs} == {"t"}

"""delete_thread from another saver while a run is inside a node: under LangGraph's default
``durability="async"`` the run stores its next task's writes before (or while) its checkpoint
is refused; none of them outlive the delete, and the error says what was refused."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver, CosmosThreadDeletedError
from langgraph.graph import START, StateGraph

from .conftest import DATABASE, CosmosTestServer, new_container, raw_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _graph(saver: Any, slow: Any) -> Any:
    """START -> a -> slow -> c: ``c`` runs (and writes) after the checkpoint ``slow`` ends."""
    builder = StateGraph(Items)
    builder.add_node("a", lambda state: {"items": ["a"]})
    builder.add_node("slow", slow)
    builder.add_node("c", lambda state: {"items": ["c"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "slow")
    builder.add_edge("slow", "c")
    return builder.compile(checkpointer=saver)


def _left(server: CosmosTestServer, container: str) -> list[str]:
    """The id prefixes of every document in the container (``t.``: the tombstone)."""
    docs = raw_container(server, container).query_items(
        "SELECT c.id FROM c", enable_cross_partition_query=True
    )
    return sorted(str(d["id"])[:2] for d in docs)


def test_nothing_of_a_deleted_run_outlives_the_delete(server: CosmosTestServer) -> None:
    """The run fails with CosmosThreadDeletedError saying its writes were refused; only the
    tombstone is left (no pending writes of the checkpoint after ``slow``); a new run on the
    thread id starts afresh."""
    container, cfg = new_container(), {"configurable": {"thread_id": "deleted-run"}}
    gate, entered = threading.Event(), threading.Event()

    def slow(state: Items) -> dict[str, Any]:
        entered.set()
        gate.wait(20)
        return {"items": ["slow"]}

    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        graph = _graph(runner, slow)
        gate.set()
        graph.invoke({"items": ["u0"]}, cfg, durability="async")
        gate.clear()
        entered.clear()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                graph.invoke({"items": ["u1"]}, cfg, durability="async")
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert entered.wait(20)
        other.delete_thread("deleted-run")
        gate.set()
        worker.join(30)
        assert len(failure) == 1 and isinstance(failure[0], CosmosThreadDeletedError)
        assert "refused" in str(failure[0])
        assert "nothing of the run was stored" not in str(failure[0])
        assert _left(server, container) == ["t."]
        gate.set()
        out = graph.invoke({"items": ["fresh"]}, cfg, durability="async")
    assert out["items"] == ["fresh", "a", "slow", "c"]


async def test_nothing_of_a_deleted_async_run_outlives_the_delete(
    server: CosmosTestServer,
) -> None:
    """The same with AsyncCosmosDBSaver and ainvoke."""
    container, cfg = new_container(), {"configurable": {"thread_id": "deleted-arun"}}
    gate, entered = asyncio.Event(), asyncio.Event()

    async def slow(state: Items) -> dict[str, Any]:
        entered.set()
        await gate.wait()
        return {"items": ["slow"]}

    async with (
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        graph = _graph(runner, slow)
        gate.set()
        await graph.ainvoke({"items": ["u0"]}, cfg, durability="async")
        gate.clear()
        entered.clear()
        task = asyncio.create_task(graph.ainvoke({"items": ["u1"]}, cfg, durability="async"))
        await asyncio.wait_for(entered.wait(), 20)
        await other.adelete_thread("deleted-arun")
        gate.set()
        with pytest.raises(CosmosThreadDeletedError, match="refused"):
            await task
        assert _left(server, container) == ["t."]
        out = await graph.ainvoke({"items": ["fresh"]}, cfg, durability="async")
    assert out["items"] == ["fresh", "a", "slow", "c"]

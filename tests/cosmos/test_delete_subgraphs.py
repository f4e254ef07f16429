"""delete_thread while a run is inside a node, with subgraph calls (real server, real graphs).

A subgraph call checkpoints in a namespace of its own, and its first put has no parent to
refuse it by: it is refused by its root checkpoint (LangGraph's ``checkpoint_map``), which
the tombstone covers or whose own put was refused. Under ``durability="async"`` the call and
the root's put run side by side: the call's namespace then goes with the root's refusal, or
when the call stores next. Either way only the tombstone is left, and the run fails with
CosmosThreadDeletedError.
"""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import CosmosDBSaver, CosmosThreadDeletedError
from langgraph.graph import START, StateGraph

from .conftest import DATABASE, CosmosTestServer, documents_left, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _sub() -> Any:
    b = StateGraph(Items)
    b.add_node("s1", lambda s: {"items": ["s1"]})
    b.add_node("s2", lambda s: {"items": ["s2"]})
    b.add_edge(START, "s1")
    b.add_edge("s1", "s2")
    return b.compile()


def _drive(server: CosmosTestServer, build: Any, durability: str) -> None:
    container, cfg = new_container(), {"configurable": {"thread_id": "deleted-with-calls"}}
    gate, entered = threading.Event(), threading.Event()
    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        graph = build(runner, gate, entered)
        gate.set()
        graph.invoke({"items": ["u0"]}, cfg, durability=durability)
        gate.clear()
        entered.clear()
        failure: list[BaseException] = []
        result: list[Any] = []

        def run() -> None:
            try:
                result.append(graph.invoke({"items": ["u1"]}, cfg, durability=durability))
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert entered.wait(20)
        other.delete_thread("deleted-with-calls")
        gate.set()
        worker.join(30)
        left = documents_left(server, container)
        assert len(failure) == 1 and isinstance(failure[0], CosmosThreadDeletedError), (
            failure,
            result,
        )
        assert left == ["t.''"], left


def _sub_as_node(runner: Any, gate: threading.Event, entered: threading.Event) -> Any:
    def slow(state: Items) -> dict[str, Any]:
        entered.set()
        gate.wait(20)
        return {"items": ["slow"]}

    b = StateGraph(Items)
    b.add_node("slow", slow)
    b.add_node("sub", _sub())
    b.add_edge(START, "slow")
    b.add_edge("slow", "sub")
    return b.compile(checkpointer=runner)


def _sub_in_node(runner: Any, gate: threading.Event, entered: threading.Event) -> Any:
    sub = _sub()

    def node(state: Items) -> dict[str, Any]:
        entered.set()
        gate.wait(20)
        return {"items": sub.invoke({"items": ["x"]})["items"]}

    b = StateGraph(Items)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("node", node)
    b.add_edge(START, "a")
    b.add_edge("a", "node")
    return b.compile(checkpointer=runner)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_subgraph_node_after_the_deleted_node_leaves_nothing(
    server: CosmosTestServer, durability: str
) -> None:
    """START -> slow -> sub (a subgraph as a node): the thread is deleted while ``slow``
    runs."""
    _drive(server, _sub_as_node, durability)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_subgraph_invoked_in_the_deleted_node_leaves_nothing(
    server: CosmosTestServer, durability: str
) -> None:
    """A node calls ``sub.invoke`` after the thread was deleted while it ran."""
    _drive(server, _sub_in_node, durability)

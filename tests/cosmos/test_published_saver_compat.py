"""Our MessageReducer as the reducer= of the published langgraph-checkpoint-cosmosdb saver,
as the seed README shows it."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from agentstate_reducer import MessageReducer, PruneHookError, ReducerConfig
from tests._cosmos import import_published_saver

from .conftest import CosmosTestServer, new_container

pytestmark = pytest.mark.cosmos

published = import_published_saver()


def _published_graph(reducer: MessageReducer) -> Any:
    """A one-node chat graph on the published saver, with ``reducer`` as its ``reducer=``."""
    saver = published.CosmosDBSaver(
        database_name="compat", container_name=new_container(), reducer=reducer
    )

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="ok")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def test_message_reducer_works_in_the_published_saver(
    server: CosmosTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published saver calls reducer.reduce(existing=..., new=[], namespace=...) and stores
    result.surviving; with our reducer the stored list stays bounded and pruned messages reach
    on_prune with the thread's memory namespace."""
    monkeypatch.setenv("COSMOSDB_ENDPOINT", server.endpoint)
    monkeypatch.setenv("COSMOSDB_KEY", server.key)
    seen: list[tuple[str, Any]] = []

    def remember(messages: list[Any], namespace: Any) -> None:
        seen.extend((m.id, namespace) for m in messages)

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=4, max_messages=8, on_prune=[remember])
    )
    with warnings.catch_warnings():
        # The published saver leaves TLS verification to the SDK, which skips it for 127.0.0.1.
        warnings.simplefilter("ignore")
        graph = _published_graph(reducer)
        saver = graph.checkpointer
        config = {"configurable": {"thread_id": "compat"}}
        for turn in range(10):
            graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
        stored = saver.get_tuple(config)
    assert stored is not None
    assert len(stored.checkpoint["channel_values"]["messages"]) <= 8
    assert seen and all(ns == ("memories", "compat") for _, ns in seen)
    assert len({mid for mid, _ in seen}) == len(seen)


def test_the_published_saver_with_keep_survives_a_memory_outage(
    server: CosmosTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CHANGELOG's migration advice for savers that call reduce() themselves:
    ReducerConfig(on_prune_error="keep") keeps every turn going while the hook fails (0.5's
    behaviour) and, unlike 0.5, loses nothing: once the hook is back, every pruned message
    reaches it exactly once. With the default ("raise") the failing turn raises."""
    monkeypatch.setenv("COSMOSDB_ENDPOINT", server.endpoint)
    monkeypatch.setenv("COSMOSDB_KEY", server.key)
    delivered: list[str] = []
    outage = {"on": True}

    def remember(messages: list[Any], namespace: Any) -> None:
        if outage["on"]:
            raise ConnectionError("memory store down")
        delivered.extend(m.id for m in messages)

    def graph_for(on_prune_error: str) -> Any:
        config = ReducerConfig(
            min_messages=4,
            max_messages=8,
            on_prune=[remember],
            on_prune_error=on_prune_error,  # type: ignore[arg-type]
            retry_backoff=0,
        )
        return _published_graph(MessageReducer(config=config))

    asked: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = graph_for("keep")
        config = {"configurable": {"thread_id": "outage"}}
        for turn in range(12):
            if turn == 8:
                outage["on"] = False
            message = HumanMessage(content=f"q{turn}", id=f"q{turn}")
            asked.append(f"q{turn}")
            graph.invoke({"messages": [message]}, config)
        stored = graph.get_state(config).values["messages"]

        strict = graph_for("raise")
        outage["on"] = True
        with pytest.raises(PruneHookError, match="memory store down"):
            for turn in range(6):
                strict.invoke({"messages": [HumanMessage(content=f"s{turn}")]}, config)

    stored_ids = {m.id for m in stored}
    assert len(stored) <= 8
    assert len(delivered) == len(set(delivered)), "a pruned message was delivered twice"
    # Every question is either still in the thread or was handed to memory: none lost.
    assert [q for q in asked if q not in stored_ids and q not in delivered] == []
    assert any(q in delivered for q in asked), "the hand-offs kept during the outage never ran"

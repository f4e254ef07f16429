"""Our MessageReducer as the reducer= of the published langgraph-checkpoint-cosmosdb saver,
as the seed README shows it."""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from agentstate_reducer import MessageReducer, ReducerConfig

from .conftest import CosmosTestServer, new_container

pytestmark = pytest.mark.cosmos

# A dev dependency: CI must have it; elsewhere the test is skipped without it.
if os.environ.get("CI", "").lower() == "true":
    import langgraph_checkpoint_cosmosdb as published
else:
    published = pytest.importorskip("langgraph_checkpoint_cosmosdb")


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
        saver = published.CosmosDBSaver(
            database_name="compat", container_name=new_container(), reducer=reducer
        )

        def reply(state: MessagesState) -> dict[str, Any]:
            return {"messages": [AIMessage(content="ok")]}

        builder = StateGraph(MessagesState)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        builder.add_edge("reply", END)
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "compat"}}
        for turn in range(10):
            graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
        stored = saver.get_tuple(config)
    assert stored is not None
    assert len(stored.checkpoint["channel_values"]["messages"]) <= 8
    assert seen and all(ns == ("memories", "compat") for _, ns in seen)
    assert len({mid for mid, _ in seen}) == len(seen)

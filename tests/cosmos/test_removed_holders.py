"""A removed checkpoint kept as a holder of values is refused for a fork; with ttl= a value gone
before its recorded expiry is missing, not expired (real server, real graphs; found by a
production review)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from agentstate_cosmosdb import (
    CosmosCheckpointRemovedError,
    CosmosDBSaver,
    CosmosMissingDocumentError,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from .conftest import DATABASE, CosmosTestServer, new_container, raw_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class State(MessagesState, total=False):
    profile: str  # written on the first turn only: later checkpoints inherit it


def _graph(saver: Any) -> Any:
    def reply(state: State) -> dict[str, Any]:
        update: dict[str, Any] = {
            "messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]
        }
        if not state.get("profile"):
            update["profile"] = "P" * 20_000
        return update

    builder = StateGraph(State)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("how", ["update_state", "time_travel"])
def test_a_checkpoint_kept_as_a_values_holder_is_removed_for_a_fork(
    server: CosmosTestServer, how: str
) -> None:
    """keep_checkpoints removes a checkpoint but keeps its document as the holder of a value
    newer checkpoints inherit: a fork or time travel from a config naming it must be refused
    like any other removed checkpoint, not run from an empty state that becomes the latest."""
    cfg = {"configurable": {"thread_id": "ui"}}
    with CosmosDBSaver(DATABASE, new_container(), keep_checkpoints=2, **saver_kwargs(server)) as s:
        graph = _graph(s)
        graph.invoke({"messages": [HumanMessage(content=secrets.token_hex(5_000))]}, cfg)
        kept = [snap.config for snap in graph.get_state_history(cfg)]
        for n in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"t{n}")]}, cfg)
        before = graph.get_state(cfg).values["messages"]
        for old in kept:
            assert s.get_tuple(old) is None
            with pytest.raises(CosmosCheckpointRemovedError):
                if how == "update_state":
                    graph.update_state(old, {"messages": [HumanMessage(content="fork")]})
                else:
                    graph.invoke({"messages": [HumanMessage(content="again")]}, old)
        assert graph.get_state(cfg).values["messages"] == before


def test_with_ttl_a_missing_value_of_a_live_thread_is_an_error(server: CosmosTestServer) -> None:
    """With ttl=, a value document the live head references that is gone long before its
    recorded expiry (deleted by hand, a partial restore) raises CosmosMissingDocumentError,
    as without ttl=; it is not read as an expired thread that the next run replaces."""
    cfg = {"configurable": {"thread_id": "t"}}
    container = new_container()
    with CosmosDBSaver(DATABASE, container, ttl=3600, **saver_kwargs(server)) as s:
        graph = _graph(s)
        graph.invoke({"messages": [HumanMessage(content=secrets.token_urlsafe(600_000))]}, cfg)
        graph.invoke({"messages": [HumanMessage(content="next")]}, cfg)
        raw = raw_container(server, container)
        head = next(
            raw.query_items(
                "SELECT * FROM c WHERE STARTSWITH(c.id, 'h.')", enable_cross_partition_query=True
            )
        )
        raw.delete_item(head["origins"]["messages"], partition_key=head["pk"])
        with pytest.raises(CosmosMissingDocumentError):
            s.get_tuple(cfg)
        with pytest.raises(CosmosMissingDocumentError):
            graph.invoke({"messages": [HumanMessage(content="third")]}, cfg)

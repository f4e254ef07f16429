"""The reducer hook: reducer= and messages_key= behave as ReducingCheckpointSaver does."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import ReducingCheckpointSaver
from tests.langgraph_saver._graphs import assert_one_running_summary, summarise_a_subgraph_chat

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos

TURNS = 15


def reply(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    return {"messages": [AIMessage(content=f"re: {last.content}", id=f"re-{last.id}")]}


def build(saver: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def make_reducer(pruned: list[Any]) -> MessageReducer:
    def remember(messages: list[Any], namespace: Any) -> None:
        pruned.extend(m.id for m in messages)

    return MessageReducer(config=ReducerConfig(min_messages=4, max_messages=8, on_prune=[remember]))


def run_sync(saver: Any, thread: str) -> list[str]:
    graph = build(saver)
    config = {"configurable": {"thread_id": thread}}
    for turn in range(TURNS):
        graph.invoke({"messages": [HumanMessage(content=f"q{turn}", id=f"h{turn}")]}, config)
    return [m.content for m in graph.get_state(config).values["messages"]]


def test_reducing_saver_matches_reducing_checkpoint_saver(server: CosmosTestServer) -> None:
    """A CosmosDBSaver with reducer= stores exactly what ReducingCheckpointSaver(InMemorySaver)
    stores, keeps the stored list bounded, and hands every pruned message to on_prune once."""
    pruned_cosmos: list[Any] = []
    pruned_memory: list[Any] = []
    with CosmosDBSaver(
        DATABASE,
        new_container(),
        reducer=make_reducer(pruned_cosmos),
        messages_key="messages",
        **saver_kwargs(server),
    ) as saver:
        assert saver.message_reduction is not None
        stored = run_sync(saver, "r1")
        for tup in saver.list({"configurable": {"thread_id": "r1"}}):
            assert len(tup.checkpoint["channel_values"].get("messages", [])) <= 8
    reference = run_sync(
        ReducingCheckpointSaver(InMemorySaver(), make_reducer(pruned_memory)), "r1"
    )
    assert stored == reference
    assert len(stored) <= 8
    assert pruned_cosmos == pruned_memory
    assert len(pruned_cosmos) == len(set(pruned_cosmos)) > 0


async def test_async_reducing_saver(server: CosmosTestServer) -> None:
    """The async saver reduces the same way."""
    pruned: list[Any] = []
    async with AsyncCosmosDBSaver(
        DATABASE, new_container(), reducer=make_reducer(pruned), **saver_kwargs(server)
    ) as saver:
        graph = build(saver)
        config = {"configurable": {"thread_id": "r2"}}
        for turn in range(TURNS):
            await graph.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
        state = await graph.aget_state(config)
        assert 4 <= len(state.values["messages"]) <= 8
        assert len(pruned) == len(set(pruned)) > 0


def test_wrapping_a_reducing_saver_reduces_once(server: CosmosTestServer) -> None:
    """ReducingCheckpointSaver around a reducing CosmosDBSaver with the same reducer passes
    through: messages are pruned and delivered once, not twice."""
    pruned: list[Any] = []
    reducer = make_reducer(pruned)
    with CosmosDBSaver(DATABASE, new_container(), reducer=reducer, **saver_kwargs(server)) as inner:
        wrapper = ReducingCheckpointSaver(inner, reducer)
        assert wrapper.reduces is False
        assert wrapper.message_reduction is inner.message_reduction
        run_sync(wrapper, "r3")
    assert len(pruned) == len(set(pruned)) > 0


def test_a_memory_outage_keeps_the_turn_and_hands_over_later(server: CosmosTestServer) -> None:
    """When an on_prune hook fails, the turn still succeeds and its checkpoint is stored
    unpruned (over the bound for a while); once the hook works, the next put hands the
    messages over, once each, and the stored list is bounded again."""
    taken: list[str] = []
    down = {"on": True}

    def store(messages: list[Any], namespace: Any) -> None:
        if down["on"]:
            raise RuntimeError("memory store down")
        taken.extend(m.id for m in messages)

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=2, max_messages=3, on_prune=[store], retry_backoff=0)
    )
    with CosmosDBSaver(DATABASE, new_container(), reducer=reducer, **saver_kwargs(server)) as saver:
        graph = build(saver)
        config = {"configurable": {"thread_id": "r4"}}
        for n in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"q{n}", id=f"q{n}")]}, config)
        stored = graph.get_state(config).values["messages"]
        assert len(stored) > 3 and {"q0", "q1", "q2"} <= {m.id for m in stored}
        down["on"] = False
        graph.invoke({"messages": [HumanMessage(content="q3", id="q3")]}, config)
        stored = graph.get_state(config).values["messages"]
        assert len(stored) <= 3
        assert len(taken) == len(set(taken))
        assert set(taken) | {m.id for m in stored} >= {"q0", "q1", "q2", "q3"}


@pytest.mark.parametrize("interrupts", [False, True], ids=["straight", "interrupt-in-subgraph"])
def test_a_subgraph_sharing_the_messages_keeps_one_running_summary(
    server: CosmosTestServer, interrupts: bool
) -> None:
    """A running summary over a graph whose subgraph shares the parent's messages, on the
    real server under LangGraph's default durability ("async"), as
    ReducingCheckpointSaver is tested (the orders a late put makes are drawn there, by
    test_a_subgraph_whose_parent_puts_land_late_is_summarised_once): every message
    reaches summarize_fn once and on_prune once, and the thread keeps one summary block."""
    with ExitStack() as stack:

        def saver_for(reducer: MessageReducer) -> CosmosDBSaver:
            saver = CosmosDBSaver(
                DATABASE, new_container(), reducer=reducer, **saver_kwargs(server)
            )
            return stack.enter_context(saver)

        assert_one_running_summary(
            *summarise_a_subgraph_chat(saver_for, f"subgraph-{interrupts}", interrupts)
        )

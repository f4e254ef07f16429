"""``create_reduction_node`` and ``messages_update``: bounding a plain ``MessagesState``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from pydantic import BaseModel

from agentstate_reducer import MessageReducer, ReducerConfig, SummaryError
from agentstate_reducer.langgraph import create_reduction_node, messages_update
from tests.scripted_model import calculator_model, provider_errors

from .graphs import HOWS, How, run, tool_loop
from .validity import assert_valid

SYSTEM = "You add numbers."


def _history(n: int) -> list[Any]:
    items = [SystemMessage(SYSTEM)] + [
        HumanMessage(f"q{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(n)
    ]
    return add_messages([], items)


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 12),
    keep=st.lists(st.booleans(), min_size=12, max_size=12),
    new_at=st.lists(st.integers(0, 13), max_size=3),
    new_ids=st.booleans(),
    swap=st.booleans(),
)
def test_messages_update_turns_before_into_after(
    size: int, keep: list[bool], new_at: list[int], new_ids: bool, swap: bool
) -> None:
    """Property: for any list ``before`` (with add_messages ids) and any ``after`` made of
    some of its messages plus new ones at any positions (with or without ids, optionally
    with one kept message replaced by an edited copy), ``add_messages(before,
    messages_update(before, after))`` is ``after``, message for message; the update avoids
    ``REMOVE_ALL_MESSAGES`` exactly when every new message comes after every kept one."""
    before = _history(size)
    after = [m for m, k in zip(before, keep, strict=False) if k]
    if swap and after:
        after[0] = after[0].model_copy(update={"content": "edited"})
    for n, at in enumerate(new_at):
        new = HumanMessage(f"new{n}", id=f"new-{n}" if new_ids else None)
        after.insert(min(at, len(after)), new)
    expected_contents = [m.content for m in after]
    update = messages_update(before, after)
    result = add_messages(before, update)
    assert [m.content for m in result] == expected_contents
    assert all(m.id for m in result)
    kept_positions = [i for i, m in enumerate(after) if m.id in {b.id for b in before}]
    new_positions = [i for i, m in enumerate(after) if i not in kept_positions]
    appends_only = (
        not kept_positions or not new_positions or min(new_positions) > max(kept_positions)
    )
    uses_remove_all = any(
        isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in update
    )
    assert uses_remove_all == (not appends_only)
    if [id(m) for m in after] == [id(m) for m in before]:
        assert update == []


def test_messages_update_replaces_everything_when_before_lacks_ids() -> None:
    """Without ids RemoveMessage cannot target a message, so the whole list is replaced."""
    before = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    update = messages_update(before, before[1:])
    assert isinstance(update[0], RemoveMessage) and update[0].id == REMOVE_ALL_MESSAGES
    assert update[1:] == before[1:]


def test_node_returns_nothing_when_nothing_is_pruned() -> None:
    """Below the limit the node writes nothing, so no new channel version is stored."""
    node = create_reduction_node(MessageReducer(min_messages=2, max_messages=10))
    assert node.invoke({"messages": _history(4)}) == {}


def test_node_prunes_with_remove_messages_only_when_no_summary() -> None:
    """Without a summary the update is one RemoveMessage per pruned message: messages that
    other nodes write in the same step are left alone."""
    history = _history(8)
    node = create_reduction_node(MessageReducer(min_messages=3, max_messages=5))
    update = node.invoke({"messages": history})["messages"]
    assert all(isinstance(m, RemoveMessage) and m.id != REMOVE_ALL_MESSAGES for m in update)
    assert [m.content for m in add_messages(history, update)] == [SYSTEM, "a5", "q6", "a7"]


@pytest.mark.parametrize("how", HOWS)
async def test_node_bounds_a_tool_loop(how: How) -> None:
    """In a MessagesState tool loop with the node before the model, over six turns every
    super-step leaves a valid list holding the system prompt and the turn's question, the
    stored list never exceeds max_messages + 2 (the answer written after the last
    reduction and the next question, which arrive before the node runs), and the model
    is only called with at most max_messages messages."""
    model = calculator_model()
    node = create_reduction_node(MessageReducer(min_messages=4, max_messages=6))
    graph = tool_loop(MessagesState, model, before_model=node).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"node-{how}"}}
    for turn in range(6):
        question = f"question {turn}"
        first = [SystemMessage(SYSTEM)] if turn == 0 else []
        for messages in await run(
            graph, {"messages": [*first, HumanMessage(question)]}, config, how
        ):
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert len(messages) <= 8
    assert len(model.calls) == 12
    assert max(len(call) for call in model.calls) <= 6


@pytest.mark.parametrize("how", HOWS)
async def test_node_puts_the_summary_where_the_pruned_block_was(how: How) -> None:
    """With an injected summary, the node replaces the list so the summary block sits right
    after the system prompt, the list stays valid after every super-step, each pruned
    message reaches the hook once, with the thread's namespace."""
    delivered: list[tuple[Any, Any]] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=6,
            summarize_fn=lambda pruned: f"{len(pruned)} earlier messages",
            inject_summary=True,
            on_prune=lambda pruned, ns: delivered.extend((m.id, ns) for m in pruned),
        )
    )
    model = calculator_model()
    graph = tool_loop(MessagesState, model, before_model=create_reduction_node(reducer)).compile(
        checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": f"sum-{how}"}}
    for turn in range(5):
        question = f"question {turn}"
        first = [SystemMessage(SYSTEM)] if turn == 0 else []
        for messages in await run(
            graph, {"messages": [*first, HumanMessage(question)]}, config, how
        ):
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
    final = graph.get_state(config).values["messages"]
    assert str(final[1].content).startswith("Summary of the")
    assert final[1].id and final[2].id
    assert delivered, "nothing was pruned"
    ids = [message_id for message_id, _ in delivered]
    assert len(ids) == len(set(ids))
    assert {ns for _, ns in delivered} == {("memories", f"sum-{how}")}


async def test_node_reads_the_namespace_key_from_the_config() -> None:
    """``configurable[namespace_key]`` overrides the per-thread default namespace."""
    seen: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=3, on_prune=lambda pruned, ns: seen.append(ns)
        )
    )
    node = create_reduction_node(reducer)
    config: Any = {"configurable": {"thread_id": "t", "memory_namespace": ("user", "42")}}
    node.invoke({"messages": _history(6)}, config)
    await node.ainvoke({"messages": _history(6)}, config)
    assert seen == [("user", "42"), ("user", "42")]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_a_failing_summary_leaves_the_state_unchanged(how: How) -> None:
    """A summarizer that is down never fails the run by default: the node leaves the state
    as it is (nothing pruned, the answer stored); with on_prune_error="raise" SummaryError
    propagates out of the run and the stored list is the one before it."""

    def broken(pruned: list[Any]) -> str:
        raise RuntimeError("summariser down")

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=1, max_messages=2, summarize_fn=broken, inject_summary=True
        )
    )
    kept = tool_loop(
        MessagesState, calculator_model(), before_model=create_reduction_node(reducer)
    ).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "broken"}}
    if how == "invoke":
        kept.invoke({"messages": _history(4)}, config)
    else:
        await kept.ainvoke({"messages": _history(4)}, config)
    assert len(kept.get_state(config).values["messages"]) > 5  # the turn went through

    node = create_reduction_node(reducer, on_prune_error="raise")
    graph = tool_loop(MessagesState, calculator_model(), before_model=node).compile(
        checkpointer=InMemorySaver()
    )
    with pytest.raises(SummaryError, match="summariser down"):
        if how == "invoke":
            graph.invoke({"messages": _history(4)}, config)
        else:
            await graph.ainvoke({"messages": _history(4)}, config)
    assert len(graph.get_state(config).values["messages"]) == 5


def test_node_names_a_missing_key() -> None:
    """A wrong messages_key fails with the keys the state has."""
    node = create_reduction_node(MessageReducer(), messages_key="history")
    with pytest.raises(KeyError, match=r"no 'history' key.*pass messages_key="):
        node.invoke({"messages": []})
    with pytest.raises(ValueError, match="messages_key must be a non-empty string"):
        create_reduction_node(MessageReducer(), messages_key="")


def _conversation(turns: list[int], with_system: bool) -> list[Any]:
    """A valid history: per turn a question, ``n`` tool calls with results, an answer."""
    items: list[Any] = [SystemMessage(SYSTEM)] if with_system else []
    for t, calls in enumerate(turns):
        items.append(HumanMessage(f"q{t}"))
        if calls:
            ids = [f"call-{t}-{c}" for c in range(calls)]
            items.append(
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "add", "args": {}, "id": i, "type": "tool_call"} for i in ids
                    ],
                )
            )
            items += [ToolMessage(str(c), tool_call_id=i) for c, i in enumerate(ids)]
        items.append(AIMessage(f"a{t}"))
    return add_messages([], items)


@settings(max_examples=200, deadline=None)
@given(
    turns=st.lists(st.integers(0, 3), max_size=8),
    with_system=st.booleans(),
    window=st.tuples(st.integers(1, 6), st.integers(1, 10)).filter(lambda w: w[0] <= w[1]),
    summarize=st.booleans(),
)
def test_node_update_stores_exactly_the_surviving_list(
    turns: list[int], with_system: bool, window: tuple[int, int], summarize: bool
) -> None:
    """Property: for any valid tool-calling history and reducer window, applying the node's
    update with ``add_messages`` stores exactly what an identical reducer's ``reduce``
    keeps (summary block included, in place), every stored message has an id, and the
    stored list is still one a provider accepts."""

    def config() -> ReducerConfig:
        return ReducerConfig(
            min_messages=window[0],
            max_messages=window[1],
            summarize_fn=(lambda pruned: "gist") if summarize else None,
            inject_summary=summarize,
        )

    history = _conversation(turns, with_system)
    expected = MessageReducer(config=config()).reduce(list(history)).surviving
    update = create_reduction_node(MessageReducer(config=config())).invoke({"messages": history})
    stored = add_messages(history, update.get("messages", []))
    assert [(m.type, m.content) for m in stored] == [(m.type, m.content) for m in expected]
    assert all(m.id for m in stored)
    if turns:
        assert provider_errors(stored) == []


class _ModelState(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_node_reads_attribute_style_state(how: How) -> None:
    """A pydantic state schema works too: the node reads the field and bounds it."""
    builder = StateGraph(_ModelState)
    builder.add_node(
        "reduce", create_reduction_node(MessageReducer(min_messages=2, max_messages=3))
    )
    builder.add_edge(START, "reduce")
    builder.add_edge("reduce", END)
    graph = builder.compile()
    inputs = {"messages": _history(6)}
    out = graph.invoke(inputs) if how == "invoke" else await graph.ainvoke(inputs)
    assert [m.content for m in out["messages"]] == [SYSTEM, "q4", "a5"]

"""``Annotated[list, reducer.as_langgraph_reducer()]`` in real graphs.

Tool loops driven by the scripted model, a subgraph, ``Command``, an interrupt resumed
through a checkpointer; sync and async. After every super-step the list is valid.
"""

# No ``from __future__ import annotations``: the state classes below are built inside
# functions, and LangGraph resolves their annotations at runtime.

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from agentstate_reducer import MessageReducer, ReducerConfig
from tests.scripted_model import add, calculator_model

from .graphs import HOWS, How, agent_node, run, tool_loop
from .validity import assert_valid

SYSTEM = "You add numbers."

# A window must hold one tool turn (system, question, call, result): the newest question
# and whole tool pairs are never pruned, so a max below that cannot be met.
WINDOWS = [
    pytest.param(4, 6, id="window-4-6"),
    pytest.param(3, 5, id="window-3-5"),
]


def _state(reducer: MessageReducer) -> type[Any]:
    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]

    return State


def _first(turn: int, question: str) -> dict[str, Any]:
    system = [SystemMessage(SYSTEM)] if turn == 0 else []
    return {"messages": [*system, HumanMessage(question)]}


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize(("low", "high"), WINDOWS)
async def test_tool_loop_state_stays_bounded_and_valid(how: How, low: int, high: int) -> None:
    """Over six tool-loop turns, the list after every super-step is valid (system prompt
    first, the turn's question present, calls and results paired), holds at most
    max_messages, and the model is never called with more."""
    reducer = MessageReducer(min_messages=low, max_messages=high)
    model = calculator_model()
    graph = tool_loop(_state(reducer), model).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"loop-{how}-{low}"}}
    for turn in range(6):
        question = f"question {turn}"
        for messages in await run(graph, _first(turn, question), config, how):
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert len(messages) <= high
    assert max(len(call) for call in model.calls) <= high


@pytest.mark.parametrize("how", HOWS)
async def test_subgraph_and_command(how: How) -> None:
    """A parent graph runs the tool loop as a subgraph sharing the annotated channel, then a
    node answers with ``Command(update=..., goto=...)``: every super-step of parent and
    subgraph is valid and bounded, and the parent keeps the subgraph's bound."""
    reducer = MessageReducer(min_messages=4, max_messages=6)
    state = _state(reducer)
    model = calculator_model()
    inner = tool_loop(state, model).compile()

    def review(current: Any) -> Command[Any]:
        return Command(update={"messages": [AIMessage("Reviewed.")]}, goto="done")

    def done(current: Any) -> dict[str, Any]:
        return {}

    builder = StateGraph(state)
    builder.add_node("chat", inner)
    builder.add_node("review", review)
    builder.add_node("done", done)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "review")
    builder.add_edge("done", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"sub-{how}"}}
    for turn in range(4):
        question = f"question {turn}"
        steps = await run(graph, _first(turn, question), config, how)
        for messages in steps:
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert len(messages) <= 6
    final = graph.get_state(config).values["messages"]
    assert final[-1].content == "Reviewed."
    assert max(len(call) for call in model.calls) <= 6


@pytest.mark.parametrize("how", HOWS)
async def test_interrupt_resumed_through_a_checkpointer(how: How) -> None:
    """A human-approval interrupt before each tool run: the state stored at the interrupt
    and after resuming with ``Command(resume=...)`` is valid and bounded, and resuming does
    not bring pruned messages back."""
    reducer = MessageReducer(min_messages=4, max_messages=6)
    state = _state(reducer)
    model = calculator_model()

    def approve(current: Any) -> dict[str, Any]:
        answer = interrupt({"tool_calls": current["messages"][-1].tool_calls})
        return {"messages": [HumanMessage(f"approved: {answer}")]} if answer != "yes" else {}

    builder = StateGraph(state)
    builder.add_node("agent", agent_node(model))
    builder.add_node("approve", approve)
    builder.add_node("tools", ToolNode([add]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "approve", END: END})
    builder.add_edge("approve", "tools")
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"hitl-{how}"}}
    seen_ids: set[str] = set()
    pruned_ids: set[str] = set()
    for turn in range(4):
        question = f"question {turn}"
        steps = await run(graph, _first(turn, question), config, how)
        snapshot = graph.get_state(config)
        assert snapshot.next == ("approve",)
        assert snapshot.interrupts
        steps += await run(graph, Command(resume="yes"), config, how)
        for messages in steps:
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert len(messages) <= 6
        final = graph.get_state(config).values["messages"]
        ids = {m.id for m in final}
        assert final[-1].content.startswith("The sum is")
        assert not (pruned_ids & ids), "a pruned message came back"
        pruned_ids |= seen_ids - ids
        seen_ids |= ids
    assert pruned_ids


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_summary_ids_can_be_removed_from_a_graph(how: How) -> None:
    """An injected summary carries an id that a node can target with RemoveMessage."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=4, summarize_fn=lambda pruned: "s", inject_summary=True
        )
    )
    state = _state(reducer)

    def forget_summary(current: Any) -> dict[str, Any]:
        summaries = [m for m in current["messages"] if str(m.content).startswith("Summary of")]
        return {"messages": [RemoveMessage(id=m.id) for m in summaries]}

    builder = StateGraph(state)
    builder.add_node("forget", forget_summary)
    builder.add_edge(START, "forget")
    builder.add_edge("forget", END)
    graph = builder.compile()
    history = [SystemMessage(SYSTEM)] + [
        HumanMessage(f"q{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(6)
    ]
    if how == "invoke":
        result = graph.invoke({"messages": history})
    else:
        result = await graph.ainvoke({"messages": history})
    assert len(result["messages"]) < len(history)
    assert not any(str(m.content).startswith("Summary of") for m in result["messages"])
    assert result["messages"][0].content == SYSTEM


def test_the_channel_can_appear_in_several_schemas() -> None:
    """Input, output and state schemas may each annotate the key with as_langgraph_reducer()
    (LangGraph requires the same channel reducer everywhere the key appears)."""
    reducer = MessageReducer(min_messages=2, max_messages=3)

    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]
        notes: str

    class Public(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]

    builder = StateGraph(State, input_schema=Public, output_schema=Public)
    builder.add_node("echo", lambda s: {"messages": [AIMessage("echo")], "notes": "x"})
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    out = builder.compile().invoke({"messages": [("user", f"m{i}") for i in range(5)]})
    assert [m.content for m in out["messages"]] == ["m0", "m4", "echo"]


@pytest.mark.parametrize("how", HOWS)
async def test_token_budget_in_a_tool_loop(how: How) -> None:
    """Token mode: after every super-step the list is valid and counts at most max_tokens
    by the reducer's own counter, and the model is never called with more."""
    reducer = MessageReducer(config=ReducerConfig(max_tokens=120, target_tokens=80))
    model = calculator_model()
    graph = tool_loop(_state(reducer), model).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"tokens-{how}"}}

    def tokens(messages: list[Any]) -> int:
        return sum(reducer.count_tokens(m) for m in messages)

    for turn in range(6):
        question = f"question {turn}"
        for messages in await run(graph, _first(turn, question), config, how):
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert tokens(messages) <= 120
    assert max(tokens(call) for call in model.calls) <= 120
    assert len(graph.get_state(config).values["messages"]) < 4 * 6


@pytest.mark.parametrize("how", HOWS)
async def test_append_mode_keeps_plain_dicts_in_a_graph(how: How) -> None:
    """A graph whose nodes speak OpenAI-format dicts keeps dicts with merge="append": the
    stored list holds only dicts, stays bounded and valid, and a dict that reuses an id
    replaces the earlier one in place."""
    reducer = MessageReducer(min_messages=3, max_messages=5)

    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer(merge="append")]

    def reply(current: Any) -> dict[str, Any]:
        question = current["messages"][-1]["content"]
        return {
            "messages": [
                {"role": "assistant", "content": f"draft: {question}", "id": f"r-{question}"},
                {"role": "assistant", "content": f"answer: {question}", "id": f"r-{question}"},
            ]
        }

    builder = StateGraph(State)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": f"dicts-{how}"}}
    for turn in range(5):
        question = f"q{turn}"
        system = [{"role": "system", "content": SYSTEM}] if turn == 0 else []
        inputs = {"messages": [*system, {"role": "user", "content": question}]}
        for messages in await run(graph, inputs, config, how):
            assert all(isinstance(m, dict) for m in messages)
            assert_valid(messages, system_prompt=SYSTEM, newest_human=question)
            assert len(messages) <= 5
    final = graph.get_state(config).values["messages"]
    assert final[-1] == {"role": "assistant", "content": "answer: q4", "id": "r-q4"}
    assert not any(str(m["content"]).startswith("draft") for m in final)

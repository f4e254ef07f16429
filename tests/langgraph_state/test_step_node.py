"""The one-step reduction node, in a real graph: clear old tool outputs, then drop turns."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import create_reduction_step_node
from agentstate_reducer.policy import ClearToolOutputs, DropOldest
from tests.scripted_model import ScriptedChatModel, tool_call

from .graphs import HOWS, How, run
from .validity import assert_valid

BIG = "row " * 150  # about 150 tokens of tool output


def lookup_tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup(query: str) -> str:
        """Look a query up."""
        return BIG

    return lookup


def script(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return tool_call("lookup", {"query": str(last.content)})
    if isinstance(last, ToolMessage):
        return "Found it."
    return "Done."


def build(reducer: MessageReducer, model: ScriptedChatModel) -> Any:
    lookup = lookup_tool()
    bound = model.bind_tools([lookup])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    def pick(state: MessagesState) -> str:
        # Derived from state: clear first; once outputs are cleared, drop turns.
        cleared = sum(
            isinstance(m, ToolMessage) and m.content == ClearToolOutputs().placeholder
            for m in state["messages"]
        )
        return "drop_oldest" if cleared >= 2 else "clear_tool_outputs"

    builder = StateGraph(MessagesState)
    builder.add_node("clear", create_reduction_step_node(reducer, "clear_tool_outputs"))
    builder.add_node("shrink", create_reduction_step_node(reducer, pick))
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "clear")
    builder.add_edge("clear", "shrink")
    builder.add_edge("shrink", "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "clear")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("how", HOWS)
async def test_step_nodes_keep_the_stored_state_within_budget(how: How) -> None:
    """Each node runs exactly its step; cleared outputs are persisted in the checkpoint,
    the model is never called over the trigger, and every super-step is valid."""
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=600,
            target_tokens=450,
            policy=[ClearToolOutputs(keep_last=1), DropOldest()],
        )
    )
    model = ScriptedChatModel(script=[script], cycle=True)
    graph = build(reducer, model)
    config: Any = {"configurable": {"thread_id": f"steps-{how}"}}
    for turn in range(8):
        first = [SystemMessage("You look things up.")] if turn == 0 else []
        inputs = {"messages": [*first, HumanMessage(f"question {turn}")]}
        for messages in await run(graph, inputs, config, how):
            assert_valid(
                messages, system_prompt="You look things up.", newest_human=f"question {turn}"
            )
    stored = graph.get_state(config).values["messages"]
    tools = [m for m in stored if isinstance(m, ToolMessage)]
    assert tools[-1].content == BIG
    assert all(m.content == ClearToolOutputs().placeholder for m in tools[:-1])
    assert max(sum(reducer.count_tokens(m) for m in call) for call in model.calls) <= 600


def test_fixed_step_ids_are_checked_when_the_node_is_built() -> None:
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100, policy=[DropOldest()]))
    with pytest.raises(KeyError, match="no reduction step 'clear_tool_outputs'"):
        create_reduction_step_node(reducer, "clear_tool_outputs")
    with pytest.raises(TypeError, match="step_id must be a step id"):
        create_reduction_step_node(reducer, 3)  # type: ignore[arg-type]


def test_update_callback_records_the_step_report() -> None:
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=100, policy=[ClearToolOutputs(keep_last=0)])
    )
    node = create_reduction_step_node(
        reducer,
        "clear_tool_outputs",
        update=lambda result, state: {"report": [r.step for r in result.steps]},
    )
    call = tool_call("lookup", {"query": "x"}, id="c1")
    state = {
        "messages": [
            HumanMessage("q", id="h"),
            call.model_copy(update={"id": "a"}),
            ToolMessage(BIG, tool_call_id="c1", id="t"),
        ]
    }
    out = node.invoke(state, {"configurable": {"thread_id": "t"}})
    assert out["report"] == ["clear_tool_outputs"]
    [replaced] = out["messages"]
    assert replaced.id == "t" and replaced.content == ClearToolOutputs().placeholder

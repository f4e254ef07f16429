"""Real graphs for the state tests, and a runner that returns the state after every super-step.

``run`` drives a compiled graph one way (``invoke``, ``ainvoke``, ``stream``, ``astream``)
and returns the message list after each super-step of that run: from the checkpointer's
history (every ``loop`` checkpoint the run wrote) and, when streaming, from every
``values`` event too, subgraph events included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.messages import AnyMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from tests.scripted_model import ScriptedChatModel, add

How = Literal["invoke", "ainvoke", "stream", "astream"]
HOWS: tuple[How, ...] = ("invoke", "ainvoke", "stream", "astream")


def agent_node(model: ScriptedChatModel) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A node that calls ``model`` (with the ``add`` tool bound) on the state's messages."""
    bound = model.bind_tools([add])

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    return agent


def tool_loop(
    state_schema: type[Any],
    model: ScriptedChatModel,
    *,
    before_model: Runnable[Any, Any] | None = None,
) -> StateGraph[Any]:
    """``START -> [before_model ->] agent -> (tools -> [before_model ->] agent | END)``."""
    builder = StateGraph(state_schema)
    builder.add_node("agent", agent_node(model))
    builder.add_node("tools", ToolNode([add]))
    entry = "agent"
    if before_model is not None:
        builder.add_node("reduce", before_model)
        builder.add_edge("reduce", "agent")
        entry = "reduce"
    builder.add_edge(START, entry)
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", entry)
    return builder


def _messages(values: Any) -> list[AnyMessage] | None:
    if isinstance(values, dict) and "messages" in values:
        return list(values["messages"])
    return None


async def run(graph: Any, inputs: Any, config: RunnableConfig, how: How) -> list[list[Any]]:
    """Run ``graph`` once; return the messages after each of the run's super-steps."""
    before = {
        snap.config["configurable"]["checkpoint_id"] for snap in graph.get_state_history(config)
    }
    streamed: list[list[Any]] = []
    if how == "invoke":
        graph.invoke(inputs, config)
    elif how == "ainvoke":
        await graph.ainvoke(inputs, config)
    elif how == "stream":
        for _, values in graph.stream(inputs, config, stream_mode="values", subgraphs=True):
            if (found := _messages(values)) is not None:
                streamed.append(found)
    else:
        async for _, values in graph.astream(inputs, config, stream_mode="values", subgraphs=True):
            if (found := _messages(values)) is not None:
                streamed.append(found)
    checkpoints = [
        list(snap.values.get("messages", []))
        for snap in reversed(list(graph.get_state_history(config)))
        if snap.config["configurable"]["checkpoint_id"] not in before
        and snap.metadata.get("source") == "loop"
    ]
    assert checkpoints, "the run wrote no checkpoint"
    return checkpoints + streamed

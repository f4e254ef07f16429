"""The demo's agent: two small tools, a scripted chat model, and the loop that drives it.

The agent is a ``StateGraph`` over ``MessagesState`` (LangGraph's ``add_messages``): an
agent node calling :class:`~agentstate_reducer.langgraph.testing.ScriptedChatModel` (no
network; it rejects any history a chat provider would reject, so a broken history stops
the run) and a ``ToolNode`` with a calculator and a lookup table. Each turn is one
``invoke``: human question, tool call, tool result, answer.

LangChain and LangGraph are imported inside the functions that use them, so this module
imports on a core-only install (the command then reports the missing extra on one line).
"""

from __future__ import annotations

import ast
import operator
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from .._progress import ProgressBar
from .report import RunResult, TurnSample

__all__ = [
    "SYSTEM_PROMPT",
    "build_agent",
    "calculate",
    "demo_model",
    "demo_tools",
    "look_up",
    "question",
    "run_conversation",
    "scripted_policy",
]

SYSTEM_PROMPT = (
    "You are a concise assistant. Use the calculator tool for arithmetic and the lookup "
    "tool for facts; quote the tool's answer."
)

_FACTS = {
    "oslo": "Oslo is the capital of Norway, on the Oslofjord; about 700,000 people live there.",
    "lagos": "Lagos is Nigeria's largest city, a port on the Gulf of Guinea, home to over "
    "15 million people.",
    "kyoto": "Kyoto was Japan's imperial capital for over a thousand years and keeps about "
    "1,600 Buddhist temples.",
    "lima": "Lima, the capital of Peru, lies on the Pacific coast and was founded in 1535.",
    "tallinn": "Tallinn is the capital of Estonia; its medieval old town is a UNESCO World "
    "Heritage Site.",
    "perth": "Perth is the capital of Western Australia and one of the most isolated large "
    "cities in the world.",
}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression of numbers, ``+ - * / %`` and parentheses.

    Args:
        expression: The expression, e.g. ``"17 * 23 + 4"``.

    Returns:
        The value as text, or a line starting with ``error:`` when the expression is
        not plain arithmetic or divides by zero.
    """

    def value(node: ast.AST) -> float | int:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            if isinstance(node.value, bool):
                raise ValueError("not a number: a boolean")
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))  # type: ignore[no-any-return]
        raise ValueError(f"not plain arithmetic: {ast.dump(node)[:60]}")

    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as exc:
        return f"error: {exc}"
    return str(result)


def look_up(topic: str) -> str:
    """Return the stored fact about ``topic``, or a line saying there is none."""
    return _FACTS.get(topic.strip().lower(), f"No entry for {topic!r}.")


def question(turn: int) -> str:
    """The human message of ``turn`` (1-based): arithmetic on odd turns, a fact on even ones."""
    if turn % 2:
        a, b, c = 11 + turn % 89, 3 + turn % 17, turn
        return f"Turn {turn}: what is {a} * {b} + {c}?"
    topics = sorted(_FACTS)
    return f"Turn {turn}: tell me about {topics[turn // 2 % len(topics)].title()}."


_ASK_MATH = re.compile(r"what is (.+)\?$")
_ASK_FACT = re.compile(r"tell me about (.+)\.$")


def scripted_policy(messages: list[Any]) -> Any:
    """The scripted model's policy: a tool call for a question, an answer for a tool result.

    Args:
        messages: The messages the model was called with.

    Returns:
        An ``AIMessage`` calling ``calculator`` or ``lookup`` when the last message is a
        human question, else a text answer quoting the last tool result.
    """
    from langchain_core.messages import HumanMessage, ToolMessage

    from ..langgraph.testing import tool_call

    last = messages[-1]
    if isinstance(last, HumanMessage):
        text = str(last.content)
        if match := _ASK_MATH.search(text):
            return tool_call("calculator", {"expression": match.group(1)})
        if match := _ASK_FACT.search(text):
            return tool_call("lookup", {"topic": match.group(1)})
        return "I can only do arithmetic and look up cities."
    if isinstance(last, ToolMessage):
        if last.name == "calculator":
            return f"The calculator says {last.content}."
        return f"Here is what I found: {last.content}"
    return "Ask me something."


def demo_tools() -> list[Any]:
    """The agent's two tools: ``calculator`` (:func:`calculate`), ``lookup`` (:func:`look_up`)."""
    from langchain_core.tools import StructuredTool

    return [
        StructuredTool.from_function(calculate, name="calculator"),
        StructuredTool.from_function(look_up, name="lookup"),
    ]


def demo_model(tools: Sequence[Any]) -> Any:
    """A :class:`ScriptedChatModel` following :func:`scripted_policy`, bound to ``tools``.

    The model is strict: called with a history a provider would reject, it raises
    ``ProviderRejectedError``.
    """
    from ..langgraph.testing import ScriptedChatModel

    return ScriptedChatModel(script=[scripted_policy], cycle=True).bind_tools(list(tools))


def build_agent(checkpointer: Any) -> Any:
    """Compile the demo agent: ``agent -> tools -> agent -> end`` over ``MessagesState``.

    Args:
        checkpointer: The LangGraph checkpoint saver the graph stores its state in.

    Returns:
        The compiled graph.
    """
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tools = demo_tools()
    model = demo_model(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def run_conversation(
    checkpointer: Any,
    measure: Callable[[str], int],
    thread_id: str,
    turns: int,
    label: str,
    *,
    progress: TextIO | None = None,
) -> RunResult:
    """Drive the demo agent for ``turns`` turns on one thread, measuring after each.

    Args:
        checkpointer: The saver the graph stores its state in (bare or wrapped).
        measure: ``(thread_id) -> bytes`` read from the database.
        thread_id: The thread to use (it should be new).
        turns: How many turns to run.
        label: Names the run in the result and on the progress bar.
        progress: Where to draw the progress bar; stderr by default.

    Returns:
        One sample per turn.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    graph = build_agent(checkpointer)
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    result = RunResult(label)
    bar = ProgressBar(turns, f"{label:>7}", stream=progress)
    try:
        for turn in range(1, turns + 1):
            update: list[Any] = [HumanMessage(question(turn))]
            if turn == 1:
                update.insert(0, SystemMessage(SYSTEM_PROMPT))
            start = time.perf_counter()
            graph.invoke({"messages": update}, config)
            elapsed = time.perf_counter() - start
            stored = graph.get_state(config).values.get("messages", [])
            result.samples.append(TurnSample(turn, len(stored), measure(thread_id), elapsed))
            bar.update()
    finally:
        bar.close()
    return result

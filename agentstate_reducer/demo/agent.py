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
from .report import RecallOutcome, RunResult, TurnSample

__all__ = [
    "RECALL_ASK_TURN",
    "RECALL_FACT",
    "RECALL_FACT_TURN",
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


RECALL_FACT = "my locker code is 4417"
"""What the user tells the agent at :data:`RECALL_FACT_TURN` with ``--recall``."""
RECALL_FACT_TURN = 5
RECALL_ASK_TURN = 150
"""With ``--recall`` the user asks for the fact at this turn (or the last, if sooner)."""


def question(turn: int, *, recall_at: int | None = None) -> str:
    """The human message of ``turn`` (1-based): arithmetic on odd turns, a fact on even ones.

    With ``recall_at``, turn :data:`RECALL_FACT_TURN` tells the agent :data:`RECALL_FACT`
    and turn ``recall_at`` asks for it back.
    """
    if recall_at is not None and turn == RECALL_FACT_TURN:
        return f"Turn {turn}: please remember that {RECALL_FACT}."
    if recall_at is not None and turn == recall_at:
        return f"Turn {turn}: what was my locker code again?"
    if turn % 2:
        a, b, c = 11 + turn % 89, 3 + turn % 17, turn
        return f"Turn {turn}: what is {a} * {b} + {c}?"
    topics = sorted(_FACTS)
    return f"Turn {turn}: tell me about {topics[turn // 2 % len(topics)].title()}."


_ASK_MATH = re.compile(r"what is (.+)\?$")
_ASK_FACT = re.compile(r"tell me about (.+)\.$")
_REMEMBER = re.compile(r"please remember that (.+)\.$")
_ASK_MEMORY = re.compile(r"what was my locker code again\?$")
_LOCKER_CODE = re.compile(r"locker code is (\d+)")


def scripted_policy(messages: list[Any]) -> Any:
    """The scripted model's policy: a tool call for a question, an answer for a tool result.

    Args:
        messages: The messages the model was called with.

    Returns:
        An ``AIMessage`` calling ``calculator`` or ``lookup`` when the last message is a
        human question, else a text answer quoting the last tool result; a request to
        remember something is acknowledged, and the question for it answered from the
        messages the model was called with (a memory block included) or not at all.
    """
    from langchain_core.messages import HumanMessage, ToolMessage

    from ..langgraph.testing import tool_call

    last = messages[-1]
    if isinstance(last, HumanMessage):
        text = str(last.content)
        if match := _REMEMBER.search(text):
            return f"Noted: {match.group(1)}."
        if _ASK_MEMORY.search(text):
            # Answer only from what the model was given: the history it still holds, or a
            # memory block Recall put in its input.
            for earlier in reversed(messages[:-1]):
                if found := _LOCKER_CODE.search(str(earlier.content)):
                    return f"Your locker code is {found.group(1)}."
            return "I do not know your locker code: it is not in what I was given."
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


def build_agent(
    checkpointer: Any, *, view: Callable[[list[Any], dict[str, Any]], list[Any]] | None = None
) -> Any:
    """Compile the demo agent: ``agent -> tools -> agent -> end`` over ``MessagesState``.

    Args:
        checkpointer: The LangGraph checkpoint saver the graph stores its state in.
        view: ``(messages, config) -> messages``: what the model is shown instead of the
            state's messages (with ``--recall``: the reducer's view, memory block included).

    Returns:
        The compiled graph.
    """
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tools = demo_tools()
    model = demo_model(tools)

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = state["messages"]
        if view is not None:
            messages = view(messages, dict(config))
        return {"messages": [model.invoke(messages)]}

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
    recall_at: int | None = None,
    view: Callable[[list[Any], dict[str, Any]], list[Any]] | None = None,
) -> RunResult:
    """Drive the demo agent for ``turns`` turns on one thread, measuring after each.

    Args:
        checkpointer: The saver the graph stores its state in (bare or wrapped).
        measure: ``(thread_id) -> bytes`` read from the database.
        thread_id: The thread to use (it should be new).
        turns: How many turns to run.
        label: Names the run in the result and on the progress bar.
        progress: Where to draw the progress bar; stderr by default.
        recall_at: Tell the agent :data:`RECALL_FACT` at turn :data:`RECALL_FACT_TURN` and
            ask for it at this turn; the answer goes into the result.
        view: What the model is shown (see :func:`build_agent`).

    Returns:
        One sample per turn (and, with ``recall_at``, the recall's outcome).
    """
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    graph = build_agent(checkpointer, view=view)
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    result = RunResult(label)
    bar = ProgressBar(turns, f"{label:>7}", stream=progress)
    try:
        for turn in range(1, turns + 1):
            update: list[Any] = [HumanMessage(question(turn, recall_at=recall_at))]
            if turn == 1:
                update.insert(0, SystemMessage(SYSTEM_PROMPT))
            start = time.perf_counter()
            graph.invoke({"messages": update}, config)
            elapsed = time.perf_counter() - start
            stored = graph.get_state(config).values.get("messages", [])
            result.samples.append(TurnSample(turn, len(stored), measure(thread_id), elapsed))
            if turn == recall_at:
                answer = next(m for m in reversed(stored) if isinstance(m, AIMessage))
                held = any(RECALL_FACT in str(m.content) for m in stored[:-2])
                result.recall = RecallOutcome(turn, str(answer.content), held)
            bar.update()
    finally:
        bar.close()
    return result

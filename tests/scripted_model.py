"""Shared helpers for tests that drive real graphs and agents with a scripted chat model.

The model itself ships in the package (``agentstate_reducer.langgraph.testing``) so the
demo can use it too; this module adds the tools and scripts the tests share.

``calculator_model()`` answers every human message with one ``add`` tool call and every
tool result with a text answer that quotes it, forever, so a test can run as many turns
as it likes without writing a script.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from agentstate_reducer.langgraph.testing import (
    ProviderRejectedError,
    ScriptedChatModel,
    provider_errors,
    tool_call,
)

__all__ = [
    "ProviderRejectedError",
    "ScriptedChatModel",
    "add",
    "calculator_model",
    "calculator_step",
    "provider_errors",
    "tool_call",
]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calculator_step(messages: list[BaseMessage]) -> str | AIMessage:
    """Call ``add`` after a human message; answer with the tool's result after a tool message."""
    last = messages[-1]
    if isinstance(last, HumanMessage):
        n = sum(isinstance(m, HumanMessage) for m in messages)
        return tool_call("add", {"a": n, "b": 1})
    if isinstance(last, ToolMessage):
        return f"The sum is {last.content}."
    return "Nothing to do."


def calculator_model(*, strict: bool = True) -> ScriptedChatModel:
    """A model that runs the ``add`` tool loop on every turn (see ``calculator_step``)."""
    return ScriptedChatModel(script=[calculator_step], cycle=True, strict=strict)

"""The validity checks every graph test applies after each super-step.

A message list is valid when a chat provider would accept it (``provider_errors``: system
messages first, every tool call answered in the block right after it, no tool result
without its call), the system prompt is still first, and the newest human message is
still there. A state may end in an ai message whose tool calls the tool node has not
answered yet (``allow_pending=True``): that is the normal state between the model node
and the tool node, and it is not what the model is called with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from tests.scripted_model import provider_errors


def _as_messages(messages: Sequence[Any]) -> list[BaseMessage]:
    if all(isinstance(m, BaseMessage) for m in messages):
        return list(messages)
    return list(convert_to_messages(list(messages)))


def _answer_pending(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Stand-in results for the calls of a trailing ai message the tool node has yet to run."""
    at = len(messages)
    while at > 0 and isinstance(messages[at - 1], ToolMessage):
        at -= 1
    if at == 0 or not isinstance(messages[at - 1], AIMessage):
        return messages
    answered = {m.tool_call_id for m in messages[at:] if isinstance(m, ToolMessage)}
    pending = [
        ToolMessage(content="(pending)", tool_call_id=str(call["id"]))
        for call in messages[at - 1].tool_calls
        if call["id"] not in answered
    ]
    return messages + pending


def problems(
    messages: Sequence[Any],
    *,
    system_prompt: str | None = None,
    newest_human: str | None = None,
    allow_pending: bool = True,
) -> list[str]:
    """Everything wrong with ``messages``; empty when the list is valid.

    Args:
        messages: LangChain messages or message dicts.
        system_prompt: When given, the list must start with a system message of this text.
        newest_human: When given, the last human message must have this text.
        allow_pending: Accept a trailing ai message whose tool calls are not answered yet.
    """
    found = _as_messages(messages)
    checked = _answer_pending(found) if allow_pending else found
    errors = list(provider_errors(checked))
    if system_prompt is not None and not (
        found and isinstance(found[0], SystemMessage) and found[0].content == system_prompt
    ):
        errors.append(f"the system prompt {system_prompt!r} is not the first message")
    if newest_human is not None:
        humans = [m for m in found if isinstance(m, HumanMessage)]
        if not humans or humans[-1].content != newest_human:
            errors.append(f"the newest human message {newest_human!r} is missing")
    return errors


def assert_valid(messages: Sequence[Any], **expected: Any) -> None:
    """Fail with every problem ``problems`` finds (same keyword arguments)."""
    found = problems(messages, **expected)
    if found:
        listing = "\n".join(f"  {type(m).__name__}: {getattr(m, 'content', m)!r}" for m in messages)
        raise AssertionError("invalid message list:\n- " + "\n- ".join(found) + "\n" + listing)

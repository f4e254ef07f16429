"""Building the injected summary block as the same kind of message the list holds.

LangChain messages get LangChain messages (with ids, so LangGraph can later remove them);
dicts get dicts with the list's own keys and role names (OpenAI ``user``/``assistant``,
LangChain ``human``/``ai``, or the serialised ``{"type", "data"}`` form). A list of other
objects needs ``summary_message_factory``: the reducer cannot build objects it does not know.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .messages import AI, HUMAN, is_serialized, raw_role_of, role_of

SUMMARY_ID_PREFIX = "summary-"
ACKNOWLEDGEMENT = "Understood; I will take that summary into account."

SummaryBuilder = Callable[[str, int], list[Any]]


def summary_text(summary: str, pruned_count: int) -> str:
    """The text of the default summary message."""
    noun = "message" if pruned_count == 1 else "messages"
    return f"Summary of the {pruned_count} earlier {noun} of this conversation:\n{summary}"


def _new_id() -> str:
    return f"{SUMMARY_ID_PREFIX}{uuid.uuid4().hex}"


def _is_langchain(message: Any) -> bool:
    return any(cls.__module__.startswith("langchain_core.") for cls in type(message).__mro__)


def default_summary_builder(messages: Sequence[Any]) -> SummaryBuilder:
    """A builder of ``[human summary, ai acknowledgement]`` in the kind ``messages`` hold.

    Raises:
        TypeError: The list holds objects the reducer cannot construct.
    """
    sample = _sample(messages)
    if sample is None or _is_langchain(sample):
        if sample is None:
            return _dict_builder(role_key="role", human="user", ai="assistant", with_id=False)
        return _langchain_builder
    if isinstance(sample, Mapping):
        if is_serialized(sample):
            return _serialized_builder
        role_key = "role" if "role" in sample else "type"
        human, ai = _role_names(messages, role_key)
        return _dict_builder(role_key=role_key, human=human, ai=ai, with_id="id" in sample)
    raise TypeError(
        f"inject_summary cannot build a summary message for a list of "
        f"{type(sample).__name__} objects; pass summary_message_factory=(summary, "
        "pruned_count) -> [messages] to ReducerConfig"
    )


def _sample(messages: Sequence[Any]) -> Any:
    fallback = None
    for message in messages:
        if fallback is None:
            fallback = message
        if role_of(message) in (HUMAN, AI):
            return message
    return fallback


def _role_names(messages: Sequence[Any], role_key: str) -> tuple[str, str]:
    human = "user" if role_key == "role" else "human"
    ai = "assistant" if role_key == "role" else "ai"
    found_human = found_ai = False
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        raw = raw_role_of(message)
        if raw is None:
            continue
        role = role_of(message)
        if role == HUMAN and not found_human:
            human, found_human = raw, True
        elif role == AI and not found_ai:
            ai, found_ai = raw, True
        if found_human and found_ai:
            break
    return human, ai


def _langchain_builder(summary: str, pruned_count: int) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        HumanMessage(content=summary_text(summary, pruned_count), id=_new_id()),
        AIMessage(content=ACKNOWLEDGEMENT, id=_new_id()),
    ]


def _dict_builder(*, role_key: str, human: str, ai: str, with_id: bool) -> SummaryBuilder:
    def build(summary: str, pruned_count: int) -> list[Any]:
        block: list[dict[str, Any]] = [
            {role_key: human, "content": summary_text(summary, pruned_count)},
            {role_key: ai, "content": ACKNOWLEDGEMENT},
        ]
        if with_id:
            for message in block:
                message["id"] = _new_id()
        return block

    return build


def _serialized_builder(summary: str, pruned_count: int) -> list[Any]:
    def message(kind: str, content: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "content": content,
            "additional_kwargs": {},
            "response_metadata": {},
            "type": kind,
            "name": None,
            "id": _new_id(),
        }
        if kind == "ai":
            data.update(tool_calls=[], invalid_tool_calls=[], usage_metadata=None)
        return {"type": kind, "data": data}

    return [message("human", summary_text(summary, pruned_count)), message("ai", ACKNOWLEDGEMENT)]

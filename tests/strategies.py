"""Shared hypothesis strategies: random tool-calling conversations in every supported shape.

A conversation is first drawn as abstract :class:`Msg` records (role, id, content, tool
calls, the call a result answers), then rendered into one of the shapes the reducer must
read: OpenAI dicts, LangChain dicts, LangChain's serialised dicts, LangChain message
objects, or duck-typed objects. Tests compare what comes back against the records.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

SHAPES = ("openai", "langchain_dict", "serialized", "langchain", "duck")

_counter = itertools.count()


@dataclass(frozen=True)
class Msg:
    """One abstract message."""

    role: str  # human, ai, system, tool, function, developer
    id: str
    content: str
    call_ids: tuple[str, ...] = ()
    result_for: str | None = None


@dataclass
class Duck:
    """A message object of no known framework: only attributes."""

    type: str
    content: str
    id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None


_words = st.text(
    alphabet=st.sampled_from("abcdefghij klmnop 日本語 привет"), min_size=0, max_size=40
)


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 8) -> list[Msg]:
    """A plausible agent history: optional system prompt, then user turns with tool loops.

    Also sprinkles the odd mid-list system message, a ``developer`` message (an unknown
    role) and a legacy ``function`` message.
    """
    serial = next(_counter)
    ids = (f"m{serial}-{n}" for n in itertools.count())
    calls = (f"call{serial}-{n}" for n in itertools.count())
    out: list[Msg] = []
    if draw(st.booleans()):
        out.append(Msg("system", next(ids), draw(_words)))
    for _ in range(draw(st.integers(0, max_turns))):
        extra = draw(st.sampled_from(["none"] * 6 + ["system", "developer", "function"]))
        if extra != "none":
            out.append(Msg(extra, next(ids), draw(_words)))
        out.append(Msg("human", next(ids), draw(_words)))
        for _ in range(draw(st.integers(0, 2))):
            call_ids = tuple(next(calls) for _ in range(draw(st.integers(1, 3))))
            out.append(Msg("ai", next(ids), draw(_words), call_ids=call_ids))
            results = [Msg("tool", next(ids), draw(_words), result_for=c) for c in call_ids]
            out.extend(draw(st.permutations(results)))
        if draw(st.booleans()):
            out.append(Msg("ai", next(ids), draw(_words)))
    return out


_OPENAI_ROLE = {"human": "user", "ai": "assistant"}


def render(msg: Msg, shape: str) -> Any:
    """Render one abstract message in ``shape``."""
    if shape == "openai":
        out: dict[str, Any] = {"role": _OPENAI_ROLE.get(msg.role, msg.role), "content": msg.content}
        out["id"] = msg.id
        if msg.call_ids:
            out["tool_calls"] = [
                {
                    "id": c,
                    "type": "function",
                    "function": {"name": "lookup", "arguments": json.dumps({"q": msg.content})},
                }
                for c in msg.call_ids
            ]
        if msg.result_for:
            out["tool_call_id"] = msg.result_for
        return out
    if shape == "langchain_dict":
        out = {"type": msg.role, "content": msg.content, "id": msg.id}
        if msg.call_ids:
            out["tool_calls"] = [
                {"id": c, "name": "lookup", "args": {"q": msg.content}} for c in msg.call_ids
            ]
        if msg.result_for:
            out["tool_call_id"] = msg.result_for
        return out
    if shape in ("langchain", "serialized"):
        obj = _langchain(msg)
        if shape == "langchain":
            return obj
        from langchain_core.messages import messages_to_dict

        return messages_to_dict([obj])[0]
    if shape == "duck":
        return Duck(
            type=msg.role,
            content=msg.content,
            id=msg.id,
            tool_calls=[{"id": c, "name": "lookup", "args": {}} for c in msg.call_ids],
            tool_call_id=msg.result_for,
        )
    raise ValueError(shape)


def _langchain(msg: Msg) -> Any:
    from langchain_core.messages import (
        AIMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )

    if msg.role == "human":
        return HumanMessage(content=msg.content, id=msg.id)
    if msg.role == "ai":
        calls = [{"id": c, "name": "lookup", "args": {"q": msg.content}} for c in msg.call_ids]
        return AIMessage(content=msg.content, id=msg.id, tool_calls=calls)
    if msg.role == "system":
        return SystemMessage(content=msg.content, id=msg.id)
    if msg.role == "tool":
        return ToolMessage(content=msg.content, id=msg.id, tool_call_id=msg.result_for)
    if msg.role == "function":
        return FunctionMessage(content=msg.content, id=msg.id, name="lookup")
    return ChatMessage(role=msg.role, content=msg.content, id=msg.id)


def rendered(records: list[Msg], shape: str) -> list[Any]:
    return [render(m, shape) for m in records]


shapes = st.sampled_from(SHAPES)

"""Anthropic Messages API dicts: ``{"role": "user" | "assistant", "content": str | [blocks]}``.

Blocks: ``text``, ``image`` and ``document`` (with a ``source``), ``tool_use`` and
``server_tool_use`` (assistant), ``tool_result`` (user), ``thinking`` and
``redacted_thinking`` (assistant), the server tools' results (``web_search_tool_result``,
``code_execution_tool_result``, ...), ``search_result``; as dicts or as the ``anthropic``
SDK's block objects (``response.content`` appended as it came). A list is recognised as
Anthropic by such blocks; a list of text-only messages reads the same as Chat (pass
``ReducerConfig(format="anthropic")`` for Anthropic's validity rules there).

Pairing rules: an assistant message's ``tool_use`` blocks are answered by ``tool_result``
blocks (by ``tool_use_id``) in the user message right after it, which holds the results of
all of them: that message leaves with the assistant message. A user message holding only
results is a result, never the question; one holding results and text (or images) is both,
so when it is the newest question its whole group stays. Server tools (``server_tool_use``
and its ``*_tool_result``) and thinking blocks live inside the assistant message: they stay
and leave with their turn.

Validity rules: the first message comes from the user, roles alternate (user, assistant,
...), every ``tool_use`` has its ``tool_result`` in the next message and every
``tool_result`` answers a ``tool_use`` of the message before. A ``system`` message in the
list is kept as it is (it belongs in the request's ``system`` parameter).

Counting: text, thinking text, tool names and inputs, tool results' text, the server tools'
blocks as text, images and documents at a fixed cost (a text document by its text), also
inside a ``tool_result``; ``redacted_thinking`` and signatures do not count. A block type
this reader does not know (a new or beta one, such as ``compaction``) is carried as it is
and counts as its JSON.

Shape rules ``validate()`` reports (the list is still read): a ``tool_result`` block in an
assistant message or a ``tool_use`` block in a user message (``misplaced_block``), a
``tool_use`` without an ``id`` or a ``tool_result`` without a ``tool_use_id``
(``invalid_block``).

Writing: a summary is a plain text message, marked by the :data:`~.base.SUMMARY_HEADER`
first line (the API refuses unknown keys); its role alternates with its neighbours (a user
message, or an assistant message after a kept first user message, see
:func:`~.base.block_sides`). A placeholder replaces a ``tool_result``'s ``content``; a cut
shortens the last text block; rewritten messages are new dicts (or ``model_copy`` of SDK
objects).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    ANTHROPIC,
    PLAIN,
    SUMMARY_FILLER,
    MessageFormat,
    Parsed,
    block_sides,
    describe,
    get,
    is_sequence,
    text_or_none,
)
from .blocks import read_blocks, replace_in, set_field
from .chat import normalise

_SIDE_NAMES = {"human": "user", "ai": "assistant"}
#: The roles an Anthropic list's messages may have (a system message is kept as it is).
_ROLES = frozenset({"human", "ai", "system"})


class AnthropicFormat(MessageFormat):
    """Anthropic Messages API messages (see the module docstring)."""

    name = "anthropic"
    bit = ANTHROPIC
    alternates = True

    def parse(self, msg: Any) -> Parsed:
        raw = get(msg, "role")
        if not isinstance(raw, str):
            raise TypeError(
                f"{describe(msg)}: expected an Anthropic message, a dict with a 'role' "
                "('user' or 'assistant') and a 'content'"
            )
        content = get(msg, "content")
        role = normalise(raw)
        if role not in _ROLES:
            raise TypeError(
                f"{describe(msg)}: an Anthropic message's role is 'user' or 'assistant' "
                f"(a system prompt is kept too), got {raw!r}"
            )
        parsed = Parsed(role, raw, ANTHROPIC if is_sequence(content) else PLAIN)
        parsed.id = text_or_none(get(msg, "id"))
        parsed.content = content
        if isinstance(content, str):
            parsed.add_text(content, ("content",))
        elif is_sequence(content):
            read_blocks(parsed, content, ("content",), calls=role == "ai")
        elif content is not None:
            raise TypeError(
                f"{describe(msg)}: an Anthropic message's content is a string or a list "
                f"of blocks, got {type(content).__name__}"
            )
        parsed.summary = parsed.header_marked()
        return parsed

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        content = get(msg, "content")
        whole = changes.get(("content",), ...)
        if whole is not ...:
            new: Any = whole or ""
        else:
            relative = {path[1:]: text for path, text in changes.items()}
            new = replace_in(content, relative)
        return set_field(msg, "content", new)

    def summary_block(
        self,
        text: str,
        block_id: str,
        messages: Sequence[Any],
        before: str | None,
        after: str | None,
    ) -> list[Any]:
        sides = block_sides(True, before, after)
        texts = [text, SUMMARY_FILLER][: len(sides)]
        return [
            {"role": _SIDE_NAMES[side], "content": body}
            for side, body in zip(sides, texts, strict=True)
        ]


ANTHROPIC_FORMAT = AnthropicFormat()

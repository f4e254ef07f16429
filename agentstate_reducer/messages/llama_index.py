"""llama-index ``ChatMessage`` objects (``llama_index.core.base.llms.types``).

A message has a ``role`` (``MessageRole``: ``user``, ``assistant``, ``system``, ``tool``,
``function``, ``developer``, ``chatbot``, ``model``), ``blocks`` (``TextBlock``,
``ImageBlock``, ``AudioBlock``, ``VideoBlock``, ``DocumentBlock``, ``ThinkingBlock``,
``ToolCallBlock``, ``CachePoint``, citation blocks) and ``additional_kwargs``, where
llama-index's LLM integrations keep the OpenAI-style ``tool_calls`` of an assistant message
and the ``tool_call_id`` of a tool message.

Pairing rules: an assistant message's calls (``additional_kwargs["tool_calls"]``, as dicts
or OpenAI SDK objects, and ``ToolCallBlock`` s; a block with the id of a listed call is that
call, counted once) are answered by ``tool`` messages whose ``additional_kwargs`` carry
their ``tool_call_id``, right after it.

Validity rules: the Chat family's (results right after their call; a user message first).

Counting: text blocks, thinking blocks, call names and arguments, tool messages' text;
images, audio, video and documents at a fixed cost.

Writing: new messages are ``ChatMessage`` s of the list's own class (``model_copy``); a
summary is a user message marked by the :data:`~.base.SUMMARY_HEADER` first line (its
``additional_kwargs`` go to the provider with the message, so no marker key there); a
placeholder replaces a tool message's text; a cut shortens its last text block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    AI,
    LLAMA_INDEX,
    TOOL,
    MessageFormat,
    Parsed,
    as_text,
    describe,
    get,
    module_of,
    text_or_none,
)
from .blocks import set_field
from .chat import normalise

_MEDIA = frozenset({"image", "audio", "video", "document"})


def is_llama_index(msg: Any) -> bool:
    """A llama-index ``ChatMessage`` (by its class's module and its ``blocks``)."""
    return module_of(msg).startswith("llama_index") and hasattr(msg, "blocks")


def _role_name(msg: Any) -> str | None:
    role = getattr(msg, "role", None)
    value = getattr(role, "value", role)
    return value if isinstance(value, str) else None


def _call(entry: Any) -> tuple[str | None, str, str]:
    """``(id, name, arguments)`` of an OpenAI-style tool call (dict or SDK object)."""
    function = get(entry, "function")
    if function is not None:
        name, arguments = get(function, "name"), get(function, "arguments")
    else:
        name, arguments = get(entry, "name"), get(entry, "args", get(entry, "arguments"))
    return (
        text_or_none(get(entry, "id")),
        name if isinstance(name, str) else "",
        as_text(arguments),
    )


class LlamaIndexFormat(MessageFormat):
    """llama-index chat messages (see the module docstring)."""

    name = "llama_index"
    bit = LLAMA_INDEX

    def parse(self, msg: Any) -> Parsed:
        raw = _role_name(msg)
        blocks = getattr(msg, "blocks", None)
        if raw is None or not isinstance(blocks, list):
            raise TypeError(f"{describe(msg)}: expected a llama-index ChatMessage")
        role = normalise(raw)
        parsed = Parsed(role, raw, LLAMA_INDEX)
        parsed.content = blocks
        extra = getattr(msg, "additional_kwargs", None)
        extra = extra if isinstance(extra, Mapping) else {}
        known: set[str] = set()
        if role == AI:
            for entry in extra.get("tool_calls") or ():
                call_id, name, arguments = _call(entry)
                parsed.calls.append((call_id, name, arguments, entry))
                if call_id is not None:
                    known.add(call_id)
        texts: list[tuple[int, str]] = []
        for index, block in enumerate(blocks):
            kind = getattr(block, "block_type", None)
            if kind == "text":
                texts.append((index, block.text))
            elif kind == "thinking":
                text = getattr(block, "content", None)
                if isinstance(text, str):
                    parsed.add_text(text, ("blocks", index, "content"), "reasoning")
            elif kind == "tool_call":
                call_id = text_or_none(getattr(block, "tool_call_id", None))
                if role == AI and (call_id is None or call_id not in known):
                    name = getattr(block, "tool_name", "")
                    parsed.calls.append(
                        (
                            call_id,
                            name if isinstance(name, str) else "",
                            as_text(getattr(block, "tool_kwargs", None)),
                            block,
                        )
                    )
            elif kind in _MEDIA:
                parsed.images += 1
            elif isinstance(getattr(block, "text", None), str):
                texts.append((index, block.text))
        if role == TOOL:
            # A tool message's text is its output (a placeholder replaces all of it).
            text = "\n".join(text for _, text in texts)
            key = text_or_none(extra.get("tool_call_id"))
            if key is not None:
                parsed.add_result(key, text, ("blocks",))
            else:
                parsed.add_text(text, ("blocks",), "result")
        else:
            for index, text in texts:
                parsed.add_text(text, ("blocks", index, "text"))
        parsed.summary = parsed.header_marked()
        return parsed

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        blocks = list(msg.blocks)
        whole = changes.get(("blocks",), ...)
        if whole is not ...:
            keep = [b for b in blocks if getattr(b, "block_type", None) not in ("text",)]
            return msg.model_copy(update={"blocks": [_text_block(msg, whole or ""), *keep]})
        removed: set[int] = set()
        for path, text in changes.items():
            index, key = path[1], path[2]
            if text is None:
                removed.add(index)
            else:
                blocks[index] = set_field(blocks[index], key, text)
        kept = [block for index, block in enumerate(blocks) if index not in removed]
        return msg.model_copy(update={"blocks": kept})

    def summary_block(
        self,
        text: str,
        block_id: str,
        messages: Sequence[Any],
        before: str | None,
        after: str | None,
    ) -> list[Any]:
        cls = type(messages[0]) if messages else None
        if cls is None:
            from llama_index.core.base.llms.types import ChatMessage

            cls = ChatMessage
        return [cls(role="user", content=text)]


def _text_block(msg: Any, text: str) -> Any:
    for block in msg.blocks:
        if getattr(block, "block_type", None) == "text":
            return block.model_copy(update={"text": text})
    from llama_index.core.base.llms.types import TextBlock

    return TextBlock(text=text)


LLAMA_INDEX_FORMAT = LlamaIndexFormat()

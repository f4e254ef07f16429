"""Amazon Bedrock Converse messages, as Strands Agents holds them:
``{"role": "user" | "assistant", "content": [{"text": ...}, {"toolUse": {...}}, ...]}``.

Blocks are one-key dicts without a ``type``: ``text``, ``image``, ``document``, ``video``,
``toolUse`` (``toolUseId``, ``name``, ``input``), ``toolResult`` (``toolUseId``,
``content``: a list of ``text``/``json``/``image``/``document``/``video`` blocks,
``status``), ``reasoningContent`` (``reasoningText``: ``text``, ``signature``; or
``redactedContent``), ``citationsContent``, ``guardContent``, ``searchResult``,
``cachePoint``. Content is always a list, so a Bedrock list is always recognised.

Pairing rules: an assistant message's ``toolUse`` blocks are answered by ``toolResult``
blocks in the user message right after it, which holds all their results and leaves with
it; a user message of results only is a result, never the question; reasoning blocks stay
with their assistant turn.

Validity rules: the first message comes from the user and roles alternate (Converse refuses
``[user, user]``); every ``toolUse`` has its ``toolResult`` in the next message.

Counting: text, reasoning text, tool names and inputs, the text and JSON of tool results,
citations and guarded text; images, documents and videos at a fixed cost.

Writing: a summary is ``{"role": ..., "content": [{"text": ...}]}`` marked by the
:data:`~.base.SUMMARY_HEADER` first line, its role alternating with its neighbours; a
placeholder replaces a ``toolResult``'s ``content`` with one text block (its ``status``
kept); a cut shortens the last text block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    BEDROCK,
    FLAW_BLOCK,
    FLAW_PLACEMENT,
    FLAW_ROLE,
    SUMMARY_FILLER,
    MessageFormat,
    Parsed,
    as_text,
    block_sides,
    describe,
    is_sequence,
    text_or_none,
)
from .chat import normalise

#: The keys of Converse content blocks.
BLOCK_KEYS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "toolUse",
        "toolResult",
        "reasoningContent",
        "citationsContent",
        "guardContent",
        "searchResult",
        "cachePoint",
    }
)
_MEDIA = ("image", "document", "video")
_SIDE_NAMES = {"human": "user", "ai": "assistant"}
#: The roles a Bedrock list's messages may have (a system message is kept as it is).
_ROLES = frozenset({"human", "ai", "system"})


def is_block(block: Any) -> bool:
    """A Converse content block: a dict without a ``type`` whose keys are block keys."""
    return (
        (type(block) is dict or isinstance(block, Mapping))
        and bool(block)
        and "type" not in block
        and BLOCK_KEYS.issuperset(block)
    )


def _result_text(content: Any) -> tuple[str, int]:
    """A toolResult's content as text (its text and JSON blocks), and its media count."""
    if not is_sequence(content):
        return as_text(content), 0
    texts: list[str] = []
    media = 0
    for block in content:
        if not isinstance(block, Mapping):
            texts.append(as_text(block))
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif "json" in block:
            texts.append(as_text(block["json"]))
        elif any(key in block for key in _MEDIA):
            media += 1
        else:
            texts.append(as_text(block))
    return "\n".join(texts), media


#: Blocks only one side's messages hold: ``(key, role, that side's name)``.
_PLACED = (("toolUse", "ai", "assistant"), ("toolResult", "human", "user"))


class BedrockFormat(MessageFormat):
    """Bedrock Converse messages (see the module docstring)."""

    name = "bedrock"
    bit = BEDROCK
    alternates = True

    def parse(self, msg: Any) -> Parsed:
        raw = msg.get("role") if isinstance(msg, Mapping) else None
        content: Any = msg.get("content") if isinstance(msg, Mapping) else None
        if not isinstance(raw, str) or not is_sequence(content):
            raise TypeError(
                f"{describe(msg)}: expected a Bedrock Converse message, a dict with a "
                "'role' and a 'content' list of blocks"
            )
        role = normalise(raw)
        if role not in _ROLES:
            raise TypeError(
                f"{describe(msg)}: a Bedrock message's role is 'user' or 'assistant' (a "
                f"system prompt is kept too), got {raw!r}"
            )
        parsed = Parsed(role, raw, BEDROCK)
        parsed.content = content
        if raw not in ("user", "assistant", "system"):
            parsed.flaw(FLAW_ROLE, f"role {raw!r}: Bedrock's roles are 'user' and 'assistant'")
        for index, block in enumerate(content):
            if not is_block(block):
                raise TypeError(
                    f"{describe(msg)}: content[{index}] is not a Converse block (a dict with "
                    f"one of {', '.join(sorted(BLOCK_KEYS))})"
                )
            where = ("content", index)
            keys = sorted(key for key in block if key in BLOCK_KEYS)
            if len(keys) > 1:
                parsed.flaw(
                    FLAW_BLOCK,
                    f"content[{index}] has the keys {', '.join(map(repr, keys))}: a Converse "
                    "block holds exactly one",
                )
            for kind, owner, holders in _PLACED:
                if kind in block and role != owner:
                    parsed.flaw(
                        FLAW_PLACEMENT,
                        f"content[{index}] is a {kind} block in a {raw} message: only "
                        f"{holders} messages hold {kind} blocks",
                    )
            if isinstance(block.get("text"), str):
                parsed.add_text(block["text"], (*where, "text"))
            elif "toolUse" in block:
                use = block["toolUse"]
                name = use.get("name") if isinstance(use, Mapping) else None
                parsed.calls.append(
                    (
                        text_or_none(use.get("toolUseId")) if isinstance(use, Mapping) else None,
                        name if isinstance(name, str) else "",
                        as_text(use.get("input")) if isinstance(use, Mapping) else "",
                        use,
                    )
                )
            elif "toolResult" in block:
                result = block["toolResult"]
                key = text_or_none(result.get("toolUseId")) if isinstance(result, Mapping) else None
                text, media = _result_text(
                    result.get("content") if isinstance(result, Mapping) else result
                )
                parsed.result_media += media
                if key is not None:
                    parsed.add_result(key, text, (*where, "toolResult"))
                else:
                    parsed.add_text(text, (*where, "toolResult"), "result")
            elif "reasoningContent" in block:
                parsed.thinking = True
                reasoning = block["reasoningContent"]
                inner = reasoning.get("reasoningText") if isinstance(reasoning, Mapping) else None
                thought = inner.get("text") if isinstance(inner, Mapping) else None
                if isinstance(thought, str):
                    parsed.add_text(thought, (*where, "reasoningContent"), "reasoning")
            elif any(key in block for key in _MEDIA):
                parsed.images += 1
            elif "citationsContent" in block or "guardContent" in block or "searchResult" in block:
                parsed.texts.append(as_text(next(iter(block.values()))))
        if role != "ai":
            parsed.calls = []
        parsed.summary = parsed.header_marked()
        return parsed

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        blocks = list(msg["content"])
        removed: set[int] = set()
        for path, text in changes.items():
            index, key = path[1], path[2]
            if text is None:
                removed.add(index)
                continue
            block = blocks[index]
            if key == "toolResult":
                result = dict(block["toolResult"])
                result["content"] = [{"text": text}]
                blocks[index] = {"toolResult": result}
            elif key == "reasoningContent":
                reasoning = dict(block["reasoningContent"])
                reasoning["reasoningText"] = {**reasoning.get("reasoningText", {}), "text": text}
                blocks[index] = {"reasoningContent": reasoning}
            else:
                blocks[index] = {**block, "text": text}
        kept = [block for index, block in enumerate(blocks) if index not in removed]
        return {**msg, "content": kept}

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
            {"role": _SIDE_NAMES[side], "content": [{"text": body}]}
            for side, body in zip(sides, texts, strict=True)
        ]


BEDROCK_FORMAT = BedrockFormat()

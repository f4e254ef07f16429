"""Typed content blocks (``{"type": ..., ...}``), read the same in every format that has them.

Chat Completions (``text``, ``image_url``, ``input_audio``, ``file``), Anthropic (``text``,
``image``, ``document``, ``tool_use``, ``tool_result``, ``thinking``, ``redacted_thinking``,
the server tools' blocks), LangChain's standard blocks (``tool_call``, ``reasoning``,
``image`` by url or base64, ...) and the Responses API's message content (``input_text``,
``output_text``, ``input_image``, ``input_file``, ``refusal``) never give one type two
meanings, so one reader serves them all. It also tells which formats a list of blocks fits
(:func:`block_formats`), which is how a role dict's format is recognised.

What counts: text, thinking and reasoning text, a tool call's name and arguments, a tool
result's text (its text blocks; other blocks as their text or JSON), each once; images,
documents, audio, video and files at a fixed cost each. Opaque data (``redacted_thinking``,
a thinking ``signature``, ``encrypted_content``) does not count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .base import (
    ANTHROPIC,
    ANY_FORMAT,
    CHAT,
    FLAW_BLOCK,
    FLAW_PLACEMENT,
    RESPONSES,
    Parsed,
    as_text,
    get,
    is_sequence,
    text_or_none,
)

#: Blocks that call a tool, with the keys of their id, name and arguments.
CALL_BLOCKS: Mapping[str, tuple[str, str, str]] = {
    "tool_use": ("id", "name", "input"),  # Anthropic
    "tool_call": ("id", "name", "args"),  # LangChain v1 standard block
    # ChatOpenAI(output_version="responses/v1"): the Responses item as a content block,
    # beside the same call in tool_calls (one call, counted once).
    "function_call": ("call_id", "name", "arguments"),
}
#: Blocks that carry a tool result, with the key of the call id they answer.
RESULT_BLOCKS: Mapping[str, str] = {"tool_result": "tool_use_id"}
#: Media blocks: counted at a fixed cost each.
MEDIA_BLOCKS = frozenset(
    {"image", "image_url", "input_image", "input_file", "document", "file", "audio", "video"}
    | {"input_audio", "container_upload"}
)
#: Reasoning blocks and the key of their text.
REASONING_BLOCKS: Mapping[str, str] = {"thinking": "thinking", "reasoning": "reasoning"}
#: Blocks that make an ai message a thinking one (``MessageView.thinking``).
THINKING_BLOCKS = frozenset({*REASONING_BLOCKS, "redacted_thinking"})

_ANTHROPIC_ONLY = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
_RESPONSES_ONLY = frozenset({"input_text", "output_text", "input_image", "input_file"})
_CHAT_ONLY = frozenset({"image_url", "file"})
_CHAT_OR_RESPONSES = frozenset({"input_audio", "refusal"})


def block_formats(blocks: Any) -> int:
    """The formats whose role dicts may hold ``blocks`` (bits of ``MessageView.formats``):
    Anthropic for its own block types (and ``image``/``document`` with a ``source``), the
    Responses API for ``input_text``, ``output_text``, ..., Chat for the rest (LangChain's
    dicts accept any block); ``text`` blocks fit Chat and Anthropic."""
    mask = ANY_FORMAT
    for block in blocks:
        kind = get(block, "type") if not isinstance(block, str) else None
        if not isinstance(kind, str):
            mask &= CHAT  # plain strings and untyped entries: LangChain's content lists
        elif kind == "text":
            mask &= CHAT | ANTHROPIC
        elif kind in _ANTHROPIC_ONLY:
            mask &= ANTHROPIC
        elif kind in ("image", "document"):
            mask &= ANTHROPIC if get(block, "source") is not None else CHAT
        elif kind in _RESPONSES_ONLY:
            mask &= RESPONSES
        elif kind in _CHAT_OR_RESPONSES:
            mask &= CHAT | RESPONSES
        elif kind in _CHAT_ONLY:
            mask &= CHAT
        else:
            # A type this reader does not know (a new or beta block): it says nothing
            # about the format, is kept as it is and counts as its JSON.
            mask &= CHAT | ANTHROPIC | RESPONSES
    return mask


def result_text(content: Any) -> str:
    """The text of a tool result's content: a string as it is, a list of blocks as their
    texts (other blocks as JSON), anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if is_sequence(content):
        texts = []
        for block in content:
            text = text_or_none(get(block, "text")) if not isinstance(block, str) else block
            texts.append(text if text is not None else _json(block))
        return "\n".join(texts)
    return as_text(content)


def result_parts(content: Any) -> tuple[str, int]:
    """A tool result's content as :func:`result_text` reads it, but with its media blocks
    (an image or document a tool returned) counted apart, at a fixed cost each, instead of
    by their base64 data: the text of the rest, and how many media blocks there are."""
    if not is_sequence(content) or isinstance(content, str):
        return result_text(content), 0
    media = [
        block
        for block in content
        if not isinstance(block, str)
        and get(block, "type") in MEDIA_BLOCKS
        and not _text_document(block)
    ]
    if not media:
        return result_text(content), 0
    rest = [block for block in content if all(block is not m for m in media)]
    return result_text(rest), len(media)


def _json(value: Any) -> str:
    # As the estimate always wrote unknown blocks (kept so that their counts stay).
    return json.dumps(value, ensure_ascii=False, default=str)


def read_blocks(parsed: Parsed, blocks: Any, path: tuple[Any, ...], *, calls: bool) -> None:
    """Read a list of typed blocks into ``parsed``.

    Args:
        parsed: What the message's format read so far.
        blocks: The content list.
        path: Where the list is in the message (each block's slot path adds its index).
        calls: Read call blocks as calls (an assistant's content); elsewhere they are text.
    """
    known = {call[0] for call in parsed.calls if call[0]}
    for index, block in enumerate(blocks):
        where = (*path, index)
        if isinstance(block, str):
            parsed.add_text(block, where)
            continue
        kind = get(block, "type")
        if not calls and kind in CALL_BLOCKS:
            parsed.flaw(
                FLAW_PLACEMENT,
                f"content[{index}] is a {kind} block in a {parsed.raw_role} message: only "
                "the model's (assistant) messages call tools",
            )
        if calls and kind in CALL_BLOCKS:
            id_key, name_key, args_key = CALL_BLOCKS[kind]
            call_id = text_or_none(get(block, id_key))
            if call_id is None:
                parsed.flaw(FLAW_BLOCK, f"content[{index}] is a {kind} block without an {id_key!r}")
            if call_id is not None and call_id in known:
                continue  # also in tool_calls (a LangChain message from ChatAnthropic)
            name = get(block, name_key)
            parsed.calls.append(
                (
                    call_id,
                    name if isinstance(name, str) else "",
                    as_text(get(block, args_key)),
                    block,
                )
            )
            if call_id is not None:
                known.add(call_id)
            continue
        if kind in RESULT_BLOCKS:
            key = text_or_none(get(block, RESULT_BLOCKS[kind]))
            if calls:
                parsed.flaw(
                    FLAW_PLACEMENT,
                    f"content[{index}] is a {kind} block in a {parsed.raw_role} message: tool "
                    "results go in the user message after the call",
                )
            elif key is None:
                parsed.flaw(
                    FLAW_BLOCK,
                    f"content[{index}] is a {kind} block without a {RESULT_BLOCKS[kind]!r}",
                )
            text, media = result_parts(get(block, "content"))
            parsed.result_media += media
            if key is not None:
                parsed.add_result(key, text, (*where, "content"))
            else:
                parsed.add_text(text, (*where, "content"), "result")
            continue
        if kind in REASONING_BLOCKS:
            parsed.thinking = True
            text = get(block, REASONING_BLOCKS[kind])
            if isinstance(text, str):
                parsed.add_text(text, (*where, REASONING_BLOCKS[kind]), "reasoning")
            elif kind == "reasoning":
                # ChatOpenAI(output_version="responses/v1"): the Responses reasoning item,
                # its text in the summary parts (counted, as the Responses reader does).
                for part in get(block, "summary") or ():
                    summary = get(part, "text")
                    if isinstance(summary, str):
                        parsed.texts.append(summary)
            continue
        if kind == "redacted_thinking":
            parsed.thinking = True
            continue  # opaque data, no text
        if kind in MEDIA_BLOCKS and not _text_document(block):
            parsed.images += 1
            continue
        text = get(block, "text")
        if isinstance(text, str):
            parsed.add_text(text, (*where, "text"))
        elif kind == "refusal" and isinstance(get(block, "refusal"), str):
            parsed.add_text(get(block, "refusal"), (*where, "refusal"))
        elif kind == "document":
            parsed.texts.append(result_text(get(get(block, "source"), "data")))
        elif kind in ("server_tool_use", "mcp_tool_use"):
            name = get(block, "name")
            parsed.texts.append(f"{name if isinstance(name, str) else ''}")
            parsed.texts.append(as_text(get(block, "input")))
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            parsed.texts.append(result_text(get(block, "content")))
        else:
            parsed.texts.append(_json(block) if isinstance(block, Mapping) else as_text(block))


def _text_document(block: Any) -> bool:
    """An Anthropic document whose source is plain text (counted as text)."""
    return bool(get(block, "type") == "document" and get(get(block, "source"), "type") == "text")


def replace_in(blocks: Any, changes: Mapping[tuple[Any, ...], str | None]) -> list[Any]:
    """A copy of a typed block list with ``changes`` applied (paths relative to the list:
    ``(index, key)`` sets ``block[key]``, ``(index,)`` a string block; None removes a
    block)."""
    out: list[Any] = list(blocks)
    removed: set[int] = set()
    for path, text in changes.items():
        index = path[0]
        if text is None:
            removed.add(index)
            continue
        block = out[index]
        if len(path) == 1 or isinstance(block, str):
            out[index] = text
        else:
            out[index] = set_field(block, path[1], text)
    return [block for index, block in enumerate(out) if index not in removed]


def set_field(entry: Any, key: str, value: Any) -> Any:
    """A copy of ``entry`` (a mapping or a pydantic object) with ``key`` set."""
    if isinstance(entry, Mapping):
        return {**entry, key: value}
    copy = getattr(entry, "model_copy", None)
    if callable(copy):
        return copy(update={key: value})
    import copy as _copy

    clone = _copy.copy(entry)
    try:
        setattr(clone, key, value)
    except (AttributeError, TypeError) as exc:
        raise TypeError(
            f"cannot write {key!r} into a {type(entry).__name__} ({exc}): expected a dict or "
            "an object with that field"
        ) from None
    return clone

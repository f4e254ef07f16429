"""Memory blocks: what :class:`~agentstate_reducer.policy.Recall` inserts into a model's view.

A memory block is one user message (two where a format's roles must alternate and no
single one fits its neighbours: the memories, then a filler of the other side, as a
summary block is built) whose text is :data:`MEMORY_HEADER` followed by the memories,
written in the list's own format and kind of message by the format's writer, and marked
the way summary blocks are: ``lc_source = "recall"`` where the kind has a metadata slot a
provider accepts (LangChain messages, their dict and serialised forms), else by the header
line (plain OpenAI dicts, Anthropic, Responses, Gemini, Bedrock, llama-index).
:func:`is_memory` recognises it.

The reducer treats a memory block as it treats a summary block (its view is a block,
``MessageView.summary``): never pruned as an ordinary message (a view keeps it while it
makes room), not a user turn, and never handed to the ``on_prune`` hooks (its memories are
in the store already).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from .messages import (
    AI,
    HUMAN,
    MEMORY_FILLER,
    MEMORY_HEADER,
    MEMORY_SOURCE,
    SUMMARY_SOURCE,
    MessageFormat,
    detect,
    is_memory,
    is_serialized,
    read_view,
    source_of,
    with_text,
)

__all__ = ["MEMORY_HEADER", "MEMORY_SOURCE", "is_memory", "memory_block"]

_SIDES = {HUMAN: HUMAN, "tool": HUMAN, AI: AI}


def memory_block(
    text: str,
    block_id: str,
    messages: Sequence[Any],
    position: int = 0,
    format: MessageFormat | None = None,
) -> list[Any]:
    """The memory block for ``text`` (:data:`MEMORY_HEADER` first), to go before
    ``messages[position]``, in the format (default: told from ``messages``) and kind of
    message the list holds.

    Raises:
        TypeError: The list holds objects of a kind the reducer cannot build, or mixes
            formats.
    """
    fmt = format if format is not None else detect(messages)
    before, after = _sides_around(messages, position)
    return [_remarked(m) for m in fmt.summary_block(text, block_id, messages, before, after)]


def _remarked(message: Any) -> Any:
    """A message the summary writer built, marked as memory instead: its ``lc_source``
    replaced, a filler's text made a memory filler."""
    if source_of(message) == SUMMARY_SOURCE:
        message = _with_source(message, MEMORY_SOURCE)
    if not is_memory(message):
        with contextlib.suppress(TypeError):  # (the summary's filler, the second of a pair)
            message = with_text(message, MEMORY_FILLER)
    return message


def _with_source(message: Any, value: str) -> Any:
    if isinstance(message, Mapping):
        if is_serialized(message):
            data = dict(message["data"])
            data["additional_kwargs"] = {
                **(data.get("additional_kwargs") or {}),
                "lc_source": value,
            }
            return {**message, "data": data}
        if "lc_source" in message:
            return {**message, "lc_source": value}
        extra = message.get("additional_kwargs")
        if isinstance(extra, Mapping):
            return {**message, "additional_kwargs": {**extra, "lc_source": value}}
        return message
    extra = getattr(message, "additional_kwargs", None)
    model_copy = getattr(message, "model_copy", None)
    if isinstance(extra, Mapping) and callable(model_copy):
        return model_copy(update={"additional_kwargs": {**extra, "lc_source": value}})
    return message


def _sides_around(messages: Sequence[Any], position: int) -> tuple[str | None, str | None]:
    """The sides (``human``/``ai``) of the messages a block at ``position`` goes between
    (system messages and blocks skipped; None where there is none)."""
    before = after = None
    for message in reversed(messages[:position]):
        view = read_view(message)
        before = None if view.summary else _SIDES.get(view.role)
        if before is not None:
            break
    for message in messages[position:]:
        view = read_view(message)
        after = None if view.summary else _SIDES.get(view.role)
        if after is not None:
            break
    return before, after

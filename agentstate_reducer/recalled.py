"""Memory blocks: what :class:`~agentstate_reducer.policy.Recall` inserts into a model's view.

A memory block is one human message whose text is :data:`MEMORY_HEADER` followed by the
memories, written in the kind of message the list holds, and marked the way summary blocks
are: ``lc_source = "recall"`` (in ``additional_kwargs`` for LangChain messages and the
serialised form, as a top-level key in LangChain-shaped dicts), except in plain
OpenAI-format dicts, which providers reject with unknown keys: there the header line is
the mark. :func:`is_memory` recognises it.

The reducer treats a memory block as it treats a summary block: never pruned as an
ordinary message (the view keeps it while it makes room), not a user turn, and never
handed to the ``on_prune`` hooks (its memories are in the store already).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .messages import AI, HUMAN, content_of, is_serialized, raw_role_of, role_of, source_of

__all__ = ["MEMORY_HEADER", "MEMORY_SOURCE", "is_memory", "memory_block"]

#: The ``lc_source`` of memory blocks.
MEMORY_SOURCE = "recall"

#: The first line of a memory block's text.
MEMORY_HEADER = "Memories from earlier conversations that may help:\n"


def is_memory(msg: Any) -> bool:
    """Whether ``msg`` is a memory block :class:`~agentstate_reducer.policy.Recall` put in a
    model's view: marked ``lc_source == "recall"``, or a dict whose text starts with
    :data:`MEMORY_HEADER`. Reads, never raises."""
    try:
        if source_of(msg) == MEMORY_SOURCE:
            return True
    except (TypeError, AttributeError):
        return False
    if not isinstance(msg, Mapping):
        return False
    content = content_of(msg)
    return isinstance(content, str) and content.startswith(MEMORY_HEADER)


def memory_block(text: str, block_id: str, messages: Sequence[Any]) -> Any:
    """The memory block for ``text`` (header included), in the kind ``messages`` hold.

    Raises:
        TypeError: The list holds objects of a kind the reducer cannot build.
    """
    sample = _sample(messages)
    if sample is None or (
        isinstance(sample, Mapping) and not is_serialized(sample) and "role" in sample
    ):
        # Plain OpenAI-format dicts: no extra key, the header is the mark.
        return {"role": _human_name(messages, "role", "user"), "content": text}
    if isinstance(sample, Mapping):
        if is_serialized(sample):
            data = {
                "content": text,
                "additional_kwargs": {"lc_source": MEMORY_SOURCE},
                "response_metadata": {},
                "type": "human",
                "name": None,
                "id": block_id,
            }
            return {"type": "human", "data": data}
        block = {
            "type": _human_name(messages, "type", "human"),
            "content": text,
            "lc_source": MEMORY_SOURCE,
        }
        if "id" in sample:
            block["id"] = block_id
        return block
    if any(cls.__module__.startswith("langchain_core.") for cls in type(sample).__mro__):
        from langchain_core.messages import HumanMessage

        return HumanMessage(
            content=text, id=block_id, additional_kwargs={"lc_source": MEMORY_SOURCE}
        )
    raise TypeError(
        f"Recall cannot build a memory block for a list of {type(sample).__name__} objects: "
        "it writes dicts and LangChain messages"
    )


def _sample(messages: Sequence[Any]) -> Any:
    fallback = None
    for message in messages:
        if fallback is None:
            fallback = message
        try:
            if role_of(message) in (HUMAN, AI):
                return message
        except TypeError:
            continue
    return fallback


def _human_name(messages: Sequence[Any], key: str, default: str) -> str:
    for message in messages:
        if isinstance(message, Mapping) and key in message:
            try:
                if role_of(message) == HUMAN:
                    raw = raw_role_of(message)
                    if raw is not None:
                        return raw
            except TypeError:
                continue
    return default

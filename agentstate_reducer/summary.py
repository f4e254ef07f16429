"""Running-summary blocks: what they look like, how they are marked, and their ids.

A summarising prune replaces the pruned messages, and the summary block already in the
list, with one new block: by default a single human message whose text is
:data:`~agentstate_reducer.messages.SUMMARY_HEADER` followed by the summary, in the kind of
message the list holds (LangChain messages in a LangChain list, dicts with the list's own
keys and role names in a dict list, LangChain's serialised form in a serialised list).

Marking: every summary message carries LangChain's marker for messages the harness added,
``lc_source = "summarization"`` (in ``additional_kwargs`` for LangChain messages and the
serialised form, as a top-level key in LangChain-shaped dicts, which
``convert_to_messages`` moves into ``additional_kwargs``), except plain OpenAI-format
dicts, which providers reject with unknown keys: there the header line is the mark. UIs
and later reduces recognise summaries by :func:`~agentstate_reducer.messages.is_summary`.

Ids are derived from what was summarised (:func:`summary_id`), so replaying the same
reduce (LangGraph's ``get_state``, a resume after ``interrupt()``) gives the same ids.

A list of other objects needs ``summary_message_factory``; its messages must be marked
(:func:`mark_summary` does it for dicts and LangChain messages).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .messages import (
    AI,
    HUMAN,
    SUMMARY_HEADER,
    SUMMARY_SOURCE,
    fingerprint,
    id_of,
    is_serialized,
    is_summary,
    raw_role_of,
    role_of,
)

__all__ = [
    "SUMMARY_HEADER",
    "SUMMARY_ID_PREFIX",
    "SummaryBuilder",
    "default_summary_builder",
    "is_summary",
    "mark_summary",
    "summary_id",
    "summary_text",
]

SUMMARY_ID_PREFIX = "summary-"

SummaryBuilder = Callable[[str, int], list[Any]]
"""``(summary, pruned_count) -> block``: the messages a summary is injected as."""


def summary_text(summary: str) -> str:
    """The text of the default summary message: the header line, then the summary."""
    return SUMMARY_HEADER + summary


def summary_id(folded: Sequence[Any], pruned: Sequence[Any]) -> str:
    """A deterministic id for the block that summarises ``folded`` summaries and ``pruned``.

    Derived from the messages' fingerprints (role, id, content, tool calls), so the same
    reduce gives the same id every time and different conversations different ids.
    """
    digest = hashlib.sha256()
    for message in (*folded, *pruned):
        digest.update(fingerprint(message).encode())
        digest.update(b"\x00")
    return SUMMARY_ID_PREFIX + digest.hexdigest()[:32]


def mark_summary(message: Any) -> Any:
    """A copy of ``message`` marked as a summary (``lc_source = "summarization"``).

    Works on LangChain messages (in ``additional_kwargs``), LangChain's serialised form
    (in ``data.additional_kwargs``) and dicts (a top-level ``lc_source`` key).

    Raises:
        TypeError: ``message`` is another kind of object.
    """
    if isinstance(message, Mapping):
        if is_serialized(message):
            data = dict(message["data"])
            data["additional_kwargs"] = {
                **(data.get("additional_kwargs") or {}),
                "lc_source": SUMMARY_SOURCE,
            }
            return {**message, "data": data}
        return {**message, "lc_source": SUMMARY_SOURCE}
    extra = getattr(message, "additional_kwargs", None)
    model_copy = getattr(message, "model_copy", None)
    if isinstance(extra, Mapping) and callable(model_copy):
        return model_copy(update={"additional_kwargs": {**extra, "lc_source": SUMMARY_SOURCE}})
    raise TypeError(
        f"cannot mark a {type(message).__name__} as a summary: build summary messages that "
        "carry additional_kwargs['lc_source'] == 'summarization' (or dicts or LangChain "
        "messages, which mark_summary can mark)"
    )


def with_id(message: Any, new_id: str) -> Any:
    """``message`` with ``new_id`` when it has no id and its kind carries one; else as is."""
    if id_of(message) is not None:
        return message
    if isinstance(message, Mapping):
        if is_serialized(message):
            return {**message, "data": {**message["data"], "id": new_id}}
        return {**message, "id": new_id}
    model_copy = getattr(message, "model_copy", None)
    if callable(model_copy) and hasattr(message, "id"):
        return model_copy(update={"id": new_id})
    return message


BlockBuilder = Callable[[str, str], list[Any]]
"""``(summary, block_id) -> block``: how the reducer builds a block in a list's kind."""


def default_summary_builder(messages: Sequence[Any]) -> BlockBuilder:
    """A builder of the one-message summary block in the kind ``messages`` hold.

    Raises:
        TypeError: The list holds objects the reducer cannot construct.
    """
    sample = _sample(messages)
    if sample is None:
        return _dict_builder(role_key="role", human="user", with_id=False, marked=False)
    if _is_langchain(sample):
        return _langchain_builder
    if isinstance(sample, Mapping):
        if is_serialized(sample):
            return _serialized_builder
        role_key = "role" if "role" in sample else "type"
        return _dict_builder(
            role_key=role_key,
            human=_human_name(messages, role_key),
            with_id="id" in sample,
            # OpenAI-format dicts go to providers as they are: no extra key there.
            marked=role_key == "type",
        )
    raise TypeError(
        f"inject_summary cannot build a summary message for a list of "
        f"{type(sample).__name__} objects; pass summary_message_factory=(summary, "
        "pruned_count) -> [messages] to ReducerConfig (mark them with mark_summary)"
    )


def _is_langchain(message: Any) -> bool:
    return any(cls.__module__.startswith("langchain_core.") for cls in type(message).__mro__)


def _sample(messages: Sequence[Any]) -> Any:
    fallback = None
    for message in messages:
        if fallback is None:
            fallback = message
        if role_of(message) in (HUMAN, AI):
            return message
    return fallback


def _human_name(messages: Sequence[Any], role_key: str) -> str:
    for message in messages:
        if isinstance(message, Mapping) and role_of(message) == HUMAN:
            raw = raw_role_of(message)
            if raw is not None:
                return raw
    return "user" if role_key == "role" else "human"


def _langchain_builder(summary: str, block_id: str) -> list[Any]:
    from langchain_core.messages import HumanMessage

    return [
        HumanMessage(
            content=summary_text(summary),
            id=block_id,
            additional_kwargs={"lc_source": SUMMARY_SOURCE},
        )
    ]


def _dict_builder(*, role_key: str, human: str, with_id: bool, marked: bool) -> BlockBuilder:
    def build(summary: str, block_id: str) -> list[Any]:
        message: dict[str, Any] = {role_key: human, "content": summary_text(summary)}
        if with_id:
            message["id"] = block_id
        if marked:
            message["lc_source"] = SUMMARY_SOURCE
        return [message]

    return build


def _serialized_builder(summary: str, block_id: str) -> list[Any]:
    data: dict[str, Any] = {
        "content": summary_text(summary),
        "additional_kwargs": {"lc_source": SUMMARY_SOURCE},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": block_id,
    }
    return [{"type": "human", "data": data}]


def factory_builder(
    factory: SummaryBuilder, *, dict_ids: bool
) -> Callable[[str, str, int], list[Any]]:
    """Wrap a user's ``summary_message_factory``: its messages are marked as summaries when
    :func:`is_summary` does not already recognise them, and get deterministic ids when
    they lack one (dicts only when ``dict_ids``: the list's own dicts carry ids).

    The returned builder raises ``TypeError`` when the factory returns something other
    than a list, or messages :func:`is_summary` does not recognise and
    :func:`mark_summary` cannot mark.
    """

    def build(summary: str, block_id: str, pruned_count: int) -> list[Any]:
        block = factory(summary, pruned_count)
        if not isinstance(block, list):
            raise TypeError(
                f"summary_message_factory must return a list of messages, got {block!r}"
            )
        out = []
        for index, message in enumerate(block):
            if not is_summary(message):
                message = mark_summary(message)
            if dict_ids or not isinstance(message, Mapping) or is_serialized(message):
                message = with_id(message, block_id if index == 0 else f"{block_id}-{index}")
            out.append(message)
        return out

    return build

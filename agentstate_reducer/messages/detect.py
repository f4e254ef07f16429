"""Which format a message is in, and which format a list is in, told from the list itself.

Each message is read by the module of its shape (:func:`reader_of`): a dict by its keys
(``parts``: Gemini; a Responses item ``type``; a role dict by its content blocks: Bedrock's
keyed blocks, Anthropic's or the Responses API's typed blocks, else Chat), an object by its
class (LangChain, llama-index, google-genai, pydantic-ai, OpenAI SDK items) or its attributes (duck
typing). Its view says which formats it fits (:attr:`~.base.MessageView.formats`): a plain
text message ``{"role": "user", "content": "hi"}`` fits Chat, Anthropic and the Responses
API alike, a ``tool_use`` block only Anthropic.

A list's format is the one every message fits (:func:`list_format`): the first of Chat,
Anthropic, Responses, Gemini, Bedrock, llama-index, pydantic-ai that all of them fit, so a
list of plain text messages is Chat. A list no single format fits is refused with a
``TypeError`` naming two of its messages and their formats. Chat dicts, LangChain's dict
and serialised forms, LangChain messages and duck-typed objects are one format (the Chat
family: LangGraph channels mix them); Gemini dicts and google-genai ``Content`` objects are
one format too, and so are pydantic-ai's messages and their serialised dicts. Any other mix
is refused: Anthropic, Responses, Gemini, Bedrock, llama-index and pydantic-ai messages with
each other or with the Chat family (a plain text dict fits Chat, Anthropic and Responses
lists).

``ReducerConfig(format=...)`` names the format instead (for a list of plain text messages
that should follow Anthropic's rules, say); every message must then fit it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .anthropic import ANTHROPIC_FORMAT
from .base import (
    ANTHROPIC,
    ANY_FORMAT,
    BEDROCK,
    CHAT,
    FORMAT_BITS,
    GEMINI,
    LLAMA_INDEX,
    PYDANTIC_AI,
    RESPONSES,
    MessageFormat,
    MessageView,
    format_names,
    is_sequence,
    module_of,
)
from .bedrock import BEDROCK_FORMAT, is_block
from .blocks import block_formats
from .chat import CHAT_FORMAT, is_mapping, is_serialized
from .duck import DUCK_FORMAT
from .gemini import GEMINI_FORMAT, is_gemini_object
from .langchain import LANGCHAIN_FORMAT, is_langchain_module
from .llama_index import LLAMA_INDEX_FORMAT, is_llama_index
from .pydantic_ai import PYDANTIC_AI_FORMAT, is_pydantic_ai
from .responses import ITEM_TYPES, RESPONSES_FORMAT

#: Every format by the name ``ReducerConfig(format=...)`` takes.
FORMATS: Mapping[str, MessageFormat] = {
    "chat": CHAT_FORMAT,
    "langchain": LANGCHAIN_FORMAT,
    "duck": DUCK_FORMAT,
    "anthropic": ANTHROPIC_FORMAT,
    "responses": RESPONSES_FORMAT,
    "gemini": GEMINI_FORMAT,
    "bedrock": BEDROCK_FORMAT,
    "llama_index": LLAMA_INDEX_FORMAT,
    "pydantic_ai": PYDANTIC_AI_FORMAT,
}

#: The format a list is read as, by its bit (the Chat family is read and written by the
#: Chat format, whose writer looks at the list's kind of message).
_BY_BIT: Mapping[int, MessageFormat] = {
    CHAT: CHAT_FORMAT,
    ANTHROPIC: ANTHROPIC_FORMAT,
    RESPONSES: RESPONSES_FORMAT,
    GEMINI: GEMINI_FORMAT,
    BEDROCK: BEDROCK_FORMAT,
    LLAMA_INDEX: LLAMA_INDEX_FORMAT,
    PYDANTIC_AI: PYDANTIC_AI_FORMAT,
}

_DESCRIPTIONS: Mapping[str, str] = {
    "chat": "Chat Completions or LangChain",
    "anthropic": "Anthropic",
    "responses": "Responses API",
    "gemini": "Gemini",
    "bedrock": "Bedrock Converse",
    "llama_index": "llama-index",
    "pydantic_ai": "pydantic-ai",
}


def reader_of(msg: Any) -> MessageFormat:
    """The format module that reads ``msg`` (see the module docstring).

    Raises:
        TypeError: A role dict's content holds blocks of two formats.
    """
    if type(msg) is dict:
        if type(msg.get("content")) is str:  # the common case: a dict with text content
            kind = msg.get("type")
            if msg.get("role") is None and type(kind) is str and kind in ITEM_TYPES:
                return RESPONSES_FORMAT
            return CHAT_FORMAT
    else:
        found = _object_reader(msg)
        if found is not None:
            return found
    if is_mapping(msg):
        role = msg.get("role")
        if role is None:
            if "parts" in msg and "content" not in msg:
                return PYDANTIC_AI_FORMAT if is_pydantic_ai(msg) else GEMINI_FORMAT
            kind = msg.get("type")
            if isinstance(kind, str) and kind in ITEM_TYPES and not is_serialized(msg):
                return RESPONSES_FORMAT
            return CHAT_FORMAT
        if "parts" in msg and "content" not in msg:
            return GEMINI_FORMAT
        content = msg.get("content")
        if is_sequence(content) and not isinstance(content, str) and len(content):
            return _by_blocks(content)
        return CHAT_FORMAT
    if is_gemini_object(msg):
        return GEMINI_FORMAT
    kind = getattr(msg, "type", None)
    if isinstance(kind, str) and kind in ITEM_TYPES:
        if kind == "message":  # an Anthropic SDK Message, or an OpenAI output message
            blocks: Any = getattr(msg, "content", None)
            if is_sequence(blocks) and len(blocks) and block_formats(blocks) & ANTHROPIC:
                return ANTHROPIC_FORMAT
        return RESPONSES_FORMAT
    return DUCK_FORMAT


#: The reader of each class of SDK object seen (LangChain, llama-index, google-genai), by
#: class: a class's module never changes, so one look at it serves every instance.
_BY_CLASS: dict[type, MessageFormat | None] = {}


def _object_reader(msg: Any) -> MessageFormat | None:
    """The reader of an SDK object known by its class's module, or None (checked before
    anything else: a missing attribute is slow to look up on a pydantic model)."""
    cls = type(msg)
    try:
        return _BY_CLASS[cls]
    except KeyError:
        pass
    found: MessageFormat | None = None
    if is_langchain_module(msg):
        found = LANGCHAIN_FORMAT
    elif is_llama_index(msg):
        found = LLAMA_INDEX_FORMAT
    elif module_of(msg).startswith("google.genai"):
        found = GEMINI_FORMAT
    elif is_pydantic_ai(msg):
        found = PYDANTIC_AI_FORMAT
    if len(_BY_CLASS) < 1024:  # bounded: classes made on the fly are not all remembered
        _BY_CLASS[cls] = found
    return found


def _by_blocks(content: Any) -> MessageFormat:
    if is_block(content[0]):
        return BEDROCK_FORMAT
    mask = block_formats(content)
    if mask & CHAT:
        return CHAT_FORMAT
    if mask & ANTHROPIC:
        return ANTHROPIC_FORMAT
    if mask & RESPONSES:
        return RESPONSES_FORMAT
    kinds = sorted({str(b.get("type")) for b in content if isinstance(b, Mapping)})
    raise TypeError(
        f"a message's content holds blocks of different formats ({', '.join(kinds)}): "
        "expected the blocks of one format (Chat, Anthropic, Responses API or Bedrock)"
    )


def format_named(name: str | MessageFormat) -> MessageFormat:
    """The format ``ReducerConfig(format=name)`` names.

    Raises:
        ValueError: No format has that name.
        TypeError: ``name`` is not a string.
    """
    if isinstance(name, MessageFormat):
        return name
    if not isinstance(name, str):
        raise TypeError(f"format must be a format name, got {name!r}")
    found = FORMATS.get(name)
    if found is None:
        raise ValueError(f"format={name!r} is not one of {', '.join(FORMATS)}")
    return found


def format_of_mask(mask: int) -> MessageFormat:
    """The format a list whose messages all fit ``mask`` is read as."""
    for bit, fmt in _BY_BIT.items():
        if mask & bit:
            return fmt
    return CHAT_FORMAT


_FORMATS_OF = operator.attrgetter("formats")


def combine(
    views: Sequence[MessageView],
    where: Callable[[int], str],
    *,
    mask: int = ANY_FORMAT,
    forced: MessageFormat | None = None,
    earlier: Sequence[MessageView] = (),
) -> int:
    """The formats every message of ``views`` fits, with ``mask`` (what ``earlier``
    messages fit) -- the list's formats.

    Args:
        views: The messages' views, in list order.
        where: A position's name for errors (``where(i)`` for ``views[i]``).
        mask: What the messages before ``views`` fit.
        forced: The format ``ReducerConfig(format=...)`` names; every message must fit it.
        earlier: The views of the messages before ``views`` (to name one in an error);
            ``where(-len(earlier) + j)`` names ``earlier[j]``.

    Raises:
        TypeError: A message fits no format the others fit (both are named, with their
            formats), or not the forced format.
    """
    distinct = set(map(_FORMATS_OF, views))
    combined = mask
    for formats in distinct:
        combined &= formats
    if forced is not None:
        bit = _family_bit(forced)
        if not combined & bit:
            for index, view in enumerate(views):
                if not view.formats & bit:
                    raise TypeError(
                        f"{where(index)}: format={forced.name!r} was given, but this is "
                        f"{_describe_formats(view.formats)} message"
                    )
        return bit
    if combined:
        return combined
    every = [*earlier, *views]
    offset = len(earlier)
    running = mask if not earlier else ANY_FORMAT
    for index, view in enumerate(every):
        if running & view.formats:
            running &= view.formats
            continue
        other = _first_unlike(every[:index], view.formats)
        if not every[:index] or every[other].formats & view.formats:
            raise TypeError(
                f"{where(index - offset)} is {_describe_formats(view.formats)} message, but "
                f"the list is {_describe_formats(running)} one (a list holds messages of "
                "one format)"
            )
        raise TypeError(
            f"{where(index - offset)} is {_describe_formats(view.formats)} message, but "
            f"{where(other - offset)} is {_describe_formats(every[other].formats)} one: a "
            "list holds messages of one format (Chat dicts, LangChain's dict forms and "
            "LangChain messages may be mixed; Anthropic, Responses API, Gemini, Bedrock, "
            "llama-index and pydantic-ai messages may not, with each other or with those)"
        )
    raise TypeError(  # pragma: no cover - the running mask found the conflict above
        "the messages fit no single format"
    )


def _family_bit(fmt: MessageFormat) -> int:
    return fmt.bit or CHAT


def _first_unlike(views: Sequence[MessageView], formats: int) -> int:
    """The first of ``views`` that shares no format with ``formats`` (else the first
    after which, together, they share none)."""
    running = ANY_FORMAT
    for index, view in enumerate(views):
        if not view.formats & formats:
            return index
        running &= view.formats
        if not running & formats:
            return index
    return 0


def _describe_formats(mask: int) -> str:
    """``an Anthropic`` for one format, ``a Chat Completions or LangChain`` for the
    Chat family; a message that fits several is named by the most specific."""
    names = format_names(mask)
    if not names:
        return "an unreadable"
    text = _DESCRIPTIONS[names[0]]
    if len(names) > 1:
        text += " (or " + " or ".join(_DESCRIPTIONS[n] for n in names[1:]) + ")"
    return ("an " if text[0] in "AEIOU" else "a ") + text


def detect(messages: Sequence[Any], format: str | MessageFormat | None = None) -> MessageFormat:
    """The format of a message list, told from the list itself (see the module
    docstring), or the one ``format`` names after checking every message fits it.

    Raises:
        TypeError: An entry is not a message, or the list mixes formats (the error names
            two messages and their formats).
        ValueError: ``format`` is not a format's name.
    """
    from .reader import view_of

    forced = None if format is None else format_named(format)
    views = [view_of(message, f"messages[{i}]") for i, message in enumerate(messages)]
    mask = combine(views, lambda i: f"messages[{i}]", forced=forced)
    return forced if forced is not None else format_of_mask(mask)


__all__ = [
    "FORMATS",
    "FORMAT_BITS",
    "combine",
    "detect",
    "format_named",
    "format_of_mask",
    "reader_of",
]

"""Uniform, read-only access to messages of any supported format, and writing them back.

Every accessor here takes a message of any format and asks the module of its shape
(:func:`~.detect.reader_of`): Chat Completions dicts and LangChain's dict forms
(:mod:`.chat`), LangChain messages (:mod:`.langchain`), duck-typed objects (:mod:`.duck`),
Anthropic (:mod:`.anthropic`), the Responses API (:mod:`.responses`), Gemini
(:mod:`.gemini`), Bedrock Converse (:mod:`.bedrock`), llama-index (:mod:`.llama_index`) and
pydantic-ai (:mod:`.pydantic_ai`).
No framework is imported to read a message.

:func:`read_view` is the reducer's hot path: Chat dicts and LangChain messages are read
directly; everything else goes through :func:`general_view`, the format's own reading,
which is the specification (a property test checks that both agree on every shape).

Writing (:func:`with_slots`, :func:`with_text`, :func:`with_content`) returns a new message
of the same kind and format; the original is never changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import agentstate_reducer.messages.chat as chat

from .base import (
    AI,
    BLOCK_HEADERS,
    CHAT,
    COMBINED_RESULT,
    FUNCTION,
    FUNCTION_CALL_KEY_PREFIX,
    HUMAN,
    MEMORY_HEADER,
    MEMORY_SOURCE,
    PLAIN,
    ROLE_ALIASES,
    SUMMARY_HEADER,
    SUMMARY_SOURCE,
    SYSTEM,
    TOOL,
    MessageFormat,
    MessageView,
    Parts,
    Slot,
    function_call_key,
)
from .blocks import CALL_BLOCKS, RESULT_BLOCKS, THINKING_BLOCKS
from .chat import ChatFormat, is_serialized, normalise
from .detect import reader_of
from .responses import ITEM_TYPES

#: The ``lc_source`` values of the blocks the reducer inserts (summaries, memories).
BLOCK_SOURCES = (SUMMARY_SOURCE, MEMORY_SOURCE)
"""The ``lc_source`` values of the blocks the reducer inserts (summary, memory)."""

__all__ = [
    "AI",
    "FUNCTION",
    "FUNCTION_CALL_KEY_PREFIX",
    "HUMAN",
    "ROLE_ALIASES",
    "SUMMARY_HEADER",
    "SUMMARY_SOURCE",
    "SYSTEM",
    "TOOL",
    "MessageView",
    "function_call_key",
    "is_serialized",
]

_PLAIN_ROLES = frozenset({HUMAN, AI, SYSTEM, "developer"})


def _chat(fmt: MessageFormat) -> bool:
    return isinstance(fmt, ChatFormat)


def raw_role_of(msg: Any) -> str | None:
    """The role or type string exactly as the message spells it (for a Responses API item
    without a role, its ``type``), or None if it has none."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.raw_role(msg)
    try:
        return fmt.parse(msg).raw_role
    except TypeError:
        return None


def _reader(msg: Any) -> MessageFormat | None:
    try:
        return reader_of(msg)
    except TypeError:
        return None


def role_of(msg: Any) -> str:
    """The normalised role of ``msg``: ``human``, ``ai`` (Gemini's ``model`` too),
    ``system``, ``tool``, ``function``, or an unknown role lowercased.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    fmt = reader_of(msg)
    if isinstance(fmt, ChatFormat):
        return fmt.role(msg)
    return fmt.parse(msg).role


def id_of(msg: Any) -> str | None:
    """The message's id, or None when it has none.

    Every format keeps it in the same place (an ``id`` key or attribute; ``data.id`` in
    LangChain's serialised form), so this reads it without telling the format first: it
    is on the hot path of LangGraph's merge.
    """
    return chat.message_id(msg)


def content_of(msg: Any) -> Any:
    """The message's content as its format holds it: a string or a list of blocks (Gemini:
    its ``parts``; llama-index: its ``blocks``; a Responses API output item: its
    ``output``), or None."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.content(msg)
    try:
        parsed = fmt.parse(msg)
    except TypeError:
        return None
    if parsed.content is None and parsed.role == TOOL:
        for slot in parsed.slots:
            if slot.kind == "result" and len(slot.path) == 1:
                return _get(msg, slot.path[0])
    return parsed.content


def _get(msg: Any, key: str) -> Any:
    return msg.get(key) if isinstance(msg, Mapping) else getattr(msg, key, None)


def tool_calls_of(msg: Any) -> list[Any]:
    """The raw tool-call entries of an ai message, in whatever form the message holds
    (Chat: its ``tool_calls``; Anthropic ``tool_use`` blocks, Gemini function calls,
    Bedrock ``toolUse``, a Responses call item itself, llama-index calls)."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.tool_calls(msg)
    try:
        return [raw for _, _, _, raw in fmt.parse(msg).calls]
    except TypeError:
        return []


def function_call_of(msg: Any) -> Any:
    """The legacy ``function_call`` of an ai message (``{"name", "arguments"}``, or an object
    with those attributes), in whatever form it holds, or None when it has none.

    Read from the message itself first, then from its ``additional_kwargs`` (where LangChain
    keeps it), as :func:`tool_calls_of` reads tool calls. Chat family only.
    """
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.function_call(msg)
    return None


def function_call_name_of(msg: Any) -> str | None:
    """The name of the function an ai message calls with a legacy ``function_call``, or
    None when it makes no such call (or the call has no name, which nothing can answer)."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.function_call_name(msg)
    return None


def function_name_of(msg: Any) -> str | None:
    """For a ``function`` message (a legacy function result), the name of the function it
    answers; None when it has no name. Read for any Chat-family message, so only
    meaningful for that role (LangChain gives every message an optional ``name``)."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.function_name(msg)
    return None


def tool_call_ids_of(msg: Any) -> tuple[str, ...]:
    """Ids of the tool calls an ai message makes (calls without an id are skipped),
    whichever way its format holds them (a LangChain message's content blocks too)."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        ids = chat.tool_call_ids(msg)
        found = chat.content(msg)
        if isinstance(found, list):
            ids += tuple(chat.block_calls(found, ids))
        return ids
    try:
        calls = fmt.parse(msg).calls
    except TypeError:
        return ()
    out: list[str] = []
    for call_id, _, _, _ in calls:
        if call_id and call_id not in out:
            out.append(call_id)
    return tuple(out)


def tool_call_id_of(msg: Any) -> str | None:
    """For a tool result, the id of the call it answers (the first, for a message that
    holds several results; see :func:`tool_result_ids_of`)."""
    ids = tool_result_ids_of(msg)
    return ids[0] if ids else None


def tool_result_ids_of(msg: Any) -> tuple[str, ...]:
    """The ids of every call a message answers: a Chat tool message's ``tool_call_id``;
    the ``tool_use_id`` of each ``tool_result`` block of an Anthropic (or LangChain) user
    message; Bedrock's ``toolUseId``; Gemini response ids; a Responses output's
    ``call_id``."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        single = chat.tool_call_id(msg)
        if single is not None:
            return (single,)
        found = chat.content(msg)
        if isinstance(found, list):
            return chat.block_results(found)[0]
        return ()
    try:
        results = fmt.parse(msg).results
    except TypeError:
        return ()
    return tuple(key for key, _ in results if not key.startswith(FUNCTION_CALL_KEY_PREFIX))


def tool_call_parts(call: Any) -> tuple[str, str]:
    """``(name, arguments-as-text)`` of one tool-call entry: LangChain (``name``, ``args``),
    OpenAI (``function.name``, ``function.arguments``), Anthropic ``tool_use`` and Bedrock
    ``toolUse`` (``name``, ``input``), Gemini (``name``, ``args``), a Responses call item
    (``name``, ``arguments``)."""
    from .base import as_text, get

    function = get(call, "function")
    if function is not None and not isinstance(function, str):
        return str(get(function, "name") or ""), as_text(get(function, "arguments"))
    for key in ("args", "input", "arguments", "tool_kwargs"):
        value = get(call, key)
        if value is not None:
            name = get(call, "name", get(call, "tool_name"))
            return str(name or ""), as_text(value)
    name = get(call, "name", get(call, "tool_name"))
    return str(name or ""), ""


def call_parts_of(msg: Any) -> list[tuple[str, str]]:
    """``(name, arguments-as-text)`` of every call an ai message makes, as counted: its tool
    calls, its legacy ``function_call``, and calls held only as content blocks."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        parts = [chat.tool_call_parts(call) for call in chat.tool_calls(msg)]
        legacy = chat.function_call(msg)
        if legacy is not None:
            parts.append(chat.function_call_parts(legacy))
        found = chat.content(msg)
        if isinstance(found, list):
            known = chat.tool_call_ids(msg)
            for block in found:
                if isinstance(block, Mapping):
                    keys = CALL_BLOCKS.get(block.get("type"))  # type: ignore[arg-type]
                    if keys is not None and block.get(keys[0]) not in known:
                        parts.append(tool_call_parts(block))
        return parts
    try:
        return [(name, arguments) for _, name, arguments, _ in fmt.parse(msg).calls]
    except TypeError:
        return []


def parts_of(msg: Any) -> Parts:
    """What counts towards ``msg``'s tokens (text, reasoning, results, calls, images),
    each part once, in any format.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    return reader_of(msg).parts(msg)


def slots_of(msg: Any) -> list[Slot]:
    """The texts of ``msg`` a step may rewrite, in message order: what it says
    (``"text"``), each tool result it holds (``"result"``), reasoning (``"reasoning"``).

    Raises:
        TypeError: ``msg`` is not a message.
    """
    return reader_of(msg).parse(msg).slots


def with_slots(msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
    """A copy of ``msg`` with the slots at ``changes``' paths (from :func:`slots_of`) set to
    new texts (None removes a text block), in the message's own shape and kind.

    Raises:
        TypeError: ``msg`` cannot be copied with new content.
    """
    if not changes:
        return msg
    return reader_of(msg).rewrite(msg, changes)


def with_text(msg: Any, text: str) -> Any:
    """A copy of ``msg`` saying ``text`` instead, in its own shape: the text goes into its
    first result (the others, if it holds several, say :data:`~.base.COMBINED_RESULT`), or
    else into its first text (other text blocks removed); calls, images and ids stay.

    Raises:
        TypeError: ``msg`` cannot be copied with new content.
    """
    slots = slots_of(msg)
    results = [slot for slot in slots if slot.kind == "result"]
    changes: dict[tuple[Any, ...], str | None] = {}
    if results:
        changes[results[0].path] = text
        for slot in results[1:]:
            changes[slot.path] = COMBINED_RESULT
    else:
        texts = [slot for slot in slots if slot.kind == "text"]
        if not texts:
            return with_content(msg, text)
        changes[texts[0].path] = text
        for slot in texts[1:]:
            changes[slot.path] = None
    return with_slots(msg, changes)


def source_of(msg: Any) -> str | None:
    """The feature that added ``msg`` to the conversation, or None.

    LangChain's convention (``additional_kwargs["lc_source"]``), read from messages, dicts
    and LangChain's serialised form; a dict may also carry it as a top-level ``lc_source``
    key (which LangChain's ``convert_to_messages`` turns into ``additional_kwargs``).
    """
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.source(msg)
    return None


def is_summary(msg: Any) -> bool:
    """Whether ``msg`` is a summary block the reducer (or LangChain's summarization
    middleware) put in the list.

    Marked by ``lc_source == "summarization"`` (:func:`source_of`); a message whose text
    starts with :data:`SUMMARY_HEADER` counts too where the format has no metadata slot a
    provider accepts (plain OpenAI dicts, Anthropic, Responses, Gemini, Bedrock,
    llama-index).
    """
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        return chat.is_summary(msg)
    return _first_text_starts(fmt, msg, SUMMARY_HEADER)


def is_memory(msg: Any) -> bool:
    """Whether ``msg`` is a memory block :class:`~agentstate_reducer.policy.Recall` put in
    a model's view: marked ``lc_source == "recall"``, or, where the format has no metadata
    slot a provider accepts, by its text starting with :data:`MEMORY_HEADER`. Reads, never
    raises."""
    fmt = _reader(msg)
    if fmt is None or _chat(fmt):
        try:
            return chat.is_memory(msg)
        except (TypeError, AttributeError):
            return False
    return _first_text_starts(fmt, msg, MEMORY_HEADER)


def _first_text_starts(fmt: MessageFormat, msg: Any, header: str) -> bool:
    try:
        slots = fmt.parse(msg).slots
    except TypeError:
        return False
    text = next((slot.text for slot in slots if slot.kind == "text"), None)
    return text is not None and text.startswith(header)


def fingerprint(msg: Any) -> str:
    """A digest of what a message says: role, id, content, tool calls (a legacy
    ``function_call`` included) and the call it answers, and for formats whose content is
    elsewhere (Gemini parts, Responses items) that content. Equal for equal messages of
    the Chat family in any of its shapes, different when any of those differ (an edited
    message, the same id in another conversation)."""
    fmt = reader_of(msg)
    role = role_of(msg)
    if _chat(fmt):
        calls = [(chat.call_id(call), *chat.tool_call_parts(call)) for call in chat.tool_calls(msg)]
        # Only legacy messages gain a part, so every other message keeps the digest it had.
        legacy = chat.function_call(msg)
        if legacy is not None:
            calls.append((None, *chat.function_call_parts(legacy)))
        answered = chat.tool_call_id(msg)
        if role == FUNCTION:
            name = chat.function_name(msg)
            answered = None if name is None else function_call_key(name)
        parts: list[Any] = [role, chat.message_id(msg), chat.content(msg), calls, answered]
    else:
        parsed = fmt.parse(msg)
        calls = [(call_id, name, arguments) for call_id, name, arguments, _ in parsed.calls]
        payload = fmt.fingerprint_payload(msg)
        content = parsed.content
        parts = [fmt.name, role, parsed.id, content, calls, parsed.results, payload]
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=_repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _repr(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True, mode="json")
        except Exception:  # pragma: no cover - an odd SDK object: its repr
            return repr(value)
    return repr(value)


def view_of(msg: Any, where: str) -> MessageView:
    """Read the facts the planner needs from one message.

    Args:
        msg: The message.
        where: Its position, for error messages (for example ``"existing[3]"``).

    Raises:
        TypeError: ``msg`` is not a message; the error names ``where``.
    """
    try:
        return read_view(msg)
    except TypeError as exc:
        raise TypeError(f"{where}: {exc}") from None


def read_view(msg: Any) -> MessageView:
    """:func:`view_of` without the position: the reducer's hot path.

    A fast path of :func:`general_view`: Chat dicts (text content) and LangChain messages
    (objects with a string ``type``) whose fields have their usual exact types are read
    directly; anything else (another format, a role dict with content blocks, a non-dict
    ``data`` mapping, an explicit ``role: None``, a ``str`` subclass, a tuple of tool
    calls, ...) goes through :func:`general_view`. A property test checks that both give
    the same view for every shape.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    cls = type(msg)
    if cls is not dict:
        fast: _ClassReader | None = _LANGCHAIN_READERS.get(cls, _UNSEEN)
        if fast is _UNSEEN:
            fast = _langchain_reader(cls)
        if fast is not None and (view := _read_by_class(fast, msg)) is not None:
            return view
    role_keyed = False
    if cls is dict:
        fields: Any = msg
        raw = msg.get("role")
        if raw is None:
            if "role" in msg:
                return general_view(msg)
            raw = msg.get("type")
            data = msg.get("data")
            if data is not None and "content" not in msg:
                if type(data) is not dict:
                    return general_view(msg)
                fields = data
                if raw == "chat":
                    raw = data.get("role") or raw
        else:
            role_keyed = True
        if type(raw) is not str:
            return general_view(msg)
        found = fields.get("content")
        if found is None:
            if "parts" in msg and "content" not in msg:
                return general_view(msg)  # Gemini
        elif type(found) is not str and (role_keyed or type(found) is not list):
            return general_view(msg)  # a role dict's content blocks tell its format
    else:
        raw = getattr(msg, "type", None)
        if type(raw) is not str or raw == "chat":
            return general_view(msg)
        fields = None
        found = None  # read below where it matters (call and result blocks)
    role = ROLE_ALIASES.get(raw)
    if role is None:
        if raw in ITEM_TYPES or fields is msg or fields is None:
            # A Responses API item (maybe of a type it adds later), or an object of another
            # role, which may be an SDK's content block (see duck.DuckFormat.role).
            return general_view(msg)
        role = normalise(raw)
    ident = fields.get("id") if fields is not None else getattr(msg, "id", None)
    if ident is not None and type(ident) is not str:
        return general_view(msg)
    message_id = ident or None
    if fields is None:
        extra = getattr(msg, "additional_kwargs", None)
        if extra is not None and type(extra) is not dict:
            return general_view(msg)
        summary = type(extra) is dict and extra.get("lc_source") in BLOCK_SOURCES
        if role is AI or role is HUMAN:
            found = getattr(msg, "content", None)
            if found is not None and type(found) is not str and type(found) is not list:
                return general_view(msg)
    else:
        extra = fields.get("additional_kwargs")
        top = msg.get("lc_source")
        if (extra is not None and type(extra) is not dict) or (
            top is not None and type(top) is not str
        ):
            return general_view(msg)
        if top is not None:
            summary = top in BLOCK_SOURCES
        else:
            summary = extra is not None and extra.get("lc_source") in BLOCK_SOURCES
        if not summary:
            summary = type(found) is str and found.startswith(BLOCK_HEADERS)
    if role is AI:
        calls = fields.get("tool_calls") if fields is not None else getattr(msg, "tool_calls", None)
        if not calls:  # also looks in additional_kwargs (a dict or None here)
            ids = chat.tool_call_ids(msg) if extra and extra.get("tool_calls") else ()
        elif type(calls) is not list:
            return general_view(msg)
        else:
            found_ids = []
            for call in calls:
                if type(call) is not dict:
                    return general_view(msg)
                call_id = call.get("id")
                if call_id is not None and type(call_id) is not str:
                    return general_view(msg)
                if call_id:
                    found_ids.append(call_id)
            ids = tuple(found_ids)
        thinking = False
        if type(found) is list:
            for block in found:
                if type(block) is dict:
                    kind = block.get("type")
                    if kind in CALL_BLOCKS:
                        return general_view(msg)
                    thinking = thinking or kind in THINKING_BLOCKS
        function_call = (
            fields.get("function_call") if fields is not None else chat.function_call_attribute(msg)
        )
        if not function_call and extra:  # extra is a dict here
            function_call = extra.get("function_call")
        if function_call:
            if type(function_call) is not dict:
                return general_view(msg)
            name = function_call.get("name")
            if name is not None and type(name) is not str:
                return general_view(msg)
            if name:
                ids += (function_call_key(name),)
        mask = PLAIN if role_keyed and not ids and not function_call else CHAT
        return _new(MessageView, (role, message_id, ids, None, summary, (), mask, 0, thinking, ()))
    if role is TOOL:
        answered = (
            fields.get("tool_call_id") if fields is not None else getattr(msg, "tool_call_id", None)
        )
        if answered is not None and type(answered) is not str:
            return general_view(msg)
        answered = answered or None
        answers = (answered,) if answered else ()
        return _new(
            MessageView, (role, message_id, (), answered, summary, answers, CHAT, 0, False, ())
        )
    if role is FUNCTION:
        name = fields.get("name") if fields is not None else getattr(msg, "name", None)
        if name is not None and type(name) is not str:
            return general_view(msg)
        answered = function_call_key(name) if name else None
        results = (answered,) if answered else ()
        return _new(
            MessageView, (role, message_id, (), answered, summary, results, CHAT, 0, False, ())
        )
    if role is HUMAN and type(found) is list:
        for block in found:
            if type(block) is dict and block.get("type") in RESULT_BLOCKS:
                return general_view(msg)
    mask = PLAIN if role_keyed and role in _PLAIN_ROLES else CHAT
    return _new(MessageView, (role, message_id, (), None, summary, (), mask, 0, False, ()))


def read_views(messages: list[Any]) -> list[MessageView]:
    """``[read_view(m) for m in messages]``, with LangChain's own message classes read by
    their class readers directly (one Python frame less per message: the reducer reads
    every new message of every turn through here).

    Raises:
        TypeError: An entry is not a message.
    """
    readers = _LANGCHAIN_READERS
    views: list[MessageView] = []
    append = views.append
    try:
        for message in messages:
            fast = readers.get(type(message))
            if fast is None or (view := fast(message)) is None:
                view = read_view(message)
            append(view)
    except AttributeError:  # a field deleted from an instance: read the rest one by one
        views.extend(map(read_view, messages[len(views) :]))
    return views


def _read_by_class(read: _ClassReader, msg: Any) -> MessageView | None:
    """``read(msg)``, or None (the general reader's turn) when a field the class declares
    is missing from the instance (an odd ``model_construct``, a deleted attribute)."""
    try:
        return read(msg)
    except AttributeError:
        return None


#: ``tuple.__new__``: builds a view without the Python frame of ``MessageView.__new__``.
_new = tuple.__new__


# -- LangChain's own message classes, read without the checks other objects need ----------
#
# Invariant: each reader below returns exactly what the rest of read_view returns for an
# instance of its class, or None when the instance is not in the plain shape it reads (then
# read_view goes on as for any object). tests/test_format_properties.py and
# tests/test_formats.py hold read_view equal to general_view for every message of every
# format, LangChain's included.


def _text_reader(role: str) -> _ClassReader:
    """The class reader of LangChain's message class whose ``type`` is ``role`` and whose
    content, when text, holds no call or result: ``HumanMessage``, ``SystemMessage``."""

    def read(msg: Any) -> MessageView | None:
        ident = msg.id
        extra = msg.additional_kwargs
        if (
            msg.type != role
            or (ident is not None and type(ident) is not str)
            or type(extra) is not dict
            or type(msg.content) is not str  # blocks may hold tool results
        ):
            return None
        summary = bool(extra) and extra.get("lc_source") in BLOCK_SOURCES
        return _new(MessageView, (role, ident or None, (), None, summary, (), CHAT, 0, False, ()))

    return read


_langchain_human = _text_reader(HUMAN)
_langchain_system = _text_reader(SYSTEM)


def _langchain_tool(msg: Any) -> MessageView | None:
    ident = msg.id
    extra = msg.additional_kwargs
    answered = msg.tool_call_id
    if (
        msg.type != "tool"
        or (ident is not None and type(ident) is not str)
        or type(extra) is not dict
        or (answered is not None and type(answered) is not str)
    ):
        return None
    summary = bool(extra) and extra.get("lc_source") in BLOCK_SOURCES
    answered = answered or None
    answers = (answered,) if answered else ()
    return _new(
        MessageView, (TOOL, ident or None, (), answered, summary, answers, CHAT, 0, False, ())
    )


def _langchain_ai(msg: Any) -> MessageView | None:
    ident = msg.id
    extra = msg.additional_kwargs
    calls = msg.tool_calls
    if (
        msg.type != "ai"
        or (ident is not None and type(ident) is not str)
        or type(extra) is not dict
        or type(msg.content) is not str  # blocks: calls, thinking
        or type(calls) is not list
        or msg.__pydantic_extra__  # may hold a legacy function_call
        or (extra and ("tool_calls" in extra or "function_call" in extra))
    ):
        return None
    ids = chat.plain_call_ids(calls)
    if ids is None:
        return None
    summary = bool(extra) and extra.get("lc_source") in BLOCK_SOURCES
    return _new(MessageView, (AI, ident or None, ids, None, summary, (), CHAT, 0, False, ()))


_ClassReader = Callable[[Any], "MessageView | None"]
_UNSEEN: Any = object()
#: Per class: its reader above (LangChain's own message classes, not their subclasses), or
#: None for any other class.
_LANGCHAIN_READERS: dict[type, _ClassReader | None] = {}
#: The same classes, by the role each is read as (see :func:`plain_roles`).
_LANGCHAIN_ROLES: dict[type, str] = {}
#: LangChain's own message classes, by name: their reader and the role it reads.
_LANGCHAIN_CLASSES: dict[str, tuple[_ClassReader, str]] = {
    "HumanMessage": (_langchain_human, HUMAN),
    "SystemMessage": (_langchain_system, SYSTEM),
    "AIMessage": (_langchain_ai, AI),
    "ToolMessage": (_langchain_tool, TOOL),
}


def plain_roles() -> Mapping[type, str]:
    """LangChain's own message classes that :func:`read_view` has met, by the role each is
    read as (which is also each class's ``type``): the classes of the readers above. Live:
    it grows as :func:`read_view` meets them. The planner reads their plain shape in one
    pass with its plan (``PlanState.extend_plain``), by the readers' checks."""
    return _LANGCHAIN_ROLES


def _langchain_reader(cls: type) -> _ClassReader | None:
    """The reader of ``cls`` when it is one of LangChain's own message classes, else None
    (remembered per class)."""
    reader = None
    if cls.__module__.startswith("langchain_core.messages."):
        found = _LANGCHAIN_CLASSES.get(cls.__name__)
        if found is not None:
            reader, _LANGCHAIN_ROLES[cls] = found
    _LANGCHAIN_READERS[cls] = reader
    return reader


def general_view(msg: Any) -> MessageView:
    """The view of ``msg`` as the module of its format reads it: the specification
    :func:`read_view` is a fast path of.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    return reader_of(msg).view(msg)


def with_content(msg: Any, content: Any) -> Any:
    """A copy of ``msg`` with new content (see :func:`content_of`); same kind of message,
    same id.

    Raises:
        TypeError: ``msg`` is an object that can be neither ``model_copy``-ed nor copied
            and given new content.
    """
    fmt = reader_of(msg)
    if _chat(fmt):
        return chat.with_content(msg, content)
    from .blocks import set_field

    name = fmt.name
    if name == "pydantic_ai" and isinstance(content, str):
        from .pydantic_ai import PYDANTIC_AI_FORMAT

        return PYDANTIC_AI_FORMAT.with_text(msg, content)
    if name in ("gemini", "pydantic_ai"):
        key = "parts"
    elif name == "llama_index":
        if isinstance(content, str):
            return fmt.rewrite(msg, {("blocks",): content})
        key = "blocks"
    elif name == "responses" and fmt.parse(msg).role == TOOL:
        key = next((s.path[0] for s in fmt.parse(msg).slots if s.kind == "result"), "output")
    else:
        key = "content"
    return set_field(msg, key, content)


def with_id(msg: Any, new_id: str) -> Any:
    """``msg`` with ``new_id`` when it has no id and its kind carries one (a dict, the
    serialised form, a LangChain message); else ``msg`` itself."""
    if id_of(msg) is not None:
        return msg
    if isinstance(msg, Mapping):
        if is_serialized(msg):
            return {**msg, "data": {**msg["data"], "id": new_id}}
        return {**msg, "id": new_id}
    model_copy = getattr(msg, "model_copy", None)
    if callable(model_copy) and hasattr(msg, "id"):
        return model_copy(update={"id": new_id})
    return msg

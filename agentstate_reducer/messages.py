"""Uniform, read-only access to messages of any supported shape.

Supported without importing any framework:

* dicts with a ``role`` key (OpenAI chat format, CrewAI, most agent frameworks),
* dicts with a ``type`` key (LangChain's dict form),
* LangChain's serialised form from ``messages_to_dict``: ``{"type": "ai", "data": {...}}``,
* LangChain ``BaseMessage`` objects (``HumanMessage``, ``AIMessage``, chunks, ``ChatMessage``),
* any object with a ``type`` or ``role`` attribute (duck typing), or whose class name is a
  known message class name (``HumanMessage``, ``AIMessage``, ...).

Tool calls are read in both LangChain form (``{"id", "name", "args"}``) and OpenAI form
(``{"id", "type": "function", "function": {"name", "arguments"}}``), and so is OpenAI's
legacy function calling: an ai message's ``function_call`` (``{"name", "arguments"}``, at the
top level or in ``additional_kwargs`` as LangChain keeps it), answered by a ``function``
message that carries the function's ``name``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

HUMAN = "human"
AI = "ai"
SYSTEM = "system"
TOOL = "tool"
FUNCTION = "function"

#: Role names as they appear in the wild, mapped to the role the reducer reasons about.
ROLE_ALIASES: Mapping[str, str] = {
    "human": HUMAN,
    "user": HUMAN,
    "ai": AI,
    "assistant": AI,
    "agent": AI,
    "system": SYSTEM,
    "tool": TOOL,
    "function": FUNCTION,
    # LangChain's streaming chunk classes report their class name as ``type``.
    "humanmessagechunk": HUMAN,
    "aimessagechunk": AI,
    "systemmessagechunk": SYSTEM,
    "toolmessagechunk": TOOL,
    "functionmessagechunk": FUNCTION,
}

_CLASS_NAME_ROLES: Mapping[str, str] = {
    "humanmessage": HUMAN,
    "aimessage": AI,
    "agentmessage": AI,
    "systemmessage": SYSTEM,
    "toolmessage": TOOL,
    "functionmessage": FUNCTION,
    "humanmessagechunk": HUMAN,
    "aimessagechunk": AI,
    "systemmessagechunk": SYSTEM,
    "toolmessagechunk": TOOL,
    "functionmessagechunk": FUNCTION,
}

_EXPECTED = (
    "expected a message: a dict with a 'role' or 'type' key, or an object with a "
    "'type' or 'role' attribute (such as a LangChain message)"
)


class MessageView(NamedTuple):
    """What the pruning plan needs to know about one message."""

    role: str
    """Normalised role: ``human``, ``ai``, ``system``, ``tool``, ``function`` or, for
    unknown roles, the lowercased original."""
    id: str | None
    call_ids: tuple[str, ...]
    """Ids of the tool calls an ai message makes, then the :func:`function_call_key` of its
    legacy ``function_call`` if it has one (empty for other roles)."""
    result_for: str | None
    """For a tool message, the id of the tool call it answers; for a function message, the
    :func:`function_call_key` of the function it answers."""
    summary: bool = False
    """Whether the message is a summary block (see :func:`is_summary`)."""


#: The ``lc_source`` of summary messages: LangChain's marker for a message the agent
#: harness added (``add_notification_metadata``), which its summarization middleware uses.
SUMMARY_SOURCE = "summarization"

#: The first line of the default summary text. Plain role dicts (OpenAI format) carry no
#: metadata a provider would accept, so a summary among them is recognised by this header.
SUMMARY_HEADER = "Summary of the earlier conversation:\n"


#: How a legacy function call's link key starts (see :func:`function_call_key`).
FUNCTION_CALL_KEY_PREFIX = "function_call:"


def function_call_key(name: str) -> str:
    """The key that links a legacy ``function_call`` of function ``name`` to its result.

    Legacy calls have no id: the protocol is one call, answered by the next ``function``
    message of the same name. So the call and its result share this key (in
    :attr:`MessageView.call_ids` and :attr:`MessageView.result_for`), and the planner pairs
    a result with the newest unanswered call of that name.
    """
    return FUNCTION_CALL_KEY_PREFIX + name


def is_serialized(msg: Mapping[str, Any]) -> bool:
    """Whether a dict is LangChain's ``messages_to_dict`` form (``{"type", "data"}``)."""
    data = msg.get("data")
    return (
        data is not None
        and isinstance(data, (dict, Mapping))
        and "content" not in msg
        and "role" not in msg
    )


def _is_mapping(msg: Any) -> bool:
    # dict first: isinstance against the Mapping ABC is slow for everything else.
    return isinstance(msg, dict) or (not hasattr(msg, "type") and isinstance(msg, Mapping))


def _fields(msg: Any) -> Mapping[str, Any] | None:
    """The mapping that holds a dict message's fields, or None for objects."""
    if _is_mapping(msg):
        if is_serialized(msg):
            data: Mapping[str, Any] = msg["data"]
            return data
        return msg  # type: ignore[no-any-return]
    return None


def _normalise(raw: str) -> str:
    lowered = raw.lower()
    return ROLE_ALIASES.get(lowered, lowered)


def raw_role_of(msg: Any) -> str | None:
    """The role or type string exactly as the message spells it, or None if it has none."""
    if _is_mapping(msg):
        if is_serialized(msg):
            raw = msg.get("type")
            if raw == "chat":
                return _str_or_none(msg["data"].get("role")) or "chat"
            return _str_or_none(raw)
        role = msg.get("role")
        if role is not None:
            return _str_or_none(role)
        raw = msg.get("type")
        return _str_or_none(raw)
    kind = getattr(msg, "type", None)
    if isinstance(kind, str):
        if kind == "chat":
            role = getattr(msg, "role", None)
            return role if isinstance(role, str) else kind
        return kind
    role = getattr(msg, "role", None)
    if isinstance(role, str):
        return role
    return None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def role_of(msg: Any) -> str:
    """The normalised role of ``msg``.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    raw = raw_role_of(msg)
    if raw is not None:
        return _normalise(raw)
    if not _is_mapping(msg):
        by_class = _CLASS_NAME_ROLES.get(type(msg).__name__.lower())
        if by_class is not None:
            return by_class
    raise TypeError(f"{_describe(msg)}: {_EXPECTED}")


def id_of(msg: Any) -> str | None:
    """The message's id, or None when it has none."""
    fields = _fields(msg)
    value = fields.get("id") if fields is not None else getattr(msg, "id", None)
    return value if isinstance(value, str) and value else None


def content_of(msg: Any) -> Any:
    """The message's content (a string, a list of content blocks, or None)."""
    fields = _fields(msg)
    if fields is not None:
        return fields.get("content")
    return getattr(msg, "content", None)


def tool_calls_of(msg: Any) -> list[Any]:
    """The raw tool-call entries of an ai message, in whatever form the message holds."""
    calls = _own_or_extra(msg, "tool_calls", getattr)
    return list(calls) if calls else []


def _own_or_extra(msg: Any, name: str, attribute: Callable[[Any, str, Any], Any]) -> Any:
    """The message's own ``name`` field (``attribute(msg, name, None)`` for an object),
    else the same key of its ``additional_kwargs``, where LangChain keeps what a provider
    sent beside the standard fields; None when neither has a value."""
    fields = _fields(msg)
    if fields is not None:
        value = fields.get(name)
        extra = None if value else fields.get("additional_kwargs")
    else:
        value = attribute(msg, name, None)
        extra = None if value else getattr(msg, "additional_kwargs", None)
    if not value and isinstance(extra, Mapping):
        value = extra.get(name)
    return value or None


#: Per message class: True when an instance can hold ``function_call`` only as a pydantic
#: extra field (the class is a pydantic model that neither declares nor defines it).
_FUNCTION_CALL_ONLY_EXTRA: dict[type, bool] = {}


def _function_call_attribute(msg: Any, name: str = "function_call", default: Any = None) -> Any:
    """``msg.function_call``, or None. On a pydantic message without such a field (every
    LangChain message) a missing attribute costs a raised and caught AttributeError inside
    pydantic, several times the rest of reading the message, so only its extra fields are
    looked at there."""
    cls = type(msg)
    only_extra = _FUNCTION_CALL_ONLY_EXTRA.get(cls)
    if only_extra is None:
        fields = getattr(cls, "__pydantic_fields__", None)
        only_extra = (
            isinstance(fields, dict)
            and "function_call" not in fields
            and not any("function_call" in vars(base) for base in cls.__mro__)
        )
        _FUNCTION_CALL_ONLY_EXTRA[cls] = only_extra
    if only_extra:
        extra = getattr(msg, "__pydantic_extra__", None)
        return extra.get(name, default) if isinstance(extra, dict) else default
    return getattr(msg, name, default)


def function_call_of(msg: Any) -> Any:
    """The legacy ``function_call`` of an ai message (``{"name", "arguments"}``, or an object
    with those attributes), in whatever form it holds, or None when it has none.

    Read from the message itself first, then from its ``additional_kwargs`` (where LangChain
    keeps it), as :func:`tool_calls_of` reads tool calls.
    """
    return _own_or_extra(msg, "function_call", _function_call_attribute)


def function_call_name_of(msg: Any) -> str | None:
    """The name of the function an ai message calls with a legacy ``function_call``, or
    None when it makes no such call (or the call has no name, which nothing can answer)."""
    call = function_call_of(msg)
    if call is None:
        return None
    name = call.get("name") if isinstance(call, Mapping) else getattr(call, "name", None)
    return name if isinstance(name, str) and name else None


def function_name_of(msg: Any) -> str | None:
    """For a ``function`` message (a legacy function result), the name of the function it
    answers; None when it has no name. Read for any message, so only meaningful for that role
    (LangChain gives every message an optional ``name``)."""
    fields = _fields(msg)
    value = fields.get("name") if fields is not None else getattr(msg, "name", None)
    return value if isinstance(value, str) and value else None


def _call_id(call: Any) -> str | None:
    value = call.get("id") if isinstance(call, Mapping) else getattr(call, "id", None)
    return value if isinstance(value, str) and value else None


def tool_call_ids_of(msg: Any) -> tuple[str, ...]:
    """Ids of the tool calls an ai message makes (calls without an id are skipped)."""
    ids = []
    for call in tool_calls_of(msg):
        call_id = _call_id(call)
        if call_id is not None:
            ids.append(call_id)
    return tuple(ids)


def tool_call_id_of(msg: Any) -> str | None:
    """For a tool result, the id of the call it answers."""
    fields = _fields(msg)
    value = fields.get("tool_call_id") if fields is not None else getattr(msg, "tool_call_id", None)
    return value if isinstance(value, str) and value else None


def tool_call_parts(call: Any) -> tuple[str, str]:
    """``(name, arguments-as-text)`` of one tool call, in LangChain or OpenAI form."""
    if isinstance(call, Mapping):
        function = call.get("function")
        if isinstance(function, Mapping):
            return str(function.get("name") or ""), _as_text(function.get("arguments"))
        return str(call.get("name") or ""), _as_text(call.get("args"))
    return str(getattr(call, "name", "") or ""), _as_text(getattr(call, "args", None))


def _function_call_parts(call: Any) -> tuple[str, str]:
    if isinstance(call, Mapping):
        return str(call.get("name") or ""), _as_text(call.get("arguments"))
    return str(getattr(call, "name", "") or ""), _as_text(getattr(call, "arguments", None))


def call_parts_of(msg: Any) -> list[tuple[str, str]]:
    """``(name, arguments-as-text)`` of every call an ai message makes: its tool calls (as
    :func:`tool_call_parts` reads them), then its legacy ``function_call``."""
    parts = [tool_call_parts(call) for call in tool_calls_of(msg)]
    function_call = function_call_of(msg)
    if function_call is not None:
        parts.append(_function_call_parts(function_call))
    return parts


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def source_of(msg: Any) -> str | None:
    """The feature that added ``msg`` to the conversation, or None.

    LangChain's convention (``additional_kwargs["lc_source"]``), read from messages, dicts
    and LangChain's serialised form; a dict may also carry it as a top-level ``lc_source``
    key (which LangChain's ``convert_to_messages`` turns into ``additional_kwargs``).
    """
    if _is_mapping(msg):
        top = msg.get("lc_source")
        if isinstance(top, str):
            return top
        fields = _fields(msg)
        extra = fields.get("additional_kwargs") if fields is not None else None
    else:
        extra = getattr(msg, "additional_kwargs", None)
    source = extra.get("lc_source") if isinstance(extra, Mapping) else None
    return source if isinstance(source, str) else None


def is_summary(msg: Any) -> bool:
    """Whether ``msg`` is a summary block the reducer (or LangChain's summarization
    middleware) put in the list.

    Marked by ``lc_source == "summarization"`` (:func:`source_of`); a dict without that
    marker whose content starts with :data:`SUMMARY_HEADER` counts too, since plain
    OpenAI-format dicts cannot carry metadata.
    """
    if source_of(msg) == SUMMARY_SOURCE:
        return True
    if not _is_mapping(msg):
        return False
    content = content_of(msg)
    return isinstance(content, str) and content.startswith(SUMMARY_HEADER)


def _summary_fast(msg: Any, fields: Mapping[str, Any] | None) -> bool:
    """:func:`is_summary` for the shapes :func:`read_view` reads directly (a string or
    absent top-level ``lc_source``, a dict or absent ``additional_kwargs``)."""
    if fields is None:  # an object with a string type, such as a LangChain message
        extra = getattr(msg, "additional_kwargs", None)
        return type(extra) is dict and extra.get("lc_source") == SUMMARY_SOURCE
    top = msg.get("lc_source")
    if top is not None:
        if top == SUMMARY_SOURCE:
            return True
    else:
        extra = fields.get("additional_kwargs")
        if extra and extra.get("lc_source") == SUMMARY_SOURCE:
            return True
    content = fields.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_HEADER)


def fingerprint(msg: Any) -> str:
    """A digest of what a message says: role, id, content, tool calls (a legacy
    ``function_call`` included) and the call it answers. Equal for equal messages of any
    shape, different when any of those differ (an edited message, the same id in another
    conversation)."""
    import hashlib
    import json

    role = role_of(msg)
    calls = [(_call_id(call), *tool_call_parts(call)) for call in tool_calls_of(msg)]
    # Only legacy messages gain a part, so every other message keeps the digest it had.
    function_call = function_call_of(msg)
    if function_call is not None:
        calls.append((None, *_function_call_parts(function_call)))
    answered = tool_call_id_of(msg)
    if role == FUNCTION:
        name = function_name_of(msg)
        answered = None if name is None else function_call_key(name)
    parts = [role, id_of(msg), content_of(msg), calls, answered]
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


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

    A fast path of :func:`general_view` (which is built from the public accessors and is
    the specification): plain dicts and objects with a string ``type`` (LangChain
    messages) whose fields have their usual exact types are read directly; anything else
    (a non-dict ``data`` mapping, an explicit ``role: None``, a ``str`` subclass, a tuple of
    tool calls, ...) goes through :func:`general_view`. A property test checks that both
    give the same view for every shape.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    if type(msg) is dict:
        fields: Mapping[str, Any] | None = msg
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
        if type(raw) is not str:
            return general_view(msg)
    else:
        raw = getattr(msg, "type", None)
        if type(raw) is not str or raw == "chat":
            return general_view(msg)
        fields = None
    role = ROLE_ALIASES.get(raw)
    if role is None:
        role = _normalise(raw)
    found = fields.get("id") if fields is not None else getattr(msg, "id", None)
    if found is not None and type(found) is not str:
        return general_view(msg)
    message_id = found or None
    if fields is None:
        extra = getattr(msg, "additional_kwargs", None)
        if extra is not None and type(extra) is not dict:
            return general_view(msg)
    else:
        extra = fields.get("additional_kwargs")
        top = msg.get("lc_source")
        if (extra is not None and type(extra) is not dict) or (
            top is not None and type(top) is not str
        ):
            return general_view(msg)
    if role == AI:
        calls = fields.get("tool_calls") if fields is not None else getattr(msg, "tool_calls", None)
        if not calls:  # also looks in additional_kwargs
            ids = tool_call_ids_of(msg)
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
        function_call = (
            fields.get("function_call") if fields is not None else _function_call_attribute(msg)
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
        return MessageView(role, message_id, ids, None, _summary_fast(msg, fields))
    if role == FUNCTION:
        name = fields.get("name") if fields is not None else getattr(msg, "name", None)
        if name is not None and type(name) is not str:
            return general_view(msg)
        answered = function_call_key(name) if name else None
        return MessageView(role, message_id, (), answered, _summary_fast(msg, fields))
    if role == TOOL:
        answered = (
            fields.get("tool_call_id") if fields is not None else getattr(msg, "tool_call_id", None)
        )
        if answered is not None and type(answered) is not str:
            return general_view(msg)
        return MessageView(role, message_id, (), answered or None, _summary_fast(msg, fields))
    return MessageView(role, message_id, (), None, _summary_fast(msg, fields))


def general_view(msg: Any) -> MessageView:
    """The view of ``msg`` read through the public accessors (:func:`role_of`,
    :func:`id_of`, :func:`tool_call_ids_of`, :func:`function_call_name_of`,
    :func:`tool_call_id_of`, :func:`function_name_of`): the specification :func:`read_view`
    is a fast path of.

    Raises:
        TypeError: ``msg`` is not a message.
    """
    role = role_of(msg)
    message_id = id_of(msg)
    summary = is_summary(msg)
    if role == AI:
        ids = tool_call_ids_of(msg)
        name = function_call_name_of(msg)
        if name is not None:
            ids += (function_call_key(name),)
        return MessageView(role, message_id, ids, None, summary)
    if role == FUNCTION:
        name = function_name_of(msg)
        answered = None if name is None else function_call_key(name)
        return MessageView(role, message_id, (), answered, summary)
    if role == TOOL:
        return MessageView(role, message_id, (), tool_call_id_of(msg), summary)
    return MessageView(role, message_id, (), None, summary)


def _describe(msg: Any) -> str:
    if msg is None:
        return "got None"
    if isinstance(msg, Mapping):
        keys = ", ".join(repr(k) for k in list(msg)[:6])
        return f"got a dict without a string 'role' or 'type' (keys: {keys or 'none'})"
    return f"got {type(msg).__name__} {_short_repr(msg)}"


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def with_content(msg: Any, content: Any) -> Any:
    """A copy of ``msg`` with new content; same kind of message, same id.

    Raises:
        TypeError: ``msg`` is an object that can be neither ``model_copy``-ed nor copied
            and given a new ``content`` attribute.
    """
    if _is_mapping(msg):
        if is_serialized(msg):
            return {**msg, "data": {**msg["data"], "content": content}}
        return {**msg, "content": content}
    model_copy = getattr(msg, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={"content": content})
    import copy

    clone = copy.copy(msg)
    try:
        clone.content = content
    except (AttributeError, TypeError) as exc:
        raise TypeError(
            f"cannot give a {type(msg).__name__} new content ({exc}); steps that rewrite "
            "messages need dicts, LangChain messages or objects with a settable content"
        ) from None
    return clone


def with_id(msg: Any, new_id: str) -> Any:
    """``msg`` with ``new_id`` when it has no id and its kind carries one (a dict, the
    serialised form, a LangChain message); else ``msg`` itself."""
    if id_of(msg) is not None:
        return msg
    if _is_mapping(msg):
        if is_serialized(msg):
            return {**msg, "data": {**msg["data"], "id": new_id}}
        return {**msg, "id": new_id}
    model_copy = getattr(msg, "model_copy", None)
    if callable(model_copy) and hasattr(msg, "id"):
        return model_copy(update={"id": new_id})
    return msg

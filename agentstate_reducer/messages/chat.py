"""OpenAI Chat Completions dicts, and LangChain's dict and serialised forms.

Shapes read:

* dicts with a ``role`` key (OpenAI Chat Completions, CrewAI, most agent frameworks);
* dicts with a ``type`` key (LangChain's dict form, ``{"type": "ai", "content": ...}``);
* LangChain's serialised form from ``messages_to_dict``: ``{"type": "ai", "data": {...}}``.

The same reading serves LangChain message objects (:mod:`.langchain`) and duck-typed
objects (:mod:`.duck`), attribute by attribute: these together are the *Chat family*, and a
list may mix them freely (LangGraph channels hold such mixes).

Pairing rules: an ai message's ``tool_calls`` (LangChain form ``{"id", "name", "args"}`` or
OpenAI form ``{"id", "type": "function", "function": {"name", "arguments"}}``, in the
message or in LangChain's ``additional_kwargs``) are answered by ``tool`` messages carrying
their ``tool_call_id``; calls held only as content blocks (Anthropic ``tool_use``, LangChain
v1 ``tool_call``) count as calls too, and a ``tool_result`` block in a human message answers
one (a human message holding only such blocks is a result, not a question). OpenAI's legacy
``function_call`` (``{"name", "arguments"}``) has no id: it is answered by the next
``function`` message of that name (see :func:`~.base.function_call_key`).

Validity rules: every call is answered by results right after its message, and every
result answers a call of the message right before; several providers want the first
message after the system prompt to come from the user.

A summary block is one human message: in the list's own kind of dict (its role key and user
role name, an id when its dicts carry ids), marked by ``lc_source = "summarization"``
(LangChain forms) or, for plain OpenAI dicts, which providers reject with unknown keys, by
the :data:`~.base.SUMMARY_HEADER` first line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .base import (
    AI,
    CHAT,
    FLAW_BLOCK,
    FUNCTION,
    HUMAN,
    MEMORY_HEADER,
    MEMORY_SOURCE,
    PLAIN,
    RESPONSES,
    ROLE_ALIASES,
    SUMMARY_HEADER,
    SUMMARY_SOURCE,
    SYSTEM,
    TOOL,
    MessageFormat,
    MessageView,
    Parsed,
    Parts,
    as_text,
    describe,
    function_call_key,
)
from .blocks import (
    CALL_BLOCKS,
    MEDIA_BLOCKS,
    RESULT_BLOCKS,
    THINKING_BLOCKS,
    block_formats,
    read_blocks,
    replace_in,
)

EXPECTED = (
    "expected a message: a dict with a 'role' or 'type' key, or an object with a "
    "'type' or 'role' attribute (such as a LangChain message)"
)

#: Roles a plain role dict may have and still read the same in Anthropic and Responses
#: lists (a list of such dicts is read as Chat unless ``format=`` says otherwise).
_PLAIN_ROLES = frozenset({HUMAN, AI, SYSTEM, "developer"})


def is_serialized(msg: Mapping[str, Any]) -> bool:
    """Whether a dict is LangChain's ``messages_to_dict`` form (``{"type", "data"}``)."""
    data = msg.get("data")
    return (
        data is not None
        and isinstance(data, (dict, Mapping))
        and "content" not in msg
        and "role" not in msg
    )


def is_mapping(msg: Any) -> bool:
    """Whether ``msg`` is a dict message (not an object that is also a mapping)."""
    # dict first: isinstance against the Mapping ABC is slow for everything else.
    return isinstance(msg, dict) or (not hasattr(msg, "type") and isinstance(msg, Mapping))


def fields_of(msg: Any) -> Mapping[str, Any] | None:
    """The mapping that holds a dict message's fields, or None for objects."""
    if is_mapping(msg):
        if is_serialized(msg):
            data: Mapping[str, Any] = msg["data"]
            return data
        return msg  # type: ignore[no-any-return]
    return None


def normalise(raw: str) -> str:
    """A role name as the reducer reasons about it (see ``ROLE_ALIASES``)."""
    lowered = raw.lower()
    return ROLE_ALIASES.get(lowered, lowered)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def raw_role(msg: Any) -> str | None:
    """The role or type string exactly as the message spells it, or None."""
    if is_mapping(msg):
        if is_serialized(msg):
            raw = msg.get("type")
            if raw == "chat":
                return _str_or_none(msg["data"].get("role")) or "chat"
            return _str_or_none(raw)
        role = msg.get("role")
        if role is not None:
            return _str_or_none(role)
        return _str_or_none(msg.get("type"))
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


def message_id(msg: Any) -> str | None:
    fields = fields_of(msg)
    value = fields.get("id") if fields is not None else getattr(msg, "id", None)
    return value if isinstance(value, str) and value else None


def content(msg: Any) -> Any:
    fields = fields_of(msg)
    if fields is not None:
        return fields.get("content")
    return getattr(msg, "content", None)


def own_or_extra(msg: Any, name: str, attribute: Callable[[Any, str, Any], Any]) -> Any:
    """The message's own ``name`` field (``attribute(msg, name, None)`` for an object),
    else the same key of its ``additional_kwargs``, where LangChain keeps what a provider
    sent beside the standard fields; None when neither has a value."""
    fields = fields_of(msg)
    if fields is not None:
        value = fields.get(name)
        extra = None if value else fields.get("additional_kwargs")
    else:
        value = attribute(msg, name, None)
        extra = None if value else getattr(msg, "additional_kwargs", None)
    if not value and isinstance(extra, Mapping):
        value = extra.get(name)
    return value or None


def tool_calls(msg: Any) -> list[Any]:
    calls = own_or_extra(msg, "tool_calls", getattr)
    return list(calls) if calls else []


#: Per message class: True when an instance can hold ``function_call`` only as a pydantic
#: extra field (the class is a pydantic model that neither declares nor defines it).
_FUNCTION_CALL_ONLY_EXTRA: dict[type, bool] = {}


def function_call_attribute(msg: Any, name: str = "function_call", default: Any = None) -> Any:
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


def function_call(msg: Any) -> Any:
    return own_or_extra(msg, "function_call", function_call_attribute)


def function_call_name(msg: Any) -> str | None:
    call = function_call(msg)
    if call is None:
        return None
    name = call.get("name") if isinstance(call, Mapping) else getattr(call, "name", None)
    return name if isinstance(name, str) and name else None


def function_name(msg: Any) -> str | None:
    fields = fields_of(msg)
    value = fields.get("name") if fields is not None else getattr(msg, "name", None)
    return value if isinstance(value, str) and value else None


def call_id(call: Any) -> str | None:
    mapping = type(call) is dict or isinstance(call, Mapping)
    value = call.get("id") if mapping else getattr(call, "id", None)
    return value if isinstance(value, str) and value else None


def tool_call_ids(msg: Any) -> tuple[str, ...]:
    ids = []
    for call in tool_calls(msg):
        found = call_id(call)
        if found is not None:
            ids.append(found)
    return tuple(ids)


def plain_call_ids(calls: list[Any]) -> tuple[str, ...] | None:
    """The ids of a list of tool calls in their usual shape (dicts whose ``id`` is a string
    or None), the empty ones left out; None when a call is of another shape (the fast
    readers then leave the message to the general one)."""
    ids: list[str] = []
    for call in calls:
        if type(call) is not dict:
            return None
        found = call.get("id")
        if found is not None and type(found) is not str:
            return None
        if found:
            ids.append(found)
    return tuple(ids)


def tool_call_id(msg: Any) -> str | None:
    fields = fields_of(msg)
    value = fields.get("tool_call_id") if fields is not None else getattr(msg, "tool_call_id", None)
    return value if isinstance(value, str) and value else None


def tool_call_parts(call: Any) -> tuple[str, str]:
    """``(name, arguments-as-text)`` of one tool call, in LangChain or OpenAI form, as a dict
    or an object (LangChain's ``ToolCall``, the OpenAI SDK's ``ChatCompletionMessageToolCall``
    with its ``function``)."""
    if type(call) is dict or isinstance(call, Mapping):
        function = call.get("function")
        # None first: LangChain's calls have no "function", and the Mapping check is slow.
        if function is not None and (type(function) is dict or isinstance(function, Mapping)):
            return str(function.get("name") or ""), as_text(function.get("arguments"))
        return str(call.get("name") or ""), as_text(call.get("args"))
    function = getattr(call, "function", None)
    if function is not None:  # an OpenAI SDK ChatCompletionMessageToolCall
        return str(getattr(function, "name", "") or ""), as_text(
            getattr(function, "arguments", None)
        )
    return str(getattr(call, "name", "") or ""), as_text(getattr(call, "args", None))


def function_call_parts(call: Any) -> tuple[str, str]:
    if type(call) is dict or isinstance(call, Mapping):
        return str(call.get("name") or ""), as_text(call.get("arguments"))
    return str(getattr(call, "name", "") or ""), as_text(getattr(call, "arguments", None))


def source(msg: Any) -> str | None:
    if is_mapping(msg):
        top = msg.get("lc_source")
        if isinstance(top, str):
            return top
        fields = fields_of(msg)
        extra = fields.get("additional_kwargs") if fields is not None else None
    else:
        extra = getattr(msg, "additional_kwargs", None)
    found = extra.get("lc_source") if isinstance(extra, Mapping) else None
    return found if isinstance(found, str) else None


def is_summary(msg: Any) -> bool:
    if source(msg) == SUMMARY_SOURCE:
        return True
    if not is_mapping(msg):
        return False
    found = content(msg)
    return isinstance(found, str) and found.startswith(SUMMARY_HEADER)


def is_memory(msg: Any) -> bool:
    """A memory block: ``lc_source == "recall"``, or a dict whose text starts with
    :data:`~.base.MEMORY_HEADER`."""
    if source(msg) == MEMORY_SOURCE:
        return True
    if not is_mapping(msg):
        return False
    found = content(msg)
    return isinstance(found, str) and found.startswith(MEMORY_HEADER)


def block_calls(blocks: list[Any], known: Sequence[str]) -> list[str]:
    """Ids of the call blocks (``tool_use``, ``tool_call``) not in ``known``."""
    found: list[str] = []
    for block in blocks:
        if isinstance(block, Mapping):
            keys = CALL_BLOCKS.get(block.get("type"))  # type: ignore[arg-type]
            if keys is not None:
                value = block.get(keys[0])
                if isinstance(value, str) and value and value not in known and value not in found:
                    found.append(value)
    return found


def block_results(blocks: list[Any]) -> tuple[tuple[str, ...], bool]:
    """Ids the ``tool_result`` blocks answer, and whether anything else is there."""
    found: list[str] = []
    other = False
    for block in blocks:
        key = RESULT_BLOCKS.get(block.get("type")) if isinstance(block, Mapping) else None  # type: ignore[arg-type]
        value = block.get(key) if key is not None else None
        if isinstance(value, str) and value:
            found.append(value)
        else:
            other = True
    return tuple(found), other


def plain_mask(msg: Any, role: str, calls: bool, found: Any) -> int:
    """The formats a Chat-family message fits: a role dict of a plain role, without calls
    or results, with text (or no) content reads the same in Anthropic and Responses lists;
    everything else is Chat only (a role dict's block list: what its blocks fit)."""
    if (type(msg) is dict or is_mapping(msg)) and "role" in msg and not is_serialized(msg):
        if isinstance(found, list):
            mask = block_formats(found)
            return mask if mask & CHAT else CHAT
        if role in _PLAIN_ROLES and not calls and (found is None or isinstance(found, str)):
            return PLAIN
    return CHAT


_KNOWN_ROLES = frozenset(ROLE_ALIASES.values())


def opaque_item(msg: Any) -> bool:
    """A role-less dict whose ``type`` names no role and no item this reader knows: a
    Responses API item of a new type, or a Chat-family message of an unknown role. Either
    way it is kept as it is (an unknown role is never pruned) and counts as its JSON, and
    it fits a Responses list as well as a Chat one."""
    if not is_mapping(msg) or msg.get("role") is not None or "data" in msg:
        return False
    kind = msg.get("type")
    return (
        isinstance(kind, str)
        and kind.lower() not in ROLE_ALIASES
        and kind != "chat"
        and not is_serialized(msg)
    )


def _call_list_flaws(msg: Any) -> tuple[tuple[str, str], ...]:
    """A ``tool_calls`` that is not a list of calls (a string, an entry that is None or
    a string): read as no calls, reported by ``validate()``."""
    calls = own_or_extra(msg, "tool_calls", getattr)
    if calls is None:
        return ()
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, (list, tuple)):
        got = type(calls).__name__
        return ((FLAW_BLOCK, f"'tool_calls' is a list of tool calls, got a {got}"),)
    return tuple(
        (FLAW_BLOCK, f"tool_calls[{index}] is {type(call).__name__}, not a tool call")
        for index, call in enumerate(calls)
        if call is None or isinstance(call, (str, bytes, int, float))
    )


class ChatFormat(MessageFormat):
    """OpenAI Chat Completions dicts and LangChain's dict forms (see the module docstring)."""

    name = "chat"
    bit = CHAT

    def role(self, msg: Any) -> str:
        raw = raw_role(msg)
        if raw is not None:
            return normalise(raw)
        raise TypeError(f"{describe(msg)}: {EXPECTED}")

    def view(self, msg: Any) -> MessageView:
        """The view read through the accessors (the specification the fast reader,
        :func:`~.reader.read_view`, follows)."""
        role = self.role(msg)
        ident = message_id(msg)
        summary = is_summary(msg) or is_memory(msg)
        found = content(msg)
        blocks = found if isinstance(found, list) else None
        if role == AI:
            ids = tool_call_ids(msg)
            if blocks:
                ids += tuple(block_calls(blocks, ids))
            name = function_call_name(msg)
            if name is not None:
                ids += (function_call_key(name),)
            mask = plain_mask(msg, role, bool(ids) or function_call(msg) is not None, found)
            thinking = bool(blocks) and any(
                isinstance(block, Mapping) and block.get("type") in THINKING_BLOCKS
                for block in blocks or ()
            )
            return MessageView(
                role, ident, ids, None, summary, (), mask, 0, thinking, _call_list_flaws(msg)
            )
        if role == FUNCTION:
            name = function_name(msg)
            answered = None if name is None else function_call_key(name)
            answers: tuple[str, ...] = () if answered is None else (answered,)
            return MessageView(role, ident, (), answered, summary, answers, CHAT)
        if role == TOOL:
            answered = tool_call_id(msg)
            answers = () if answered is None else (answered,)
            return MessageView(role, ident, (), answered, summary, answers, CHAT)
        if role == HUMAN and blocks:
            results, other = block_results(blocks)
            if results:
                kind = HUMAN if other else TOOL
                return MessageView(kind, ident, (), results[0], summary, results, CHAT)
        if opaque_item(msg):
            return MessageView(role, ident, (), None, summary, (), CHAT | RESPONSES)
        return MessageView(role, ident, (), None, summary, (), plain_mask(msg, role, False, found))

    def parse(self, msg: Any) -> Parsed:
        role = self.role(msg)
        parsed = Parsed(role, raw_role(msg), CHAT)
        parsed.id = message_id(msg)
        parsed.summary = is_summary(msg) or is_memory(msg)
        found = content(msg)
        parsed.content = found
        if found is None and opaque_item(msg):
            parsed.texts.append(as_text({k: v for k, v in msg.items() if k != "id"}))
            return parsed
        if role == AI:
            for call in tool_calls(msg):
                name, arguments = tool_call_parts(call)
                parsed.calls.append((call_id(call), name, arguments, call))
            legacy = function_call(msg)
            if legacy is not None:
                name, arguments = function_call_parts(legacy)
                parsed.calls.append((None, name, arguments, legacy))
        if role in (TOOL, FUNCTION):
            # A result's whole content is its output (a placeholder replaces all of it).
            key: str | None
            if role == TOOL:
                key = tool_call_id(msg)
            else:
                function = function_name(msg)
                key = None if function is None else function_call_key(function)
            text = _content_text(found)
            if key is not None:
                parsed.add_result(key, text, ("content",))
            else:
                parsed.add_text(text, ("content",), "result")
            parsed.images = _content_images(found)
            return parsed
        if isinstance(found, str):
            parsed.add_text(found, ("content",))
        elif isinstance(found, list):
            read_blocks(parsed, found, ("content",), calls=role == AI)
        elif found is not None:
            parsed.texts.append(str(found))
        return parsed

    def parts(self, msg: Any) -> Parts:
        """What counts: the same parts as ``parse(msg).parts()`` (a property test checks
        it), read directly for the shapes counting meets most (text content, calls in
        ``tool_calls`` or a legacy ``function_call``); content blocks are read as
        :meth:`parse` reads them."""
        # The fields are looked up once here (the accessors would each find them again):
        # counting reads every message of a list in token mode.
        fields = msg if type(msg) is dict and "data" not in msg else fields_of(msg)
        if fields is None:
            raw = getattr(msg, "type", None)
            found = getattr(msg, "content", None)
        else:
            raw = fields.get("role") if fields is msg else None
            if raw is None and fields is msg:
                raw = fields.get("type")
            found = fields.get("content")
        if type(raw) is str and raw != "chat":
            role = ROLE_ALIASES.get(raw) or normalise(raw)
        else:
            role = self.role(msg)  # serialised forms, chat roles, odd values: the rules
        texts: list[str] = []
        calls: list[tuple[str, str]] = []
        entries: list[Any] = []
        legacy: Any = None
        if role == AI:
            # As tool_calls() and function_call() read them: the message's own field, else
            # the same key of its additional_kwargs.
            if fields is not None:
                own, legacy = fields.get("tool_calls"), fields.get("function_call")
                extra = fields.get("additional_kwargs")
            else:
                own, legacy = getattr(msg, "tool_calls", None), function_call_attribute(msg)
                extra = getattr(msg, "additional_kwargs", None)
            if (not own or not legacy) and isinstance(extra, Mapping):
                own = own or extra.get("tool_calls")
                legacy = legacy or extra.get("function_call")
            entries = list(own) if own else []
            calls = [tool_call_parts(call) for call in entries]
            if legacy:
                calls.append(function_call_parts(legacy))
        if role in (TOOL, FUNCTION):
            # A result's whole content is its output, as parse() reads it.
            return Parts([_content_text(found)], calls, _content_images(found))
        if found is None:
            if role not in _KNOWN_ROLES and opaque_item(msg):
                return self.parse(msg).parts()  # counted as its JSON
            return Parts(texts, calls, 0)
        if type(found) is str:
            texts.append(found)
            return Parts(texts, calls, 0)
        if not isinstance(found, list):
            texts.append(str(found))
            return Parts(texts, calls, 0)
        # Content blocks: read as parse() reads them (the rarer case, so not inlined).
        parsed = Parsed(role, None, CHAT)
        if role == AI:
            parsed.calls = [(call_id(c), *tool_call_parts(c), c) for c in entries]
            if legacy:
                parsed.calls.append((None, *function_call_parts(legacy), legacy))
        read_blocks(parsed, found, ("content",), calls=role == AI)
        return parsed.parts()

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        new = _changed_content(content(msg), changes)
        return with_content(msg, new)

    def summary_block(
        self,
        text: str,
        block_id: str,
        messages: Sequence[Any],
        before: str | None,
        after: str | None,
    ) -> list[Any]:
        sample = _sample(messages)
        if sample is None:
            return [{"role": "user", "content": text}]
        if not is_mapping(sample):
            from .langchain import is_langchain, langchain_summary

            if is_langchain(sample):
                return [langchain_summary(text, block_id)]
            raise TypeError(
                f"inject_summary cannot build a summary message for a list of "
                f"{type(sample).__name__} objects; pass summary_message_factory=(summary, "
                "pruned_count) -> [messages] to ReducerConfig (mark them with mark_summary)"
            )
        if is_serialized(sample):
            data: dict[str, Any] = {
                "content": text,
                "additional_kwargs": {"lc_source": SUMMARY_SOURCE},
                "response_metadata": {},
                "type": "human",
                "name": None,
                "id": block_id,
            }
            return [{"type": "human", "data": data}]
        role_key = "role" if "role" in sample else "type"
        message: dict[str, Any] = {role_key: _human_name(messages, role_key), "content": text}
        if "id" in sample:
            message["id"] = block_id
        if role_key == "type":
            # OpenAI-format dicts go to providers as they are: no extra key there.
            message["lc_source"] = SUMMARY_SOURCE
        return [message]


def _sample(messages: Sequence[Any]) -> Any:
    """The message whose kind the block is written as: the list's first human or ai message
    that is a dict or a LangChain message, else its first dict or LangChain message of any
    role, else its first human or ai message, else its first message.

    A list may mix the caller's own dicts with an SDK's objects (OpenAI's
    ``ChatCompletionMessage``, appended as the API returned it), which cannot be built; where
    the window starts must not decide whether a block can be written."""
    from .langchain import is_langchain
    from .reader import role_of

    first = talk = built = None
    for message in messages:
        first = message if first is None else first
        buildable = is_mapping(message) or is_langchain(message)
        if role_of(message) in (HUMAN, AI):
            if buildable:
                return message
            talk = message if talk is None else talk
        elif buildable and built is None:
            built = message
    return built if built is not None else talk if talk is not None else first


def _human_name(messages: Sequence[Any], role_key: str) -> str:
    for message in messages:
        if isinstance(message, Mapping):
            raw = raw_role(message)
            if raw is not None and normalise(raw) == HUMAN:
                return raw
    return "user" if role_key == "role" else "human"


def _content_text(found: Any) -> str:
    """A result's content as text: a string, or its text blocks."""
    if found is None:
        return ""
    if isinstance(found, str):
        return found
    if isinstance(found, list):
        parts = []
        for block in found:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping):
                if block.get("type") in MEDIA_BLOCKS:
                    continue
                text = block.get("text")
                parts.append(text if isinstance(text, str) else _json(block))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return str(found)


def _content_images(found: Any) -> int:
    if not isinstance(found, list):
        return 0
    return sum(1 for b in found if isinstance(b, Mapping) and b.get("type") in MEDIA_BLOCKS)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _changed_content(found: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
    """``found`` (a message's content) with slot ``changes`` applied; paths start with
    ``"content"``."""
    whole = changes.get(("content",), ...)
    if whole is not ...:
        return "" if whole is None else whole
    relative = {path[1:]: text for path, text in changes.items() if path[:1] == ("content",)}
    if not relative:
        return found
    return replace_in(found, relative)


def with_content(msg: Any, new: Any) -> Any:
    """A copy of ``msg`` with new content; same kind of message, same id.

    Raises:
        TypeError: ``msg`` is an object that can be neither ``model_copy``-ed nor copied
            and given a new ``content`` attribute.
    """
    if is_mapping(msg):
        if is_serialized(msg):
            return {**msg, "data": {**msg["data"], "content": new}}
        return {**msg, "content": new}
    model_copy = getattr(msg, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={"content": new})
    import copy

    clone = copy.copy(msg)
    try:
        clone.content = new
    except (AttributeError, TypeError) as exc:
        raise TypeError(
            f"cannot give a {type(msg).__name__} new content ({exc}); steps that rewrite "
            "messages need dicts, LangChain messages or objects with a settable content"
        ) from None
    return clone


CHAT_FORMAT = ChatFormat()

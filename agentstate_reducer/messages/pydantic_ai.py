"""pydantic-ai messages: ``ModelRequest`` and ``ModelResponse`` (``pydantic_ai.messages``), as
objects or in their serialised form (``ModelMessagesTypeAdapter.dump_python``: dicts with a
``kind`` of ``"request"`` or ``"response"`` and ``parts`` with a ``part_kind``).

Recognised by the class's module (``pydantic_ai``) or, for dicts, by ``kind`` and ``parts``;
nothing of pydantic-ai is imported to read a list, and parts are read by their ``part_kind``
string, which every release since 1.0 keeps (``BuiltinToolCallPart`` and its 2.x name
``NativeToolCallPart`` are both ``builtin-tool-call``).

Parts of a request: ``system-prompt``, ``user-prompt`` (a string, or a list of strings, text
content and media: ``image-url``, ``audio-url``, ``document-url``, ``video-url``, ``binary``,
``uploaded-file``; ``cache-point`` says nothing), ``tool-return`` (answers a call by
``tool_call_id``), ``retry-prompt`` (answers a call when it names a tool; without one it is
pydantic-ai's feedback on the model's output, read as text), ``retry-feedback``, and
pydantic-ai's own bookkeeping (``instruction*``, ``*-delta``, ``instruction-digest``,
``instruction-baseline``: their text, if any, counts). Parts of a response: ``text``,
``thinking``, ``tool-call``, the provider's built-in tools (``builtin-tool-call`` and
``builtin-tool-return``, both inside the response), ``file``, ``compaction``, ``speech``.

Pairing rules: a response's ``tool-call`` parts are answered by the ``tool-return`` (or
``retry-prompt``) parts of the request right after it, by ``tool_call_id``; that request
holds the results of all of them (parallel calls) and may also hold a new user prompt (and,
in the first request, the system prompt). A request of results only is a result, never the
question; one that also asks something is both. Thinking parts and built-in tools stay inside
their response.

Validity rules: the first message is a request (the first request holds the agent's system
prompt and the first question: ``preserve_first``, the default, keeps it), requests and
responses alternate, every call is answered in the next request and every result answers a
call of the response before it. A request of system prompt parts alone is a ``system``
message. pydantic-ai itself repairs what breaks these rules before each model request
(``repair_messages``: it drops orphan results and invents results for calls without one);
a reduced list never needs that.

Counting: system prompts, user text and text content, results (a string as it is, anything
else as JSON), retry feedback, text, thinking, each call's name and arguments, built-in tool
calls and returns as text; media at a fixed cost.

Writing: a summary is a ``ModelRequest`` holding one ``UserPromptPart`` (a ``ModelResponse``
holding one ``TextPart`` where the roles need the model's side, see
:func:`~.base.block_sides`), marked by the :data:`~.base.SUMMARY_HEADER` first line and by
``metadata={"agentstate_reducer": "summary"}`` (pydantic-ai never sends ``metadata`` to the
model); a placeholder replaces a result's ``content``; a cut shortens the last text. New
messages and parts are ``dataclasses.replace`` copies (dicts for dicts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    AI,
    HUMAN,
    PYDANTIC_AI,
    SUMMARY_FILLER,
    SYSTEM,
    MessageFormat,
    Parsed,
    as_text,
    block_sides,
    describe,
    get,
    is_sequence,
    module_of,
    text_or_none,
)

#: The key pydantic-ai's ``metadata`` of a summary block holds (never sent to a model).
SUMMARY_METADATA_KEY = "agentstate_reducer"
SUMMARY_METADATA_VALUE = "summary"

_KINDS = frozenset({"request", "response"})
_MEDIA = frozenset(
    {"image-url", "audio-url", "document-url", "video-url", "binary", "uploaded-file"}
)
#: pydantic-ai's bookkeeping parts of a request: their text (if any) counts, nothing else.
_BOOKKEEPING = frozenset(
    {
        "instruction",
        "instruction-delta",
        "instruction-digest",
        "instruction-baseline",
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
    }
)
#: Fields that say nothing a model reads (left out when an unknown part counts as JSON).
_OPAQUE = frozenset(
    {
        "part_kind",
        "timestamp",
        "id",
        "provider_name",
        "provider_details",
        "signature",
        "metadata",
        "tool_kind",
        "outcome",
    }
)


def is_pydantic_ai(msg: Any) -> bool:
    """A pydantic-ai message: an object of ``pydantic_ai``, or a dict in its serialised
    form (``kind`` ``"request"``/``"response"`` and a ``parts`` list, no ``role``)."""
    if module_of(msg).startswith("pydantic_ai"):
        return True
    return (
        isinstance(msg, Mapping)
        and msg.get("kind") in _KINDS
        and "parts" in msg
        and "role" not in msg
        and "content" not in msg
    )


def _return_parts(content: Any) -> tuple[str, int]:
    """A tool return's content as text, with the media it holds (``BinaryContent``,
    ``ImageUrl``, ... or their serialised dicts, alone or in a list) counted apart, at a
    fixed cost each, instead of by their data."""
    if get(content, "kind") in _MEDIA and not isinstance(content, str):
        return "", 1
    if not is_sequence(content) or isinstance(content, str):
        return as_text(content), 0
    media = sum(1 for item in content if not isinstance(item, str) and get(item, "kind") in _MEDIA)
    if not media:
        return as_text(content), 0
    rest = [item for item in content if isinstance(item, str) or get(item, "kind") not in _MEDIA]
    return (as_text(rest) if rest else ""), media


class PydanticAIFormat(MessageFormat):
    """pydantic-ai ``ModelRequest``/``ModelResponse`` messages (see the module docstring)."""

    name = "pydantic_ai"
    bit = PYDANTIC_AI
    alternates = True

    def parse(self, msg: Any) -> Parsed:
        kind = get(msg, "kind")
        parts = get(msg, "parts")
        if kind not in _KINDS or not is_sequence(parts):
            raise TypeError(
                f"{describe(msg)}: expected a pydantic-ai message, a ModelRequest or a "
                "ModelResponse (kind 'request' or 'response') with a list of parts"
            )
        request = kind == "request"
        parsed = Parsed(HUMAN if request else AI, kind, PYDANTIC_AI)
        parsed.content = parts
        system_only = request and bool(parts)
        for index, part in enumerate(parts):
            part_kind = get(part, "part_kind")
            if not isinstance(part_kind, str):
                raise TypeError(
                    f"{describe(msg)}: parts[{index}] is {type(part).__name__}, expected a "
                    "pydantic-ai message part (with a 'part_kind')"
                )
            if part_kind != "system-prompt" and part_kind not in _BOOKKEEPING:
                system_only = False
            where = ("parts", index)
            if request:
                self._request_part(parsed, part, part_kind, where)
            else:
                self._response_part(parsed, part, part_kind, where)
        if system_only:
            parsed.role = SYSTEM
        parsed.summary = _marked(msg) or parsed.header_marked()
        return parsed

    @staticmethod
    def _request_part(parsed: Parsed, part: Any, kind: str, where: tuple[Any, ...]) -> None:
        content = get(part, "content")
        if kind in ("system-prompt", "retry-feedback") or kind in _BOOKKEEPING:
            if isinstance(content, str):
                parsed.add_text(content, (*where, "content"))
            elif content is not None:
                parsed.texts.append(as_text(content))
        elif kind == "user-prompt":
            if isinstance(content, str):
                parsed.add_text(content, (*where, "content"))
                return
            for item_index, item in enumerate(content if is_sequence(content) else ()):
                if isinstance(item, str):
                    parsed.add_text(item, (*where, "content", item_index))
                    continue
                item_kind = get(item, "kind")
                if item_kind in _MEDIA:
                    parsed.images += 1
                elif item_kind == "cache-point":
                    continue
                elif isinstance(get(item, "content"), str):
                    parsed.add_text(
                        get(item, "content"), (*where, "content", item_index, "content")
                    )
                else:
                    parsed.texts.append(as_text(_fields(item)))
        elif kind in ("tool-return", "retry-prompt"):
            call_id = text_or_none(get(part, "tool_call_id"))
            text, media = _return_parts(content)
            parsed.result_media += media
            answers = kind == "tool-return" or text_or_none(get(part, "tool_name")) is not None
            if answers and call_id is not None:
                parsed.add_result(call_id, text, (*where, "content"))
            else:
                parsed.add_text(text, (*where, "content"), "result" if answers else "text")
        else:
            rest = _fields(part)
            if rest:
                parsed.texts.append(as_text(rest))

    @staticmethod
    def _response_part(parsed: Parsed, part: Any, kind: str, where: tuple[Any, ...]) -> None:
        content = get(part, "content")
        if kind == "text":
            if isinstance(content, str):
                parsed.add_text(content, (*where, "content"))
        elif kind == "thinking":
            parsed.thinking = True
            if isinstance(content, str) and content:
                parsed.add_text(content, (*where, "content"), "reasoning")
        elif kind == "tool-call":
            name = get(part, "tool_name")
            parsed.calls.append(
                (
                    text_or_none(get(part, "tool_call_id")),
                    name if isinstance(name, str) else "",
                    as_text(get(part, "args")),
                    part,
                )
            )
        elif kind in ("builtin-tool-call", "builtin-tool-return"):
            # The provider ran it inside this response: text of the turn, no pairing.
            name = get(part, "tool_name")
            parsed.texts.append(name if isinstance(name, str) else "")
            parsed.texts.append(as_text(get(part, "args" if kind.endswith("call") else "content")))
        elif kind == "file":
            parsed.images += 1
        elif kind == "speech":
            transcript = get(part, "transcript")
            if isinstance(transcript, str):
                parsed.texts.append(transcript)
            if get(part, "audio") is not None:
                parsed.images += 1
        elif kind == "compaction":
            if isinstance(content, str):
                parsed.texts.append(content)
        else:
            rest = _fields(part)
            if rest:
                parsed.texts.append(as_text(rest))

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        parts = list(get(msg, "parts"))
        removed: set[int] = set()
        items: dict[int, dict[tuple[Any, ...], str | None]] = {}
        for path, text in changes.items():
            index = path[1]
            if len(path) > 3:  # an item of a user prompt's content list
                items.setdefault(index, {})[path[3:]] = text
            elif text is None:
                removed.add(index)
            else:
                parts[index] = _replace(parts[index], content=text)
        for index, item_changes in items.items():
            content = list(get(parts[index], "content"))
            gone: set[int] = set()
            for item_path, text in item_changes.items():
                position = item_path[0]
                if text is None:
                    gone.add(position)
                elif len(item_path) == 1:
                    content[position] = text
                else:
                    content[position] = _replace(content[position], content=text)
            kept = [item for position, item in enumerate(content) if position not in gone]
            parts[index] = _replace(parts[index], content=kept)
        return _replace(msg, parts=[part for i, part in enumerate(parts) if i not in removed])

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
        dicts = bool(messages) and all(isinstance(m, Mapping) for m in messages)
        return [
            _summary_message(side, body, dicts) for side, body in zip(sides, texts, strict=True)
        ]

    def with_text(self, msg: Any, text: str) -> Any:
        """``msg`` saying only ``text``: one user prompt in a request, one text part in a
        response (for a message without a text to rewrite)."""
        request = get(msg, "kind") == "request"
        if isinstance(msg, Mapping):
            part = {"part_kind": "user-prompt" if request else "text", "content": text}
            return {**msg, "parts": [part]}
        from pydantic_ai.messages import TextPart, UserPromptPart

        new_part: Any = UserPromptPart(content=text) if request else TextPart(content=text)
        return _replace(msg, parts=[new_part])

    def fingerprint_payload(self, msg: Any) -> Any:
        return [_plain(part) for part in get(msg, "parts") or ()]


def _marked(msg: Any) -> bool:
    metadata = get(msg, "metadata")
    return isinstance(metadata, Mapping) and (
        metadata.get(SUMMARY_METADATA_KEY) == SUMMARY_METADATA_VALUE
    )


def _summary_message(side: str, text: str, dicts: bool) -> Any:
    metadata = {SUMMARY_METADATA_KEY: SUMMARY_METADATA_VALUE}
    if dicts:
        if side == HUMAN:
            part = {"part_kind": "user-prompt", "content": text}
            return {"kind": "request", "parts": [part], "metadata": metadata}
        return {"kind": "response", "parts": [{"part_kind": "text", "content": text}],
                "metadata": metadata}  # fmt: skip
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    if side == HUMAN:
        return ModelRequest(parts=[UserPromptPart(content=text)], metadata=metadata)
    return ModelResponse(parts=[TextPart(content=text)], metadata=metadata)


def _replace(entry: Any, **changes: Any) -> Any:
    """A copy of a part or message (a dataclass, or a dict) with ``changes``."""
    if isinstance(entry, Mapping):
        return {**entry, **changes}
    if dataclasses.is_dataclass(entry) and not isinstance(entry, type):
        return dataclasses.replace(entry, **changes)
    raise TypeError(
        f"cannot rewrite a {type(entry).__name__}: expected a pydantic-ai message or part "
        "(a dataclass) or its serialised dict"
    )


def _fields(part: Any) -> dict[str, Any]:
    """What an unknown part says: its fields but the opaque ones."""
    if isinstance(part, Mapping):
        fields = dict(part)
    elif dataclasses.is_dataclass(part) and not isinstance(part, type):
        fields = {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}
    else:
        return {"value": part}
    return {k: v for k, v in fields.items() if k not in _OPAQUE and v not in (None, "", [], {})}


def _plain(part: Any) -> Any:
    if isinstance(part, Mapping):
        return dict(part)
    if dataclasses.is_dataclass(part) and not isinstance(part, type):
        return {f.name: repr(getattr(part, f.name)) for f in dataclasses.fields(part)}
    return repr(part)


PYDANTIC_AI_FORMAT = PydanticAIFormat()

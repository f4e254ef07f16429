"""Gemini contents: ``{"role": "user" | "model", "parts": [...]}`` dicts, and google-genai
``types.Content`` objects (what Google ADK holds in its events).

Parts (snake_case as the Python SDK writes them, camelCase as the REST API does): ``text``
(with ``thought: true`` for thinking), ``inline_data``/``inlineData`` and
``file_data``/``fileData`` (media), ``function_call``/``functionCall`` (``id``, ``name``,
``args``), ``function_response``/``functionResponse`` (``id``, ``name``, ``response``),
``executable_code``, ``code_execution_result``, the server tools' ``tool_call`` and
``tool_response``; ``thought_signature`` and metadata do not count.

Pairing rules: a ``model`` content's function calls are answered by function responses in
the ``user`` content right after it (which may hold several, and leaves with it); by id
when the call and the response carry one (ADK sets them), else by name and order: a
response answers the newest unanswered call of its name, so a content that calls one
function twice waits for two responses of that name. A user content of responses only is a
result, never the question; thought parts stay with their model turn.

Validity rules: roles are ``user`` and ``model`` only (a content without a role counts as
the user's), the first content comes from the user and roles alternate; every call is
answered in the next content.

Counting: text, thought text, function names and arguments, responses (the string under
a response's only ``output`` or ``result`` key, else the response as JSON), code and its
output; inline and file data at a fixed cost.

Writing: a summary is one content (``{"role", "parts": [{"text": ...}]}``, or a
``types.Content`` with a text ``Part`` in a list of objects), marked by the
:data:`~.base.SUMMARY_HEADER` first line, its role alternating with its neighbours; a
placeholder replaces a function response's ``response`` with ``{"output": placeholder}``
(Gemini's key for a function's output; ``result`` where the response used it, as ADK
does); a cut shortens the last text part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    AI,
    FLAW_PLACEMENT,
    FLAW_ROLE,
    GEMINI,
    HUMAN,
    SUMMARY_FILLER,
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
from .blocks import set_field
from .chat import normalise

#: Each part field, by its snake_case and camelCase names.
_CALL = ("function_call", "functionCall")
_RESPONSE = ("function_response", "functionResponse")
_MEDIA = ("inline_data", "inlineData", "file_data", "fileData")
_CODE = ("executable_code", "executableCode", "code_execution_result", "codeExecutionResult")
_SERVER = ("tool_call", "toolCall", "tool_response", "toolResponse")
#: Gemini's roles, as the reducer reads them (``function`` and ``tool``: contents of
#: function responses in older API versions, the user's side).
_ROLES = {"user": HUMAN, "model": "ai", "function": HUMAN, "tool": HUMAN}
_SIDE_NAMES = {"human": "user", "ai": "model"}


def _field(part: Any, names: tuple[str, ...]) -> tuple[str | None, Any]:
    """The first of ``names`` the part has a value for, and the value."""
    for name in names:
        value = get(part, name)
        if value is not None:
            return name, value
    return None, None


def is_gemini_object(msg: Any) -> bool:
    """A google-genai ``Content`` (or an object shaped like one: ``parts`` and ``role``
    attributes, no ``content``)."""
    if module_of(msg).startswith("google.genai"):
        return True
    return (
        not isinstance(msg, Mapping)
        and hasattr(msg, "parts")
        and hasattr(msg, "role")
        and not hasattr(msg, "content")
    )


class GeminiFormat(MessageFormat):
    """Gemini contents, as dicts or google-genai objects (see the module docstring)."""

    name = "gemini"
    bit = GEMINI
    alternates = True

    def parse(self, msg: Any) -> Parsed:
        if not isinstance(msg, Mapping) and not (hasattr(msg, "parts") and hasattr(msg, "role")):
            # Another google-genai object (a whole GenerateContentResponse, a Candidate, a
            # Part, usage metadata): read as a content it would be a user turn.
            raise TypeError(
                f"{describe(msg)}: expected a message: a Gemini content (a google-genai "
                "Content, or a dict with 'role' and 'parts'); from a response, append "
                "response.candidates[0].content"
            )
        parts = get(msg, "parts")
        if not is_sequence(parts) and parts is not None:
            raise TypeError(f"{describe(msg)}: a Gemini content's 'parts' is a list")
        raw = get(msg, "role")
        raw_role = raw if isinstance(raw, str) else "user"
        role = _ROLES.get(raw_role.lower()) or normalise(raw_role)
        parsed = Parsed(role, raw_role, GEMINI)
        parsed.content = parts
        if raw_role.lower() not in _ROLES and role != "system":
            parsed.flaw(
                FLAW_ROLE, f"role {raw_role!r}: a Gemini content's role is 'user' or 'model'"
            )
        for index, part in enumerate(parts or ()):
            where = ("parts", index)
            text = get(part, "text")
            if isinstance(text, str):
                kind = "reasoning" if get(part, "thought") is True else "text"
                parsed.add_text(text, (*where, "text"), kind)
                continue
            name_key, call = _field(part, _CALL)
            if call is not None:
                _check_object(msg, index, name_key, call)
                if role != AI:
                    parsed.flaw(
                        FLAW_PLACEMENT,
                        f"parts[{index}] is a {name_key} in a {raw_role!r} content: only the "
                        "model's contents call functions",
                    )
                name = get(call, "name")
                parsed.calls.append(
                    (
                        text_or_none(get(call, "id")),
                        name if isinstance(name, str) else "",
                        as_text(get(call, "args")),
                        call,
                    )
                )
                continue
            name_key, response = _field(part, _RESPONSE)
            if response is not None:
                _check_object(msg, index, name_key, response)
                if role == AI:
                    parsed.flaw(
                        FLAW_PLACEMENT,
                        f"parts[{index}] is a {name_key} in a {raw_role!r} content: function "
                        "responses go in the user content after the call",
                    )
                key = _response_key(response)
                body = _output_text(get(response, "response"))
                for extra in get(response, "parts") or ():
                    # Media a function returns (FunctionResponse.parts): a fixed cost each.
                    if _field(extra, _MEDIA)[1] is not None:
                        parsed.result_media += 1
                    else:
                        parsed.result_extras.append(as_text(extra))
                if key is not None:
                    parsed.add_result(key, body, (*where, name_key))
                else:
                    parsed.add_text(body, (*where, name_key), "result")
                continue
            if _field(part, _MEDIA)[1] is not None:
                parsed.images += 1
                continue
            known = False
            for names in (_CODE, _SERVER):
                _, value = _field(part, names)
                if value is not None:
                    parsed.texts.append(as_text(value))
                    known = True
            if not known:
                # A part of a kind this reader does not know counts as its JSON (never
                # nothing); signatures and metadata alone count nothing.
                rest = _unknown(part)
                if rest:
                    parsed.texts.append(as_text(rest))
        if role != "ai":
            parsed.calls = []
        parsed.summary = parsed.header_marked()
        return parsed

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        parts = list(get(msg, "parts") or ())
        removed: set[int] = set()
        for path, text in changes.items():
            index, key = path[1], path[2]
            if text is None:
                removed.add(index)
                continue
            part = parts[index]
            if key in _RESPONSE:
                response = get(part, key)
                body = {_output_key(get(response, "response")): text}
                parts[index] = set_field(part, key, set_field(response, "response", body))
            else:
                parts[index] = set_field(part, "text", text)
        kept = [part for index, part in enumerate(parts) if index not in removed]
        return set_field(msg, "parts", kept)

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
        objects = any(not isinstance(m, Mapping) for m in messages)
        out: list[Any] = []
        for side, body in zip(sides, texts, strict=True):
            if objects:
                from google.genai import types

                out.append(types.Content(role=_SIDE_NAMES[side], parts=[types.Part(text=body)]))
            else:
                out.append({"role": _SIDE_NAMES[side], "parts": [{"text": body}]})
        return out

    def fingerprint_payload(self, msg: Any) -> Any:
        parts = get(msg, "parts")
        return [_plain(part) for part in parts or ()]


#: The keys a function's output is held under: Gemini's documented key, and the one
#: Google ADK writes (``{"result": ...}``).
_OUTPUT_KEYS = ("output", "result")


def _check_object(msg: Any, index: int, key: str | None, value: Any) -> None:
    """A function call or response is a dict (or an SDK object), never a list or text."""
    if isinstance(value, (str, bytes, int, float, list, tuple)):
        raise TypeError(
            f"{describe(msg)}: parts[{index}].{key} is {type(value).__name__}, expected an "
            "object with a 'name' (and 'args' or 'response')"
        )


def _output_text(body: Any) -> str:
    """A function response's output as text: the string under its only key ``output`` or
    ``result``, else the whole response as JSON."""
    if isinstance(body, Mapping) and len(body) == 1:
        key, value = next(iter(body.items()))
        if key in _OUTPUT_KEYS and isinstance(value, str):
            return value
    return as_text(body)


def _output_key(body: Any) -> str:
    """The key a rewritten output goes under: the response's own one, else ``output``."""
    if isinstance(body, Mapping) and len(body) == 1 and next(iter(body)) in _OUTPUT_KEYS:
        return str(next(iter(body)))
    return "output"


#: Part fields that say nothing a model reads as text.
_OPAQUE = frozenset(
    {
        "thought",
        "thought_signature",
        "thoughtSignature",
        "part_metadata",
        "partMetadata",
        "video_metadata",
        "videoMetadata",
        "media_resolution",
        "mediaResolution",
    }
)


def _unknown(part: Any) -> dict[str, Any]:
    """The fields of a part no branch above read, but opaque ones."""
    if isinstance(part, Mapping):
        fields = dict(part)
    else:
        dump = getattr(part, "model_dump", None)
        fields = dump(exclude_none=True) if callable(dump) else {"value": part}
    return {key: value for key, value in fields.items() if key not in _OPAQUE}


def _response_key(response: Any) -> str | None:
    from .base import function_call_key

    found = text_or_none(get(response, "id"))
    if found is not None:
        return found
    name = text_or_none(get(response, "name"))
    return None if name is None else function_call_key(name)


def _plain(part: Any) -> Any:
    dump = getattr(part, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True, mode="json")
    return part


GEMINI_FORMAT = GeminiFormat()

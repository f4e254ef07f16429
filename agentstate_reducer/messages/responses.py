"""OpenAI Responses API input items, as the OpenAI Agents SDK stores them in its sessions.

Items (dicts, or the ``openai`` SDK's objects): messages (``{"type": "message", "role",
"content"}`` and easy input messages ``{"role", "content"}``, with ``input_text``,
``output_text``, ``input_image``, ``input_file``, ``refusal`` content), ``reasoning``
(``summary`` and ``content`` texts, ``encrypted_content``), ``function_call`` and
``function_call_output``, the other client-side calls and their outputs
(``custom_tool_call``, ``computer_call``, ``local_shell_call``, ``shell_call``,
``apply_patch_call``, ``tool_search_call``, ``program``, ``mcp_approval_request`` and
what answers each), and the server-side calls that need no output (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``,
``mcp_list_tools``); ``item_reference`` names an item the server stored.

Pairing rules: a call is an item of its own, answered by an output item with its
``call_id`` (``id`` for ``local_shell_call_output``, ``approval_request_id`` for
``mcp_approval_response``) anywhere after it. The items of one model turn, a run of
consecutive model items (reasoning, assistant messages, calls, server-side calls), leave
together: a ``reasoning`` item belongs to the item after it, and parallel calls are one
turn, as one Chat message holds them all. A call's output leaves with its turn.

Validity rules: every output answers a call before it and every call has its output after
it (not necessarily right after); a ``reasoning`` item is followed by an item of its turn.

Counting: message text, reasoning summaries and text (not ``encrypted_content``), each
call's name and arguments (or input, action, operation), each output (text, or its text
blocks), server-side calls' queries and results as text; images and files at a fixed cost
(``image_generation_call`` results too).

Writing: a summary is a user message in the shape the list's user messages have (an easy
input message ``{"role": "user", "content": text}`` or a typed message with an
``input_text`` block), marked by the :data:`~.base.SUMMARY_HEADER` first line; a placeholder
replaces an output's ``output``; a cut shortens the last text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    AI,
    FLAW_BLOCK,
    HUMAN,
    PLAIN,
    REASONING_ITEM,
    RESPONSES,
    SYSTEM,
    TOOL,
    TURN_ITEM,
    MessageFormat,
    Parsed,
    as_text,
    describe,
    get,
    is_sequence,
    text_or_none,
)
from .blocks import read_blocks, replace_in, result_text, set_field
from .chat import normalise

#: Client-side calls: ``type -> (id key, name key or fixed name, arguments key)``.
CALLS: Mapping[str, tuple[str, str, str]] = {
    "function_call": ("call_id", "name", "arguments"),
    "custom_tool_call": ("call_id", "name", "input"),
    "computer_call": ("call_id", "=computer", "action"),
    "local_shell_call": ("call_id", "=local_shell", "action"),
    "shell_call": ("call_id", "=shell", "action"),
    "apply_patch_call": ("call_id", "=apply_patch", "operation"),
    "tool_search_call": ("call_id", "=tool_search", "arguments"),
    "program": ("call_id", "=program", "code"),
    "mcp_approval_request": ("id", "name", "arguments"),
}
#: Their outputs: ``type -> (key of the call id answered, key of the output)``.
OUTPUTS: Mapping[str, tuple[str, str]] = {
    "function_call_output": ("call_id", "output"),
    "custom_tool_call_output": ("call_id", "output"),
    "computer_call_output": ("call_id", "output"),
    "local_shell_call_output": ("id", "output"),
    "shell_call_output": ("call_id", "output"),
    "apply_patch_call_output": ("call_id", "output"),
    "tool_search_output": ("call_id", "tools"),
    "program_output": ("call_id", "result"),
    "mcp_approval_response": ("approval_request_id", "approve"),
}
#: Model items that need no answer: the server ran them.
SERVER_CALLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "item_reference",
    }
)
#: Items kept as they are (never pruned): the server's state, not a turn.
KEPT = frozenset({"compaction", "compaction_trigger", "additional_tools", "configuration_update"})
#: Every item type (besides ``message`` and ``reasoning``).
ITEM_TYPES = frozenset({"message", "reasoning", *CALLS, *OUTPUTS, *SERVER_CALLS, *KEPT})

_SKIPPED = frozenset({"type", "id", "status", "call_id"})
_MESSAGE_ROLES = frozenset({HUMAN, AI, SYSTEM, "developer"})


class ResponsesFormat(MessageFormat):
    """Responses API items (see the module docstring)."""

    name = "responses"
    bit = RESPONSES
    adjacent_results = False

    def parse(self, msg: Any) -> Parsed:
        kind = get(msg, "type")
        role = get(msg, "role")
        if isinstance(role, str) and kind in (None, "message"):
            return self._message(msg, role)
        if not isinstance(kind, str) or kind not in ITEM_TYPES:
            raise TypeError(
                f"{describe(msg)}: expected a Responses API item: a message with a 'role', "
                f"or an item whose 'type' is one of {', '.join(sorted(ITEM_TYPES))}"
            )
        if kind == "message":
            raise TypeError(f"{describe(msg)}: a Responses API message needs a string 'role'")
        ident = text_or_none(get(msg, "id"))
        if kind == "reasoning":
            parsed = Parsed(AI, kind, RESPONSES)
            parsed.joins = REASONING_ITEM
            for key in ("summary", "content"):
                entries = get(msg, key)
                for index, entry in enumerate(entries if is_sequence(entries) else ()):
                    text = get(entry, "text")
                    if isinstance(text, str):
                        parsed.add_text(text, (key, index, "text"), "reasoning")
        elif kind in CALLS:
            parsed = Parsed(AI, kind, RESPONSES)
            parsed.joins = TURN_ITEM
            id_key, name_key, args_key = CALLS[kind]
            name = name_key[1:] if name_key.startswith("=") else get(msg, name_key)
            arguments = get(msg, args_key)
            if kind == "function_call" and not isinstance(arguments, str):
                parsed.flaw(
                    FLAW_BLOCK,
                    f"a function_call's 'arguments' is a JSON string, got "
                    f"{type(arguments).__name__}",
                )
            if text_or_none(get(msg, id_key)) is None:
                parsed.flaw(FLAW_BLOCK, f"a {kind} without a {id_key!r}")
            parsed.calls.append(
                (
                    text_or_none(get(msg, id_key)),
                    name if isinstance(name, str) else "",
                    as_text(get(msg, args_key)),
                    msg,
                )
            )
        elif kind in OUTPUTS:
            parsed = Parsed(TOOL, kind, RESPONSES)
            key_name, output_key = OUTPUTS[kind]
            answered = text_or_none(get(msg, key_name))
            output = get(msg, output_key)
            if is_sequence(output):
                texts = [get(block, "text") for block in output]
                parsed.images += sum(
                    1 for b in output if get(b, "type") in ("input_image", "input_file")
                )
                text = "\n".join(t for t in texts if isinstance(t, str))
                if not text and not parsed.images:
                    text = result_text(output)
            elif isinstance(output, Mapping) or hasattr(output, "model_dump"):
                if get(output, "type") in ("computer_screenshot", "input_image"):
                    parsed.images += 1
                    text = ""
                else:
                    text = as_text(output)
            else:
                text = as_text(output)
            if answered is not None:
                parsed.add_result(answered, text, (output_key,))
            else:
                parsed.add_text(text, (output_key,), "result")
        elif kind in SERVER_CALLS:
            parsed = Parsed(AI, kind, RESPONSES)
            parsed.joins = TURN_ITEM
            if kind == "image_generation_call":
                parsed.images += 1 if get(msg, "result") else 0
            else:
                body = _fields(msg)
                if body:
                    parsed.texts.append(as_text(body))
        else:
            parsed = Parsed(kind, kind, RESPONSES)
        parsed.id = ident
        return parsed

    def _message(self, msg: Any, role: str) -> Parsed:
        content = get(msg, "content")
        normalised = normalise(role)
        if normalised not in _MESSAGE_ROLES:
            raise TypeError(
                f"{describe(msg)}: a Responses API message's role is 'user', 'assistant', "
                f"'system' or 'developer', got {role!r}"
            )
        parsed = Parsed(normalised, role, PLAIN if isinstance(content, str) else RESPONSES)
        parsed.id = text_or_none(get(msg, "id"))
        parsed.content = content
        if normalised == AI:
            parsed.joins = TURN_ITEM
        if isinstance(content, str):
            parsed.add_text(content, ("content",))
        elif is_sequence(content):
            read_blocks(parsed, content, ("content",), calls=False)
        parsed.summary = parsed.header_marked()
        return parsed

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        out = msg
        grouped: dict[str, dict[tuple[Any, ...], str | None]] = {}
        for path, text in changes.items():
            if len(path) == 1:
                out = set_field(out, path[0], "" if text is None else text)
            else:
                grouped.setdefault(path[0], {})[path[1:]] = text
        for key, relative in grouped.items():
            out = set_field(out, key, replace_in(get(out, key), relative))
        return out

    def summary_block(
        self,
        text: str,
        block_id: str,
        messages: Sequence[Any],
        before: str | None,
        after: str | None,
    ) -> list[Any]:
        for message in messages:
            if get(message, "role") == "user":
                if isinstance(get(message, "content"), str):
                    return [{"role": "user", "content": text}]
                return [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": text}],
                    }
                ]
        return [{"role": "user", "content": text}]

    def fingerprint_payload(self, msg: Any) -> Any:
        dump = getattr(msg, "model_dump", None)
        if callable(dump):
            return dump(exclude_none=True, mode="json")
        return dict(msg) if isinstance(msg, Mapping) else repr(msg)


def _fields(msg: Any) -> Any:
    """An item's fields but its type, id and status (what a server-side call says)."""
    if isinstance(msg, Mapping):
        return {k: v for k, v in msg.items() if k not in _SKIPPED}
    dump = getattr(msg, "model_dump", None)
    if callable(dump):
        data = dump(exclude_none=True)
        return {k: v for k, v in data.items() if k not in _SKIPPED}
    return None


RESPONSES_FORMAT = ResponsesFormat()

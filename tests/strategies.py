"""Shared hypothesis strategies: random tool-calling conversations in every supported shape.

Tool calls come in both protocols: tool calls with ids, and OpenAI's legacy function calls
(an ai message's ``function_call``, answered by a ``function`` message of that name).

A conversation is first drawn as abstract :class:`Msg` records (role, id, content, tool
calls, the call a result answers), then rendered into one of the shapes the reducer must
read: OpenAI dicts, LangChain dicts, LangChain's serialised dicts, LangChain message
objects, or duck-typed objects. Tests compare what comes back against the records.
"""

from __future__ import annotations

import datetime
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

SHAPES = ("openai", "langchain_dict", "serialized", "langchain", "duck")

_counter = itertools.count()


@dataclass(frozen=True)
class Msg:
    """One abstract message."""

    role: str  # human, ai, system, tool, function, developer
    id: str
    content: str
    call_ids: tuple[str, ...] = ()
    result_for: str | None = None
    function_call: str | None = None
    """For an ai message, the function it calls the legacy way (no id)."""
    function: str | None = None
    """For a function message, the function whose result it is (None: no name)."""


@dataclass
class Duck:
    """A message object of no known framework: only attributes."""

    type: str
    content: str
    id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    function_call: dict[str, Any] | None = None
    name: str | None = None


_words = st.text(
    alphabet=st.sampled_from("abcdefghij klmnop 日本語 привет"), min_size=0, max_size=40
)


#: Few names, so the same function is called again in later turns.
FUNCTIONS = ("get_weather", "lookup")


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 8, *, strays: bool = True) -> list[Msg]:
    """A plausible agent history: optional system prompt, then user turns with tool loops.

    A step of a loop makes tool calls, a legacy function call, or both at once, each
    followed directly by all its results in any order. The odd mid-list system message and
    ``developer`` message (an unknown role) are sprinkled in; with ``strays``, so are what
    breaks the protocol: a ``function`` message that answers no call (named like the
    functions called, or nameless) and a legacy function call left without its result.
    """
    serial = next(_counter)
    ids = (f"m{serial}-{n}" for n in itertools.count())
    calls = (f"call{serial}-{n}" for n in itertools.count())
    out: list[Msg] = []
    if draw(st.booleans()):
        out.append(Msg("system", next(ids), draw(_words)))
    extras = ["none"] * 6 + ["system", "developer"] + (["function"] if strays else [])
    for _ in range(draw(st.integers(0, max_turns))):
        extra = draw(st.sampled_from(extras))
        if extra == "function":
            function = draw(st.sampled_from([*FUNCTIONS, None]))
            out.append(Msg("function", next(ids), draw(_words), function=function))
        elif extra != "none":
            out.append(Msg(extra, next(ids), draw(_words)))
        out.append(Msg("human", next(ids), draw(_words)))
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["tools"] * 3 + ["function", "both"]))
            call_ids = ()
            if kind != "function":
                call_ids = tuple(next(calls) for _ in range(draw(st.integers(1, 3))))
            function = draw(st.sampled_from(FUNCTIONS)) if kind != "tools" else None
            ai = Msg("ai", next(ids), draw(_words), call_ids=call_ids, function_call=function)
            out.append(ai)
            results = [Msg("tool", next(ids), draw(_words), result_for=c) for c in call_ids]
            if function is not None and not (strays and draw(st.integers(0, 5)) == 0):
                results.append(Msg("function", next(ids), draw(_words), function=function))
            out.extend(draw(st.permutations(results)))
        if draw(st.booleans()):
            out.append(Msg("ai", next(ids), draw(_words)))
    return out


def callers(records: list[Msg]) -> dict[int, int]:
    """Result position -> position of the ai message whose call it answers.

    A tool result answers the call with its id. A function result follows the legacy rule:
    it answers the newest unanswered function call of its name, which it closes.
    """
    made: dict[str, int] = {}
    unanswered: dict[str, int] = {}
    out: dict[int, int] = {}
    for i, m in enumerate(records):
        if m.role == "ai":
            for c in m.call_ids:
                made[c] = i
            if m.function_call is not None:
                unanswered[m.function_call] = i
        elif m.role == "tool" and m.result_for in made:
            out[i] = made[m.result_for]
        elif m.role == "function" and m.function in unanswered:
            out[i] = unanswered.pop(m.function)
    return out


_OPENAI_ROLE = {"human": "user", "ai": "assistant"}


def _function_call(msg: Msg) -> dict[str, Any]:
    return {"name": msg.function_call, "arguments": json.dumps({"q": msg.content})}


def render(msg: Msg, shape: str) -> Any:
    """Render one abstract message in ``shape``.

    A legacy function call sits at the top level in OpenAI dicts (content None when empty,
    as OpenAI sends it) and in ``additional_kwargs`` everywhere else, as LangChain keeps it.
    """
    if shape == "openai":
        out: dict[str, Any] = {"role": _OPENAI_ROLE.get(msg.role, msg.role), "content": msg.content}
        out["id"] = msg.id
        if msg.function_call is not None:
            out["function_call"] = _function_call(msg)
            out["content"] = msg.content or None
        if msg.call_ids:
            out["tool_calls"] = [
                {
                    "id": c,
                    "type": "function",
                    "function": {"name": "lookup", "arguments": json.dumps({"q": msg.content})},
                }
                for c in msg.call_ids
            ]
        if msg.result_for:
            out["tool_call_id"] = msg.result_for
        if msg.function is not None:
            out["name"] = msg.function
        return out
    if shape == "langchain_dict":
        out = {"type": msg.role, "content": msg.content, "id": msg.id}
        if msg.function_call is not None:
            out["additional_kwargs"] = {"function_call": _function_call(msg)}
        if msg.function is not None:
            out["name"] = msg.function
        if msg.call_ids:
            out["tool_calls"] = [
                {"id": c, "name": "lookup", "args": {"q": msg.content}} for c in msg.call_ids
            ]
        if msg.result_for:
            out["tool_call_id"] = msg.result_for
        return out
    if shape in ("langchain", "serialized"):
        obj = _langchain(msg)
        if shape == "langchain":
            return obj
        from langchain_core.messages import messages_to_dict

        return messages_to_dict([obj])[0]
    if shape == "duck":
        return Duck(
            type=msg.role,
            content=msg.content,
            id=msg.id,
            tool_calls=[{"id": c, "name": "lookup", "args": {}} for c in msg.call_ids],
            tool_call_id=msg.result_for,
            function_call=None if msg.function_call is None else _function_call(msg),
            name=msg.function,
        )
    raise ValueError(shape)


def _langchain(msg: Msg) -> Any:
    from langchain_core.messages import (
        AIMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )

    if msg.role == "human":
        return HumanMessage(content=msg.content, id=msg.id)
    if msg.role == "ai":
        calls = [{"id": c, "name": "lookup", "args": {"q": msg.content}} for c in msg.call_ids]
        extra = {} if msg.function_call is None else {"function_call": _function_call(msg)}
        return AIMessage(content=msg.content, id=msg.id, tool_calls=calls, additional_kwargs=extra)
    if msg.role == "system":
        return SystemMessage(content=msg.content, id=msg.id)
    if msg.role == "tool":
        return ToolMessage(content=msg.content, id=msg.id, tool_call_id=msg.result_for)
    if msg.role == "function" and msg.function is not None:
        return FunctionMessage(content=msg.content, id=msg.id, name=msg.function)
    return ChatMessage(role=msg.role, content=msg.content, id=msg.id)


def rendered(records: list[Msg], shape: str) -> list[Any]:
    return [render(m, shape) for m in records]


shapes = st.sampled_from(SHAPES)


# -- messages of every shape, usual and odd, for the message reader --------------------


class IdText(str):
    """A ``str`` subclass (an enum-like id): readers must treat it as a string."""


@dataclass
class CallObject:
    """A tool call held as an object rather than a dict."""

    id: Any
    name: str = "lookup"
    args: Any = None


_ODD_STRINGS = st.one_of(
    st.sampled_from(["", "x", "call-1", "m-1"]), st.builds(IdText, st.sampled_from(["", "i"]))
)
_ROLE_NAMES = "user human assistant ai AI tool system chat developer agent"
_ROLE_VALUES = st.one_of(
    st.none(),
    st.sampled_from(_ROLE_NAMES.split()),
    # A branch of its own: the legacy result role is read by a path of its own.
    st.sampled_from(["function", "FunctionMessageChunk"]),
    st.builds(IdText, st.sampled_from(["user", "tool", "ai"])),
    st.integers(0, 3),
)
_ID_VALUES = st.one_of(st.none(), _ODD_STRINGS, st.integers(0, 3))


def _mapping(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` as a dict or as a read-only non-dict mapping."""
    from types import MappingProxyType

    return MappingProxyType(base) if draw(st.booleans()) else base


@st.composite
def _tool_call(draw: st.DrawFn) -> Any:
    call_id = draw(_ID_VALUES)
    form = draw(st.sampled_from(["langchain", "openai", "object", "mapping"]))
    if form == "object":
        return CallObject(call_id)
    if form == "openai":
        body = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    else:
        body = {"id": call_id, "name": "f", "args": {}}
    return _mapping(draw, body) if form == "mapping" else body


@dataclass
class FunctionCallObject:
    """A legacy function call held as an object (as the OpenAI SDK's ``FunctionCall``)."""

    name: Any
    arguments: str = "{}"


_NAME_VALUES = st.one_of(st.none(), _ODD_STRINGS, st.integers(0, 3))


@st.composite
def _function_call_value(draw: st.DrawFn) -> Any:
    """A legacy ``function_call`` value, usual or odd: a dict or mapping with any ``name``,
    an object, or an empty or non-call value."""
    form = draw(st.sampled_from(["dict"] * 3 + ["mapping", "object", "nameless", "empty", "text"]))
    if form == "empty":
        return draw(st.sampled_from([None, {}, ""]))
    if form == "text":
        return "get_weather"
    if form == "nameless":
        return {"arguments": "{}"}
    name = draw(_NAME_VALUES)
    if form == "object":
        return FunctionCallObject(name)
    body = {"name": name, "arguments": "{}"}
    return _mapping(draw, body) if form == "mapping" else body


@st.composite
def _fields(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["id"] = draw(_ID_VALUES)
    if draw(st.booleans()):
        fields["content"] = draw(st.sampled_from(["hi", "", None]))
    if draw(st.booleans()):
        calls = draw(st.lists(_tool_call(), max_size=3))
        fields["tool_calls"] = tuple(calls) if draw(st.booleans()) else calls
    if draw(st.booleans()):
        fields["additional_kwargs"] = {"tool_calls": draw(st.lists(_tool_call(), max_size=2))}
        if draw(st.integers(0, 5)) == 0:
            fields["additional_kwargs"] = _mapping(draw, fields["additional_kwargs"])
    if draw(st.booleans()):
        fields["tool_call_id"] = draw(_ID_VALUES)
    if draw(st.booleans()):
        fields["function_call"] = draw(_function_call_value())
    if draw(st.booleans()):
        extra = fields.get("additional_kwargs", {})
        if isinstance(extra, dict):
            fields["additional_kwargs"] = {**extra, "function_call": draw(_function_call_value())}
    if draw(st.booleans()):
        fields["name"] = draw(_NAME_VALUES)
    if draw(st.integers(0, 3)) == 0:
        fields["content"] = draw(
            st.sampled_from(["Summary of the earlier conversation:\nshort", IdText("Summary of")])
        )
    if draw(st.integers(0, 3)) == 0:
        marker = draw(st.sampled_from(["summarization", "other", None, 3]))
        if draw(st.booleans()):
            fields["lc_source"] = marker
        else:
            extra = fields.get("additional_kwargs", {})
            fields["additional_kwargs"] = {**extra, "lc_source": marker}
    return fields


@st.composite
def any_message(draw: st.DrawFn) -> Any:
    """A message of any shape the reader meets, including odd ones: ``role: None``, non-dict
    mappings (top level or as LangChain's serialised ``data``), ``str`` subclasses, ids that
    are not strings, tool calls as tuples or objects, legacy function calls and function
    results with any ``name``, and things that are not messages."""
    kind = draw(st.sampled_from(["role_dict", "type_dict", "serialized", "duck", "langchain"]))
    if kind == "langchain":
        from langchain_core.messages import AIMessage, FunctionMessage, HumanMessage, ToolMessage

        call = {"id": draw(st.sampled_from(["c1", "c2"])), "name": "f", "args": {}}
        function_call = {"name": draw(st.sampled_from(["f", "g", ""])), "arguments": "{}"}
        return draw(
            st.sampled_from(
                [
                    HumanMessage("q", id="h1"),
                    AIMessage("", id="a1", tool_calls=[call]),
                    AIMessage("", additional_kwargs={"tool_calls": [{**call, "type": "function"}]}),
                    ToolMessage("r", tool_call_id="c1"),
                    AIMessage("", id="a2", additional_kwargs={"function_call": function_call}),
                    AIMessage(
                        "", tool_calls=[call], additional_kwargs={"function_call": function_call}
                    ),
                    FunctionMessage("r", name=draw(st.sampled_from(["f", "g", ""])), id="f1"),
                ]
            )
        )
    fields = draw(_fields())
    if kind == "duck":
        duck = Duck(type=draw(_ROLE_VALUES), content="x")  # type: ignore[arg-type]
        for name, value in fields.items():
            setattr(duck, name, value)
        return duck
    if kind == "serialized":
        outer: dict[str, Any] = {"type": draw(_ROLE_VALUES), "data": _mapping(draw, fields)}
        if draw(st.booleans()):
            fields["role"] = draw(_ROLE_VALUES)
        if draw(st.integers(0, 5)) == 0:
            outer["role"] = None
        return _mapping(draw, outer) if draw(st.integers(0, 3)) == 0 else outer
    key = "role" if kind == "role_dict" else "type"
    message = {key: draw(_ROLE_VALUES), **fields}
    if kind == "role_dict" and draw(st.booleans()):
        message["type"] = draw(_ROLE_VALUES)
    return _mapping(draw, message) if draw(st.integers(0, 3)) == 0 else message


# -- one conversation, every wire format ------------------------------------------------
#
# A dialogue is drawn as logical elements (the system prompt, a question, one model turn
# with its reasoning, text and parallel calls, the results of those calls), then rendered
# into each format the reader supports. Formats differ in granularity: Chat has one
# message per tool result, Anthropic one user message holding all results of a turn, the
# Responses API one item per call (and per reasoning item), so each renderer also says which
# element every message it wrote renders (``owners``): positions compare through it.


@dataclass(frozen=True)
class Call:
    """One tool call of a model turn."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Element:
    """One logical element of a dialogue."""

    kind: str  # system | question | reply | results
    text: str = ""
    images: int = 0
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    results: tuple[tuple[str, str, str], ...] = ()
    """``(call id, function name, output)`` per result, in the order they are sent."""


#: Every format a dialogue is rendered in.
WIRE_FORMATS = (
    "chat",
    "langchain",
    "langchain_blocks",
    "llama_index",
    "responses",
    "anthropic",
    "bedrock",
    "gemini",
    "gemini_objects",
    "pydantic_ai",
)
#: The formats whose roles alternate (and whose lists hold no system prompt).
ALTERNATING = frozenset({"anthropic", "bedrock", "gemini", "gemini_objects", "pydantic_ai"})
#: The reader's name of each rendered format (what ``detect`` returns).
FORMAT_NAMES = {
    "chat": "chat",
    "langchain": "chat",
    "langchain_blocks": "chat",
    "llama_index": "llama_index",
    "responses": "responses",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "gemini_objects": "gemini",
    "pydantic_ai": "pydantic_ai",
}

_TOOL_NAMES = ("lookup", "search")
_text = st.text(
    alphabet=st.sampled_from("abcdefghij klmnop 日本語 привет"), min_size=1, max_size=30
)


@st.composite
def dialogues(
    draw: st.DrawFn, max_turns: int = 5, *, single: bool = False, system: bool = True
) -> list[Element]:
    """A tool-calling dialogue: an optional system prompt, then user turns, each a question
    (maybe with an image), tool steps (a model turn making calls, with reasoning and text,
    then the results of all its calls in any order, sometimes one long output) and a final
    answer. The newest turn may be unfinished: it ends after its question, after a call
    (the results not in yet) or after results (the answer not in yet).

    With ``single``, every message of every format renders exactly one element (one call
    per step, a step has no text, no reasoning, no system prompt), so that count windows
    compare across formats.
    """
    serial = next(_counter)
    calls = (f"call{serial}-{n}" for n in itertools.count())
    out: list[Element] = []
    if system and not single and draw(st.booleans()):
        out.append(Element("system", text=draw(_text)))
    turns = draw(st.integers(1, max_turns))
    for turn in range(turns):
        newest = turn == turns - 1
        out.append(Element("question", text=draw(_text), images=draw(st.integers(0, 1))))
        stop = (
            draw(st.sampled_from(["done"] * 3 + ["question", "call", "results"]))
            if newest
            else "done"
        )
        if stop == "question":
            break
        steps = draw(st.integers(0 if stop == "done" else 1, 3))
        for step in range(steps):
            count = 1 if single else draw(st.integers(1, 3))
            made = tuple(
                Call(next(calls), draw(st.sampled_from(_TOOL_NAMES)), {"q": draw(_text)})
                for _ in range(count)
            )
            text = "" if single else draw(st.sampled_from(["", draw(_text)]))
            reasoning = "" if single else draw(st.sampled_from(["", draw(_text)]))
            out.append(Element("reply", text=text, reasoning=reasoning, calls=made))
            if newest and stop == "call" and step == steps - 1:
                break
            outputs = []
            for call in draw(st.permutations(made)):
                long = draw(st.integers(0, 6)) == 0
                outputs.append((call.id, call.name, draw(_text) * (40 if long else 1)))
            out.append(Element("results", results=tuple(outputs)))
        else:
            if stop == "done":
                reasoning = "" if single else draw(st.sampled_from(["", draw(_text)]))
                out.append(Element("reply", text=draw(_text), reasoning=reasoning))
    return out


def render_dialogue(elements: list[Element], fmt: str) -> tuple[list[Any], list[int]]:
    """``elements`` in format ``fmt`` (one of :data:`WIRE_FORMATS`), and for each message
    the index of the element it renders. Formats whose lists hold no system prompt
    (Anthropic, Bedrock, Gemini) leave it out."""
    messages: list[Any] = []
    owners: list[int] = []
    for index, element in enumerate(elements):
        if element.kind == "system" and fmt in ALTERNATING:
            continue
        rendered = _RENDERERS[fmt](element)
        messages.extend(rendered)
        owners.extend([index] * len(rendered))
    return messages, owners


_IMAGE_URL = "https://example.com/image.png"


def _args(call: Call) -> str:
    return json.dumps(call.args, ensure_ascii=False)


def _chat_element(element: Element) -> list[Any]:
    if element.kind == "system":
        return [{"role": "system", "content": element.text}]
    if element.kind == "question":
        if not element.images:
            return [{"role": "user", "content": element.text}]
        blocks = [{"type": "text", "text": element.text}]
        blocks += [{"type": "image_url", "image_url": {"url": _IMAGE_URL}}] * element.images
        return [{"role": "user", "content": blocks}]
    if element.kind == "reply":
        message: dict[str, Any] = {"role": "assistant", "content": element.text or None}
        if element.calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _args(c)},
                }
                for c in element.calls
            ]
        return [message]
    return [
        {"role": "tool", "tool_call_id": call_id, "content": output}
        for call_id, _, output in element.results
    ]


def _langchain_element(element: Element, *, blocks_only: bool = False) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if element.kind == "system":
        return [SystemMessage(element.text)]
    if element.kind == "question":
        if not element.images:
            return [HumanMessage(element.text)]
        content: list[Any] = [{"type": "text", "text": element.text}]
        content += [{"type": "image", "url": _IMAGE_URL}] * element.images
        return [HumanMessage(content=content)]
    if element.kind == "reply":
        uses = [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in element.calls
        ]
        calls = [{"id": c.id, "name": c.name, "args": c.args} for c in element.calls]
        if element.reasoning or blocks_only:
            blocks: list[Any] = []
            if element.reasoning:
                blocks.append({"type": "thinking", "thinking": element.reasoning})
            if element.text:
                blocks.append({"type": "text", "text": element.text})
            # As ChatAnthropic keeps a turn: the calls as tool_use blocks and in tool_calls
            # (or, as convert_to_messages makes of Anthropic dicts, in the blocks only).
            return [AIMessage(content=blocks + uses, tool_calls=[] if blocks_only else calls)]
        return [AIMessage(content=element.text, tool_calls=calls)]
    if blocks_only:
        return [
            HumanMessage(
                content=[
                    {"type": "tool_result", "tool_use_id": call_id, "content": output}
                    for call_id, _, output in element.results
                ]
            )
        ]
    return [ToolMessage(output, tool_call_id=call_id) for call_id, _, output in element.results]


def _llama_element(element: Element) -> list[Any]:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ImageBlock,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
    )

    if element.kind == "system":
        return [ChatMessage(role="system", content=element.text)]
    if element.kind == "question":
        blocks: list[Any] = [TextBlock(text=element.text)]
        blocks += [ImageBlock(url=_IMAGE_URL) for _ in range(element.images)]
        return [ChatMessage(role="user", blocks=blocks)]
    if element.kind == "reply":
        blocks = []
        if element.reasoning:
            blocks.append(ThinkingBlock(content=element.reasoning))
        if element.text:
            blocks.append(TextBlock(text=element.text))
        # Both places llama-index keeps calls: the OpenAI-style list and the blocks.
        blocks += [
            ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=c.args)
            for c in element.calls
        ]
        extra = {}
        if element.calls:
            extra["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _args(c)},
                }
                for c in element.calls
            ]
        return [ChatMessage(role="assistant", blocks=blocks, additional_kwargs=extra)]
    return [
        ChatMessage(role="tool", content=output, additional_kwargs={"tool_call_id": call_id})
        for call_id, _, output in element.results
    ]


def _responses_element(element: Element) -> list[Any]:
    if element.kind == "system":
        return [{"role": "system", "content": element.text}]
    if element.kind == "question":
        if not element.images:
            return [{"role": "user", "content": element.text}]
        content = [{"type": "input_text", "text": element.text}]
        content += [{"type": "input_image", "image_url": _IMAGE_URL}] * element.images
        return [{"type": "message", "role": "user", "content": content}]
    if element.kind == "reply":
        items: list[Any] = []
        if element.reasoning:
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{id(element)}",
                    "summary": [{"type": "summary_text", "text": element.reasoning}],
                }
            )
        if element.text:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": element.text}],
                }
            )
        items += [
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": _args(c)}
            for c in element.calls
        ]
        return items
    return [
        {"type": "function_call_output", "call_id": call_id, "output": output}
        for call_id, _, output in element.results
    ]


def _anthropic_element(element: Element) -> list[Any]:
    if element.kind == "question":
        if not element.images:
            return [{"role": "user", "content": element.text}]
        image = {"type": "image", "source": {"type": "url", "url": _IMAGE_URL}}
        return [
            {
                "role": "user",
                "content": [{"type": "text", "text": element.text}] + [image] * element.images,
            }
        ]
    if element.kind == "reply":
        if not element.calls and not element.reasoning:
            return [{"role": "assistant", "content": element.text}]
        blocks: list[Any] = []
        if element.reasoning:
            blocks.append({"type": "thinking", "thinking": element.reasoning, "signature": "sig"})
        if element.text:
            blocks.append({"type": "text", "text": element.text})
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in element.calls
        ]
        return [{"role": "assistant", "content": blocks}]
    return [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": output}
                for call_id, _, output in element.results
            ],
        }
    ]


def _bedrock_element(element: Element) -> list[Any]:
    if element.kind == "question":
        image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}
        return [{"role": "user", "content": [{"text": element.text}] + [image] * element.images}]
    if element.kind == "reply":
        blocks: list[Any] = []
        if element.reasoning:
            blocks.append(
                {
                    "reasoningContent": {
                        "reasoningText": {"text": element.reasoning, "signature": "s"}
                    }
                }
            )
        if element.text:
            blocks.append({"text": element.text})
        blocks += [
            {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.args}} for c in element.calls
        ]
        return [{"role": "assistant", "content": blocks}]
    return [
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": call_id,
                        "content": [{"text": output}],
                        "status": "success",
                    }
                }
                for call_id, _, output in element.results
            ],
        }
    ]


def _gemini_element(element: Element) -> list[Any]:
    """Gemini dicts without call ids: responses pair with calls by name and order."""
    if element.kind == "question":
        image = {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}
        return [{"role": "user", "parts": [{"text": element.text}] + [image] * element.images}]
    if element.kind == "reply":
        parts: list[Any] = []
        if element.reasoning:
            parts.append({"text": element.reasoning, "thought": True})
        if element.text:
            parts.append({"text": element.text})
        parts += [{"function_call": {"name": c.name, "args": c.args}} for c in element.calls]
        return [{"role": "model", "parts": parts}]
    return [
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": name, "response": {"output": output}}}
                for _, name, output in element.results
            ],
        }
    ]


def _gemini_object_element(element: Element) -> list[Any]:
    """google-genai objects with call ids, as Google ADK holds them."""
    from google.genai import types

    if element.kind == "question":
        parts = [types.Part(text=element.text)]
        parts += [
            types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))
            for _ in range(element.images)
        ]
        return [types.Content(role="user", parts=parts)]
    if element.kind == "reply":
        parts = []
        if element.reasoning:
            parts.append(types.Part(text=element.reasoning, thought=True))
        if element.text:
            parts.append(types.Part(text=element.text))
        parts += [
            types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.args))
            for c in element.calls
        ]
        return [types.Content(role="model", parts=parts)]
    return [
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name=name, response={"output": output}
                    )
                )
                for call_id, name, output in element.results
            ],
        )
    ]


#: pydantic-ai stamps each message and part with the time it was made; a fixed one makes two
#: renders of the same element equal, as every other format's are (what a message says is
#: its content: fingerprints and the hand-off read no timestamp).
_PYDANTIC_AI_TIME = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _pydantic_ai_element(element: Element) -> list[Any]:
    """pydantic-ai messages: a request per question or per turn of results, a response per
    model turn (its calls as parts)."""
    from pydantic_ai.messages import (
        ImageUrl,
        ModelRequest,
        ModelResponse,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    if element.kind == "question":
        content: Any = element.text
        if element.images:
            content = [element.text, *[ImageUrl(url=_IMAGE_URL)] * element.images]
        return [ModelRequest(parts=[UserPromptPart(content=content, timestamp=_PYDANTIC_AI_TIME)])]
    if element.kind == "reply":
        parts: list[Any] = []
        if element.reasoning:
            parts.append(ThinkingPart(content=element.reasoning))
        if element.text:
            parts.append(TextPart(content=element.text))
        parts += [ToolCallPart(c.name, _args(c), tool_call_id=c.id) for c in element.calls]
        return [ModelResponse(parts=parts, timestamp=_PYDANTIC_AI_TIME)]
    return [
        ModelRequest(
            parts=[
                ToolReturnPart(name, output, tool_call_id=call_id, timestamp=_PYDANTIC_AI_TIME)
                for call_id, name, output in element.results
            ]
        )
    ]


_RENDERERS: dict[str, Any] = {
    "chat": _chat_element,
    "langchain": _langchain_element,
    "langchain_blocks": lambda e: _langchain_element(e, blocks_only=True),
    "llama_index": _llama_element,
    "responses": _responses_element,
    "anthropic": _anthropic_element,
    "bedrock": _bedrock_element,
    "gemini": _gemini_element,
    "gemini_objects": _gemini_object_element,
    "pydantic_ai": _pydantic_ai_element,
}


def element_pairs(elements: list[Element]) -> dict[int, int]:
    """Results element -> the reply element whose calls it answers."""
    out: dict[int, int] = {}
    for index, element in enumerate(elements):
        if element.kind == "results":
            out[index] = index - 1
    return out


def logical_tokens(message: Any) -> int:
    """A counter identical across formats: the characters of what a message says (text,
    tool results, call names and arguments as compact JSON, 40 per image), nothing for
    reasoning (Chat cannot carry it), the system prompt or a summary block (some formats
    write two-message blocks), and no per-message framing (formats split the same element
    into different numbers of messages)."""
    from agentstate_reducer.messages import call_parts_of, is_summary, parts_of, role_of, slots_of

    if role_of(message) == "system" or is_summary(message):
        return 0
    total = 0
    for slot in slots_of(message):
        if slot.kind == "reasoning":
            continue
        total += len(slot.text)
    for name, arguments in call_parts_of(message):
        total += len(name) + len(json.dumps(json.loads(arguments), separators=(",", ":")))
    return total + 40 * parts_of(message).images


# -- messages of the other formats, usual and odd, for the reader's refusals -------------

_ODD_SCALARS = st.one_of(st.none(), st.text(max_size=5), st.integers(-2, 2), st.booleans())
_FIELD_NAMES = st.sampled_from(
    [
        "type",
        "text",
        "id",
        "name",
        "input",
        "args",
        "content",
        "tool_use_id",
        "thinking",
        "source",
        "toolUse",
        "toolResult",
        "toolUseId",
        "reasoningContent",
        "image",
        "function_call",
        "functionCall",
        "function_response",
        "response",
        "inline_data",
        "parts",
        "role",
        "call_id",
        "arguments",
        "output",
        "summary",
        "status",
        "json",
    ]
)
_BLOCK_TYPES = st.sampled_from(
    [
        "text",
        "tool_use",
        "tool_result",
        "thinking",
        "image",
        "image_url",
        "input_text",
        "output_text",
        "tool_call",
        "reasoning",
        "redacted_thinking",
        "document",
        "server_tool_use",
        "web_search_tool_result",
        "refusal",
        "message",
        "function_call",
        "function_call_output",
        "weird",
    ]
)
_ODD_VALUES = st.recursive(
    st.one_of(_ODD_SCALARS, _BLOCK_TYPES),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_FIELD_NAMES, inner, max_size=4)
    ),
    max_leaves=8,
)
_ODD_BLOCKS = st.one_of(
    st.dictionaries(_FIELD_NAMES, _ODD_VALUES, max_size=4),
    st.builds(
        lambda kind, rest: {"type": kind, **rest},
        _BLOCK_TYPES,
        st.dictionaries(_FIELD_NAMES, _ODD_VALUES, max_size=3),
    ),
    _ODD_SCALARS,
)


@st.composite
def odd_format_message(draw: st.DrawFn) -> Any:
    """A dict shaped like a message of some format, with any blocks, parts and values in
    it: a role dict with content blocks, a Gemini content, a Responses item."""
    kind = draw(st.sampled_from(["role", "gemini", "item"]))
    if kind == "role":
        role = draw(st.sampled_from(["user", "assistant", "model", "system", "tool", None, 3]))
        content = draw(st.one_of(_ODD_SCALARS, st.lists(_ODD_BLOCKS, max_size=4)))
        extra = draw(st.dictionaries(_FIELD_NAMES, _ODD_VALUES, max_size=2))
        return {**extra, "role": role, "content": content}
    if kind == "gemini":
        role = draw(st.sampled_from(["user", "model", None]))
        return {
            "role": role,
            "parts": draw(st.one_of(_ODD_SCALARS, st.lists(_ODD_BLOCKS, max_size=3))),
        }
    rest = draw(st.dictionaries(_FIELD_NAMES, _ODD_VALUES, max_size=4))
    return {**rest, "type": draw(_BLOCK_TYPES)}


#: Pieces the token estimate treats apart: words it knows whole (lower case, capitalised, in
#: upper case, glued to punctuation or digits), runs it costs by length, digits, punctuation,
#: whitespace runs, and a character of every class and script it counts.
_TEXT_PIECES = (
    "configuration",
    "Configuration",
    "CONFIGURATION",
    "getConfiguration",
    "configuration2",
    "re-configuration",
    "(configuration)",
    "infrastructure.",
    "the",
    "a",
    "Zürich",
    "größe",
    "xqzvbnmwlkjhg",
    "1234567",
    "-42",
    "3.14",
    " ",
    "  ",
    " " * 17,
    "\t",
    "\n",
    "\r\n",
    " \n",
    ",",
    "{",
    "é",
    "Ő",
    "ř",
    "Ě",
    "Ω",
    "ж",
    "Ա",
    "א",
    "ب",
    "\u0905",  # Devanagari
    "\u0e01",  # Thai
    "\u1ea1",  # Vietnamese
    "\u1200",  # Ethiopic
    "\u10d0",  # Georgian
    "\u2014",  # em dash
    "\u201c",  # opening quote
    "\u2192",  # arrow
    "\u200d",  # zero-width joiner
    "\u3042",  # hiragana
    "中",
    "한",
    "\uff01",  # fullwidth
    "😀",
    "\ud800",  # a lone surrogate (str holds it; UTF-8 cannot)
)


@st.composite
def estimate_texts(draw: st.DrawFn) -> str:
    """Text of any kind for the token estimate: any characters, or a sequence of pieces
    that exercise its features (known words, long runs, digits, whitespace, every script)."""
    if draw(st.booleans()):
        return draw(st.text(alphabet=st.characters(exclude_categories=()), max_size=300))
    return "".join(draw(st.lists(st.sampled_from(_TEXT_PIECES), max_size=80)))

"""The hot path's fast paths against the slow paths they stand for, in every format.

Each fast path states its invariant where it lives (``MessageReducer.reduce``,
``ReduceContext._take`` and ``_oldest_first``, ``TokenCounter`` and the ``plain_parts`` it
reads messages by, the JSON encoder ``as_text`` makes once, ``PlanCache``); the
properties below check them: one reducer fed a conversation turn by turn (its remembered
plan, the no-prune return, the window-only compaction, the pruned list taken in order)
against a brand-new reducer given each turn's whole list, and against the generator path
every reduce took before the no-prune return, with the hooks' calls compared too.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer._calls import drive
from agentstate_reducer.messages import general_view, parts_of, read_view
from agentstate_reducer.messages.plain import plain_parts
from agentstate_reducer.messages.reader import read_views
from agentstate_reducer.planner import _SHARED_VIEWS, PlanLimits, PlanState
from agentstate_reducer.policy import DropOldest
from agentstate_reducer.tokens import TokenCounter
from agentstate_reducer.tokens.estimate import estimate_tokens

from .strategies import (
    FORMAT_NAMES,
    WIRE_FORMATS,
    any_message,
    conversations,
    dialogues,
    logical_tokens,
    render_dialogue,
    rendered,
    shapes,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def _chunks(messages: list[Any], sizes: list[int]) -> list[list[Any]]:
    out, at = [], 0
    for size in sizes:
        out.append(messages[at : at + size])
        at += size
    out.append(messages[at:])
    return out


@st.composite
def _configs(draw: st.DrawFn, fmt: str) -> dict[str, Any]:
    """Count or token windows, with or without a running summary, over ``fmt``."""
    options: dict[str, Any] = {
        "format": FORMAT_NAMES[fmt],
        "preserve_first": draw(st.sampled_from([False, True, "system"])),
        "start_on_human": draw(st.booleans()),
    }
    if draw(st.booleans()):
        high = draw(st.integers(2, 14))
        options.update(max_messages=high, min_messages=draw(st.integers(0, high)))
    else:
        high = draw(st.integers(20, 400))
        options.update(
            max_tokens=high,
            target_tokens=max(1, high * draw(st.integers(30, 100)) // 100),
            token_counter=logical_tokens,
        )
    if draw(st.booleans()):
        options.update(summarize_fn=lambda messages: f"{len(messages)} messages")
        if "max_tokens" in options:
            options["summary_max_tokens"] = 10
    return options


def _fields(result: Any) -> tuple[Any, ...]:
    """What a reduce returned, by message identity where it holds messages."""
    return (
        [id(m) for m in result.surviving if not _is_block(m)],
        [id(m) for m in result.pruned],
        result.summary,
        len(result.summary_messages),
        [id(m) for m in result.folded_summaries if not _is_block(m)],
        [id(m) for m in result.rewritten],
        result.tokens_before,
        result.tokens_after,
        [(s.step, len(s.touched), s.messages_before, s.messages_after) for s in result.steps],
        result.hook_error is None,
        result.summary_error is None,
    )


def _is_block(message: Any) -> bool:
    return read_view(message).summary


@PROPERTY
@given(dialogues(), st.sampled_from(WIRE_FORMATS), st.data())
def test_turn_by_turn_equals_fresh_reduces_in_every_format(
    elements: list[Any], fmt: str, data: st.DataObject
) -> None:
    """One reducer given a conversation a few messages at a time (its remembered plan,
    the no-prune return and the window-only prune at work) returns at every turn what a
    brand-new reducer returns for the same list, field by field, and its hook receives
    the same batches; the pruned messages are in input order (the order the sort in
    ``_oldest_first`` gives)."""
    messages, _ = render_dialogue(elements, fmt)
    options = data.draw(_configs(fmt))
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=20))
    ours: list[list[int]] = []
    theirs: list[list[int]] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            on_prune=lambda batch, ns: ours.append([id(m) for m in batch]), **options
        )
    )
    history: list[Any] = []
    for new in _chunks(messages, sizes):
        fresh = MessageReducer(
            config=ReducerConfig(
                on_prune=lambda batch, ns: theirs.append([id(m) for m in batch]), **options
            )
        )
        # The fresh reducer shares the running summary, as one reducer's turns do.
        fresh.summaries.share(reducer.summaries)
        expected = fresh.reduce(existing=history, new=new)
        kept = reducer.reduce(existing=history, new=new)
        assert _fields(kept) == _fields(expected)
        given = history + new
        where = {id(m): i for i, m in enumerate(given)}
        assert [id(m) for m in kept.pruned] == [
            id(m) for m in sorted(kept.pruned, key=lambda m: where.get(id(m), len(given)))
        ]
        history = kept.surviving
    assert ours == theirs


@PROPERTY
@given(conversations(max_turns=10), shapes, st.data())
def test_the_no_prune_return_is_the_generator_path(
    records: list[Any], shape: str, data: st.DataObject
) -> None:
    """``reduce`` returns a list within its limit (nothing pending) without running the
    reduce's generator; the generator path returns the same result for it (and for a list
    over the limit, both prune the same)."""
    messages = rendered(records, shape)
    if data.draw(st.booleans()):
        high = data.draw(st.integers(1, 30))
        config = ReducerConfig(max_messages=high, min_messages=data.draw(st.integers(0, high)))
    else:
        config = ReducerConfig(max_tokens=data.draw(st.integers(1, 400)))
    cut = data.draw(st.integers(0, len(messages)))
    fast = MessageReducer(config=config).reduce(messages[:cut], messages[cut:])
    slow_reducer = MessageReducer(config=config)
    slow = drive(
        slow_reducer._reduce(
            list(messages), lambda i: f"messages[{i}]", None, slow_reducer.steps, None
        )
    )
    assert _fields(fast) == _fields(slow)


def _plan_of(reducer: MessageReducer) -> tuple[Any, ...]:
    """The plan state a reducer remembered for its next reduce, field by field."""
    session = reducer._plans.current()
    assert session is not None
    state = session.state
    return (
        [id(m) for m in session.messages],
        *(getattr(state, name) for name in PlanState.__slots__ if name != "_limits"),
    )


@PROPERTY
@given(dialogues(), st.sampled_from(WIRE_FORMATS), st.data())
def test_the_plain_drop_is_the_policy_path(
    elements: list[Any], fmt: str, data: st.DataObject
) -> None:
    """With the plain policy (one ``DropOldest``, no hooks, summary or calibration) a
    reduce over the limit prunes without a step context (``MessageReducer._drop_oldest``),
    and one within a count limit returns by ``_fit_quickly``: turn by turn it returns what
    the general path returns, field by field and message by message, and remembers the
    same plan state for the next turn."""
    messages, _ = render_dialogue(elements, fmt)
    options = data.draw(_configs(fmt))
    options.pop("summarize_fn", None)
    options.pop("summary_max_tokens", None)
    if data.draw(st.booleans()):
        options["policy"] = [DropOldest(id=data.draw(st.sampled_from(["drop_oldest", "mine"])))]
    options["keep_groups"] = data.draw(st.integers(0, 2))
    options["cascade_tool_messages"] = data.draw(st.booleans())
    fast, slow = (MessageReducer(config=ReducerConfig(**options)) for _ in range(2))
    assert fast._plain_drop is not None
    slow._plain_drop = None  # the general path: a ReduceContext running the policy
    slow._fit_limit = 0  # and for a list within the limit, _begin and _fits
    sizes = data.draw(st.lists(st.integers(1, 4), max_size=20))
    history: list[Any] = []
    for new in _chunks(messages, sizes):
        ours, theirs = fast.reduce(history, new), slow.reduce(history, new)
        assert _fields(ours) == _fields(theirs)
        assert [id(m) for m in ours.surviving] == [id(m) for m in theirs.surviving]
        assert [[id(m) for m in s.touched] for s in ours.steps] == [
            [id(m) for m in s.touched] for s in theirs.steps
        ]
        assert _plan_of(fast) == _plan_of(slow)
        history = ours.surviving


@PROPERTY
@given(dialogues(), st.sampled_from(WIRE_FORMATS), st.sampled_from([False, True, "system"]))
def test_a_window_keeps_and_prunes_every_position_once(
    elements: list[Any], fmt: str, preserve_first: bool | str
) -> None:
    """For every window end, the positions it keeps and those it prunes partition
    ``[start, end)``: the window-only compaction of ``ReduceContext._take`` (what the window
    keeps, then everything from ``end`` on) is the list without the pruned positions."""
    messages, _ = render_dialogue(elements, fmt)
    limits = PlanLimits(
        preserve_first=preserve_first, cascade=True, min_messages=0, max_messages=0,
        format=FORMAT_NAMES[fmt],
    )  # fmt: skip
    state = PlanState(limits)
    state.extend([read_view(m) for m in messages])
    for end in range(state.start, len(messages) + 1):
        kept, gone = state.kept_in_window(end), state.pruned_positions(end)
        assert sorted(kept + gone) == list(range(state.start, end))
        for block in (False, True):
            assert state.split_window(end, block=block) == (
                state.pruned_positions(end, block=block),
                state.kept_in_window(end, block=block),
            )
        fast = messages[: state.start] + [messages[p] for p in kept] + messages[end:]
        slow = [m for p, m in enumerate(messages) if p not in set(gone)]
        assert [id(m) for m in fast] == [id(m) for m in slow]


@PROPERTY
@given(st.lists(any_message(), max_size=8), dialogues(), st.sampled_from(WIRE_FORMATS))
def test_the_estimate_cached_by_parts_is_the_estimate(
    odd: list[Any], elements: list[Any], fmt: str
) -> None:
    """The default counter's cache, keyed by what the estimate reads, gives exactly
    ``estimate_tokens`` for every message of every format, counted twice, and for a copy
    edited in place after it was counted (same id, other text)."""
    messages, _ = render_dialogue(elements, fmt)
    counter = TokenCounter()
    for message in [*odd, *messages, *messages]:
        try:
            expected = estimate_tokens(message)
        except TypeError:
            continue
        assert counter(message) == expected
    for message in messages:
        edited = copy.deepcopy(message)
        if isinstance(edited, dict) and isinstance(edited.get("content"), str):
            edited["content"] += " and a longer text than before"
        elif isinstance(getattr(edited, "content", None), str):
            try:
                edited.content += " and a longer text than before"
            except (AttributeError, TypeError, ValueError):
                continue
        assert counter(edited) == estimate_tokens(edited)


def _plain_shapes() -> list[Any]:
    """Messages the plain path reads, and near misses it must leave to the general path."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    call = {"id": "c1", "name": "f", "args": {"q": "x", "n": 2}, "type": "tool_call"}
    return [
        HumanMessage("question", id="h1"),
        SystemMessage("rules"),
        AIMessage("", id="a1", tool_calls=[call]),
        AIMessage("text", tool_calls=[call, {**call, "id": "c2", "args": {}}]),
        ToolMessage("result", tool_call_id="c1"),
        AIMessage("", additional_kwargs={"tool_calls": [{**call, "type": "function"}]}),
        HumanMessage([{"type": "text", "text": "blocks"}]),
        {"role": "user", "content": "hi", "id": "u1"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "assistant", "content": "x", "tool_calls": [{"id": 3, "name": "f"}]},
        {"role": "assistant", "content": "x", "tool_calls": ({"id": "c1", "name": "f"},)},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": ""}},
        {"role": "tool", "content": "r", "tool_call_id": "c1"},
        {"role": "tool", "content": "r", "tool_call_id": 7},
        {"role": "system", "content": "s", "lc_source": ["odd"]},
        {"role": "user", "content": "s", "additional_kwargs": {"lc_source": "summarization"}},
        {"role": ["odd"], "content": "x"},
        {"role": "user", "content": "x", "data": {}},
        {"role": "user", "content": "x", "id": 5},
        {"role": "user", "content": "x", "additional_kwargs": ["odd"]},
    ]


@PROPERTY
@given(
    st.lists(st.one_of(any_message(), st.sampled_from(_plain_shapes())), max_size=8),
    dialogues(),
    st.sampled_from(WIRE_FORMATS),
)
def test_the_plain_parts_are_the_parts_and_only_of_messages(
    odd: list[Any], elements: list[Any], fmt: str
) -> None:
    """Wherever the counter's fast path reads a message's parts, they are ``parts_of``'s,
    and the message is one (its view reads without raising): for messages of every format
    and shape, usual and odd (the near misses fall back to the general path)."""
    messages, _ = render_dialogue(elements, fmt)
    for message in [*odd, *messages]:
        parts = plain_parts(message)
        if parts is not None:
            read_view(message)
            assert parts == parts_of(message)


def test_the_plain_parts_read_the_usual_messages() -> None:
    """The fast path is taken where it matters: LangChain messages and Chat dicts with text
    content and tool calls (so the property above cannot hold by never firing)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call = {"id": "c1", "name": "f", "args": {"q": "x"}, "type": "tool_call"}
    usual = [
        HumanMessage("q", id="h1"),
        AIMessage("", id="a1", tool_calls=[call]),
        ToolMessage("r", tool_call_id="c1"),
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"q":"x"}'},
                }
            ],
        },
        {"role": "tool", "content": "r", "tool_call_id": "c1"},
    ]
    for message in usual:
        assert plain_parts(message) == parts_of(message)
    assert plain_parts(AIMessage("", id="a1", tool_calls=[call])) == ([""], [("f", '{"q":"x"}')], 0)


def _reads_calls(message: Any) -> int:
    """A counter that sees every call's name and arguments (and the text)."""
    from agentstate_reducer.messages import call_parts_of, content_of

    text = content_of(message)
    return len(str(call_parts_of(message))) + (len(text) if isinstance(text, str) else 0)


def _edit_calls(value: Any) -> bool:
    """Lengthen every string argument of the calls in ``value`` in place; whether any was."""
    changed = False
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("args", "arguments", "input") and isinstance(item, str):
                value[key] = item[:-1] + ', "more": 1}' if item.endswith("}") else item + "x"
                changed = True
            elif key in ("args", "input") and isinstance(item, dict):
                item["more"] = "an argument added later"
                changed = True
            else:
                changed = _edit_calls(item) or changed
    elif isinstance(value, list):
        for item in value:
            changed = _edit_calls(item) or changed
    return changed


@PROPERTY
@given(dialogues(), st.sampled_from(WIRE_FORMATS))
def test_a_counter_sees_edited_call_arguments_in_every_format(
    elements: list[Any], fmt: str
) -> None:
    """A custom counter's cache is keyed by a message's calls (the ``repr`` of Chat-family
    call dicts, the parts otherwise): a message counted, then the same message (same id)
    with its call arguments edited, is counted afresh, in every format."""
    from agentstate_reducer.messages import with_id

    rendered_messages, _ = render_dialogue(elements, fmt)
    # With ids, where the format holds one: a message without an id is never cached.
    messages = [with_id(m, f"m-{index}") for index, m in enumerate(rendered_messages)]
    counter = TokenCounter(_reads_calls)
    for message in messages:
        assert counter(message) == _reads_calls(message)
        edited = copy.deepcopy(message)
        target = edited if isinstance(edited, dict) else getattr(edited, "__dict__", None)
        if target is None or not _edit_calls(target):
            continue
        assert counter(edited) == _reads_calls(edited)


@st.composite
def _langchain_messages(draw: st.DrawFn) -> Any:
    """LangChain's own Human, AI, Tool and System messages in plain and odd shapes: ids empty or
    missing, block content, summary and memory sources, calls without ids, legacy
    ``function_call`` in ``additional_kwargs`` or as a pydantic extra field."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from agentstate_reducer.messages.base import MEMORY_SOURCE, SUMMARY_SOURCE

    ident = draw(st.sampled_from([None, "", "m1", "m2"]))
    content: Any = draw(
        st.one_of(
            st.text(max_size=12),
            st.just([{"type": "text", "text": "hi"}]),
            st.just([{"type": "thinking", "thinking": "t", "signature": "s"}, "x"]),
            st.just([{"type": "tool_result", "tool_use_id": "c1", "content": "r"}]),
        )
    )
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["lc_source"] = draw(st.sampled_from([SUMMARY_SOURCE, MEMORY_SOURCE, "other"]))
    kind = draw(st.sampled_from(["human", "ai", "tool", "system"]))
    if kind == "human":
        return HumanMessage(content=content, id=ident, additional_kwargs=extra)
    if kind == "system":
        return SystemMessage(content=content, id=ident, additional_kwargs=extra)
    if kind == "tool":
        return ToolMessage(
            content="r", tool_call_id=draw(st.sampled_from(["", "c1"])), id=ident,
            additional_kwargs=extra,
        )  # fmt: skip
    calls = [
        {"name": "f", "args": {}, "id": draw(st.sampled_from([None, "", "c1", "c2"]))}
        for _ in range(draw(st.integers(0, 2)))
    ]
    if draw(st.booleans()):
        extra["function_call"] = {"name": "g", "arguments": "{}"}
    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["function_call"] = {"name": "h", "arguments": "{}"}  # a pydantic extra
    return AIMessage(
        content=content, tool_calls=calls, id=ident, additional_kwargs=extra, **options
    )


@PROPERTY
@given(st.lists(_langchain_messages(), min_size=1, max_size=6))
def test_the_langchain_class_readers_are_the_general_reader(messages: list[Any]) -> None:
    """``read_view`` reads LangChain's own message classes by a reader per class; for every
    shape of them (odd ones fall back to the rest of ``read_view``) it gives the view the
    format's own reader gives."""
    for message in messages:
        assert read_view(message) == general_view(message)


@st.composite
def _plain_langchain_messages(draw: st.DrawFn) -> Any:
    """LangChain's own messages in their plain shape (text, calls with ids, results for
    them), the ones ``PlanState.extend_plain`` reads, or now and then an odd one."""

    if draw(st.integers(0, 5)) == 0:
        return draw(_langchain_messages())
    message = draw(_plain_langchain_message())
    if draw(st.integers(0, 7)) == 0:
        # A field given a value of the wrong type after validation (pydantic lets it be).
        name, value = draw(
            st.sampled_from(
                [
                    ("id", 5), ("additional_kwargs", None), ("additional_kwargs", "x"),
                    ("content", None), ("type", "other"), ("tool_call_id", 7),
                    ("tool_calls", ()), ("tool_calls", ["c"]),
                    # One call, read inline by extend_plain: an id of another type, an
                    # empty one, none at all.
                    ("tool_calls", [{"name": "f", "args": {}, "id": 5}]),
                    ("tool_calls", [{"name": "f", "args": {}, "id": ""}]),
                    ("tool_calls", [{"name": "f", "args": {}}]),
                ]
            )
        )  # fmt: skip
        if name in type(message).model_fields:
            object.__setattr__(message, name, value)
    return message


@st.composite
def _plain_langchain_message(draw: st.DrawFn) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    ident = draw(st.sampled_from([None, "m1", "m2", "m3"]))
    kind = draw(
        st.sampled_from(["human", "human", "ai", "ai", "tool", "tool", "system", "thinking"])
    )
    if kind == "human":
        return HumanMessage(content="q", id=ident)
    if kind == "system":
        return SystemMessage(content="s", id=ident)
    if kind == "tool":
        answered = draw(st.sampled_from(["c1", "c2", "c3", "", "function_call:x"]))
        return ToolMessage(content="r", tool_call_id=answered, id=ident)
    calls = [
        {
            "name": "f",
            "args": {},
            "id": draw(st.sampled_from(["c1", "c2", "c3", None, "", "function_call:x"])),
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    if kind == "thinking":  # read the general way: it may open the newest turn
        thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
        return AIMessage(content=[thinking, "a"], tool_calls=calls, id=ident)
    return AIMessage(content="a", tool_calls=calls, id=ident)


def _state_of(state: PlanState) -> tuple[Any, ...]:
    return tuple(getattr(state, name) for name in PlanState.__slots__ if name != "_limits")


def _as_counting(views: list[Any]) -> list[Any]:
    """``views`` as count mode plans them: a view of a message that makes no call and
    answers none, of a role that has a shared view, is that view (with no id)."""
    shared = set(_SHARED_VIEWS.values())
    return [view._replace(id=None) if view._replace(id=None) in shared else view for view in views]


def _counting_state_of(state: PlanState) -> tuple[Any, ...]:
    """:func:`_state_of`, its views as count mode plans them (see :func:`_as_counting`)."""
    views = _as_counting(state.views)
    return tuple(
        views if name == "views" else getattr(state, name)
        for name in PlanState.__slots__
        if name != "_limits"
    )


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(_plain_langchain_messages(), min_size=2, max_size=14),
    st.lists(st.integers(1, 4), max_size=6),
    st.sampled_from([False, True, "system"]),
    st.booleans(),
    st.sampled_from([None, "chat", "anthropic", "responses"]),
    st.sampled_from([None, "approximate", "callable"]),
)
def test_reading_langchain_messages_in_one_pass_is_extending_by_their_views(
    messages: list[Any],
    sizes: list[int],
    preserve_first: bool | str,
    cascade: bool,
    fmt: str | None,
    counter: str | None,
) -> None:
    """``Reader.extend`` (``PlanState.extend_plain`` for LangChain's own messages in their
    plain shape, then ``extend`` for the rest) leaves the state ``extend`` of their views
    leaves, a few messages at a time, in count and token mode: views, links, turn starts,
    format and counts; a list it refuses (a mix of formats, a field of the wrong type) is
    refused by both, alike."""
    from agentstate_reducer.messages.reader import read_views
    from agentstate_reducer.reader import Reader

    limits = PlanLimits(
        preserve_first=preserve_first, cascade=cascade, min_messages=0, max_messages=0,
        format=fmt, max_tokens=None if counter is None else 10_000,
    )  # fmt: skip
    # Count mode gives a message without calls or results a shared view without its id
    # (nothing reads it there); token mode keeps every view as read.
    state_of = _state_of if counter is not None else _counting_state_of
    if counter == "callable":
        reader = Reader(TokenCounter(lambda message: len(str(message.content)) + 3))
    else:
        reader = Reader(None if counter is None else TokenCounter(counter))
    fast, slow = PlanState(limits), PlanState(limits)
    for chunk in _chunks(messages, sizes):
        where = f"chunk of {len(chunk)}"
        failed: list[str] = []
        try:
            reader.extend(fast, chunk, lambda i: f"messages[{i}]")
        except Exception as exc:  # a field of the wrong type: TypeError, or the counter's
            failed.append(f"{type(exc).__name__}: {exc}")
        try:
            views, tokens = reader.read(chunk, lambda i: f"messages[{i}]")
            slow.extend(views, tokens, lambda i: f"messages[{i}]")
        except Exception as exc:  # a field of the wrong type: TypeError, or the counter's
            failed.append(f"{type(exc).__name__}: {exc}")
        assert len(failed) in (0, 2), (where, failed)
        if failed:
            assert failed[0] == failed[1]
            return
        assert state_of(fast) == state_of(slow)
    if counter is None:
        assert _as_counting(fast.views) == _as_counting(read_views(messages))
    else:
        assert fast.views == read_views(messages)


_ONE_CALL_IDS = ["c1", "", None, 5, "missing", "not a dict", "two calls"]


@pytest.mark.parametrize("max_tokens", [None, 10_000])
@pytest.mark.parametrize("given_id", _ONE_CALL_IDS)
def test_an_ai_message_of_one_call_is_read_as_the_general_reader_reads_it(
    given_id: Any, max_tokens: int | None
) -> None:
    """``extend_plain`` reads the call of an ai message that makes one inline (the common
    case): an id of any kind (empty, None, not a string, missing) and a call that is not a
    dict give the state ``extend`` of the messages' views gives, and a result for the call
    is linked to it exactly when the general reader links it."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call: Any = {"name": "f", "args": {}, "id": "c1"}
    ai = AIMessage("", id="a", tool_calls=[call])
    if given_id == "missing":
        calls: Any = [{"name": "f", "args": {}}]
    elif given_id == "not a dict":
        calls = [("f", "c1")]
    elif given_id == "two calls":
        calls = [call, {**call, "id": "c2"}]
    else:
        calls = [{**call, "id": given_id}]
    object.__setattr__(ai, "tool_calls", calls)  # as a caller may, after validation
    messages = [
        HumanMessage("q", id="h"),
        HumanMessage("q2", id="h2"),
        ai,
        ToolMessage("r", tool_call_id="c1", id="t"),
        HumanMessage("q3", id="h3"),
    ]
    read_views(messages)  # the classes are met (plain_roles grows as the reader meets them)
    limits = PlanLimits(
        preserve_first=True, cascade=True, min_messages=0, max_messages=0, max_tokens=max_tokens
    )
    fast, slow = PlanState(limits), PlanState(limits)
    taken = fast.extend_plain(messages)
    assert taken >= 2  # the ai message is reached by the one pass
    fast.extend(read_views(messages[taken:]))
    slow.extend(read_views(messages))
    state_of = _state_of if max_tokens is not None else _counting_state_of
    assert state_of(fast) == state_of(slow)
    linked = fast.views[2].call_ids == ("c1",) or fast.views[2].call_ids == ("c1", "c2")
    assert linked == (given_id in ("c1", "two calls"))


@PROPERTY
@given(st.lists(_langchain_messages(), min_size=1, max_size=6))
def test_the_plain_parts_of_langchain_messages_are_the_parts(messages: list[Any]) -> None:
    """The counter's plain path over LangChain's own classes in plain and odd shapes (ids
    empty or missing, blocks, sources, calls without ids, legacy calls as extra fields):
    where it reads a message, its parts are ``parts_of``'s and the view reads."""
    for message in messages:
        parts = plain_parts(message)
        if parts is not None:
            read_view(message)
            assert parts == parts_of(message)


_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and the infinities included: JSON's encoder writes them
    st.text(max_size=8),
    st.binary(max_size=4),  # not JSON: the default writes its length
    st.dates(),  # not JSON: the default writes its str
)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(
            st.one_of(st.text(max_size=5), st.integers(), st.booleans()), inner, max_size=4
        ),
        st.dictionaries(st.tuples(st.integers()), inner, min_size=1, max_size=2),  # refused
    ),
    max_leaves=12,
)


@PROPERTY
@given(_JSON_VALUES)
def test_arguments_are_written_as_the_checked_encoder_writes_them(value: Any) -> None:
    """The encoder made once (no check for values holding themselves) writes every value
    as ``json.dumps`` with the reader's options does, or falls back to ``str`` where that
    raises; a value holding itself is written as before too."""
    import json

    from agentstate_reducer.messages.base import _plain, as_text

    def expected(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
        except (TypeError, ValueError):
            return str(value)

    assert as_text(value) == expected(value)
    holder: list[Any] = [value]
    holder.append(holder)
    assert as_text(holder) == expected(holder)


def test_a_non_message_is_named_before_any_message_is_counted() -> None:
    """In token mode every message is read before any is counted, as before the one-pass
    reading of LangChain's messages: a non-message after a message the counter cannot count
    is refused by name, not by the counter's error (even once LangChain's classes are known,
    which is when the one-pass reading takes them)."""
    from langchain_core.messages import HumanMessage

    def count(message: Any) -> int:
        if getattr(message, "content", "") == "bad":
            raise ValueError("counter boom")
        return 1

    reducer = MessageReducer(config=ReducerConfig(max_tokens=100, token_counter=count))
    reducer.reduce([HumanMessage(content="warm")])
    with pytest.raises(TypeError, match=r"new\[1\]: got None"):
        reducer.reduce([HumanMessage(content="a")], [HumanMessage(content="bad"), None])


def test_a_langchain_message_missing_a_field_is_refused_by_name() -> None:
    """A LangChain message whose instance lacks a field its class declares (an odd
    ``model_construct``, a deleted attribute) goes to the general reader, which refuses it
    by position when it cannot read it, in every class: no bare AttributeError."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    broken = [
        SystemMessage(content="s"),
        HumanMessage(content="q"),
        AIMessage(content="a"),
        ToolMessage(content="r", tool_call_id="c1"),
    ]
    for message in broken:
        message.__dict__.pop("type")
        reducer = MessageReducer(config=ReducerConfig(max_messages=5, min_messages=0))
        reducer.reduce([HumanMessage(content="warm")])
        with pytest.raises(TypeError, match=r"existing\[1\]: got "):
            reducer.reduce([HumanMessage(content="first"), message], [HumanMessage(content="q")])


def test_the_langgraph_channel_takes_the_quick_count_path() -> None:
    """The state channel passes ``on_prune_error="keep"`` on every write; a valid override
    changes nothing on a turn that only reads (or drops the oldest without hooks), so such a
    turn takes ``_fit_quickly`` too, as a plain ``reduce`` does."""
    from unittest import mock

    from langchain_core.messages import AIMessage, HumanMessage

    reducer = MessageReducer(config=ReducerConfig(min_messages=4, max_messages=8))
    channel = reducer.as_langgraph_reducer()
    taken: list[bool] = []
    original = MessageReducer._fit_quickly

    def recording(self: MessageReducer, existing: Any, new: Any, on_error: Any = None) -> Any:
        result = original(self, existing, new, on_error)
        taken.append(result is not None)
        return result

    state: list[Any] = []
    with mock.patch.object(MessageReducer, "_fit_quickly", recording):
        for turn in range(12):
            update = [HumanMessage(content=f"q{turn}", id=f"h{turn}")]
            update.append(AIMessage(content=f"a{turn}", id=f"a{turn}"))
            state = channel(state, update)
    assert len(taken) == 12 and all(taken)
    assert 4 <= len(state) <= 8 and state[-1].id == "a11"


@pytest.mark.parametrize("bad_at", [0, 1, 2, 3])
@pytest.mark.parametrize("in_new", [True, False])
def test_the_quick_count_path_names_a_non_message_after_plain_ones(
    bad_at: int, in_new: bool
) -> None:
    """The quick count path reads LangChain's plain messages in one pass and leaves the
    rest to the reader: a non-message after any number of plain ones (in ``new``, or in
    the part of ``existing`` the reducer has not seen) is refused by its own position."""
    from langchain_core.messages import AIMessage, HumanMessage

    reducer = MessageReducer(config=ReducerConfig(min_messages=2, max_messages=20))
    seen = reducer.reduce([HumanMessage(content="q0", id="h0")], [AIMessage(content="a0")])
    unseen: list[Any] = [HumanMessage(content=f"q{i}") for i in range(4)]
    unseen[bad_at] = None
    if in_new:
        existing, new, name = seen.surviving, unseen, f"new[{bad_at}]"
    else:
        existing, new, name = seen.surviving + unseen, [], f"existing[{2 + bad_at}]"
    with pytest.raises(TypeError, match=re.escape(f"{name}: got None")):
        reducer.reduce(existing, new)
    # The failed reduce kept no session: the same list without the non-message plans afresh.
    fixed = [m for m in [*existing, *new] if m is not None]
    assert reducer.reduce(fixed).surviving == fixed


@pytest.mark.parametrize("counting", [True, False])
def test_count_mode_shares_one_view_per_shape_and_token_mode_keeps_ids(counting: bool) -> None:
    """In count mode the one pass gives every plain human, system or call-less ai message
    the one view of its role (no view built per message); a message with calls or a result
    has its own. Token mode keeps each message's own view, id included (the token cache
    keys counts by it)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = [
        SystemMessage(content="s", id="s1"),
        HumanMessage(content="q", id="h1"),
        AIMessage(content="", id="a1", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
        ToolMessage(content="r", tool_call_id="c1", id="t1"),
        AIMessage(content="done", id="a2"),
    ]
    limits = PlanLimits(
        preserve_first=True, cascade=True, min_messages=0, max_messages=10,
        max_tokens=None if counting else 1_000,
    )  # fmt: skip
    state = PlanState(limits)
    assert state.extend_plain(messages[:1]) == 1 and state.extend_plain(messages[1:]) == 4
    ids = [view.id for view in state.views]
    if counting:  # the list's first message is read the general way (see extend_plain)
        for position, role in ((1, "human"), (4, "ai")):
            assert state.views[position] is _SHARED_VIEWS[role]
        assert ids == ["s1", None, "a1", "t1", None]
    else:
        assert not any(view is shared for view in state.views for shared in _SHARED_VIEWS.values())
        assert ids == ["s1", "h1", "a1", "t1", "a2"]
    assert [view.call_ids for view in state.views][2] == ("c1",)


def test_the_hot_paths_result_is_the_dataclass_made_by_its_init() -> None:
    """``_plain_result`` makes a ``ReducerResult`` without ``__init__``: it sets every
    field the dataclass declares (a field added later would be missing otherwise), in
    the declared order, to what ``__init__`` sets, with lists of its own."""
    import dataclasses

    from agentstate_reducer.reducer import _plain_result
    from agentstate_reducer.result import ReducerResult

    made = _plain_result(["a"], ["b"], [], 3, 2, None)
    expected = ReducerResult(surviving=["a"], pruned=["b"], tokens_before=3, tokens_after=2)
    assert list(vars(made)) == [field.name for field in dataclasses.fields(ReducerResult)]
    assert made == expected and repr(made) == repr(expected)
    other = _plain_result([], [], [], 0, 0, None)
    for field in dataclasses.fields(ReducerResult):
        value = getattr(made, field.name)
        if isinstance(value, list):
            assert value is not getattr(other, field.name)


@pytest.mark.parametrize("use_async", [False, True])
def test_a_count_mode_reducer_derived_from_a_token_mode_one_reduces_as_a_new_one(
    use_async: bool,
) -> None:
    """``with_config(max_tokens=None, ...)`` of a token-mode reducer gives a count-mode
    reducer: it counts nothing (tokens 0, as the config's docs say) and every turn, the
    quick count path's included, equals what a count-mode reducer built from its config
    gives. (It used to inherit the parent's counter, which the quick path does not feed:
    an IndexError on the first prune.)"""
    import asyncio

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    parent = MessageReducer(config=ReducerConfig(max_tokens=1000))
    derived = parent.with_config(max_tokens=None, min_messages=1, max_messages=3)
    fresh = MessageReducer(config=derived.config)
    turns: list[list[Any]] = [
        [HumanMessage(content=[{"type": "text", "text": "hi"}])],  # read the general way
        [AIMessage("a0")],
        [HumanMessage("q1"), AIMessage("a1")],
        [
            AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
            ToolMessage("r", tool_call_id="c1"),
            AIMessage("a2"),
        ],
        [HumanMessage("q3")],
    ]

    def run(reducer: MessageReducer) -> list[tuple[Any, ...]]:
        kept: list[Any] = []
        seen = []
        for new in turns:
            if use_async:
                result = asyncio.run(reducer.areduce(kept, new))
            else:
                result = reducer.reduce(kept, new)
            kept = result.surviving
            ids = [id(m) for m in kept]
            seen.append((ids, [id(m) for m in result.pruned], result.tokens_before))
        return seen

    assert run(derived) == run(fresh)
    assert all(tokens == 0 for *_, tokens in run(derived))

"""The format layer's invariants over generated dialogues rendered in every wire format
(``tests/strategies.py``: one generator, one renderer per format).

Format invariance: the same dialogue reduces to the same logical elements in every
format. Formats split an element into different numbers of messages (Chat one message per
tool result, Anthropic one message for all results of a turn, the Responses API one item per
call and per reasoning item), so positions are compared through the renderer's ``owners``
(each message knows the element it renders), and the windows are chosen so that they mean
the same in every format:

* token windows use :func:`~tests.strategies.logical_tokens`, a counter over what each
  message says as the reader reads it (text, results, calls, images), with no per-message
  framing, no reasoning (Chat has none) and nothing for the system prompt (Anthropic,
  Bedrock and Gemini lists hold none) or a summary block (alternating formats may write two
  messages): every element then counts the same in every format;
* count windows use dialogues where every format renders each element as exactly one
  message (one call per step, no text beside a call, no reasoning, no system prompt).

Formats whose roles alternate (Anthropic, Bedrock, Gemini) end windows only where the roles
stay alternating, which Chat-like formats need not do: results are compared within each
class, and across all formats where alternation does not bite (``start_on_human``, no
summary, no kept first message), where every format must agree with Chat.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.messages import (
    detect,
    fingerprint,
    general_view,
    parts_of,
    read_view,
    reader_of,
)
from agentstate_reducer.messages.reader import read_views
from agentstate_reducer.validate import (
    BAD_FIRST_MESSAGE,
    DANGLING_CALL,
    ORPHAN_REASONING,
    ORPHAN_RESULT,
    ROLES_NOT_ALTERNATING,
    UNEXPECTED_ROLE,
)

from .strategies import (
    ALTERNATING,
    FORMAT_NAMES,
    WIRE_FORMATS,
    Call,
    Element,
    dialogues,
    element_pairs,
    logical_tokens,
    render_dialogue,
)

MANY = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
SWEEP = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))

_CLASSES = (
    tuple(f for f in WIRE_FORMATS if f not in ALTERNATING),
    tuple(f for f in WIRE_FORMATS if f in ALTERNATING),
)


def _survivors(elements: list[Element], fmt: str, options: dict[str, Any]) -> set[int]:
    """The elements that survive reducing the dialogue rendered in ``fmt`` (the system
    prompt left out); every element survives whole or not at all."""
    messages, owners = render_dialogue(elements, fmt)
    config = ReducerConfig(format=FORMAT_NAMES[fmt], **options)
    result = MessageReducer(config=config).reduce(existing=messages)
    alive = {id(m) for m in result.surviving}
    fates: dict[int, set[bool]] = {}
    for message, owner in zip(messages, owners, strict=True):
        fates.setdefault(owner, set()).add(id(message) in alive)
    assert all(len(fate) == 1 for fate in fates.values()), (fmt, fates)
    return {o for o, fate in fates.items() if True in fate and elements[o].kind != "system"}


def _without_opening_thinking(elements: list[Element]) -> list[Element]:
    """``elements`` without reasoning in the model turn right after the newest question:
    formats that carry thinking blocks keep that turn while its tool loop goes on (see
    ``test_the_newest_turns_thinking_block_stays_while_its_tool_loop_does``), which formats
    without them (Chat) need not, so the windows compared here leave it out."""
    question = max((i for i, e in enumerate(elements) if e.kind == "question"), default=None)
    if question is None or question + 1 >= len(elements):
        return elements
    opener = elements[question + 1]
    if opener.kind != "reply" or not opener.reasoning:
        return elements
    out = list(elements)
    out[question + 1] = dataclasses.replace(opener, reasoning="")
    return out


def _assert_invariant(elements: list[Element], options: dict[str, Any], across: bool) -> None:
    elements = _without_opening_thinking(elements)
    kept = {fmt: _survivors(elements, fmt, options) for fmt in WIRE_FORMATS}
    for formats in _CLASSES:
        for fmt in formats:
            assert kept[fmt] == kept[formats[0]], (fmt, formats[0], kept)
    if across:
        for fmt in WIRE_FORMATS:
            assert kept[fmt] == kept["chat"], (fmt, kept)


def _summaries(on: bool) -> dict[str, Any]:
    if not on:
        return {}
    return {"summarize_fn": lambda messages: "the summary", "inject_summary": True}


@MANY
@given(
    dialogues(),
    st.integers(1, 400),
    st.integers(1, 100),
    st.sampled_from([False, "system"]),
    st.booleans(),
    st.booleans(),
)
def test_token_windows_keep_the_same_elements_in_every_format(
    elements: list[Element],
    max_tokens: int,
    percent: int,
    preserve_first: bool | str,
    start_on_human: bool,
    summarise: bool,
) -> None:
    """Under any token window (with ``logical_tokens``, see the module docstring), with and
    without a running summary, the dialogue in each format keeps the same elements as the
    other formats of its class, and with ``start_on_human`` and no summary, as Chat."""
    options = {
        "max_tokens": max_tokens,
        "target_tokens": max(1, max_tokens * percent // 100),
        "token_counter": logical_tokens,
        "preserve_first": preserve_first,
        "start_on_human": start_on_human,
        **_summaries(summarise),
    }
    if summarise:
        options["summary_max_tokens"] = 10
    _assert_invariant(elements, options, across=start_on_human and not summarise)


@MANY
@given(dialogues(single=True), st.integers(1, 30), st.data(), st.booleans(), st.booleans())
def test_count_windows_keep_the_same_elements_in_every_format(
    elements: list[Element], max_messages: int, data: Any, start_on_human: bool, summarise: bool
) -> None:
    """Under any count window, on dialogues every format renders one message per element,
    with and without a running summary, the dialogue in each format keeps the same elements
    as the other formats of its class, and with ``start_on_human``, no summary and nothing
    kept first, as Chat."""
    preserve_first = data.draw(st.booleans())
    options = {
        "max_messages": max_messages,
        "min_messages": data.draw(st.integers(0, max_messages)),
        "preserve_first": preserve_first,
        "start_on_human": start_on_human,
        **_summaries(summarise),
    }
    across = start_on_human and not summarise and not preserve_first
    _assert_invariant(elements, options, across=across)


@st.composite
def _configs(draw: st.DrawFn) -> dict[str, Any]:
    """Count or token windows, any first-message rule, with or without summaries, turn
    pruning and a named format."""
    options: dict[str, Any] = {
        "preserve_first": draw(st.sampled_from([True, False, "system"])),
        "start_on_human": draw(st.booleans()),
        **_summaries(draw(st.booleans())),
    }
    if draw(st.booleans()):
        maximum = draw(st.integers(1, 25))
        options.update(max_messages=maximum, min_messages=draw(st.integers(0, maximum)))
    else:
        maximum = draw(st.integers(1, 3000))
        target = max(1, maximum * draw(st.integers(1, 100)) // 100)
        options.update(max_tokens=maximum, target_tokens=target)
    return options


_BROKEN = (ORPHAN_RESULT, ROLES_NOT_ALTERNATING, UNEXPECTED_ROLE, ORPHAN_REASONING)


def _check(elements: list[Element], fmt: str, options: dict[str, Any]) -> None:
    """Reduce the dialogue in ``fmt`` and check what every reduce keeps (see the sweep
    tests' docstrings)."""
    messages, owners = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(**options))
    result = reducer.reduce(existing=messages)
    alive = {id(m) for m in result.surviving}
    kept = {owners[i] for i, m in enumerate(messages) if id(m) in alive}
    whole = {owners[i] for i, m in enumerate(messages) if id(m) not in alive} & kept
    assert not whole, (fmt, "split elements", whole)
    for answers, call in element_pairs(elements).items():
        assert (answers in kept) == (call in kept), (fmt, answers, call)
    question = max(i for i, e in enumerate(elements) if e.kind == "question")
    assert question in kept, fmt
    assert all(
        i in kept for i, e in enumerate(elements) if e.kind == "system" and fmt not in ALTERNATING
    )
    # The rules are those of the format the reducer read the list in: the one named, or the
    # one told from the list (a plain text Anthropic list is read as Chat, see the README).
    used = options.get("format") or detect(messages).name
    audit = MessageReducer(config=ReducerConfig(format=used))
    before = {p.kind for p in audit.validate(messages).problems}
    for problem in audit.validate(result.surviving).problems:
        assert problem.kind not in _BROKEN, (fmt, options, problem)
        if problem.kind == DANGLING_CALL:
            assert DANGLING_CALL in before, (fmt, problem)  # a call still running
        if problem.kind == BAD_FIRST_MESSAGE:
            assert not audit_format_alternates(used), (fmt, problem)
    again = reducer.reduce(existing=result.surviving)
    assert again.pruned == [], (fmt, "a reduced list reduces further")
    maximum = options.get("max_messages")
    if maximum is not None and len(result.surviving) > maximum:
        # Over the bound only where nothing more may go: a second reduce changes nothing.
        assert again.surviving == result.surviving


def audit_format_alternates(name: str) -> bool:
    from agentstate_reducer.messages import format_named

    return format_named(name).alternates


@SWEEP
@given(dialogues(), st.sampled_from(WIRE_FORMATS), _configs(), st.booleans())
def test_every_window_in_every_format_keeps_pairs_question_system_and_validity(
    elements: list[Element], fmt: str, options: dict[str, Any], named: bool
) -> None:
    """Any window (count or tokens, by the default estimate), any first-message rule, with
    or without summaries, the format told from the list: every element leaves whole; a
    call's results stay exactly when the call does; the newest question stays; the system
    prompt stays (where the format holds one); ``validate()`` finds no orphan result, no
    roles out of turn, no lone reasoning item, no dangling call but a running one (and, in
    alternating formats, a list that starts with the user); a reduced list does not reduce
    further. The format is told from the list, or named (``ReducerConfig(format=...)``)."""
    if named:
        options = {**options, "format": FORMAT_NAMES[fmt]}
    _check(elements, fmt, options)


def test_sweep_every_count_window_and_a_range_of_token_windows() -> None:
    """Deterministic sweep: on a fixed dialogue (parallel calls, reasoning, images, a long
    output, a running newest turn), every count window (all max and min pairs) and every
    tenth token budget, in every format, with and without a summary, keep what every reduce
    must keep (see the sweep above) and stay within the bound whenever the newest turn
    alone fits it: the token budget in every format, the count (give or take the kept
    first message) in formats whose roles need not alternate."""
    from .strategies import Call

    calls = [Call(f"c{n}", "lookup", {"q": f"city {n}"}) for n in range(6)]
    elements = [
        Element("system", text="be brief"),
        Element("question", text="weather in two cities?", images=1),
        Element("reply", text="checking", reasoning="two lookups", calls=tuple(calls[:2])),
        Element("results", results=(("c1", "lookup", "rain " * 80), ("c0", "lookup", "sun"))),
        Element("reply", text="sun and rain"),
        Element("question", text="and tomorrow?"),
        Element("reply", reasoning="again", calls=(calls[2],)),
        Element("results", results=(("c2", "lookup", "snow"),)),
        Element("reply", calls=tuple(calls[3:5])),
        Element("results", results=(("c3", "lookup", "fog"), ("c4", "lookup", "hail"))),
        Element("reply", text="snow, fog, hail"),
        Element("question", text="and next week?"),
        Element("reply", text="one more", calls=(calls[5],)),
    ]
    newest = elements[-2:]
    for fmt in WIRE_FORMATS:
        messages, _ = render_dialogue(elements, fmt)
        turn, _ = render_dialogue(newest, fmt)
        size = len(messages)
        windows: list[dict[str, Any]] = [
            {"max_messages": high, "min_messages": low}
            for high in range(1, size + 1)
            for low in range(0, high + 1)
        ]
        total = sum(
            MessageReducer(config=ReducerConfig(max_tokens=10**9)).count_tokens(m) for m in messages
        )
        windows += [{"max_tokens": budget} for budget in range(10, total + 10, 10)]
        for window in windows:
            for summarise in (False, True):
                options = {
                    "preserve_first": "system",
                    "format": FORMAT_NAMES[fmt],
                    **window,
                    **_summaries(summarise),
                }
                _check(elements, fmt, options)
                if summarise:
                    continue
                reducer = MessageReducer(config=ReducerConfig(**options))
                result = reducer.reduce(existing=messages)
                if "max_messages" in window:
                    # Chat-like formats end a window at any message that splits no group;
                    # alternating ones only where roles stay alternating (a whole older
                    # turn may stay): there the bound is what _check asserts, a list no
                    # further reduce changes.
                    fits = window["min_messages"] <= len(turn) + 1 <= window["max_messages"]
                    if fits and fmt not in ALTERNATING:
                        assert len(result.surviving) <= window["max_messages"] + 1, (fmt, window)
                else:
                    count = reducer.count_tokens
                    if sum(map(count, turn)) + count(messages[0]) <= window["max_tokens"]:
                        assert sum(map(count, result.surviving)) <= window["max_tokens"], (
                            fmt,
                            window,
                        )


@MANY
@given(dialogues(), st.sampled_from(WIRE_FORMATS))
def test_the_fast_reader_agrees_with_each_formats_reader(elements: list[Element], fmt: str) -> None:
    """For every message of every format, ``read_view`` (the Chat and LangChain fast path,
    dispatching the rest) gives the view the format's own reader gives, ``read_views``
    (the reducer's list reader) the same views, and ``parts_of`` (the counting path) the
    parts of the format's full read."""
    messages, _ = render_dialogue(elements, fmt)
    assert read_views(messages) == [general_view(message) for message in messages]
    for message in messages:
        assert read_view(message) == general_view(message)
        assert parts_of(message) == reader_of(message).parse(message).parts()


@MANY
@given(dialogues(), st.sampled_from(WIRE_FORMATS))
@example(  # the same question and answer twice: equal messages, one fingerprint
    [Element("question", text="a"), Element("reply", text="a")] * 2, "pydantic_ai"
)
def test_fingerprints_tell_the_messages_of_a_dialogue_apart(
    elements: list[Element], fmt: str
) -> None:
    """Messages without ids (Gemini contents, Responses items, Bedrock and Anthropic dicts)
    are told apart by their fingerprint whenever they differ, so the hand-off never takes
    two different messages for one."""
    messages, _ = render_dialogue(elements, fmt)
    seen: dict[str, Any] = {}
    for message in messages:
        digest = fingerprint(message)
        if digest in seen:
            assert seen[digest] == message or repr(seen[digest]) == repr(message), fmt
        seen[digest] = message


@st.composite
def _long_newest_loops(draw: st.DrawFn) -> list[Element]:
    """Earlier turns, then a newest question followed by a long tool loop (one call per
    step, a long output each), maybe finished by an answer."""
    earlier = draw(dialogues(max_turns=3))
    while earlier and (earlier[-1].kind != "reply" or earlier[-1].calls):
        earlier.pop()  # the earlier turns end answered
    # No thinking (kept with its turn: test_formats covers it), so that a loop without
    # it is no problem.
    earlier = [dataclasses.replace(e, reasoning="") for e in earlier]
    serial = len(earlier)
    out = [*earlier, Element("question", text=draw(_words))]
    for step in range(draw(st.integers(3, 7))):
        call = Call(f"loop{serial}-{step}", "lookup", {"page": step})
        out.append(Element("reply", calls=(call,)))
        out.append(Element("results", results=((call.id, call.name, "rows " * 300),)))
    if draw(st.booleans()):
        out.append(Element("reply", text="done"))
    return out


_words = st.text(alphabet=st.sampled_from("abcdefgh ijk"), min_size=1, max_size=20)


@MANY
@given(
    _long_newest_loops(),
    st.sampled_from(WIRE_FORMATS),
    st.sampled_from([True, False, "system"]),
    st.sampled_from([{"max_tokens": 600}, {"max_messages": 5, "min_messages": 1}]),
)
def test_the_newest_turns_tool_loop_is_bounded_in_every_format(
    elements: list[Element], fmt: str, preserve_first: bool | str, window: dict[str, Any]
) -> None:
    """However the first message is kept and whatever came before, a long tool loop after
    the newest question shrinks to its newest step (its call and result, and the answer
    when there is one): older steps go in whole pairs in every format, also in those whose
    roles alternate, where the previous turn's answer stays between a kept first user
    message and the question so that the roles still alternate."""
    messages, owners = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(preserve_first=preserve_first, **window))
    result = reducer.reduce(existing=messages)
    alive = {id(m) for m in result.surviving}
    kept = {owners[i] for i, m in enumerate(messages) if id(m) in alive}
    question = max(i for i, e in enumerate(elements) if e.kind == "question")
    in_loop = sorted(k for k in kept if k > question)
    assert len(in_loop) <= 3, (fmt, preserve_first, window, in_loop, len(elements))
    assert in_loop and in_loop[-1] == len(elements) - 1, (fmt, in_loop)
    before = sorted(k for k in kept if k < question and elements[k].kind != "system")
    assert len(before) <= 2, (fmt, preserve_first, before)
    problems = reducer.validate(result.surviving).problems
    assert all(p.kind in ("over_budget", DANGLING_CALL) for p in problems), (fmt, problems)

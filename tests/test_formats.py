"""Every wire format the reader supports, read, pruned, counted and written exactly: the
findings of issue 20 as regression tests, each format's writers (summary block,
placeholders, cuts, compressed answers) and its validity rules, and the refusals (an entry
no format reads, a list mixing formats)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.messages import (
    COMBINED_RESULT,
    SUMMARY_HEADER,
    detect,
    general_view,
    is_summary,
    parts_of,
    read_view,
    role_of,
    slots_of,
    tool_result_ids_of,
    with_text,
)
from agentstate_reducer.policy import ClearToolOutputs, DropOldest, TruncateLargest
from agentstate_reducer.tokens import estimate_tokens, resolve_token_counter, tiktoken_encoding
from agentstate_reducer.validate import (
    BAD_FIRST_MESSAGE,
    DANGLING_CALL,
    ORPHAN_REASONING,
    ORPHAN_RESULT,
    ROLES_NOT_ALTERNATING,
    TURN_WITHOUT_THINKING,
    UNEXPECTED_ROLE,
)

from .strategies import (
    ALTERNATING,
    FORMAT_NAMES,
    WIRE_FORMATS,
    Call,
    Element,
    element_pairs,
    render_dialogue,
)

# -- conversations in each format ----------------------------------------------------


def _tool_loop(turns: int, steps: int = 2, calls: int = 2) -> list[Element]:
    """``turns`` user turns, each ``steps`` tool steps of ``calls`` parallel calls, then
    an answer (an Anthropic agent's history, written once for every format)."""
    out: list[Element] = []
    serial = 0
    for turn in range(turns):
        out.append(Element("question", text=f"question {turn}: what about city {turn}?"))
        for step in range(steps):
            made = tuple(
                Call(f"call-{serial + n}", "weather", {"city": f"city {turn}.{step}.{n}"})
                for n in range(calls)
            )
            serial += calls
            out.append(Element("reply", text=f"checking {turn}.{step}", calls=made))
            out.append(
                Element(
                    "results",
                    results=tuple((c.id, c.name, f"sunny in {c.args['city']}") for c in made),
                )
            )
        out.append(Element("reply", text=f"answer {turn}: sunny everywhere"))
    return out


def _kept_elements(result: Any, messages: list[Any], owners: list[int]) -> set[int]:
    alive = {id(m) for m in result.surviving}
    return {owners[i] for i, m in enumerate(messages) if id(m) in alive}


def _protocol_problems(result: Any, fmt: str) -> list[Any]:
    reducer = MessageReducer(config=ReducerConfig(format=FORMAT_NAMES[fmt]))
    bad = (ORPHAN_RESULT, DANGLING_CALL, ROLES_NOT_ALTERNATING, UNEXPECTED_ROLE, ORPHAN_REASONING)
    return [p for p in reducer.validate(result.surviving).problems if p.kind in bad]


# -- the findings ----------------------------------------------------------------------


def test_anthropic_count_and_token_windows_keep_every_result_with_its_call() -> None:
    """The finding: Anthropic dicts kept results without their calls in 11 of 15 count
    windows and 53 of 63 token windows, and took a user message of results for the newest
    question. Now, in each of those windows, every ``tool_result`` keeps its ``tool_use``,
    the real question stays and the list still alternates."""
    elements = [*_tool_loop(3), Element("question", text="and tomorrow?")]
    messages, owners = render_dialogue(elements, "anthropic")
    assert detect(messages).name == "anthropic"
    question = len(elements) - 1
    windows = [dict(max_messages=m, min_messages=m // 2) for m in range(2, 17)]
    total = sum(estimate_tokens(m) for m in messages)
    windows += [dict(max_tokens=t) for t in range(10, total, max(1, total // 63))][:63]
    assert len(windows) == 15 + 63
    for window in windows:
        for preserve_first in (True, False):
            config = ReducerConfig(preserve_first=preserve_first, **window)  # type: ignore[arg-type]
            result = MessageReducer(config=config).reduce(existing=messages)
            kept = _kept_elements(result, messages, owners)
            assert question in kept, window
            for answers, call in element_pairs(elements).items():
                assert (answers in kept) == (call in kept), (window, answers)
            assert _protocol_problems(result, "anthropic") == [], window


def test_anthropic_results_are_not_the_question_mid_tool_loop() -> None:
    """A user message holding only ``tool_result`` blocks is a result: mid tool loop the
    newest question is the user's last real question, and ``start_on_human`` prunes whole
    turns up to it."""
    elements = _tool_loop(2, steps=3)
    elements = elements[:-1]  # the newest turn is still running
    messages, _ = render_dialogue(elements, "anthropic")
    assert read_view(messages[-1]).role == "tool"
    question = "question 1: what about city 1?"
    for start_on_human in (False, True):
        config = ReducerConfig(
            max_messages=4, min_messages=2, preserve_first=False, start_on_human=start_on_human
        )
        result = MessageReducer(config=config).reduce(existing=messages)
        assert result.surviving[0]["content"] == question
        assert [m["role"] for m in result.surviving] == ["user", "assistant", "user"]
    old = MessageReducer(
        config=ReducerConfig(max_messages=4, min_messages=2, preserve_first=False)
    ).reduce(existing=[*messages, {"role": "assistant", "content": "done"}])
    assert old.surviving[0]["content"] == question


def test_a_user_message_with_results_and_text_keeps_its_group_when_it_is_the_question() -> None:
    """A user message holding results and a new question is both: it leaves only with its
    call, and as the newest question its whole group (the call too) stays."""
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "42"},
                {"type": "text", "text": "and what does 42 mean?"},
            ],
        },
    ]
    view = read_view(history[-1])
    assert (view.role, view.results_for) == ("human", ("t1",))
    for max_messages in range(1, 5):
        config = ReducerConfig(max_messages=max_messages, min_messages=0, preserve_first=False)
        result = MessageReducer(config=config).reduce(existing=history)
        assert result.surviving[-2:] == history[-2:], max_messages


def test_responses_items_are_pruned_and_bounded() -> None:
    """The finding: Responses API call and output items have no role, so they were never
    pruned (30 turns at min 4 / max 8 kept 63 items). Now the list is bounded, outputs go
    with their calls and a reasoning item with the item after it."""
    elements = []
    for turn in range(30):
        call = Call(f"call-{turn}", "lookup", {"q": turn})
        elements += [
            Element("question", text=f"question {turn}"),
            Element("reply", reasoning=f"thinking {turn}", calls=(call,)),
            Element("results", results=((call.id, "lookup", f"result {turn}"),)),
            Element("reply", text=f"answer {turn}"),
        ]
    messages, owners = render_dialogue(elements, "responses")
    assert len(messages) == 150 and detect(messages).name == "responses"
    result = MessageReducer(min_messages=4, max_messages=8).reduce(existing=messages)
    assert 4 <= len(result.surviving) <= 8
    kept = _kept_elements(result, messages, owners)
    for answers, call in element_pairs(elements).items():
        assert (answers in kept) == (call in kept)
    types = [m.get("type") for m in result.surviving]
    for position, kind in enumerate(types):
        if kind == "reasoning":
            assert types[position + 1] == "function_call"
    assert _protocol_problems(result, "responses") == []


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("where", ["output", "argument"])
def test_a_40000_token_output_or_argument_counts_near_cl100k_base(fmt: str, where: str) -> None:
    """The finding: a Responses output or argument counted 3 tokens at any size (a 40,000
    token output under max_tokens=4000 pruned nothing); a Gemini content counted 3 tokens.
    In every format, a 40,000-token tool output or argument counts within 0.7..1.5x of
    cl100k_base by the default estimate, and exactly by ``token_counter="cl100k_base"``."""
    encoding = tiktoken_encoding("cl100k_base")
    words = "the report says latency rose while each request waited for its queue".split()  # noqa: SIM905
    text = " ".join(words[n % 12] if n % 7 else f"{words[n % 12]} {n % 997}" for n in range(30_000))
    reference = len(encoding.encode(text))
    assert 30_000 < reference < 60_000
    call = Call("c1", "lookup", {"q": text if where == "argument" else "x"})
    elements = [Element("question", text="q"), Element("reply", calls=(call,))]
    if where == "output":
        elements.append(Element("results", results=(("c1", "lookup", text),)))
    messages, owners = render_dialogue(elements, fmt)
    big = [m for m, owner in zip(messages, owners, strict=True) if owner == len(elements) - 1]
    estimate = sum(estimate_tokens(m) for m in big)
    exact = sum(resolve_token_counter("cl100k_base")(m) for m in big)
    assert 0.7 <= estimate / reference <= 1.5, estimate / reference
    assert 0.98 <= exact / reference <= 1.02, exact / reference
    elements.append(Element("reply", text="done"))
    elements.append(Element("question", text="next question"))
    messages, _ = render_dialogue(elements, fmt)
    result = MessageReducer(config=ReducerConfig(max_tokens=4000)).reduce(existing=messages)
    assert sum(estimate_tokens(m) for m in result.surviving) <= 4000
    assert result.pruned


def test_gemini_model_contents_are_pruned_and_their_text_counts() -> None:
    """The finding: ``model`` was an unknown role, never pruned while user turns were, and
    every content counted 3 tokens. Now model contents are the assistant's, pruned with
    their turn, and a content counts its text."""
    elements = _tool_loop(4, steps=1, calls=1)
    messages, _ = render_dialogue(elements, "gemini")
    assert role_of(messages[1]) == "ai"
    long = {"role": "model", "parts": [{"text": "word " * 400}]}
    assert estimate_tokens(long) > 300
    result = MessageReducer(min_messages=3, max_messages=6).reduce(existing=messages)
    assert all(m["role"] in ("user", "model") for m in result.surviving)
    assert any(m["role"] == "model" for m in result.pruned)
    assert len(result.surviving) <= 6
    assert _protocol_problems(result, "gemini") == []


def test_gemini_calls_without_ids_pair_by_name_and_order() -> None:
    """Gemini calls without ids: a content calling ``lookup`` twice waits for two
    responses named ``lookup``; the response content leaves with it."""
    messages = [
        {"role": "user", "parts": [{"text": "q1"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "lookup", "args": {"q": 1}}},
                {"functionCall": {"name": "lookup", "args": {"q": 2}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "lookup", "response": {"r": 1}}},
                {"functionResponse": {"name": "lookup", "response": {"r": 2}}},
            ],
        },
        {"role": "model", "parts": [{"text": "done"}]},
        {"role": "user", "parts": [{"text": "q2"}]},
    ]
    assert MessageReducer().validate(messages).problems == []
    result = MessageReducer(
        config=ReducerConfig(max_messages=3, min_messages=1, preserve_first=False)
    ).reduce(existing=messages)
    assert result.pruned == messages[:4]
    one_short = [*messages[:2], {**messages[2], "parts": messages[2]["parts"][:1]}]
    kinds = {p.kind for p in MessageReducer().validate(one_short).problems}
    assert DANGLING_CALL in kinds


def test_bedrock_default_preserve_first_never_leaves_two_user_messages() -> None:
    """The finding: with the default ``preserve_first`` a Bedrock list ended as ``[user,
    user]``, which Converse refuses. In every count window the kept first user message is
    followed by an assistant message (or the block of a summary), roles alternate and
    every ``toolResult`` keeps its ``toolUse``."""
    elements = _tool_loop(4, steps=1)
    messages, _ = render_dialogue(elements, "bedrock")
    for max_messages in range(2, len(messages)):
        for min_messages in range(0, max_messages + 1):
            config = ReducerConfig(max_messages=max_messages, min_messages=min_messages)
            result = MessageReducer(config=config).reduce(existing=messages)
            roles = [m["role"] for m in result.surviving]
            assert all(a != b for a, b in itertools.pairwise(roles)), roles
            assert _protocol_problems(result, "bedrock") == []


def test_langchain_calls_in_tool_calls_and_blocks_count_once() -> None:
    """The finding: an AIMessage holding Anthropic ``tool_use`` blocks and ``tool_calls``
    counted the arguments twice (2,035 vs 1,011 tokens). The same call is counted once,
    whether it is in both places, in ``tool_calls`` only or in the blocks only."""
    from langchain_core.messages import AIMessage

    args = {"query": "weather in paris and lyon " * 150}
    use = {"type": "tool_use", "id": "t1", "name": "search", "input": args}
    text = {"type": "text", "text": "Let me check."}
    both = AIMessage(content=[text, use], tool_calls=[{"id": "t1", "name": "search", "args": args}])
    calls_only = AIMessage(
        "Let me check.", tool_calls=[{"id": "t1", "name": "search", "args": args}]
    )
    blocks_only = AIMessage(content=[text, use])
    counts = {estimate_tokens(m) for m in (both, calls_only, blocks_only)}
    assert len(counts) == 1, counts
    assert read_view(blocks_only).call_ids == ("t1",) == read_view(both).call_ids


def test_langchain_calls_held_only_in_blocks_are_paired() -> None:
    """What ``convert_to_messages`` makes of Anthropic dicts (calls only as ``tool_use``
    blocks, results as ``tool_result`` blocks in a HumanMessage) and v1 ``tool_call``
    blocks are paired: pruned together, checked by validate."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages

    anthropic, _ = render_dialogue(_tool_loop(3, steps=1), "anthropic")
    converted = convert_to_messages(anthropic)
    assert MessageReducer().validate(converted).problems == []
    result = MessageReducer(min_messages=3, max_messages=6).reduce(existing=converted)
    assert MessageReducer().validate(result.surviving).problems == []
    v1 = [
        HumanMessage("q"),
        AIMessage(content=[{"type": "tool_call", "id": "c9", "name": "f", "args": {}}]),
        ToolMessage("r", tool_call_id="c9"),
        HumanMessage("q2"),
    ]
    assert read_view(v1[1]).call_ids == ("c9",)
    pruned = MessageReducer(
        config=ReducerConfig(max_messages=2, min_messages=1, preserve_first=False)
    ).reduce(existing=v1)
    assert pruned.pruned == v1[:3]


def test_llama_index_ids_in_additional_kwargs_pair_and_tool_call_blocks_count() -> None:
    """The finding: llama-index's ``tool_call_id`` in ``additional_kwargs`` was not read (a
    call pruned, its result left) and ``ToolCallBlock`` arguments did not count."""
    from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock

    messages, _ = render_dialogue(_tool_loop(3, steps=1, calls=1), "llama_index")
    assert read_view(messages[2]).result_for == "call-0"
    result = MessageReducer(
        config=ReducerConfig(max_messages=5, min_messages=3, preserve_first=False)
    ).reduce(existing=messages)
    assert MessageReducer().validate(result.surviving).problems == []
    big = {"text": "long argument " * 200}
    block = ChatMessage(
        role="assistant",
        blocks=[
            TextBlock(text="x"),
            ToolCallBlock(tool_call_id="c", tool_name="f", tool_kwargs=big),
        ],
    )
    assert estimate_tokens(block) > 200
    assert all(isinstance(m, ChatMessage) for m in result.surviving)


# -- detection and refusals ----------------------------------------------------------


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_each_format_is_told_from_the_list_itself(fmt: str) -> None:
    """A tool-calling list of each format is recognised without being named."""
    messages, _ = render_dialogue(_tool_loop(2), fmt)
    assert detect(messages).name == FORMAT_NAMES[fmt]
    for message in messages:
        assert read_view(message) == general_view(message)


def test_a_list_of_plain_text_messages_is_chat_unless_named() -> None:
    """Plain text dicts read the same in Chat, Anthropic and Responses lists: read as Chat,
    or by the format ``ReducerConfig(format=...)`` names (whose rules then hold)."""
    plain = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    plain += [{"role": "user", "content": "c"}]
    assert detect(plain).name == "chat"
    assert detect(plain, "anthropic").name == "anthropic"
    kept_first = MessageReducer(config=ReducerConfig(max_messages=2, min_messages=1))
    assert [m["content"] for m in kept_first.reduce(existing=plain).surviving] == ["a", "c"]
    anthropic = MessageReducer(
        config=ReducerConfig(max_messages=2, min_messages=1, format="anthropic")
    )
    assert [m["content"] for m in anthropic.reduce(existing=plain).surviving] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("first", "second", "words"),
    [
        ("anthropic", "bedrock", ("Bedrock Converse", "Anthropic")),
        ("chat", "gemini", ("Gemini", "Chat Completions or LangChain")),
        ("responses", "anthropic", ("Anthropic", "Responses API")),
        ("llama_index", "chat", ("Chat Completions", "llama-index")),
        ("gemini_objects", "bedrock", ("Bedrock Converse", "Gemini")),
    ],
)
def test_a_list_mixing_formats_is_refused_naming_both_messages(
    first: str, second: str, words: tuple[str, str]
) -> None:
    """A list no single format fits raises TypeError naming both messages' indexes and
    formats, from reduce and from validate."""
    a, _ = render_dialogue(_tool_loop(1, steps=1), first)
    b, _ = render_dialogue(_tool_loop(1, steps=1), second)
    mixed = a + b
    for call in (
        lambda: MessageReducer(min_messages=1, max_messages=2).reduce(existing=mixed),
        lambda: MessageReducer().validate(mixed),
    ):
        with pytest.raises(TypeError) as caught:
            call()
        message = str(caught.value)
        assert words[0] in message and words[1] in message, message
        assert (
            f"existing[{len(a)}]" in message or f"messages[{len(a)}]" in message or ("[" in message)
        )


def test_chat_dicts_langchain_forms_and_messages_mix() -> None:
    """The mixes LangGraph channels hold stay accepted: Chat dicts, LangChain's dict and
    serialised forms, LangChain messages and duck-typed objects, with tool pairs across
    them."""
    from langchain_core.messages import AIMessage, ToolMessage, messages_to_dict

    from .strategies import Duck

    mixed = [
        {"role": "system", "content": "s"},
        {"type": "human", "content": "q1"},
        AIMessage("", tool_calls=[{"id": "c1", "name": "f", "args": {}}]),
        messages_to_dict([ToolMessage("r", tool_call_id="c1")])[0],
        Duck(type="ai", content="a1"),
        {"role": "user", "content": "q2"},
    ]
    assert detect(mixed).name == "chat"
    result = MessageReducer(min_messages=2, max_messages=3).reduce(existing=mixed)
    assert result.surviving == [mixed[0], mixed[4], mixed[5]]


def test_the_named_format_must_fit_every_message() -> None:
    """``ReducerConfig(format=...)``: a message that is not of that format is a TypeError
    naming it; an unknown format name is a ValueError."""
    with pytest.raises(TypeError, match=r"existing\[1\]: format='bedrock' was given"):
        MessageReducer(
            config=ReducerConfig(format="bedrock", max_messages=1, min_messages=0)
        ).reduce(
            existing=[
                {"role": "user", "content": [{"text": "a"}]},
                {"role": "user", "content": "b"},
            ]
        )
    with pytest.raises(ValueError, match=r"format must be one of .*'anthropic'.*got 'openai'"):
        ReducerConfig(format="openai")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"role": "user", "content": [{"text": "a"}, {"toolUze": {}}]}, "not a Converse block"),
        ({"role": "model", "parts": "text"}, "'parts' is a list"),
        ({"type": "message", "content": "x"}, "needs a string 'role'"),
        ({"role": "user", "content": [{"type": "tool_result"}, {"type": "input_text"}]}, "blocks"),
        ({"role": "user", "content": 5}, None),
    ],
)
def test_an_entry_no_format_reads_is_a_type_error_naming_it(
    entry: Any, expected: str | None
) -> None:
    """An entry the reader cannot place raises TypeError naming its index and what was
    expected, never passes as an unknown message."""
    history = [{"role": "user", "content": "ok"}, entry]
    try:
        MessageReducer(min_messages=1, max_messages=5).reduce(existing=history)
    except TypeError as exc:
        assert "existing[1]" in str(exc)
        if expected is not None:
            assert expected in str(exc)
    else:
        assert expected is None  # a Chat dict with odd content still reads as Chat
        assert read_view(entry).role == "human"


# -- validity rules ------------------------------------------------------------------


def test_validate_checks_the_responses_rules() -> None:
    """Responses API: an output without its call before it, a call without its output and
    a reasoning item without an item after it are each reported at their index; an output
    need not come right after its call."""
    items: list[Any] = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "1"},
        {"type": "function_call_output", "call_id": "a", "output": "2"},
        {"type": "function_call_output", "call_id": "zz", "output": "3"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "q2"},
        {"type": "reasoning", "summary": []},
    ]
    problems = MessageReducer().validate(items).problems
    assert [(p.kind, p.index) for p in problems] == [
        (ORPHAN_RESULT, 5),
        (DANGLING_CALL, 6),
        (ORPHAN_REASONING, 8),
    ]


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
def test_validate_checks_alternation_and_roles(fmt: str) -> None:
    """Anthropic, Bedrock and Gemini: two user messages in a row, a first message from the
    model and a system message in the list are each reported."""
    messages, _ = render_dialogue(_tool_loop(2, steps=1), fmt)
    assert MessageReducer().validate(messages).problems == []
    doubled = [messages[0], messages[0], *messages[1:]]
    kinds = [p.kind for p in MessageReducer().validate(doubled).problems]
    assert kinds == [ROLES_NOT_ALTERNATING]
    kinds = [p.kind for p in MessageReducer().validate(messages[1:]).problems]
    assert BAD_FIRST_MESSAGE in kinds
    if fmt == "anthropic":
        system = [{"role": "system", "content": "be brief"}, *messages]
        kinds = [p.kind for p in MessageReducer().validate(system).problems]
        assert kinds == [UNEXPECTED_ROLE]


# -- writing in the list's own format ------------------------------------------------


def _summarising(**options: Any) -> MessageReducer:
    return MessageReducer(
        config=ReducerConfig(
            summarize_fn=lambda messages: "they talked", inject_summary=True, **options
        )
    )


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("preserve_first", [True, False])
def test_the_summary_block_is_written_in_the_lists_format(fmt: str, preserve_first: bool) -> None:
    """The injected summary is a message of the list's own format and kind (objects of the
    same class), marked as a summary, and the list stays valid for its format (roles still
    alternate where they must)."""
    messages, _ = render_dialogue(_tool_loop(4, steps=1), fmt)
    reducer = _summarising(
        max_messages=8, min_messages=5, preserve_first=preserve_first, format=FORMAT_NAMES[fmt]
    )
    result = reducer.reduce(existing=messages)
    assert result.summary == "they talked"
    block = result.summary_messages
    assert block and all(is_summary(m) for m in block)
    assert all(
        type(m) is type(messages[1]) or isinstance(m, dict) == isinstance(messages[1], dict)
        for m in block
    )
    if fmt in ("gemini_objects", "llama_index", "langchain", "langchain_blocks"):
        assert all(type(m).__name__ == type(messages[0]).__name__ for m in block)
    assert detect(result.surviving).name == FORMAT_NAMES[fmt]
    assert _protocol_problems(result, fmt) == []
    text = next(s.text for s in slots_of(block[0]) if s.kind == "text")
    assert text == SUMMARY_HEADER + "they talked"


def test_alternating_summary_blocks_take_the_side_their_neighbours_leave() -> None:
    """Bedrock: after a kept first user message the block is an assistant message and the
    rest starts with the user; with nothing kept first it is a user message followed by an
    assistant message."""
    messages, _ = render_dialogue(_tool_loop(4, steps=1), "bedrock")
    kept_first = _summarising(max_messages=8, min_messages=5).reduce(existing=messages)
    roles = [m["role"] for m in kept_first.surviving]
    assert roles[:3] == ["user", "assistant", "user"] and is_summary(kept_first.surviving[1])
    fresh = _summarising(max_messages=8, min_messages=5, preserve_first=False).reduce(
        existing=messages
    )
    roles = [m["role"] for m in fresh.surviving]
    assert roles[:2] == ["user", "assistant"] and is_summary(fresh.surviving[0])


def test_clear_tool_outputs_writes_a_placeholder_into_every_result_a_message_holds() -> None:
    """Anthropic, Bedrock, Gemini and Responses: older results are cleared in their own
    shape (a ``tool_result``'s content, a ``toolResult``'s content block, a function
    response's ``output``, an output item's ``output``), the newest ``keep_last`` results
    kept, calls and ids untouched."""
    step = ClearToolOutputs(keep_last=1)
    for fmt in ("anthropic", "bedrock", "gemini", "gemini_objects", "responses", "llama_index"):
        elements = _tool_loop(3, steps=1, calls=2)
        elements = [
            Element(e.kind, e.text, results=tuple((i, n, o * 40) for i, n, o in e.results))
            if e.kind == "results"
            else e
            for e in elements
        ]
        messages, _ = render_dialogue(elements, fmt)
        total = sum(estimate_tokens(m) for m in messages)
        reducer = MessageReducer(
            config=ReducerConfig(max_tokens=total - 1, policy=[step, DropOldest()])
        )
        result = reducer.reduce(existing=messages)
        results = [s for m in result.surviving for s in slots_of(m) if s.kind == "result"]
        assert [s.text == step.placeholder for s in results] == [True] * (len(results) - 1) + [
            False
        ], fmt
        assert all(
            read_view(m).role == read_view(o).role
            for m, o in zip(result.surviving, messages, strict=True)
        )
        assert [tool_result_ids_of(m) for m in result.surviving] == [
            tool_result_ids_of(m) for m in messages
        ]
        assert result.rewritten  # the originals, handed over


def test_truncate_largest_cuts_the_largest_result_in_its_own_shape() -> None:
    """TruncateLargest cuts an Anthropic ``tool_result`` (the message's last text) and leaves
    the marker there; the block stays a ``tool_result`` of the same call."""
    big = "lorem ipsum dolor sit amet " * 400
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": big}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    total = sum(estimate_tokens(m) for m in messages)
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=total // 3, policy=[TruncateLargest()])
    )
    result = reducer.reduce(existing=messages)
    cut = result.surviving[2]["content"][0]
    assert cut["type"] == "tool_result" and cut["tool_use_id"] == "t"
    assert "truncated" in cut["content"] and len(cut["content"]) < len(big)
    assert sum(estimate_tokens(m) for m in result.surviving) <= total // 3


def test_a_text_answer_is_written_into_the_originals_shape() -> None:
    """``with_text`` (what a Compress text answer becomes): the first result of a message
    holding several gets the text, the others say they were condensed with it; a model
    turn's calls stay when its text changes."""
    results = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "long a"},
            {"type": "tool_result", "tool_use_id": "b", "content": "long b"},
        ],
    }
    short = with_text(results, "a and b")
    assert [b["content"] for b in short["content"]] == ["a and b", COMBINED_RESULT]
    assert read_view(short) == read_view(results)
    turn = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "second"},
            {"type": "tool_use", "id": "x", "name": "f", "input": {}},
        ],
    }
    shorter = with_text(turn, "both")
    assert shorter["content"] == [{"type": "text", "text": "both"}, turn["content"][2]]


def test_compress_writes_text_answers_into_every_format() -> None:
    """A Compress step whose compressor answers text keeps each format's shape and pairs."""
    from agentstate_reducer.compress import Compress

    for fmt in ("anthropic", "bedrock", "gemini", "responses", "llama_index", "gemini_objects"):
        elements = _tool_loop(3, steps=1, calls=2)
        elements = [
            Element(e.kind, e.text, results=tuple((i, n, o * 40) for i, n, o in e.results))
            if e.kind == "results"
            else e
            for e in elements
        ]
        messages, _ = render_dialogue(elements, fmt)
        total = sum(estimate_tokens(m) for m in messages)
        step = Compress(lambda given: ["short"] * len(given), keep_last=0)
        reducer = MessageReducer(
            config=ReducerConfig(max_tokens=total // 2, policy=[step, DropOldest()])
        )
        result = reducer.reduce(existing=messages)
        assert any(s.text == "short" for m in result.surviving for s in slots_of(m)), fmt
        assert _protocol_problems(result, fmt) == [], fmt


def test_parts_count_reasoning_images_and_calls_once() -> None:
    """What counts, in one message of each kind: reasoning text, images at a fixed cost,
    each call's name and arguments."""
    anthropic = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "let me think", "signature": "opaque"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}},
        ],
    }
    parts = parts_of(anthropic)
    assert parts.texts == ["let me think"] and parts.calls == [("f", '{"a":1}')]
    gemini = {
        "role": "user",
        "parts": [{"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "x"}}],
    }
    assert parts_of(gemini).images == 1 and parts_of(gemini).texts == ["see"]
    responses = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]}
    assert parts_of(responses).texts == ["plan"]
    assert json.loads(
        parts_of(
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"x": 2}'}
        ).calls[0][1]
    ) == {"x": 2}


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("counter", ["approximate", "cl100k_base"])
def test_every_counter_reads_every_format(fmt: str, counter: str) -> None:
    """LangChain's ``count_tokens_approximately`` (given a message of another format as a
    Chat dict of what it counts) and tiktoken count every format; the reduce then keeps
    its budget and its pairs."""
    elements = _tool_loop(3)
    messages, owners = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(max_tokens=200, token_counter=counter))
    result = reducer.reduce(existing=messages)
    assert result.pruned and result.tokens_after <= 200
    kept = _kept_elements(result, messages, owners)
    for answers, call in element_pairs(elements).items():
        assert (answers in kept) == (call in kept)


def test_mark_summary_marks_formats_without_metadata_by_the_header() -> None:
    """``mark_summary`` (what a ``summary_message_factory``'s messages get) puts the header
    line in front of the first text of a message whose format has no metadata slot, as an
    object of the same class; a message without text cannot be marked."""
    from google.genai import types

    from agentstate_reducer.summary import mark_summary

    content = types.Content(role="model", parts=[types.Part(text="they talked")])
    marked = mark_summary(content)
    assert isinstance(marked, types.Content) and is_summary(marked)
    assert marked.parts[0].text == SUMMARY_HEADER + "they talked"
    bedrock = mark_summary({"role": "user", "content": [{"text": "x"}]})
    assert bedrock["content"][0]["text"].startswith(SUMMARY_HEADER)
    with pytest.raises(TypeError, match="without text"):
        mark_summary({"role": "user", "content": [{"image": {"format": "png", "source": {}}}]})


def test_sdk_objects_read_as_their_format() -> None:
    """The OpenAI SDK's Responses items (``ResponseFunctionToolCall``, output messages,
    reasoning items) and the Anthropic SDK's blocks (a ``response.content`` appended as it
    came) and ``Message`` objects are read as the Responses API and Anthropic formats."""
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    call = ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="f", arguments='{"a": 1}', id="fc_1"
    )
    text = ResponseOutputText(type="output_text", text="done", annotations=[])
    answer = ResponseOutputMessage(
        type="message", role="assistant", id="msg_1", status="completed", content=[text]
    )
    thought = ResponseReasoningItem(
        type="reasoning", id="rs_1", summary=[Summary(type="summary_text", text="plan")]
    )
    items = [
        {"role": "user", "content": "q"},
        thought,
        call,
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        answer,
    ]
    assert detect(items).name == "responses"
    assert MessageReducer().validate(items).problems == []
    assert [read_view(m).joins for m in items] == [0, 2, 1, 0, 1]
    assert parts_of(thought).texts == ["plan"] and parts_of(call).calls == [("f", '{"a": 1}')]
    turn = {
        "role": "assistant",
        "content": [
            TextBlock(type="text", text="let me"),
            ToolUseBlock(type="tool_use", id="t1", name="f", input={"x": 1}),
        ],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
    }
    history = [{"role": "user", "content": "q"}, turn, result]
    assert detect(history).name == "anthropic"
    assert MessageReducer().validate(history).problems == []
    message = Message(
        id="msg_2",
        type="message",
        role="assistant",
        model="claude",
        content=[ToolUseBlock(type="tool_use", id="t2", name="g", input={})],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    assert read_view(message).call_ids == ("t2",) and detect([message]).name == "anthropic"


# -- extended thinking in the newest turn's tool loop ------------------------------------


def _thinking_loop(steps: int = 5) -> list[Element]:
    """An answered turn, then a question whose tool loop opens with a thinking block."""
    out = [
        Element("question", text="old question"),
        Element("reply", text="old answer"),
        Element("question", text="Check the weather in five cities."),
    ]
    for step in range(steps):
        call = Call(f"think{step}", "weather", {"city": step})
        reasoning = "I will call weather for each city." if step == 0 else ""
        out.append(Element("reply", reasoning=reasoning, calls=(call,)))
        out.append(Element("results", results=((call.id, call.name, "sunny " * 50),)))
    return out


_THINKING_FORMATS = ("anthropic", "bedrock", "pydantic_ai", "langchain_blocks")


@pytest.mark.parametrize("fmt", _THINKING_FORMATS)
@pytest.mark.parametrize(
    "window",
    [
        {"max_messages": 6, "min_messages": 3},
        {"max_messages": 4, "min_messages": 1},
        {"max_tokens": 120},
    ],
)
@pytest.mark.parametrize("preserve_first", [True, False])
def test_the_newest_turns_thinking_block_stays_while_its_tool_loop_does(
    fmt: str, window: dict[str, Any], preserve_first: bool
) -> None:
    """Pruning the older steps of the newest turn's tool loop keeps the step that holds the
    turn's thinking block (and its results): the turn's first model message still opens
    with it, as Anthropic requires of a final assistant turn."""
    elements = _thinking_loop()
    messages, owners = render_dialogue(elements, fmt)
    opener = next(i for i, o in enumerate(owners) if o == 3)
    assert read_view(messages[opener]).thinking, fmt
    reducer = MessageReducer(config=ReducerConfig(preserve_first=preserve_first, **window))
    result = reducer.reduce(existing=messages)
    alive = {id(m) for m in result.surviving}
    kept = {owners[i] for i, m in enumerate(messages) if id(m) in alive}
    assert result.pruned, (fmt, window)  # the loop was pruned
    assert {3, 4} <= kept, (fmt, window, sorted(kept))  # the opener and its results
    assert len(elements) - 1 in kept
    kinds = {p.kind for p in reducer.validate(result.surviving).problems}
    assert TURN_WITHOUT_THINKING not in kinds


@pytest.mark.parametrize("block", ["thinking", "redacted_thinking"])
def test_a_summary_block_between_the_question_and_its_thinking_opener_keeps_the_opener(
    block: str,
) -> None:
    """A running summary put its block (summary and filler, Anthropic's roles alternate)
    between the newest question and the step that opens its tool loop with thinking: the
    next reduce still knows that step as the turn's opener, so a reduce of the same list
    with nothing new prunes nothing and summarises nothing, and the opener stays."""
    calls: list[int] = []

    def summarize(messages: list[Any]) -> str:
        calls.append(len(messages))
        return f"summary of {len(messages)} messages"

    def use(i: int) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{i}", "name": "search", "input": {"q": str(i)}}

    def results(*ids: int) -> dict[str, Any]:
        content = [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "r"} for i in ids
        ]
        return {"role": "user", "content": content}

    thinking = (
        {"type": "thinking", "thinking": "plan", "signature": "sig"}
        if block == "thinking"
        else {"type": "redacted_thinking", "data": "opaque"}
    )
    opener = {"role": "assistant", "content": [thinking, use(1)]}
    question = {"role": "user", "content": [{"type": "text", "text": "Research the weather."}]}
    loop = [
        results(1),
        {"role": "assistant", "content": [{"type": "text", "text": "let me check"}, use(2)]},
        results(2),
        {"role": "assistant", "content": [use(3), use(4)]},
        results(3, 4),
    ]
    config = ReducerConfig(
        min_messages=3, max_messages=4, summarize_fn=summarize, inject_summary=True
    )
    reducer = MessageReducer(config=config)
    first = reducer.reduce([question, opener], loop)
    assert calls == [2] and opener in first.surviving
    assert first.summary_messages and len(first.summary_messages) == 2  # summary and filler
    again = reducer.reduce(first.surviving)
    assert again.pruned == [] and calls == [2]
    assert again.surviving == first.surviving
    fresh = MessageReducer(config=config).reduce(first.surviving)
    assert fresh.pruned == [] and calls == [2]
    kinds = {p.kind for p in reducer.validate(first.surviving).problems}
    assert TURN_WITHOUT_THINKING not in kinds


@pytest.mark.parametrize("fmt", _THINKING_FORMATS)
def test_validate_reports_a_tool_loop_that_lost_its_thinking_block(fmt: str) -> None:
    """A list that uses thinking and whose newest turn opens with a tool call without a
    thinking block is reported at that message; with the block there, nothing is."""
    elements = [
        Element("question", text="old question"),
        Element("reply", reasoning="thinking about the old question", text="old answer"),
        *_thinking_loop()[2:],
    ]
    messages, owners = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(format=FORMAT_NAMES[fmt]))
    assert TURN_WITHOUT_THINKING not in {p.kind for p in reducer.validate(messages).problems}
    broken = [m for m, o in zip(messages, owners, strict=True) if o not in (3, 4)]
    found = [p for p in reducer.validate(broken).problems if p.kind == TURN_WITHOUT_THINKING]
    first_step = next(i for i, m in enumerate(broken) if owners[messages.index(m)] == 5)
    assert [p.index for p in found] == [first_step], (fmt, found)
    assert "thinking block" in found[0].detail


# -- media a tool returns ------------------------------------------------------------------


def _screenshot_results() -> dict[str, Any]:
    """A tool result holding one 100 KB screenshot, in each shape that can carry one."""
    import base64

    from google.genai import types as gt
    from langchain_core.messages import HumanMessage, ToolMessage
    from pydantic_ai.messages import (
        BinaryContent,
        ImageUrl,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ToolReturnPart,
    )

    raw = bytes(range(256)) * 400
    data = base64.b64encode(raw).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    binary = ModelRequest(
        parts=[ToolReturnPart("shot", BinaryContent(data=raw, media_type="image/png"), "t1")]
    )
    return {
        "anthropic tool_result": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image]}],
        },
        "langchain HumanMessage tool_result": HumanMessage(
            content=[{"type": "tool_result", "tool_use_id": "t1", "content": [image]}]
        ),
        "langchain ToolMessage": ToolMessage(content=[image], tool_call_id="t1"),
        "bedrock toolResult": {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"image": {"format": "png"}}]}}
            ],
        },
        "pydantic-ai BinaryContent": binary,
        "pydantic-ai ImageUrl data URL": ModelRequest(
            parts=[ToolReturnPart("shot", ImageUrl(url="data:image/png;base64," + data), "t1")]
        ),
        "pydantic-ai serialised": ModelMessagesTypeAdapter.dump_python([binary], mode="json")[0],
        "gemini FunctionResponse.parts": gt.Content(
            role="user",
            parts=[
                gt.Part(
                    function_response=gt.FunctionResponse(
                        id="t1",
                        name="shot",
                        response={"output": "ok"},
                        parts=[gt.FunctionResponsePart.from_bytes(data=raw, mime_type="image/png")],
                    )
                )
            ],
        ),
    }


@pytest.mark.parametrize("shape", list(_screenshot_results()))
def test_media_a_tool_returns_counts_at_the_fixed_media_cost(shape: str) -> None:
    """An image inside a tool result counts like an image in a user message (a fixed cost),
    neither by its base64 or bytes nor as nothing."""
    message = _screenshot_results()[shape]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=4000))
    assert parts_of(message).images == 1, shape
    assert 85 <= reducer.count_tokens(message) < 300, shape


@pytest.mark.parametrize("shape", [s for s in _screenshot_results() if "ToolMessage" not in s])
def test_a_message_of_results_holding_media_is_a_result_not_a_question(shape: str) -> None:
    """Media a tool returned is the result's, not the user's: a message holding only
    results is still read as results (never the newest question), screenshots or not."""
    view = read_view(_screenshot_results()[shape])
    assert view.role == "tool", (shape, view.role)
    assert view.results_for == ("t1",), shape


def _screenshot_step(fmt: str, step: int) -> list[dict[str, Any]]:
    """One step of a computer-use loop: a call (the first opens with a thinking block) and
    its result, which holds a screenshot."""
    if fmt == "anthropic":
        thinking = [{"type": "thinking", "thinking": "plan the clicks", "signature": "sig"}]
        call = {"type": "tool_use", "id": f"t{step}", "name": "computer", "input": {}}
        shot = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
        }
        result = {"type": "tool_result", "tool_use_id": f"t{step}", "content": [shot]}
    else:
        thinking = [{"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig"}}}]
        call = {"toolUse": {"toolUseId": f"t{step}", "name": "computer", "input": {}}}
        shot = {"image": {"format": "png", "source": {"bytes": b"png"}}}
        result = {"toolResult": {"toolUseId": f"t{step}", "content": [{"text": "ok"}, shot]}}
    opener = thinking if step == 0 else []
    return [
        {"role": "assistant", "content": [*opener, call]},
        {"role": "user", "content": [result]},
    ]


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
@pytest.mark.parametrize("window", [{"min_messages": 4, "max_messages": 8}, {"max_tokens": 400}])
def test_a_screenshot_loop_keeps_its_thinking_opener_and_stays_bounded(
    fmt: str, window: dict[str, Any]
) -> None:
    """A computer-use loop under one question, fed a message at a time, each result holding
    a screenshot: the loop is bounded and the step that opens the turn with its thinking
    block stays (a result with an image once read as a new question, which let it go)."""
    text: Any = "Open the settings." if fmt == "anthropic" else [{"text": "Open the settings."}]
    question = {"role": "user", "content": text}
    reducer = MessageReducer(config=ReducerConfig(**window))
    kept = reducer.reduce([], [question]).surviving
    steps = [m for step in range(30) for m in _screenshot_step(fmt, step)]
    for message in steps:
        kept = reducer.reduce(kept, [message]).surviving
    assert len(kept) < 1 + len(steps)  # the loop was bounded
    assert kept[0] is question and steps[0] in kept and steps[1] in kept, [
        m["content"] for m in kept[:3]
    ]
    assert reducer.validate(kept).problems == []


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
@pytest.mark.parametrize("window", [{"max_tokens": 90}, {"min_messages": 3, "max_messages": 5}])
def test_start_on_human_prunes_an_alternating_list_that_opens_on_its_first_question(
    fmt: str, window: dict[str, Any]
) -> None:
    """Roles that alternate and a kept first question (the default ``preserve_first``):
    an end at the new question would put the two questions together, so none was valid
    and nothing was ever pruned while the newest message was a question. The window now
    ends where the roles alternate; the list still starts on the first question."""
    elements = [Element("question", text="first question")]
    for step in range(4):
        call = Call(f"loop{step}", "lookup", {"step": step})
        elements.append(Element("reply", calls=(call,)))
        elements.append(Element("results", results=((call.id, call.name, "result " * 20),)))
    elements += [Element("reply", text="answer"), Element("question", text="second question")]
    messages, _ = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(start_on_human=True, **window))
    result = reducer.reduce(existing=messages)
    assert result.pruned, fmt
    assert result.surviving[0] is messages[0] and result.surviving[-1] is messages[-1]
    assert reducer.validate(result.surviving).problems == [], fmt
    again = reducer.reduce(result.surviving)
    assert again.pruned == []


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
def test_a_running_summary_after_the_first_question_does_not_stop_count_mode_pruning(
    fmt: str,
) -> None:
    """Roles that alternate, the first question kept and a running summary injected: once
    the block stood after the first question, its single form had no window (the block
    must meet a user message, and a tool loop offers only results), and that empty try hid
    the two-message form that has one, so a long tool loop was never pruned again (25
    messages kept with ``max_messages=8``). Each reduce of the growing chat now stays
    within the bound, and reducing the result again prunes nothing."""

    def turn(number: int) -> list[Element]:
        elements = [Element("question", text=f"question {number}")]
        for step in range(10):
            call = Call(f"t{number}s{step}", "lookup", {"step": step})
            elements.append(Element("reply", calls=(call,)))
            elements.append(Element("results", results=((call.id, call.name, f"r{step}"),)))
        return [*elements, Element("reply", text=f"answer {number}")]

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=8,
            summarize_fn=lambda messages: f"{len(messages)} messages",
            inject_summary=True,
        )
    )
    dialogue = [Element("question", text="first question")]
    kept: list[Any] = []
    first = None
    for number in range(1, 4):
        dialogue += turn(number)
        messages, _ = render_dialogue([*dialogue, Element("question", text="next")], fmt)
        # The chat as a stored list grows: what was kept, then what is new.
        new = messages[len(messages) - (len(turn(number)) + 1) :]
        result = reducer.reduce(kept, new) if kept else reducer.reduce(messages)
        first = first or messages[0]
        kept = [m for m in result.surviving if m is not new[-1]]
        assert len(result.surviving) <= 8, (fmt, number, len(result.surviving))
        assert result.surviving[0] is first
        assert reducer.validate(result.surviving).problems == [], fmt
        assert reducer.reduce(result.surviving).pruned == []


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
def test_a_summary_block_first_and_a_thinking_opener_still_bound_count_mode(fmt: str) -> None:
    """The list a reducer leaves with ``preserve_first="system"`` and no system prompt (as an
    Anthropic list is kept): ``[summary block, previous answer, question, thinking call,
    result, call, result, ...]``. The one-message block's window could only fold the block
    (the opener and the question stay), and that idle try was taken over the two-message
    block's window, so nothing was pruned at any length: 19 messages kept with
    ``max_messages=8``. The list now shrinks as with a question in the block's place, and
    the reduced list reduces to itself."""
    elements = [
        Element("question", text=SUMMARY_HEADER + "\nearlier turns"),
        Element("reply", text="previous answer"),
        Element("question", text="audit every invoice"),
    ]
    for step in range(8):
        call = Call(f"t{step}", "lookup", {"step": step})
        elements.append(Element("reply", reasoning="plan" if step == 0 else "", calls=(call,)))
        elements.append(Element("results", results=((call.id, call.name, "ok"),)))
    messages, _ = render_dialogue(elements, fmt)
    assert read_view(messages[0]).summary and read_view(messages[3]).call_ids, fmt
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=8,
            preserve_first="system",
            summarize_fn=lambda pruned: f"{len(pruned)} messages",
            inject_summary=True,
        )
    )
    result = reducer.reduce(messages)
    # 8, the block's filler and the opener with its result (documented extras) at most.
    assert result.pruned and len(result.surviving) <= 11, (fmt, len(result.surviving))
    problems = reducer.validate(result.surviving).problems
    assert all(problem.kind == "over_budget" for problem in problems), (fmt, problems)
    assert reducer.reduce(result.surviving).pruned == [], fmt


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
def test_a_question_over_the_budget_reduces_once_in_token_mode(fmt: str) -> None:
    """Token mode, roles that alternate, the newest question alone over the budget (a pasted
    document): the reduced list ``[block, answer, question]`` reduces to itself. A version
    of this round's fix took the two-message block's window whenever the one-message
    block's only folded the block, so a second reduce pruned the answer (and summarised
    again) that the first had kept, reduce after reduce in a pre-model hook."""
    elements = [
        Element("question", text="hello, what can you do?"),
        Element("reply", text="I can answer questions about documents. " * 80),
        Element("question", text="Please summarise this contract: " + "clause text. " * 600),
    ]
    messages, _ = render_dialogue(elements, fmt)
    calls: list[int] = []

    def summarize(pruned: list[Any]) -> str:
        calls.append(len(pruned))
        return f"summary of {len(pruned)} messages"

    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=1000, preserve_first=False, summarize_fn=summarize, inject_summary=True
        )
    )
    result = reducer.reduce(messages)
    assert result.pruned and result.surviving[-1] is messages[-1], fmt
    again = reducer.reduce(result.surviving)
    assert again.pruned == [] and len(calls) == 1, (fmt, calls)
    assert again.surviving == result.surviving


@pytest.mark.parametrize("fmt", sorted(ALTERNATING))
def test_start_on_human_with_a_summary_block_goes_past_min_messages_in_one_reduce(
    fmt: str,
) -> None:
    """Count mode, ``start_on_human``, the first question kept and a summary block: the end
    past ``min_messages`` at the newest question (the block bridges the two questions) was
    never tried, as an end at a question was taken for two user messages together, so
    ``[q, call, result, answer, q]`` became ``[q, block, filler, answer, q]`` (5 messages,
    ``max_messages=3``), which the next reduce cut to 3. Each reduce of the growing chat
    now reduces to itself."""
    call = Call("c0", "lookup", {"q": "a"})
    elements = [
        Element("question", text="a"),
        Element("reply", calls=(call,)),
        Element("results", results=((call.id, call.name, "a" * 40),)),
    ]
    for _ in range(3):
        elements += [Element("reply", text="a"), Element("question", text="a")]
    reducer = MessageReducer(
        config=ReducerConfig(
            preserve_first=True,
            start_on_human=True,
            summarize_fn=lambda pruned: f"{len(pruned)} messages",
            inject_summary=True,
            max_messages=3,
            min_messages=3,
            format=FORMAT_NAMES[fmt],
        )
    )
    kept: list[Any] = []
    for number, element in enumerate(elements):
        new, _ = render_dialogue([element], fmt)
        result = reducer.reduce(kept, new)
        assert reducer.reduce(result.surviving).pruned == [], (fmt, number)
        kept = result.surviving


@pytest.mark.parametrize("start_on_human", [False, True])
def test_a_chat_list_with_sdk_assistant_messages_gets_a_dict_block(start_on_human: bool) -> None:
    """The usual OpenAI loop: the caller's own dicts for system, user and tool messages, the
    SDK's ChatCompletionMessage appended for the assistant. Wherever the window starts (in
    an older tool loop, so the list's first user-or-assistant message is an SDK object), the
    block is written as a user dict; it raised TypeError asking for a factory."""
    from openai.types.chat import ChatCompletionMessage

    history: list[Any] = [{"role": "system", "content": "Be brief."}]
    for turn in range(3):
        history.append({"role": "user", "content": f"question {turn}"})
        for n in range(3):
            call = {
                "id": f"c{turn}{n}",
                "type": "function",
                "function": {"name": "f", "arguments": "{}"},
            }
            history += [
                ChatCompletionMessage.model_validate(
                    {"role": "assistant", "content": None, "tool_calls": [call]}
                ),
                {"role": "tool", "tool_call_id": f"c{turn}{n}", "content": f"r{turn}{n}"},
            ]
        history.append(ChatCompletionMessage(role="assistant", content=f"answer {turn}"))
    reducer = MessageReducer(
        config=ReducerConfig(
            summarize_fn=lambda pruned: f"{len(pruned)} messages",
            inject_summary=True,
            min_messages=6,
            max_messages=8,
            start_on_human=start_on_human,
        )
    )
    kept: list[Any] = history[:2]
    for message in history[2:]:
        result = reducer.reduce(kept, [message])
        kept = result.surviving
        for block in result.summary_messages:
            assert type(block) is dict and block["role"] == "user" and is_summary(block)
    assert any(is_summary(m) for m in kept), "the conversation was never summarised"
    assert sum(not isinstance(m, dict) for m in kept) >= 1


def test_an_unreachable_budget_keeps_the_one_message_summary_form() -> None:
    """When no form of the summary block brings the list within the budget (the newest
    question alone is over it), the one-message form's window is kept, as before: the
    two-message form would prune the previous answer only to add the block's filler in
    its place, a larger list."""
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=200,
            preserve_first=False,
            format="anthropic",
            summarize_fn=lambda messages: "the user asked about the weather; it was sunny",
            inject_summary=True,
        )
    )
    messages = [
        {"role": "user", "content": "what is the weather in Paris today?"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "please summarise this report: " + "lorem ipsum " * 150},
    ]
    result = reducer.reduce(messages)
    assert result.pruned == [messages[0]]
    assert result.surviving[1:] == messages[1:]
    assert reducer.reduce(result.surviving).pruned == []


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("preserve_first", [False, "system"])
def test_start_on_human_bounds_a_list_whose_newest_turn_is_shorter_than_min_messages(
    fmt: str, preserve_first: Any
) -> None:
    """``start_on_human`` in count mode, a long tool loop under the previous question and a
    newest turn shorter than ``min_messages``: the only question within ``min_messages``
    was the previous one, so every tool pair of its loop stayed (65 messages kept with
    ``max_messages=6``) until the next question came. The window now ends at the newest
    question, keeping fewer than ``min_messages``, as token mode does."""
    elements = [Element("system", text="be brief"), Element("question", text="question 0")]
    for step in range(15):
        call = Call(f"loop{step}", "lookup", {"step": step})
        elements.append(Element("reply", calls=(call,)))
        elements.append(Element("results", results=((call.id, call.name, f"r{step}"),)))
    elements += [
        Element("reply", text="answer 0"),
        Element("question", text="question 1"),
        Element("reply", text="answer 1"),
    ]
    messages, _ = render_dialogue(elements, fmt)
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4, max_messages=6, start_on_human=True, preserve_first=preserve_first
        )
    )
    result = reducer.reduce(existing=messages)
    assert len(result.surviving) <= 6, (fmt, len(result.surviving))
    assert result.surviving[-2:] == messages[-2:]
    assert len(result.pruned) + len(result.surviving) == len(messages)
    assert [p.kind for p in reducer.validate(result.surviving).problems] == [], fmt
    assert reducer.reduce(result.surviving).pruned == []


def test_chat_openai_responses_v1_messages_count_their_reasoning_and_each_call_once() -> None:
    """``ChatOpenAI(output_version="responses/v1")`` keeps the Responses items as content
    blocks: a reasoning item's text is in its ``summary`` parts (it counts, as in the
    Responses format), and a ``function_call`` block is the call ``tool_calls`` holds too
    (counted once, not again as JSON)."""
    from langchain_core.messages import AIMessage

    summary = "The user wants the weather; I will call the search tool for each city. " * 20
    call = {"name": "search", "args": {"q": "Paris"}, "id": "c1", "type": "tool_call"}
    block = {
        "type": "function_call",
        "name": "search",
        "arguments": json.dumps({"q": "Paris"}),
        "call_id": "c1",
        "id": "fc_1",
        "status": "completed",
    }
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": "enc",
    }
    plain = AIMessage(content="", tool_calls=[call], id="a")
    with_block = AIMessage(content=[block], tool_calls=[call], id="b")
    with_reasoning = AIMessage(content=[reasoning, block], tool_calls=[call], id="c")
    as_v1 = AIMessage(content=[{"type": "reasoning", "reasoning": summary}], tool_calls=[call])
    assert estimate_tokens(with_block) == estimate_tokens(plain)
    assert estimate_tokens(with_reasoning) == estimate_tokens(as_v1) > estimate_tokens(plain) + 200
    assert read_view(with_reasoning).thinking and read_view(with_reasoning).call_ids == ("c1",)
    assert len(parts_of(with_reasoning).calls) == 1  # the block is the call tool_calls holds


# -- TruncateLargest and parallel results ----------------------------------------------


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_truncate_largest_cuts_a_large_result_wherever_it_is_in_its_message(fmt: str) -> None:
    """Two parallel calls, the first answered by a long output: every format cuts that
    output to fit (Anthropic, Bedrock and Gemini hold both results in one message, where
    the long one is not the last), and the short one stays as it was."""
    calls = (Call("par1", "lookup", {"q": "a"}), Call("par2", "lookup", {"q": "b"}))
    elements = [
        Element("question", text="compare a and b"),
        Element("reply", calls=calls),
        Element(
            "results", results=(("par1", "lookup", "detail " * 3000), ("par2", "lookup", "small"))
        ),
    ]
    messages, _ = render_dialogue(elements, fmt)
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=1000, policy=[DropOldest(), TruncateLargest()])
    )
    result = reducer.reduce(existing=messages)
    assert result.tokens_before > 1000
    assert result.tokens_after <= 1000, fmt
    texts = [slot.text for m in result.surviving for slot in slots_of(m) if slot.kind == "result"]
    assert any("truncated" in text for text in texts), (fmt, texts)
    assert "small" in texts, (fmt, texts)


# -- validate(): each format's own shape -------------------------------------------------

_Q = {"role": "user", "content": "q"}
_ANTHROPIC_USE = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t", "name": "w", "input": {}}],
}
_ANTHROPIC_RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}],
}
_BEDROCK_USE = {
    "role": "assistant",
    "content": [{"toolUse": {"toolUseId": "t", "name": "w", "input": {}}}],
}
_BEDROCK_RESULT = {
    "role": "user",
    "content": [{"toolResult": {"toolUseId": "t", "content": [{"text": "r"}]}}],
}
_GEMINI_CALL = {"role": "model", "parts": [{"function_call": {"id": "f", "name": "w", "args": {}}}]}
_GEMINI_RESPONSE = {
    "role": "user",
    "parts": [{"function_response": {"id": "f", "name": "w", "response": {"output": "r"}}}],
}

_SHAPE_CASES: dict[str, tuple[list[Any], str, int, str]] = {
    "anthropic tool_result in an assistant message": (
        [_Q, _ANTHROPIC_USE, _ANTHROPIC_RESULT, {**_ANTHROPIC_RESULT, "role": "assistant"}],
        "misplaced_block",
        3,
        "tool_result block in a assistant message",
    ),
    "anthropic tool_use in a user message": (
        [
            {**_ANTHROPIC_USE, "role": "user"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        ],
        "misplaced_block",
        0,
        "tool_use block in a user message",
    ),
    "anthropic tool_use without an id": (
        [_Q, {"role": "assistant", "content": [{"type": "tool_use", "name": "w", "input": {}}]}],
        "invalid_block",
        1,
        "tool_use block without an 'id'",
    ),
    "anthropic tool_result without a tool_use_id": (
        [
            _Q,
            _ANTHROPIC_USE,
            {"role": "user", "content": [{"type": "tool_result", "content": "r"}]},
        ],
        "invalid_block",
        2,
        "without a 'tool_use_id'",
    ),
    "gemini role assistant": (
        [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "assistant", "parts": [{"text": "a"}]},
        ],
        "unexpected_role",
        1,
        "role 'assistant'",
    ),
    "gemini function_response in a model content": (
        [
            {"role": "user", "parts": [{"text": "q"}]},
            _GEMINI_CALL,
            _GEMINI_RESPONSE,
            {**_GEMINI_RESPONSE, "role": "model"},
        ],
        "misplaced_block",
        3,
        "function_response in a 'model' content",
    ),
    "gemini function_call in a user content": (
        [{**_GEMINI_CALL, "role": "user"}, {"role": "model", "parts": [{"text": "a"}]}],
        "misplaced_block",
        0,
        "function_call in a 'user' content",
    ),
    "bedrock role model": (
        [
            {"role": "user", "content": [{"text": "q"}]},
            {"role": "model", "content": [{"text": "a"}]},
        ],
        "unexpected_role",
        1,
        "role 'model'",
    ),
    "bedrock toolResult in an assistant message": (
        [
            {"role": "user", "content": [{"text": "q"}]},
            _BEDROCK_USE,
            _BEDROCK_RESULT,
            {**_BEDROCK_RESULT, "role": "assistant"},
        ],
        "misplaced_block",
        3,
        "toolResult block in a assistant message",
    ),
    "bedrock block with two keys": (
        [
            {
                "role": "user",
                "content": [{"text": "q", "image": {"format": "png", "source": {"bytes": b""}}}],
            },
            {"role": "assistant", "content": [{"text": "a"}]},
        ],
        "invalid_block",
        0,
        "a Converse block holds exactly one",
    ),
    "responses arguments as a dict": (
        [
            _Q,
            {"type": "function_call", "call_id": "c", "name": "w", "arguments": {"a": 1}},
            {"type": "function_call_output", "call_id": "c", "output": "r"},
        ],
        "invalid_block",
        1,
        "'arguments' is a JSON string",
    ),
    "chat tool_calls a string": (
        [_Q, {"role": "assistant", "content": None, "tool_calls": "oops"}, _Q],
        "invalid_block",
        1,
        "'tool_calls' is a list of tool calls",
    ),
    "chat tool_calls [None]": (
        [_Q, {"role": "assistant", "content": None, "tool_calls": [None]}, _Q],
        "invalid_block",
        1,
        "tool_calls[0] is NoneType",
    ),
}


@pytest.mark.parametrize("case", list(_SHAPE_CASES))
def test_validate_reports_what_each_format_refuses_by_kind_and_index(case: str) -> None:
    """A role the format lacks, a block in a message of the wrong role, a malformed block:
    read as before (reduce does not refuse them), and validate() names each with its
    index; the valid neighbours of each case report nothing of the kind."""
    messages, kind, index, words = _SHAPE_CASES[case]
    reducer = MessageReducer()
    found = [p for p in reducer.validate(messages).problems if p.kind == kind]
    assert [p.index for p in found] == [index], (case, reducer.validate(messages).problems)
    assert words in found[0].detail, (case, found[0].detail)
    reducer.reduce(existing=messages)  # still read


def test_validate_finds_none_of_the_shape_kinds_in_valid_lists_of_every_format() -> None:
    """Well-formed tool loops in every format carry no shape problem."""
    elements = _tool_loop(2)
    for fmt in WIRE_FORMATS:
        messages, _ = render_dialogue(elements, fmt)
        kinds = {p.kind for p in MessageReducer().validate(messages).problems}
        assert not kinds & {"misplaced_block", "invalid_block", "unexpected_role"}, (fmt, kinds)


@pytest.mark.parametrize("first", ["system", "developer"])
def test_a_list_may_open_with_a_system_or_developer_message(first: str) -> None:
    messages = [{"role": first, "content": "be terse"}, _Q, {"role": "assistant", "content": "a"}]
    assert MessageReducer().validate(messages).problems == []
    opens_with_answer = [messages[0], {"role": "assistant", "content": "a"}, _Q]
    kinds = [p.kind for p in MessageReducer().validate(opens_with_answer).problems]
    assert kinds == [BAD_FIRST_MESSAGE]


# -- unknown block and item types --------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        {"type": "compaction", "content": "summary of earlier turns " * 20},
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srv1",
            "content": {"type": "advisor_result", "text": "x " * 50},
        },
    ],
)
def test_an_unknown_anthropic_block_is_carried_as_opaque_content(block: dict[str, Any]) -> None:
    """A block type the reader does not know (a new or beta one) neither makes the list
    look mixed nor is lost: the list reads as Anthropic, the block counts as its JSON and
    leaves only with its message."""
    messages = [
        _Q,
        _ANTHROPIC_USE,
        _ANTHROPIC_RESULT,
        {"role": "assistant", "content": [block, {"type": "text", "text": "a"}]},
        {"role": "user", "content": "next"},
    ]
    assert detect(messages).name == "anthropic"
    reducer = MessageReducer(config=ReducerConfig(max_messages=3, min_messages=1))
    without = {"role": "assistant", "content": [{"type": "text", "text": "a"}]}
    assert reducer.count_tokens(messages[3]) > reducer.count_tokens(without) + 20
    result = reducer.reduce(existing=messages)
    assert messages[3] in result.surviving + result.pruned
    assert MessageReducer().validate(messages).problems == []


def test_an_unknown_responses_item_type_is_kept_and_counted() -> None:
    item = {"type": "new_item_kind", "id": "x1", "payload": "word " * 200}
    messages = [
        _Q,
        {"type": "function_call", "call_id": "c", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "r"},
        item,
        {"role": "user", "content": "next"},
    ]
    assert detect(messages).name == "responses"
    reducer = MessageReducer(config=ReducerConfig(max_messages=2, min_messages=1))
    assert reducer.count_tokens(item) > 100
    result = reducer.reduce(existing=messages)
    assert item in result.surviving  # an unknown item is never pruned on its own


def test_an_error_about_a_dict_names_its_role_when_it_has_one() -> None:
    messages = [{"role": "user", "parts": "q"}, {"role": "model", "parts": [{"text": "a"}]}]
    with pytest.raises(TypeError) as caught:
        MessageReducer(config=ReducerConfig(max_messages=1, min_messages=1)).reduce(
            existing=messages
        )
    text = str(caught.value)
    assert "role 'user'" in text and "'parts' is a list" in text
    assert "without a string 'role'" not in text


@pytest.mark.parametrize("fmt", _THINKING_FORMATS)
def test_an_answered_turns_thinking_step_may_go_with_the_rest_of_its_loop(fmt: str) -> None:
    """Once the newest turn ends with its answer it is an earlier turn for the next call,
    so its thinking step is pruned like any other (and validate() asks nothing of it)."""
    elements = [*_thinking_loop(), Element("reply", text="all sunny")]
    messages, owners = render_dialogue(elements, fmt)
    reducer = MessageReducer(config=ReducerConfig(max_tokens=80, preserve_first=False))
    result = reducer.reduce(existing=messages)
    alive = {id(m) for m in result.surviving}
    kept = {owners[i] for i, m in enumerate(messages) if id(m) in alive}
    assert 3 not in kept and 4 not in kept, (fmt, sorted(kept))
    assert TURN_WITHOUT_THINKING not in {
        p.kind for p in reducer.validate(result.surviving).problems
    }


@pytest.mark.parametrize("counter", ["estimate", "approximate", "cl100k_base"])
def test_openai_sdk_tool_call_objects_count_as_their_dicts(counter: str) -> None:
    """The OpenAI SDK's ``ChatCompletionMessage``, and a Chat dict holding its
    ``ChatCompletionMessageToolCall`` objects (``{"role": "assistant", "tool_calls":
    message.tool_calls}``), count each call's name and arguments as the same message as
    plain dicts does: they were read as ``('', '')``, so a budget of 2,000 kept ten
    write-file calls of 7,600 tokens; with ``"approximate"`` the empty arguments were
    refused as not JSON."""
    from openai.types.chat import ChatCompletionMessage

    arguments = json.dumps({"path": "a.py", "text": "def f(x):\n    return x * 2\n" * 60})
    plain = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "write_file", "arguments": arguments},
            }
        ],
    }
    sdk = ChatCompletionMessage.model_validate(plain)
    holding = {"role": "assistant", "content": None, "tool_calls": sdk.tool_calls}
    count = resolve_token_counter(counter)
    assert count(sdk) == count(holding) == count(plain) > 400
    question = {"role": "user", "content": "write it"}
    answer = {"role": "tool", "tool_call_id": "call_1", "content": "written"}
    reducer = MessageReducer(config=ReducerConfig(max_tokens=300, token_counter=counter))
    for message in (sdk, holding):
        result = reducer.with_config().reduce([question, message, answer])
        assert (
            result.tokens_before
            == reducer.with_config().reduce([question, plain, answer]).tokens_before
        )
        assert result.tokens_before > 300


def test_approximate_counts_anthropic_sdk_blocks_appended_in_a_dict() -> None:
    """``{"role": "assistant", "content": response.content}`` with the Anthropic SDK's
    ``TextBlock`` objects (a text-only answer reads as Chat) is counted by
    ``token_counter="approximate"`` as its text (LangChain's validation refused the
    objects), near the same dict with plain blocks."""
    from anthropic.types import TextBlock

    text = "It is raining in Oslo today. " * 40
    reducer = MessageReducer(config=ReducerConfig(max_tokens=10_000, token_counter="approximate"))
    question = {"role": "user", "content": "weather?"}
    blocks = reducer.reduce(
        [question, {"role": "assistant", "content": [TextBlock(type="text", text=text)]}]
    )
    plain = reducer.with_config().reduce(
        [question, {"role": "assistant", "content": [{"type": "text", "text": text}]}]
    )
    assert blocks.tokens_before == plain.tokens_before > 200


def test_approximate_counts_a_tool_call_message_without_content() -> None:
    """OpenAI takes an assistant message of tool calls without a ``content`` key (what the
    SDK's ``model_dump(exclude_none=True)`` gives); ``"approximate"`` counts it as the same
    message with empty content (LangChain's conversion required the key)."""
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=10_000, token_counter="approximate"))
    question = {"role": "user", "content": "q"}
    without = reducer.reduce([question, {"role": "assistant", "tool_calls": calls}])
    empty = reducer.with_config().reduce(
        [question, {"role": "assistant", "content": "", "tool_calls": calls}]
    )
    assert without.tokens_before == empty.tokens_before


@pytest.mark.parametrize("kind", ["response", "candidate", "part", "usage", "tool"])
def test_a_google_genai_object_that_is_not_a_content_is_refused_by_position(kind: str) -> None:
    """In a list of google-genai contents, a whole ``GenerateContentResponse`` (a common
    slip), a ``Candidate``, a ``Part``, usage metadata or a ``Tool`` is refused naming its
    position and what to append instead; it was read as a user turn, counted and kept."""
    from google.genai import types as gt

    def content(role: str, text: str) -> Any:
        return gt.Content(role=role, parts=[gt.Part(text=text)])

    answer = content("model", "It rains in Oslo.")
    junk = {
        "response": gt.GenerateContentResponse(candidates=[gt.Candidate(content=answer)]),
        "candidate": gt.Candidate(content=answer),
        "part": gt.Part(text="hi"),
        "usage": gt.GenerateContentResponseUsageMetadata(prompt_token_count=10),
        "tool": gt.Tool(function_declarations=[gt.FunctionDeclaration(name="f")]),
    }[kind]
    history = [content("user", "Weather in Oslo?"), answer]
    with pytest.raises(
        TypeError, match=r"(?s)new\[0\]: got .*expected a message: a Gemini content"
    ):
        MessageReducer().reduce(history, [junk])
    with pytest.raises(
        TypeError, match=r"(?s)messages\[2\]: got .*response\.candidates\[0\]\.content"
    ):
        MessageReducer().validate([*history, junk])


def test_sdk_content_blocks_appended_as_messages_are_refused_by_position() -> None:
    """``messages.extend(response.content)`` (the Anthropic SDK's blocks as list entries)
    and an OpenAI SDK content part (a Responses ``output_text``) are refused,
    naming the position and what to append; a ``TextBlock`` was read as a message of role
    ``text``, never pruned, so a count window of 4 held 12 entries after ten turns."""
    from anthropic.types import TextBlock, ToolUseBlock
    from openai.types.responses import ResponseOutputText

    question = {"role": "user", "content": "weather?"}
    for entry in (
        TextBlock(type="text", text="It rains."),
        ToolUseBlock(type="tool_use", id="t1", name="weather", input={}),
        ResponseOutputText(type="output_text", text="It rains.", annotations=[]),
    ):
        with pytest.raises(
            TypeError,
            match=r"new\[0\]: got .*a content block or definition from the (anthropic|openai) SDK",
        ):
            MessageReducer(config=ReducerConfig(min_messages=2, max_messages=4)).reduce(
                [question], [entry]
            )
    # The message that holds them is read as it came.
    answer = {"role": "assistant", "content": [TextBlock(type="text", text="It rains.")]}
    kept = MessageReducer(config=ReducerConfig(min_messages=2, max_messages=4)).reduce(
        [question], [answer]
    )
    assert kept.surviving == [question, answer]

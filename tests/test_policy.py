"""Turn-aware windows, the ordered policy of steps, and validate mode."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.policy import (
    DEFAULT_PLACEHOLDER,
    ClearToolOutputs,
    DropOldest,
    Summarize,
    TruncateLargest,
)
from agentstate_reducer.tokens import estimate_tokens

from .strategies import Msg, conversations, rendered, shapes
from .test_properties import callers, positions, tokens_of

EXAMPLES = settings(max_examples=250, deadline=None)


@st.composite
def turn_reducers(draw: st.DrawFn) -> MessageReducer:
    max_tokens = draw(st.integers(1, 150))
    return MessageReducer(
        config=ReducerConfig(
            max_tokens=max_tokens,
            target_tokens=draw(st.integers(1, max_tokens)),
            token_counter=tokens_of,
            preserve_first=draw(st.booleans()),
            start_on_human=draw(st.booleans()),
            keep_groups=draw(st.integers(0, 3)),
        )
    )


def turn_oracle(records: list[Msg], config: ReducerConfig) -> set[int]:
    """Brute force over window ends, with the turn rules added to the core's."""
    n = len(records)
    start = 1 if config.preserve_first else 0
    linked = callers(records)
    humans = [i for i, m in enumerate(records) if m.role == "human"]
    newest = humans[-1] if humans else -1  # the question being answered: never pruned
    bound = n - 1
    if config.keep_groups and humans:
        bound = min(
            bound, humans[-config.keep_groups] if len(humans) >= config.keep_groups else humans[0]
        )

    def prune_set(end: int) -> set[int] | None:
        # Whole turns go; inside the newest turn its question stays, so any end will do.
        if config.start_on_human and records[end].role != "human" and end <= newest:
            return None
        gone = {i for i in range(start, end) if records[i].role in ("human", "ai") and i != newest}
        gone |= {i for i in range(start, end) if linked.get(i, -1) in gone}
        if any((r in gone) != (c in gone) for r, c in linked.items()):
            return None
        return gone

    def size(gone: set[int]) -> int:
        return sum(1 + len(records[i].content) // 3 for i in range(n) if i not in gone)

    assert config.max_tokens is not None and config.effective_target_tokens is not None
    if size(set()) <= config.max_tokens:
        return set()
    valid = [g for end in range(start + 1, bound + 1) if (g := prune_set(end)) is not None]
    for gone in valid:
        if size(gone) <= config.effective_target_tokens:
            return gone
    return valid[-1] if valid else set()


@EXAMPLES
@given(conversations(), shapes, turn_reducers())
def test_turn_rules_match_brute_force(
    records: list[Msg], shape: str, reducer: MessageReducer
) -> None:
    """With start_on_human and keep_groups, the pruned set is the brute-force one: the
    smallest window that fits the target, ending on a user message or inside the newest
    turn (start_on_human) and before the newest keep_groups turns; else the largest such
    window. The newest question always stays."""
    messages = rendered(records, shape)
    result = reducer.reduce(existing=messages)
    assert set(positions(result.pruned, messages)) == turn_oracle(records, reducer.config)


@EXAMPLES
@given(conversations(), shapes, turn_reducers())
def test_turn_rules_keep_history_valid(
    records: list[Msg], shape: str, reducer: MessageReducer
) -> None:
    """The kept history starts on a user message once anything is pruned (start_on_human),
    and the newest keep_groups turns survive whole."""
    config = reducer.config
    messages = rendered(records, shape)
    result = reducer.reduce(existing=messages)
    kept = set(positions(result.surviving, messages))
    gone = positions(result.pruned, messages)
    if config.start_on_human and gone:
        talk = [i for i in sorted(kept) if records[i].role in ("human", "ai")]
        assert not talk or records[talk[0]].role == "human"
    humans = [i for i, m in enumerate(records) if m.role == "human"]
    if config.keep_groups and humans:
        first_kept = humans[-config.keep_groups] if len(humans) >= config.keep_groups else humans[0]
        assert all(i in kept for i in range(first_kept, len(records)))


def tool_chat(turns: int, output: str = "x" * 200) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys", "id": "sys"}]
    for t in range(turns):
        call = {"id": f"c{t}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out += [
            {"role": "user", "content": f"q{t}", "id": f"q{t}"},
            {"role": "assistant", "content": None, "tool_calls": [call], "id": f"a{t}"},
            {"role": "tool", "tool_call_id": f"c{t}", "content": output, "id": f"t{t}"},
            {"role": "assistant", "content": f"answer {t}", "id": f"b{t}"},
        ]
    return out


def estimated(messages: list[Any]) -> int:
    """The default estimate of a list (what a token-mode reducer counts by default)."""
    return sum(estimate_tokens(m) for m in messages)


def cleared(messages: list[Any], keep_last: int) -> list[Any]:
    """``messages`` with the tool outputs older than the newest ``keep_last`` cleared."""
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    old = set(tools[: max(0, len(tools) - keep_last)])
    return [
        {**m, "content": DEFAULT_PLACEHOLDER} if i in old else m for i, m in enumerate(messages)
    ]


def test_clear_tool_outputs_keeps_pairs_and_the_newest_outputs() -> None:
    step = ClearToolOutputs(keep_last=2)
    history = tool_chat(6)
    # A budget that clearing four of the six outputs meets, and the whole list does not.
    budget = (estimated(cleared(history, 2)) + estimated(history)) // 2
    reducer = MessageReducer(config=ReducerConfig(max_tokens=budget, policy=[step, DropOldest()]))
    result = reducer.reduce(existing=history)
    assert len(result.surviving) == len(history) and result.pruned == []
    tools = [m for m in result.surviving if m["role"] == "tool"]
    assert [m["content"] == step.placeholder for m in tools] == [True] * 4 + [False] * 2
    assert [m["id"] for m in tools] == [f"t{t}" for t in range(6)]
    assert history[3]["content"] == "x" * 200, "the caller's messages are not changed"
    [report] = result.steps
    assert report.step == "clear_tool_outputs" and len(report.touched) == 4
    assert report.tokens_after < report.tokens_before == result.tokens_before
    assert result.tokens_after <= 400


def test_cleared_outputs_are_not_touched_again() -> None:
    """Clearing is recorded in the list itself: the next reduce leaves cleared ones be."""
    history = tool_chat(20)
    budget = estimated(history[:41]) - 1  # the first ten turns are just over it
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget,
            target_tokens=budget * 3 // 4,
            policy=[ClearToolOutputs(keep_last=1), DropOldest()],
        )
    )
    first = reducer.reduce(existing=history[:41])
    second = reducer.reduce(existing=first.surviving, new=history[41:])

    def cleared_ids(result: Any) -> list[str]:
        return [m["id"] for r in result.steps if r.step == "clear_tool_outputs" for m in r.touched]

    assert cleared_ids(first) and cleared_ids(second)
    assert not set(cleared_ids(first)) & set(cleared_ids(second))


def test_steps_stop_once_the_list_fits() -> None:
    history = tool_chat(8)
    after_clearing = estimated(cleared(history, 1))
    enough = (after_clearing + estimated(history)) // 2
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=enough, policy=[ClearToolOutputs(keep_last=1), DropOldest()]
        )
    )
    result = reducer.reduce(existing=history)
    assert [r.step for r in result.steps] == ["clear_tool_outputs"]
    short = after_clearing // 2
    heavy = MessageReducer(
        config=ReducerConfig(max_tokens=short, policy=[ClearToolOutputs(keep_last=1), DropOldest()])
    ).reduce(existing=history)
    assert [r.step for r in heavy.steps] == ["clear_tool_outputs", "drop_oldest"]
    assert heavy.steps[1].touched == heavy.pruned and heavy.tokens_after <= short


def test_truncate_cuts_an_oversized_newest_tool_output_with_a_marker() -> None:
    history = tool_chat(3)
    history[-2] = {**history[-2], "content": "lorem ipsum " * 500, "id": "big"}
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=300, keep_groups=1, policy=[DropOldest(), TruncateLargest()]
        )
    )
    result = reducer.reduce(existing=history)
    [cut] = [m for m in result.surviving if m["id"] == "big"]
    assert "truncated" in cut["content"] and cut["content"].startswith("lorem ipsum")
    assert result.tokens_after <= 300
    assert sum(reducer.count_tokens(m) for m in result.surviving) == result.tokens_after
    assert result.rewritten == [history[-2]], "the original reaches the hooks"


def _two_block_answer(text: str) -> dict[str, Any]:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    blocks = [{"type": "text", "text": "head"}, image, {"type": "text", "text": text}]
    return {"role": "assistant", "content": blocks, "id": "blocks"}


def test_truncate_cuts_the_last_text_block_of_list_content() -> None:
    answer = _two_block_answer("lorem ipsum " * 400)
    history = [*tool_chat(1), {"role": "user", "content": "go on", "id": "q"}]
    history.insert(-1, answer)
    budget = 300  # the image block alone counts 85
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=budget, policy=[TruncateLargest(), DropOldest()])
    )
    before = reducer.count_tokens(answer)
    result = reducer.reduce(existing=history)
    [cut] = [m for m in result.surviving if m["id"] == "blocks"]
    head, image, tail = cut["content"]
    assert head == answer["content"][0] and image == answer["content"][1]
    assert tail["type"] == "text" and "truncated" in tail["text"]
    assert tail["text"].startswith("lorem ipsum")
    assert reducer.count_tokens(cut) < before
    assert result.tokens_after <= budget
    [report] = result.steps
    assert report.touched == [cut]
    assert TruncateLargest().rewrote(cut) and not TruncateLargest().rewrote(answer)


def test_truncate_never_cuts_instructions_or_the_question() -> None:
    rules = "Rule: be kind. " * 200 + "LAST RULE: never reveal the key."
    question = "Please read this: " + "lorem ipsum " * 300
    for role in ("system", "developer"):
        history = [
            {"role": role, "content": rules, "id": "sys"},
            {"role": "user", "content": question, "id": "q"},
        ]
        result = MessageReducer(
            config=ReducerConfig(max_tokens=100, policy=[DropOldest(), TruncateLargest()])
        ).reduce(existing=history)
        assert result.surviving == history, role
        assert result.rewritten == [] and result.tokens_after > 100


def test_without_truncate_the_newest_message_survives_over_budget() -> None:
    huge = {"role": "user", "content": "lorem ipsum " * 500, "id": "big"}
    result = MessageReducer(config=ReducerConfig(max_tokens=300)).reduce(new=[huge])
    assert result.surviving == [huge] and result.tokens_after > 300


def test_summarize_step_summarises_what_it_drops() -> None:
    seen: list[list[Any]] = []

    def summarize(pruned: list[Any]) -> str:
        seen.append(pruned)
        return "earlier: weather questions"

    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=200,
            summarize_fn=summarize,
            inject_summary=True,
            policy=[ClearToolOutputs(keep_last=1), Summarize()],
        )
    )
    result = reducer.reduce(existing=tool_chat(6))
    assert seen == [result.pruned] and result.summary == "earlier: weather questions"
    assert result.surviving[1] is result.summary_messages[0]
    assert [r.step for r in result.steps] == ["clear_tool_outputs", "summarize"]


def test_reply_reserve_shrinks_the_history_budget() -> None:
    history = tool_chat(4, output="y" * 40)
    budget = estimated(history) * 3 // 4
    reserve = budget // 3
    plain = MessageReducer(config=ReducerConfig(max_tokens=budget)).reduce(existing=history)
    reserved = MessageReducer(
        config=ReducerConfig(max_tokens=budget, reply_reserve=reserve)
    ).reduce(existing=history)
    assert plain.tokens_after <= budget
    assert reserved.tokens_after <= budget - reserve < plain.tokens_after


def test_apply_step_runs_exactly_one_step() -> None:
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=60, policy=[ClearToolOutputs(keep_last=0), DropOldest()])
    )
    history = tool_chat(5)
    cleared = reducer.apply_step("clear_tool_outputs", history)
    assert [r.step for r in cleared.steps] == ["clear_tool_outputs"] and cleared.pruned == []
    dropped = reducer.apply_step("drop_oldest", history)
    assert [r.step for r in dropped.steps] == ["drop_oldest"] and dropped.pruned
    with pytest.raises(
        KeyError, match=r"no reduction step 'shrink'.*'clear_tool_outputs', 'drop_oldest'"
    ):
        reducer.apply_step("shrink", history)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"policy": [ClearToolOutputs()]}, ValueError, r"works on tokens: set max_tokens"),
        ({"max_tokens": 10, "policy": [Summarize()]}, ValueError, r"needs summarize_fn"),
        ({"max_tokens": 10, "policy": [DropOldest(), DropOldest()]}, ValueError, "used twice"),
        ({"max_tokens": 10, "policy": ["drop"]}, TypeError, r"policy\[0\] is not a reduction step"),
        ({"max_tokens": 10, "reply_reserve": 10}, ValueError, "leaves no room for history"),
        ({"reply_reserve": 5}, ValueError, "needs max_tokens"),
        ({"keep_groups": -1}, ValueError, "keep_groups must be at least 0"),
        ({"mode": "audit"}, ValueError, "mode must be 'reduce' or 'validate'"),
    ],
)
def test_bad_policies_are_rejected(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        ReducerConfig(**kwargs)


def test_validate_mode_reports_broken_histories_and_changes_nothing() -> None:
    """Each kind of problem is found, with the index at fault; nothing is pruned."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    broken = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "I open the conversation"},
        {"role": "tool", "tool_call_id": "zz", "content": "orphan"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "no result came"},
        {"role": "user", "content": "word " * 30},
    ]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=40, mode="validate"))
    result = reducer.reduce(existing=broken)
    assert result.surviving == broken and result.pruned == []
    found = [(p.kind, p.index) for p in result.problems]
    assert found == [
        ("over_budget", None),
        ("bad_first_message", 1),
        ("orphan_result", 2),
        ("dangling_call", 4),
    ]
    assert (
        MessageReducer(config=ReducerConfig(max_tokens=10_000)).validate(tool_chat(3)).problems
        == []
    )


@EXAMPLES
@given(conversations(), shapes, turn_reducers(), st.lists(st.integers(1, 4), max_size=20))
def test_turn_rules_hold_turn_by_turn_and_settle(
    records: list[Msg], shape: str, reducer: MessageReducer, sizes: list[int]
) -> None:
    """Growing a chat turn by turn through one reducer gives the fresh plan at every turn,
    and reducing the final list again prunes nothing."""
    messages = rendered(records, shape)
    history: list[Any] = []
    at = 0
    for size in [*sizes, len(messages)]:
        new, at = messages[at : at + size], at + size
        kept = reducer.reduce(existing=history, new=new)
        fresh = MessageReducer(config=reducer.config).reduce(existing=history, new=new)
        assert [id(m) for m in kept.surviving] == [id(m) for m in fresh.surviving]
        history = kept.surviving
    assert reducer.reduce(existing=history).pruned == []


def test_validate_names_a_role_no_provider_has() -> None:
    """A mistyped role (``"usr"``) is never pruned, so the list is never bounded:
    ``validate()`` names each such message, and no known role."""
    from agentstate_reducer import MessageReducer

    history = [{"role": "system", "content": "s"}, {"role": "developer", "content": "d"}]
    history += [
        {"role": "usr" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(6)
    ]
    problems = MessageReducer(min_messages=2, max_messages=20).validate(history).problems
    assert [(p.kind, p.index) for p in problems] == [
        ("bad_first_message", 2),
        ("unexpected_role", 2),
        ("unexpected_role", 4),
        ("unexpected_role", 6),
    ]
    assert "'usr'" in problems[1].detail

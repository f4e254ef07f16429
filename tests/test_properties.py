"""The reducer's invariants, over random tool-calling conversations (tool calls and legacy
function calls) in every message shape."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig

from .strategies import Msg, callers, conversations, rendered, shapes

EXAMPLES = settings(max_examples=250, deadline=None)


def tokens_of(msg: Any) -> int:
    """A deterministic per-message counter that works on every shape."""
    from agentstate_reducer.messages import content_of

    content = content_of(msg)
    return 1 + len(content or "") // 3


@st.composite
def reducers(draw: st.DrawFn) -> MessageReducer:
    """Count-mode or token-mode reducers with random limits and switches."""
    preserve_first = draw(st.booleans())
    if draw(st.booleans()):
        max_messages = draw(st.integers(1, 25))
        min_messages = draw(st.integers(0, max_messages))
        config = ReducerConfig(
            min_messages=min_messages, max_messages=max_messages, preserve_first=preserve_first
        )
    else:
        max_tokens = draw(st.integers(1, 120))
        target = draw(st.integers(1, max_tokens))
        config = ReducerConfig(
            max_tokens=max_tokens,
            target_tokens=target,
            token_counter=tokens_of,
            preserve_first=preserve_first,
        )
    return MessageReducer(config=config)


def positions(result_part: list[Any], given: list[Any]) -> list[int]:
    where = {id(m): i for i, m in enumerate(given)}
    return [where[id(m)] for m in result_part]


def split(records: list[Msg], shape: str, reducer: MessageReducer, cut: int):
    messages = rendered(records, shape)
    result = reducer.reduce(existing=messages[:cut], new=messages[cut:])
    return messages, result


@EXAMPLES
@given(conversations(), shapes, reducers(), st.data())
def test_surviving_plus_pruned_is_exactly_the_input(records, shape, reducer, data):
    """surviving + pruned hold every input object exactly once, each in input order."""
    cut = data.draw(st.integers(0, len(records)))
    messages, result = split(records, shape, reducer, cut)
    kept = positions(result.surviving, messages)
    gone = positions(result.pruned, messages)
    assert kept == sorted(kept) and gone == sorted(gone)
    assert sorted(kept + gone) == list(range(len(messages)))
    assert all(a is messages[i] for a, i in zip(result.surviving, kept, strict=True))


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_tool_pairs_stay_whole(records, shape, reducer):
    """With cascade on, no result (tool or legacy function) survives without its call, no
    call without all its results."""
    messages, result = split(records, shape, reducer, len(records))
    kept = set(positions(result.surviving, messages))
    for result_at, call_at in callers(records).items():
        assert (result_at in kept) == (call_at in kept), (result_at, call_at)


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_only_human_and_ai_are_pruned_directly(records, shape, reducer):
    """system and unknown roles are never pruned; tool and function results only with
    their call (a function result that answers no call stays)."""
    messages, result = split(records, shape, reducer, len(records))
    linked = callers(records)
    for at in positions(result.pruned, messages):
        role = records[at].role
        assert role in ("human", "ai") or (role in ("tool", "function") and at in linked), role


def protocol_problems(messages: list[Any]) -> set[tuple[str, int]]:
    """``(kind, id(message))`` of each orphan result and dangling call ``validate`` finds."""
    from agentstate_reducer.validate import DANGLING_CALL, ORPHAN_RESULT

    problems = MessageReducer().validate(messages).problems
    return {
        (p.kind, id(messages[p.index]))
        for p in problems
        if p.kind in (ORPHAN_RESULT, DANGLING_CALL) and p.index is not None
    }


@EXAMPLES
@given(conversations(strays=False), shapes, reducers())
def test_a_valid_history_is_reduced_to_a_valid_one(records, shape, reducer):
    """A history where every call is followed by its results has no orphan result and no
    dangling call, and neither do its survivors."""
    messages, result = split(records, shape, reducer, len(records))
    assert protocol_problems(messages) == set()
    assert protocol_problems(result.surviving) == set()


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_reducing_adds_no_protocol_problem(records, shape, reducer):
    """Every orphan result and dangling call among the survivors was one in the input
    (a function result that answers nothing, a function call without its result): pruning
    never splits a call from its results."""
    messages, result = split(records, shape, reducer, len(records))
    assert protocol_problems(result.surviving) <= protocol_problems(messages)


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_newest_and_preserved_first_survive(records, shape, reducer):
    """The newest message and the newest human message (the question being answered)
    always survive; index 0 survives when preserve_first is on."""
    messages, result = split(records, shape, reducer, len(records))
    if messages:
        assert result.surviving and result.surviving[-1] is messages[-1]
        if reducer.config.preserve_first:
            assert result.surviving[0] is messages[0]
        humans = [i for i, m in enumerate(records) if m.role == "human"]
        if humans:
            assert any(m is messages[humans[-1]] for m in result.surviving)


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_count_mode_keeps_the_newest_min_messages(records, shape, reducer):
    """Count mode: nothing goes at or under max_messages; above it the newest min survive."""
    config = reducer.config
    messages, result = split(records, shape, reducer, len(records))
    if config.token_mode:
        return
    assert config.max_messages is not None
    if len(messages) <= config.max_messages:
        assert result.pruned == []
    else:
        tail = messages[len(messages) - config.min_messages :] if config.min_messages else []
        kept = {id(m) for m in result.surviving}
        assert all(id(m) in kept for m in tail)


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_reducing_a_reduced_list_prunes_nothing(records, shape, reducer):
    """A second reduce of the survivors, with nothing new, prunes nothing."""
    _, first = split(records, shape, reducer, len(records))
    again = reducer.reduce(existing=first.surviving)
    assert again.pruned == []
    assert all(a is b for a, b in zip(again.surviving, first.surviving, strict=True))


def oracle(records: list[Msg], config: ReducerConfig) -> set[int]:
    """The pruned positions, found by brute force over every window end (O(n^2))."""
    n = len(records)
    start = 1 if config.preserve_first else 0
    linked = callers(records)

    humans = [i for i, m in enumerate(records) if m.role == "human"]
    newest = humans[-1] if humans else -1  # the question being answered: never pruned

    def prune_set(end: int) -> set[int] | None:
        gone = {i for i in range(start, end) if records[i].role in ("human", "ai") and i != newest}
        gone |= {i for i in range(start, end) if linked.get(i, -1) in gone}
        for result_at, call_at in linked.items():
            if (result_at in gone) != (call_at in gone):
                return None
        return gone

    def size(gone: set[int]) -> int:
        return sum(1 + len(records[i].content) // 3 for i in range(n) if i not in gone)

    valid = [(end, g) for end in range(start + 1, n) if (g := prune_set(end)) is not None]
    if config.token_mode:
        assert config.max_tokens is not None and config.effective_target_tokens is not None
        if size(set()) <= config.max_tokens:
            return set()
        for _end, gone in valid:
            if size(gone) <= config.effective_target_tokens:
                return gone
        return valid[-1][1] if valid else set()
    assert config.max_messages is not None
    if n <= config.max_messages:
        return set()
    limit = min(n - config.min_messages, n - 1)
    fitting = [g for end, g in valid if end <= limit]
    return fitting[-1] if fitting else set()


@EXAMPLES
@given(conversations(), shapes, reducers())
def test_plan_matches_brute_force(records, shape, reducer):
    """The pruned set is the one a brute-force search over all window ends picks.

    Count mode: the largest window ending at or before len - min_messages (and before the
    newest message) that splits no tool group; the newest human message inside it stays.
    Token mode: the smallest such window whose survivors fit target_tokens, else the
    largest one (so the result fits the target whenever that is possible without dropping
    the newest message, the newest question, or splitting a pair).
    """
    messages, result = split(records, shape, reducer, len(records))
    assert set(positions(result.pruned, messages)) == oracle(records, reducer.config)


@EXAMPLES
@given(conversations(), shapes, st.integers(1, 10), st.integers(0, 10))
def test_cascade_off_prunes_only_human_and_ai(records, shape, max_messages, min_messages):
    """With cascade off, tool and function results are never pruned, even when their call
    is."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=min(min_messages, max_messages),
            max_messages=max_messages,
            cascade_tool_messages=False,
        )
    )
    messages, result = split(records, shape, reducer, len(records))
    assert all(records[i].role in ("human", "ai") for i in positions(result.pruned, messages))


def test_a_long_tool_loop_after_one_question_is_bounded() -> None:
    """One question followed by 30 tool calls and results (an autonomous run, a research
    agent): the older calls of the turn are pruned in whole pairs, the question stays,
    and the list ends within the bound with no provider-validity problem."""
    from agentstate_reducer.messages import view_of
    from agentstate_reducer.validate import find_problems

    history: list[Any] = [
        {"role": "system", "content": "sys", "id": "s"},
        {"role": "user", "content": "research this", "id": "q"},
    ]
    for n in range(30):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call], "id": f"a{n}"})
        history.append({"role": "tool", "tool_call_id": f"c{n}", "content": "r", "id": f"t{n}"})
    result = MessageReducer(min_messages=4, max_messages=8).reduce(existing=history)
    assert len(result.surviving) <= 8
    assert [m["id"] for m in result.surviving[:2]] == ["s", "q"]
    assert result.surviving[-1] is history[-1]
    assert not find_problems([view_of(m, f"[{i}]") for i, m in enumerate(result.surviving)])

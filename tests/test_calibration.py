"""Usage calibration: the count of a list anchored to the input tokens its provider reported.

Reports are read from every shape a response carries them in; the messages before the
newest reporting response count what it reported (the part beyond our count carried on its
own, or our counts scaled down), the rest are estimated; a report stays right after the
list it covers was pruned (first sight remembered) and in view mode (the view remembered);
``ReducerResult.calibration`` says which counts are which.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.tokens import Calibration, estimate_tokens, reported_input_tokens
from tests.strategies import conversations, rendered


def _usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}


def _chat(turns: int, *, usage: dict[int, int] | None = None) -> list[Any]:
    """A LangChain chat: system prompt, then question and answer per turn; ``usage`` maps a
    turn to the input tokens its answer reports."""
    history: list[Any] = [SystemMessage("You answer briefly.", id="sys")]
    for n in range(turns):
        history.append(HumanMessage(f"question {n}: " + "what about this " * 6, id=f"h{n}"))
        reported = (usage or {}).get(n)
        extra = {"usage_metadata": _usage(reported)} if reported else {}
        history.append(AIMessage(f"answer {n}: " + "it is so " * 6, id=f"a{n}", **extra))
    return history


def _estimate(messages: list[Any]) -> int:
    return sum(estimate_tokens(m) for m in messages)


# -- reading reports ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (AIMessage("hi", usage_metadata=_usage(120)), (120, "usage_metadata.input_tokens")),
        (
            {"type": "ai", "content": "hi", "usage_metadata": _usage(7)},
            (7, "usage_metadata.input_tokens"),
        ),
        (
            {"type": "ai", "data": {"content": "hi", "usage_metadata": _usage(9)}},
            (9, "usage_metadata.input_tokens"),
        ),
        (  # Anthropic Messages API: the cache's reads and writes are outside input_tokens
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "usage": {
                    "input_tokens": 10,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 200,
                    "output_tokens": 3,
                },
            },
            (1210, "usage.input_tokens"),
        ),
        (  # a fully cached Anthropic prompt reports 0 uncached input tokens
            {
                "role": "assistant",
                "content": "hi",
                "usage": {"input_tokens": 0, "cache_read_input_tokens": 50},
            },
            (50, "usage.input_tokens"),
        ),
        (  # the Responses API: input_tokens holds the cached part already
            SimpleNamespace(
                type="message",
                role="assistant",
                content="hi",
                usage=SimpleNamespace(
                    input_tokens=300, input_tokens_details={"cached_tokens": 100}
                ),
            ),
            (300, "usage.input_tokens"),
        ),
        (
            {
                "role": "assistant",
                "content": "hi",
                "usage": {"prompt_tokens": 42, "completion_tokens": 2},
            },
            (42, "usage.prompt_tokens"),
        ),
        (  # Gemini (google-genai, ADK): an object with prompt_token_count
            SimpleNamespace(
                role="model",
                content="hi",
                usage_metadata=SimpleNamespace(prompt_token_count=77, candidates_token_count=3),
            ),
            (77, "usage_metadata.prompt_token_count"),
        ),
    ],
)
def test_reports_are_read_from_every_shape_a_response_carries_them_in(
    message: Any, expected: tuple[int, str]
) -> None:
    """Each provider's field for its call's input tokens is read, cached parts included
    where the provider leaves them out of its main count."""
    assert tuple(reported_input_tokens(message)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "message",
    [
        AIMessage("no usage"),
        {"role": "assistant", "content": "hi", "usage": {"input_tokens": -3}},
        {"role": "assistant", "content": "hi", "usage": {"prompt_tokens": True}},
        {"role": "assistant", "content": "hi", "usage": {"prompt_tokens": "12"}},
        {"role": "assistant", "content": "hi", "usage": "lots"},
        {"role": "assistant", "content": "hi", "usage_metadata": {"input_tokens": 0}},
        None,
        42,
    ],
)
def test_what_is_not_a_positive_count_is_no_report(message: Any) -> None:
    """Malformed, zero, negative or boolean counts, and non-messages, give no report
    (a prompt always costs a token); nothing raises."""
    assert reported_input_tokens(message) is None


# -- calibrating -----------------------------------------------------------------------


def test_messages_before_the_report_count_what_it_reported_the_rest_are_estimated() -> None:
    """The newest reporting response anchors the count: the messages before it count its
    report, from it on our estimate; the result says which is which."""
    history = _chat(4)
    reported = _estimate(history[:8]) + 500  # the provider counted a system prompt outside
    history[8] = history[8].model_copy(update={"usage_metadata": _usage(reported)})
    history.append(HumanMessage("and now?", id="h-new"))
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100_000, calibrate=True))
    result = reducer.reduce(history)
    calibration = result.calibration
    assert calibration is not None
    assert calibration.anchor == 8 and calibration.reported == reported
    assert calibration.measured == reported and calibration.outside == 500
    assert calibration.estimated == _estimate(history[8:])
    assert result.tokens_before == reported + _estimate(history[8:])
    plain = MessageReducer(config=ReducerConfig(max_tokens=100_000)).reduce(history)
    assert plain.calibration is None and plain.tokens_before == _estimate(history)


def test_a_report_below_our_count_scales_the_measured_messages_down() -> None:
    """When the provider counts fewer tokens than we do, each measured message's count is
    scaled by reported / ours, adding up to the report exactly."""
    history = _chat(5)
    ours = _estimate(history[:10])
    history[10] = history[10].model_copy(update={"usage_metadata": _usage(ours // 2)})
    result = MessageReducer(config=ReducerConfig(max_tokens=100_000, calibrate=True)).reduce(
        history
    )
    calibration = result.calibration
    assert calibration is not None
    assert calibration.outside == 0 and calibration.scale == pytest.approx((ours // 2) / ours)
    assert calibration.measured == ours // 2
    assert result.tokens_before == ours // 2 + _estimate(history[10:])


def test_the_outside_part_stays_counted_after_pruning() -> None:
    """The part of the report beyond our count (a system prompt, tool schemas outside the
    list) is never pruned away: the list is pruned until it fits with it."""
    history = _chat(12)
    outside = 400
    history[-1] = history[-1].model_copy(
        update={"usage_metadata": _usage(_estimate(history[:-1]) + outside)}
    )
    history.append(HumanMessage("one more", id="h-last"))
    budget = _estimate(history) // 2 + outside
    reducer = MessageReducer(config=ReducerConfig(max_tokens=budget, calibrate=True))
    result = reducer.reduce(history)
    assert result.pruned
    assert result.tokens_after == _estimate(result.surviving) + outside
    assert result.tokens_after <= budget


def test_a_reduced_list_stays_put_when_its_report_covers_pruned_messages() -> None:
    """A report made before a prune covers messages that left: the next reduce counts
    them out (first sight remembered) instead of pruning again, and its count is the
    report less what left."""
    history = _chat(12)
    history[-1] = history[-1].model_copy(
        update={"usage_metadata": _usage(_estimate(history[:-1]) + 100)}
    )
    budget = _estimate(history) * 2 // 3
    reducer = MessageReducer(config=ReducerConfig(max_tokens=budget, calibrate=True))
    first = reducer.reduce(history)
    assert first.pruned
    again = MessageReducer(config=ReducerConfig(max_tokens=budget, calibrate=True))
    again._shown = reducer._shown  # the memory, without the plan cache
    second = again.reduce(first.surviving)
    assert second.pruned == []
    assert second.tokens_before == first.tokens_after
    calibration = second.calibration
    assert calibration is not None
    assert calibration.measured == calibration.reported - _estimate(first.pruned)


def test_a_view_is_what_the_next_report_is_counted_against() -> None:
    """In view mode the model saw the view, not the stored list: a report on its answer is
    counted against the view's count, so the stored list counts its own size."""
    stored = _chat(20)
    budget = _estimate(stored) // 3
    reducer = MessageReducer(config=ReducerConfig(max_tokens=budget, calibrate=True))
    view = reducer.view([*stored, HumanMessage("question now", id="q")])
    assert view.pruned
    shown = _estimate(view.surviving)
    answer = AIMessage("answer now", id="answer", usage_metadata=_usage(shown + 300))
    stored += [HumanMessage("question now", id="q"), answer, HumanMessage("next", id="q2")]
    second = reducer.view(stored)
    calibration = second.calibration
    assert calibration is not None
    assert calibration.shown == shown and calibration.outside == 300
    assert second.tokens_before == _estimate(stored) + 300
    assert second.tokens_after <= budget


def test_without_reports_calibration_changes_nothing() -> None:
    """A list with no reporting response counts as without calibration, and the result
    says nothing was calibrated."""
    history = _chat(6)
    on = MessageReducer(config=ReducerConfig(max_tokens=200, calibrate=True)).reduce(history)
    off = MessageReducer(config=ReducerConfig(max_tokens=200)).reduce(history)
    assert on.calibration is None
    assert (on.tokens_before, on.tokens_after, on.surviving) == (
        off.tokens_before,
        off.tokens_after,
        off.surviving,
    )


def test_calibrate_needs_token_mode() -> None:
    """``calibrate=True`` in count mode is refused, naming what to set."""
    with pytest.raises(ValueError, match="max_tokens"):
        ReducerConfig(max_messages=10, calibrate=True)
    with pytest.raises(TypeError, match="calibrate"):
        ReducerConfig(max_tokens=10, calibrate="yes")  # type: ignore[arg-type]


def test_a_report_in_a_tool_loop_calibrates_the_calls_and_results_after_it() -> None:
    """A tool-calling answer reports too: its results after it are estimated, the rest
    measured; plan, validate and view agree with reduce."""
    history = _chat(3)
    call = AIMessage(
        "",
        id="call",
        tool_calls=[{"id": "c1", "name": "search", "args": {"q": "x"}, "type": "tool_call"}],
        usage_metadata=_usage(_estimate(history) + 50),
    )
    history += [call, ToolMessage("result " * 30, tool_call_id="c1", id="t1")]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100_000, calibrate=True))
    expected = _estimate(history) + 50
    assert reducer.reduce(history).tokens_before == expected
    assert reducer.validate(history).tokens_before == expected
    assert reducer.view(history).tokens_before == expected
    planned = reducer.plan(history).calibration
    assert planned is not None and planned.anchor == len(history) - 2


@st.composite
def _reported_chats(draw: st.DrawFn) -> list[Any]:
    """A generated LangChain conversation whose ai messages report made-up input counts."""
    records = draw(conversations(max_turns=6))
    messages = rendered(records, "langchain")
    out = []
    for message in messages:
        if isinstance(message, AIMessage) and draw(st.booleans()):
            message = message.model_copy(
                update={"usage_metadata": _usage(draw(st.integers(1, 5_000)))}
            )
        out.append(message)
    return out


@settings(max_examples=150)
@given(chat=_reported_chats(), budget=st.integers(50, 3_000))
def test_calibrated_counts_add_up_and_a_reduced_list_stays_put(
    chat: list[Any], budget: int
) -> None:
    """For any conversation with reports: ``tokens_before`` is measured plus estimated, the
    measured part is the newest report when nothing left since, and reducing the reduced
    list again prunes nothing."""
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=budget, calibrate=True, preserve_first="system")
    )
    result = reducer.reduce(chat)
    calibration = result.calibration
    reporting = [i for i, m in enumerate(chat) if reported_input_tokens(m) is not None]
    if not reporting:
        assert calibration is None
    else:
        assert isinstance(calibration, Calibration)
        assert calibration.anchor == reporting[-1]
        assert calibration.measured == calibration.reported
        assert result.tokens_before == calibration.measured + calibration.estimated
    again = reducer.reduce(result.surviving)
    assert again.pruned == []
    assert again.tokens_before == result.tokens_after


@settings(max_examples=80)
@given(chat=_reported_chats())
def test_a_growing_chat_counts_as_a_fresh_reduce_of_the_whole_list(chat: list[Any]) -> None:
    """Calibration kept incrementally, message by message through one reducer, gives the
    count a fresh reducer gives the whole list (nothing pruned: a large budget)."""
    grown = MessageReducer(config=ReducerConfig(max_tokens=10**9, calibrate=True))
    history: list[Any] = []
    for message in chat:
        history = grown.reduce(history, [message]).surviving
    fresh = MessageReducer(config=ReducerConfig(max_tokens=10**9, calibrate=True))
    if chat:
        assert grown.reduce(history).tokens_before == fresh.reduce(chat).tokens_before

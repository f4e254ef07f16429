"""The pydantic-ai format (``agentstate_reducer.messages.pydantic_ai``) on pydantic-ai's own
message classes and on their serialised dicts: what each part is read as, what is written
back, and that pydantic-ai loads every list the reducer returns."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.messages import detect, parts_of, view_of
from agentstate_reducer.policy import DEFAULT_PLACEHOLDER, ClearToolOutputs, DropOldest


def conversation(turns: int) -> list[Any]:
    """A system prompt with the first question, then per turn two parallel calls, their
    results, an answer and the next question."""
    history: list[Any] = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart("question 0")])
    ]
    for n in range(turns):
        history += [
            ModelResponse(
                parts=[
                    ThinkingPart("let me add"),
                    ToolCallPart("add", {"a": n, "b": 1}, tool_call_id=f"c{n}a"),
                    ToolCallPart("add", '{"a": 1, "b": 2}', tool_call_id=f"c{n}b"),
                ]
            ),
            ModelRequest(
                parts=[
                    ToolReturnPart("add", f"{n + 1} " * 50, tool_call_id=f"c{n}a"),
                    ToolReturnPart("add", {"sum": 3}, tool_call_id=f"c{n}b"),
                ]
            ),
            ModelResponse(parts=[TextPart(f"answer {n}")]),
            ModelRequest(parts=[UserPromptPart(f"question {n + 1}")]),
        ]
    return history


def test_each_message_is_read_with_its_calls_results_and_what_counts() -> None:
    """The first request is the user's (its system prompt counts as text), a response's
    calls are its call ids, a request of results only is a result answering both calls,
    thinking and arguments count once, media count as images."""
    history = conversation(1)
    assert detect(history).name == "pydantic_ai"
    first, reply, results = (view_of(m, "m") for m in history[:3])
    assert first.role == "human" and not first.results_for
    assert reply.role == "ai" and reply.call_ids == ("c0a", "c0b")
    assert results.role == "tool" and results.results_for == ("c0a", "c0b")
    parts = parts_of(history[1])
    assert parts.texts == ["let me add"]
    assert parts.calls == [("add", '{"a":0,"b":1}'), ("add", '{"a": 1, "b": 2}')]
    assert parts_of(history[2]).texts == ["1 " * 50, '{"sum":3}']
    media = ModelRequest(
        parts=[
            UserPromptPart(
                [
                    "look",
                    ImageUrl(url="https://example.com/a.png"),
                    BinaryContent(data=b"x", media_type="image/png"),
                ]
            )
        ]
    )
    assert parts_of(media).images == 2 and parts_of(media).texts == ["look"]
    system_only = ModelRequest(parts=[SystemPromptPart("Be brief.")])
    assert view_of(system_only, "m").role == "system"
    both = ModelRequest(
        parts=[ToolReturnPart("add", "3", tool_call_id="c9"), UserPromptPart("and now?")]
    )
    assert view_of(both, "m").role == "human" and view_of(both, "m").results_for == ("c9",)


def test_pruning_keeps_pairs_alternation_and_the_first_request() -> None:
    """A count window over a long tool loop keeps the first request (system prompt and
    first question), leaves calls with their results and keeps requests and responses
    alternating; the result validates."""
    history = conversation(8)
    reducer = MessageReducer(min_messages=5, max_messages=9)
    kept = reducer.reduce(existing=history).surviving
    assert kept[0] is history[0] and kept[-1] is history[-1]
    assert [m.kind for m in kept] == ["request", "response"] * (len(kept) // 2) + ["request"]
    assert reducer.validate(kept).problems == []


def test_a_placeholder_goes_into_each_result_and_originals_stay() -> None:
    """``ClearToolOutputs`` writes its placeholder into the ``content`` of every
    ``ToolReturnPart`` of an old request, as a new message; the original is unchanged."""
    history = conversation(4)
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=700, policy=[ClearToolOutputs(keep_last=2), DropOldest()])
    )
    result = reducer.reduce(existing=history)
    assert result.rewritten, "nothing was cleared"
    for original in result.rewritten:
        copy = next(m for m in result.surviving if signature(m) == signature(original))
        assert copy is not original and isinstance(copy, ModelRequest)
        assert [p.content for p in copy.parts] == [DEFAULT_PLACEHOLDER] * 2
        assert [p.tool_call_id for p in copy.parts] == [p.tool_call_id for p in original.parts]
        assert original.parts[1].content == {"sum": 3}  # the original is untouched
    assert reducer.validate(result.surviving).problems == []


def signature(message: Any) -> tuple[Any, ...]:
    return (message.kind, tuple(getattr(p, "tool_call_id", None) for p in message.parts))


def test_serialised_dicts_are_read_written_and_loaded_back_by_pydantic_ai() -> None:
    """pydantic-ai's serialised form (``ModelMessagesTypeAdapter.dump_python``) is the same
    format: reduced with a summary, the list (summary block included, as dicts) loads back
    with ``ModelMessagesTypeAdapter`` and validates."""
    dumped = ModelMessagesTypeAdapter.dump_python(conversation(6), mode="json")
    assert detect(dumped).name == "pydantic_ai"
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=5,
            max_messages=9,
            summarize_fn=lambda pruned: f"{len(pruned)} messages",
            inject_summary=True,
        )
    )
    kept = reducer.reduce(existing=dumped).surviving
    assert all(isinstance(m, dict) for m in kept)
    block = kept[1]
    assert block["kind"] == "response" and block["metadata"] == {"agentstate_reducer": "summary"}
    loaded = ModelMessagesTypeAdapter.validate_python(kept)
    assert isinstance(loaded[1], ModelResponse)
    assert loaded[1].parts[0].content.startswith("Summary of the earlier conversation:")
    assert reducer.validate(loaded).problems == []


def test_a_list_mixing_pydantic_ai_and_chat_messages_is_refused() -> None:
    """A Chat dict among pydantic-ai messages is a TypeError naming both positions."""
    mixed = [*conversation(1), {"role": "user", "content": "hi"}]
    with pytest.raises(TypeError, match=r"existing\[5\].*pydantic-ai"):
        MessageReducer(min_messages=1, max_messages=2).reduce(existing=mixed)

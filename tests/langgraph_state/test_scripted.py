"""The scripted chat model and the validity checks the graph tests rely on."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tests.scripted_model import (
    ProviderRejectedError,
    ScriptedChatModel,
    add,
    provider_errors,
    tool_call,
)

from .validity import problems

CALL = AIMessage("", tool_calls=[{"name": "add", "args": {}, "id": "c1", "type": "tool_call"}])


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_script_is_replayed_in_order_and_calls_are_recorded(asynchronous: bool) -> None:
    """Strings, messages and callables answer in order; each call's input is recorded."""
    model = ScriptedChatModel(
        script=["one", AIMessage("two"), lambda messages: f"saw {len(messages)}"]
    )
    answers = []
    for n in range(3):
        history = [HumanMessage(str(i)) for i in range(n + 1)]
        reply = await model.ainvoke(history) if asynchronous else model.invoke(history)
        answers.append(reply.content)
    assert answers == ["one", "two", "saw 3"]
    assert [len(call) for call in model.calls] == [1, 2, 3]


def test_exhausted_script_raises_and_cycle_restarts() -> None:
    """Without cycle the script ends with an IndexError that says what to do."""
    model = ScriptedChatModel(script=["only"])
    model.invoke("hi")
    with pytest.raises(IndexError, match=r"exhausted after 1 calls.*cycle=True"):
        model.invoke("hi")
    looping = ScriptedChatModel(script=["a", "b"], cycle=True)
    assert [looping.invoke("x").content for _ in range(5)] == ["a", "b", "a", "b", "a"]


def test_tool_calls_get_fresh_unique_ids() -> None:
    """A reused tool-call step gets a new id each time, as a provider would give."""
    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2})], cycle=True)
    bound = model.bind_tools([add])
    first, second = bound.invoke("go"), bound.invoke("go")
    assert isinstance(first, AIMessage) and isinstance(second, AIMessage)
    assert first.tool_calls[0]["args"] == {"a": 1, "b": 2}
    assert first.tool_calls[0]["id"] != second.tool_calls[0]["id"]


def test_script_steps_are_checked() -> None:
    """A step that cannot answer is refused when the model is built."""
    with pytest.raises(ValueError, match=r"script\[1\] must be an AIMessage"):
        ScriptedChatModel(script=["ok", 42])


@pytest.mark.parametrize(
    ("messages", "text"),
    [
        ([HumanMessage("q"), ToolMessage("r", tool_call_id="x")], "does not answer a call"),
        ([HumanMessage("q"), CALL, HumanMessage("again")], "has no tool result"),
        ([HumanMessage("q"), CALL], "has no tool result before message 2"),
        ([HumanMessage("q"), SystemMessage("late")], "system message after"),
        ([SystemMessage("only")], "no message besides system messages"),
    ],
)
def test_strict_model_rejects_what_providers_reject(messages: list[Any], text: str) -> None:
    """Each provider rule, broken once, is reported and makes a strict model raise."""
    assert any(text in problem for problem in provider_errors(messages))
    with pytest.raises(ProviderRejectedError, match=text):
        ScriptedChatModel(script=["x"]).invoke(messages)
    assert ScriptedChatModel(script=["x"], strict=False).invoke(messages).content == "x"


def test_valid_lists_pass() -> None:
    """A system prompt, a question, a call, its result and an answer is accepted."""
    messages = [
        SystemMessage("s"),
        HumanMessage("q"),
        CALL,
        ToolMessage("2", tool_call_id="c1"),
        AIMessage("a"),
    ]
    assert provider_errors(messages) == []
    assert problems(messages, system_prompt="s", newest_human="q") == []


def test_validity_checks_prompt_newest_human_and_pending_calls() -> None:
    """The state checks: system prompt first, newest human present, a trailing call is
    only accepted while pending is allowed."""
    pending = [SystemMessage("s"), HumanMessage("q"), CALL]
    assert problems(pending) == []
    assert problems(pending, allow_pending=False)
    assert problems(pending, system_prompt="other") == [
        "the system prompt 'other' is not the first message"
    ]
    assert problems(pending, newest_human="newer") == [
        "the newest human message 'newer' is missing"
    ]

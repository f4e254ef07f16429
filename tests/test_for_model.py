"""``ReducerConfig.for_model``: a budget from the model's own window, counted as its provider
counts, calibrated to what its answers report.

Real LangChain chat model classes (``ChatOpenAI``, ``ChatAnthropic``: built offline, never
called), LangChain's fake chat model with and without a profile, and a real agent graph.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph.testing import ScriptedChatModel
from agentstate_reducer.tokens import model_token_counter, tiktoken_encoding


def _fake(profile: dict[str, Any] | None) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(()), profile=profile)


def test_an_openai_model_gets_its_window_its_encoding_and_calibration() -> None:
    """GPT-4o's profile gives the window (max_tokens = 3/4 of 128,000), its reply fits in
    the quarter left over (no reserve), it counts with o200k_base, calibrated."""
    langchain_openai = pytest.importorskip("langchain_openai")
    model = langchain_openai.ChatOpenAI(model="gpt-4o", api_key="sk-not-used")
    config = ReducerConfig.for_model(model)
    assert model.profile["max_input_tokens"] == 128_000
    assert config.max_tokens == 96_000 and config.reply_reserve == 0
    assert config.token_counter == "o200k_base" and config.calibrate is True


def test_an_older_openai_model_counts_with_cl100k_and_keeps_room_for_its_reply() -> None:
    """GPT-4 (8,192 tokens, replies up to 8,192) counts with cl100k_base; the reply's room
    beyond the quarter left over is reserved, at most half the budget."""
    langchain_openai = pytest.importorskip("langchain_openai")
    model = langchain_openai.ChatOpenAI(model="gpt-4", api_key="sk-not-used")
    window = model.profile["max_input_tokens"]
    output = model.profile["max_output_tokens"]
    config = ReducerConfig.for_model(model)
    assert config.token_counter == "cl100k_base"
    expected = min(max(0, output - (window - int(window * 0.75))), int(window * 0.75) // 2)
    assert config.reply_reserve == expected > 0


def test_an_anthropic_model_is_estimated_and_calibrated() -> None:
    """Claude's counter would call Anthropic's API: the estimate counts, calibrated to what
    the answers report; its 64,000-token replies get the room the window does not leave."""
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    model = langchain_anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-not-used")
    config = ReducerConfig.for_model(model, fraction=0.8)
    assert config.max_tokens == 160_000
    assert config.reply_reserve == 64_000 - 40_000
    assert config.token_counter is None and config.calibrate is True


def test_a_fake_model_with_a_profile_works_and_fields_pass_through() -> None:
    """Any LangChain chat model with a profile works; other fields go to the config, and
    reply_reserve, token_counter and calibrate can be set."""
    model = _fake({"max_input_tokens": 1_000, "max_output_tokens": 400})
    config = ReducerConfig.for_model(model, start_on_human=True, target_tokens=500)
    assert (config.max_tokens, config.reply_reserve, config.target_tokens) == (750, 150, 500)
    assert config.start_on_human and config.token_counter is None
    custom = ReducerConfig.for_model(
        model, reply_reserve=10, token_counter="approximate", calibrate=False
    )
    assert (custom.reply_reserve, custom.token_counter, custom.calibrate) == (
        10,
        "approximate",
        False,
    )


@pytest.mark.parametrize("profile", [None, {}, {"max_input_tokens": 0}, {"max_output_tokens": 9}])
def test_a_model_without_a_usable_profile_is_refused_naming_the_field(
    profile: dict[str, Any] | None,
) -> None:
    """No profile, or no positive max_input_tokens in it: a ValueError naming the field and
    the context_window= way out; with context_window the same model works."""
    model = _fake(profile)
    with pytest.raises(ValueError, match=r"max_input_tokens.*context_window="):
        ReducerConfig.for_model(model)
    assert ReducerConfig.for_model(model, context_window=2_000).max_tokens == 1_500


def test_context_window_works_for_any_model_even_a_name() -> None:
    """A model name (or any object) with context_window: an OpenAI name still gets its
    encoding; another vendor's the estimate."""
    gpt = ReducerConfig.for_model("gpt-4.1-mini", context_window=1_000_000, fraction=0.5)
    assert gpt.max_tokens == 500_000 and gpt.token_counter == "o200k_base"
    assert ReducerConfig.for_model("gemini-2.5-pro", context_window=10).token_counter is None
    assert ReducerConfig.for_model(object(), context_window=100).max_tokens == 75


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fraction": 0}, ValueError, "fraction"),
        ({"fraction": 1.5}, ValueError, "fraction"),
        ({"fraction": "half"}, TypeError, "fraction"),
        ({"context_window": 0}, ValueError, "context_window"),
        ({"context_window": 1.5}, TypeError, "context_window"),
        ({"reply_reserve": -1}, ValueError, "reply_reserve"),
        ({"max_tokens": 100}, ValueError, "max_tokens"),
        ({"max_messages": 100}, ValueError, "max_messages"),
    ],
)
def test_bad_arguments_are_named(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Wrong types are TypeErrors, impossible values ValueErrors, each naming the argument;
    a budget passed by hand is refused (for_model sets it from the window)."""
    model = _fake({"max_input_tokens": 1_000})
    with pytest.raises(error, match=match):
        ReducerConfig.for_model(model, **kwargs)


def test_the_encoding_is_the_estimate_when_tiktoken_files_are_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the [tokens] extra's files an OpenAI model falls back to the estimate (and
    calibration) rather than downloading an encoding."""
    import agentstate_reducer.tokens.encodings as encodings

    def missing(name: str) -> Any:
        raise ImportError(f"no {name} here")

    monkeypatch.setattr(encodings, "tiktoken_encoding", missing)
    assert model_token_counter("gpt-4o") is None


def _o200k(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> int:
    """Input tokens as an OpenAI-style provider counts them: o200k_base over every text,
    tool schemas included, 3 tokens of framing per message and 3 to prime the reply."""
    import json

    encoding = tiktoken_encoding("o200k_base")
    total = 3
    for message in messages:
        total += 3 + len(encoding.encode(str(message.content), disallowed_special=()))
        for call in getattr(message, "tool_calls", None) or []:
            total += len(encoding.encode(json.dumps(call["args"]) + call["name"]))
    for tool in tools:
        total += len(encoding.encode(json.dumps(tool)))
    return total


@pytest.mark.parametrize("calibrate", [True, False])
def test_an_agent_keeps_the_models_real_input_within_the_budget_only_when_calibrated(
    calibrate: bool,
) -> None:
    """A create_agent whose long system prompt lives outside the state: bounded by the list
    alone, the model's input (as the provider counts it) runs over the budget; calibrated
    to the answers' reports, every call after the first stays within it."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from agentstate_reducer.langgraph import ReducerMiddleware

    model = ScriptedChatModel(
        script=["Noted, " + "and more " * 10],
        cycle=True,
        input_tokens=_o200k,
        profile={"max_input_tokens": 2_000, "max_output_tokens": 100},
    )
    config = ReducerConfig.for_model(model, calibrate=calibrate, token_counter=None)
    budget = config.history_max_tokens
    assert budget is not None
    reducer = MessageReducer(config=config)
    system_prompt = "You are a careful assistant. " + "Follow every rule. " * 120
    agent = create_agent(
        model,
        tools=[],
        system_prompt=system_prompt,
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
    )
    run = {"configurable": {"thread_id": f"calibrated-{calibrate}"}}
    for n in range(25):
        agent.invoke({"messages": [("user", f"fact {n}: " + "some detail " * 12)]}, run)
    inputs = [_o200k(call, []) for call in model.calls[1:]]
    if calibrate:
        assert max(inputs) <= budget
    else:
        assert max(inputs) > budget

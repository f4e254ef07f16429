"""The LLM summarizer: prompts, budgets, retries, sync and async, in real agents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agentstate_reducer import MessageReducer, ReducerConfig, SummaryError
from agentstate_reducer.langgraph import (
    LLMSummarizer,
    ReducerMiddleware,
    ReducingCheckpointSaver,
)
from agentstate_reducer.langgraph.summarizers import transcript
from agentstate_reducer.messages import is_summary
from tests.langgraph_saver._graphs import agent_graph, config, ticks_while, turn
from tests.scripted_model import ScriptedChatModel, add, calculator_model

SYSTEM = "You add numbers."


class Echo:
    """A scripted summarizer model step that records each request and answers briefly."""

    def __init__(self) -> None:
        self.requests: list[list[BaseMessage]] = []

    def __call__(self, messages: list[BaseMessage]) -> str:
        self.requests.append(messages)
        return f"summary #{len(self.requests)}"


def _model(step: Any) -> ScriptedChatModel:
    return ScriptedChatModel(script=[step], cycle=True, strict=False)


def test_the_request_holds_the_previous_summary_and_the_new_turns() -> None:
    """The model gets the instructions as a system message and one human message with the
    previous summary and the new turns written out (tool calls and results included)."""
    echo = Echo()
    summarizer = LLMSummarizer(_model(echo), max_summary_tokens=100)
    prior = HumanMessage(
        "Summary of the earlier conversation:\nuser likes tea",
        additional_kwargs={"lc_source": "summarization"},
    )
    call = {"id": "c1", "name": "add", "args": {"a": 1, "b": 2}}
    pruned = [HumanMessage("1+2?"), AIMessage("", tool_calls=[call])]
    assert summarizer([prior, *pruned]) == "summary #1"
    system, body = echo.requests[0]
    assert "under 75 words" in system.content
    assert "user likes tea" in body.content and "Summary of the earlier" not in body.content
    assert "User: 1+2?" in body.content and 'called tool add({"a":1,"b":2})' in body.content


def test_input_over_budget_is_summarised_in_folded_parts() -> None:
    """A transcript over max_input_tokens goes in several calls, each folding the summary
    so far; a single message over the budget is cut with a marker."""
    echo = Echo()
    summarizer = LLMSummarizer(_model(echo), max_summary_tokens=20, max_input_tokens=200)
    pruned = [HumanMessage(f"fact {n} " + "word " * 40) for n in range(10)]
    pruned.append(HumanMessage("huge " * 2000))
    assert summarizer(pruned) == f"summary #{len(echo.requests)}"
    assert len(echo.requests) > 2
    for n, (_, body) in enumerate(echo.requests[1:], start=1):
        assert f"summary #{n}" in body.content, "a part does not fold the summary so far"
    assert "cut to fit" in echo.requests[-1][1].content


def test_a_failing_model_is_retried_then_raises() -> None:
    """Transient errors are retried with a growing delay; a model that keeps failing
    raises, and the reducer turns that into SummaryError (nothing pruned)."""
    failures = {"left": 2}

    def flaky(messages: list[BaseMessage]) -> str:
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("rate limited")
        return "ok"

    summarizer = LLMSummarizer(_model(flaky), retries=2, retry_delay=0.01)
    assert summarizer([HumanMessage("q")]) == "ok" and summarizer.calls == 3

    def down(messages: list[BaseMessage]) -> str:
        raise ConnectionError("model down")

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=3,
            summarize_fn=LLMSummarizer(_model(down), retries=1, retry_delay=0.0),
            inject_summary=True,
        )
    )
    history = [HumanMessage(f"q{n}") for n in range(5)]
    with pytest.raises(SummaryError, match="model down"):
        reducer.reduce(history)


def test_the_reducer_reserves_the_summarizers_budget() -> None:
    """In token mode the room kept for the block is the summarizer's max_summary_tokens:
    after a summarising prune the list fits, and a second reduce calls nothing."""
    echo = Echo()
    summarizer = LLMSummarizer(_model(echo), max_summary_tokens=30)
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=200, summarize_fn=summarizer, inject_summary=True)
    )
    history = [
        cls(f"{cls.__name__} {n} " + "text " * 20, id=f"{cls.__name__}{n}")
        for n in range(10)
        for cls in (HumanMessage, AIMessage)
    ]
    result = reducer.reduce(history)
    assert result.tokens_after <= 200 and summarizer.calls == 1
    assert reducer.reduce(result.surviving).pruned == [] and summarizer.calls == 1


def test_transcript_reads_every_shape() -> None:
    """Dicts, serialised and LangChain messages are written out alike."""
    from langchain_core.messages import messages_to_dict

    lines = transcript(
        [
            {"role": "user", "content": "hi"},
            {"type": "ai", "content": [{"type": "text", "text": "hello"}]},
            *messages_to_dict([HumanMessage("again")]),
            {"role": "tool", "tool_call_id": "c9", "content": "42"},
        ]
    )
    assert lines.split("\n") == [
        "User: hi",
        "Assistant: hello",
        "User: again",
        "Tool result (c9): 42",
    ]


class SyncForbidden(LLMSummarizer):
    """An LLMSummarizer whose sync form must not be used (the async path must await acall)."""

    def __call__(self, messages: list[Any]) -> str | None:
        raise AssertionError("the sync summarizer ran inside an async graph")


async def test_create_agent_with_the_summarizer_async_uses_acall() -> None:
    """create_agent + ReducerMiddleware + LLMSummarizer under ainvoke: the running summary
    is made by the async form (never a thread around the sync one), once per prune, and the
    agent keeps working with one summary block at the head of its history."""
    echo = Echo()
    summarizer = SyncForbidden(_model(echo), max_summary_tokens=50)
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4, max_messages=8, summarize_fn=summarizer, inject_summary=True
        )
    )
    agent = create_agent(
        calculator_model(),
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
    )
    run: Any = {"configurable": {"thread_id": "agent-summary"}}
    for n in range(6):
        await agent.ainvoke({"messages": [HumanMessage(f"question {n}")]}, run)
    state = (await agent.aget_state(run)).values["messages"]
    assert is_summary(state[0]) and sum(is_summary(m) for m in state) == 1
    assert 0 < summarizer.calls <= 6


async def test_an_async_summarizer_in_the_saver_does_not_stall_the_loop() -> None:
    """aput awaits a coroutine summarizer that takes 0.4 s: other coroutines keep running."""

    async def slow(messages: list[Any]) -> str:
        await asyncio.sleep(0.4)
        return "gist"

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6, max_messages=12, summarize_fn=slow, inject_summary=True
        )
    )
    graph = agent_graph(ReducingCheckpointSaver(InMemorySaver(), reducer), is_async=True)
    cfg = config("slow-summary")
    for n in range(3):
        await graph.ainvoke(turn(n), cfg)
    ticks = await ticks_while(graph.ainvoke(turn(3), cfg), at_least=0.4)
    assert ticks >= 15, f"the event loop stalled: {ticks} ticks in a 0.4 s summary"


def test_a_prompt_with_stray_braces_is_refused_when_built() -> None:
    """A prompt with a JSON example (literal braces) would fail every call: a ValueError at
    once, saying how to write braces."""
    with pytest.raises(ValueError, match=r"write literal braces as \{\{"):
        LLMSummarizer(_model(Echo()), prompt='Answer as {"facts": [...]} in {max_words} words')
    LLMSummarizer(_model(Echo()), prompt='Answer as {{"facts": [...]}} in {max_words} words')


def test_an_empty_answer_is_a_failure_not_an_empty_summary() -> None:
    """An empty reply would drop the pruned turns from the running summary unseen: it is
    an error (retried, then SummaryError or, in keep mode, every message kept)."""
    summarizer = LLMSummarizer(_model(lambda messages: "  "), retries=1, retry_delay=0.0)
    with pytest.raises(ValueError, match="no text"):
        summarizer([HumanMessage("q")])
    assert summarizer.calls == 2
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=3, summarize_fn=summarizer, inject_summary=True
        )
    )
    history = [HumanMessage(f"q{n}", id=f"q{n}") for n in range(5)]
    kept = reducer.reduce(history, on_prune_error="keep")
    assert kept.surviving == history and kept.summary_error is not None

"""agentstate-reducer with the real ``crewai`` package: agents, their LLM calls and Flows.

Nothing is mocked on CrewAI's side. The LLM is a local ``BaseLLM`` subclass (CrewAI's own
extension point for custom models) that answers from a script and refuses any history a
chat provider would refuse, so a broken list fails the run; the tools are CrewAI tools
that CrewAI executes. Telemetry is off and an audit hook proves no connection is made.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import NETWORK_EVENTS
from crewai import Agent
from crewai.flow.flow import Flow, start
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from crewai.hooks import (
    LLMCallHookContext,
    clear_before_llm_call_hooks,
    register_before_llm_call_hook,
)
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from pydantic import BaseModel, Field

from agentstate_reducer import MessageReducer, ReducerConfig


def provider_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What an OpenAI-style provider would refuse: a tool result that does not answer a
    call of the assistant message before it, or a call left without its result."""
    problems = []
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in open_calls:
                problems.append(f"messages[{i}]: result {message['tool_call_id']} has no call")
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            problems.append(f"messages[{i}]: calls {sorted(open_calls)} have no result")
            open_calls = set()
        if role == "assistant" and message.get("tool_calls"):
            open_calls = {call["id"] for call in message["tool_calls"]}
    if open_calls:
        problems.append(f"calls {sorted(open_calls)} have no result at the end")
    return problems


class StrictScriptedLLM(BaseLLM):
    """For a user question, two parallel ``add`` calls; after their results, the answer.
    Every list it is called with is recorded and checked as a provider would."""

    calls: list[list[dict[str, Any]]] = Field(default_factory=list)
    serial: int = 0

    def call(self, messages: Any, tools: Any = None, **kwargs: Any) -> Any:
        history = [dict(m) for m in messages]
        self.calls.append(history)
        problems = provider_problems(history)
        if problems:
            raise ValueError(f"the provider would refuse this history: {problems}")
        last = history[-1]
        if tools and last["role"] == "user":
            a, b = (int(n) for n in re.findall(r"\d+", last["content"])[:2])
            self.serial += 1
            return [
                {"id": f"call_{self.serial}_{k}", "type": "function",
                 "function": {"name": "add", "arguments": json.dumps({"a": a, "b": b + k})}}
                for k in range(2)
            ]  # fmt: skip
        results = [m["content"] for m in history if m["role"] == "tool"][-2:]
        return f"The sums are {' and '.join(results)}."

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False


@tool("add")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent() -> tuple[Agent, StrictScriptedLLM]:
    llm = StrictScriptedLLM(model="scripted", calls=[])
    agent = Agent(role="Calculator", goal="Add numbers", backstory="You add numbers.",
                  llm=llm, tools=[add], verbose=False)  # fmt: skip
    return agent, llm


@pytest.fixture(autouse=True)
def no_network() -> Any:
    """Fails a test that opened a connection or resolved a name."""
    before = len(NETWORK_EVENTS)
    yield
    assert NETWORK_EVENTS[before:] == []


def test_an_agents_conversation_with_tool_calls_stays_bounded_and_valid() -> None:
    """Across 15 turns the history an agent is given is reduced between kickoffs: it never
    exceeds the bound, every list CrewAI sends the LLM is one a provider accepts (the
    strict LLM would raise), and the pruned part went whole, with its tool results."""
    agent, llm = make_agent()
    reducer = MessageReducer(
        config=ReducerConfig(min_messages=8, max_messages=14, preserve_first=False)
    )
    history: list[dict[str, Any]] = []
    pruned = 0
    for n in range(15):
        history.append({"role": "user", "content": f"What is {n} + 10?"})
        output = agent.kickoff(history)
        assert output.raw == f"The sums are {n + 10} and {n + 11}."
        held = [m for m in output.messages if m["role"] != "system"]
        assert any(m.get("tool_calls") for m in held)  # CrewAI's own tool-call messages
        result = reducer.reduce(existing=held)
        pruned += len(result.pruned)
        assert provider_problems(result.pruned) == []  # whole turns, calls with results
        history = result.surviving
        assert len(history) <= 14
        assert provider_problems(history) == []
    assert pruned > 0
    longest = max(len(c) for c in llm.calls)
    assert longest <= 14 + 1 + 4  # system prompt + bounded history + this turn's call and results


def test_a_before_llm_call_hook_bounds_what_the_llm_sees() -> None:
    """CrewAI's ``before_llm_call`` hook may edit the executor's list in place: reducing it
    there bounds every LLM call of a kickoff given a long history, still provider-valid."""
    agent, llm = make_agent()
    reducer = MessageReducer(min_messages=6, max_messages=10)  # index 0: CrewAI's system prompt

    def bound(context: LLMCallHookContext) -> None:
        context.messages[:] = reducer.reduce(existing=context.messages).surviving

    history: list[dict[str, Any]] = []
    for n in range(12):
        history += [{"role": "user", "content": f"old question {n}"},
                    {"role": "assistant", "content": f"old answer {n}"}]  # fmt: skip
    history.append({"role": "user", "content": "What is 2 + 3?"})
    register_before_llm_call_hook(bound)
    try:
        output = agent.kickoff(history)
    finally:
        clear_before_llm_call_hooks()
    assert output.raw == "The sums are 5 and 6."
    assert llm.calls and all(len(c) <= 10 + 3 for c in llm.calls)
    assert all(c[0]["role"] == "system" for c in llm.calls)  # the system prompt stays
    assert llm.calls[0][-1]["content"].endswith("What is 2 + 3?")  # CrewAI frames the task


class ChatState(BaseModel):
    id: str = ""
    question: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)


def test_a_persisted_flow_keeps_a_bounded_history_in_sqlite(tmp_path: Path) -> None:
    """A Flow with ``@persist`` on CrewAI's SQLite persistence, resumed by id for 25 turns
    (each runs the agent, tool calls included): the state stored in SQLite never holds more
    than the bound, stays provider-valid, and every pruned message reached ``on_prune``
    once."""
    agent, _ = make_agent()
    remembered: list[dict[str, Any]] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=8, max_messages=16, preserve_first=False,
            on_prune=[lambda pruned, namespace: remembered.extend(pruned)],
        )
    )  # fmt: skip
    storage = SQLiteFlowPersistence(str(tmp_path / "flows.db"))

    @persist(storage)
    class Chat(Flow[ChatState]):
        @start()
        def answer(self) -> None:
            history = [*self.state.messages, {"role": "user", "content": self.state.question}]
            output = agent.kickoff(history)
            held = [m for m in output.messages if m["role"] != "system"]
            self.state.messages = reducer.reduce(existing=held).surviving

    first = Chat()
    first.kickoff(inputs={"question": "What is 0 + 1?"})
    flow_id = first.state.id
    sizes = []
    for n in range(1, 25):
        Chat().kickoff(inputs={"id": flow_id, "question": f"What is {n} + 1?"})
        stored = storage.load_state(flow_id)
        assert stored is not None
        sizes.append(len(stored["messages"]))
        assert provider_problems(stored["messages"]) == []
    assert max(sizes) <= 16
    messages_written = 25 * 5  # question, two calls in one message, two results, answer
    assert len(remembered) + sizes[-1] == messages_written
    assert stored["messages"][-1]["content"] == "The sums are 25 and 26."


def test_nothing_was_sent_over_the_network() -> None:
    """Over the whole module (agents, LLM calls, Flows, persistence) no connection was
    opened and no name resolved: telemetry stayed off and the LLM is local."""
    assert NETWORK_EVENTS == []

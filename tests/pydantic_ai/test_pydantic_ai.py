"""agentstate-reducer with the real ``pydantic_ai`` package: agents, their runs and tools.

Nothing is mocked on pydantic-ai's side: the model is pydantic-ai's own ``FunctionModel``
driven by a script (two parallel tool calls per question, a tool that asks for a retry now
and then, then an answer), the tools are pydantic-ai tools it runs, and the reducer plugs in
through ``ProcessHistory``. A second ``ProcessHistory`` after ours records every list our
processor returned, and the model compares it with what pydantic-ai actually sent it, so a
history pydantic-ai had to repair (an orphan result dropped, a result invented, two messages
merged) fails the test.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.pydantic_ai import history_processor


def signature(message: Any) -> tuple[Any, ...]:
    """What tells the messages of a scripted conversation apart (each is unique)."""
    parts = []
    for part in message.parts:
        call_id = getattr(part, "tool_call_id", None)
        parts.append((part.part_kind, call_id or str(getattr(part, "content", ""))[:80]))
    return (message.kind, tuple(parts))


def shape(messages: list[ModelMessage]) -> list[tuple[Any, ...]]:
    """Messages as the model is sent them: kinds, part kinds, call ids and texts."""
    return [signature(m) for m in messages]


class Conversation:
    """A scripted model, its tools and an agent with the reducer in ``ProcessHistory``.

    Per question ``"question N"``: two parallel ``add`` calls (every third question also a
    ``lookup`` call that asks for a retry the first time), then, with every result in, the
    answer ``"answer N"``.
    """

    def __init__(self, reducer: MessageReducer, *, namespace: Any = None) -> None:
        self.reducer = reducer
        self.processed: list[list[ModelMessage]] = []
        self.sent: list[list[ModelMessage]] = []
        self.retried: set[str] = set()

        async def record(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
            self.processed.append(list(messages))
            return messages

        self.agent = Agent(
            FunctionModel(self.answer),
            system_prompt="You add numbers.",
            capabilities=[
                ProcessHistory(history_processor(reducer, namespace=namespace)),
                ProcessHistory(record),
            ],
        )

        @self.agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @self.agent.tool_plain
        def lookup(key: str) -> str:
            """Look a key up (asks for a retry the first time it sees a key)."""
            if key not in self.retried:
                self.retried.add(key)
                raise ModelRetry(f"{key} is busy, try again")
            return f"value of {key}"

    def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append(list(messages))
        assert shape(messages) == shape(self.processed[-1]), "pydantic-ai repaired the history"
        question = next(
            part.content
            for message in reversed(messages)
            if isinstance(message, ModelRequest)
            for part in message.parts
            if part.part_kind == "user-prompt" and isinstance(part.content, str)
        )
        turn = int(re.findall(r"\d+", question)[0])
        last = messages[-1]
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        results = [p for p in last.parts if p.part_kind in ("tool-return", "retry-prompt")]
        retry = [p for p in results if _is_retry(p)]
        if retry:
            return ModelResponse(
                parts=[
                    ToolCallPart("lookup", {"key": f"k{turn}"}, tool_call_id=f"t{turn}-{step}-r")
                ]
            )
        if not results:
            calls = [
                ToolCallPart("add", {"a": turn, "b": k}, tool_call_id=f"t{turn}-{step}-{k}")
                for k in (1, 2)
            ]
            if turn % 3 == 0:
                calls.append(
                    ToolCallPart("lookup", {"key": f"k{turn}"}, tool_call_id=f"t{turn}-{step}-l")
                )
            return ModelResponse(parts=calls)
        return ModelResponse(parts=[TextPart(f"answer {turn}")])


def _is_retry(part: Any) -> bool:
    return part.part_kind == "retry-prompt" or getattr(part, "outcome", None) == "retried"


def check_run(
    conversation: Conversation,
    history: list[ModelMessage],
    pruned: list[Any],
    *,
    bounded: bool = True,
) -> None:
    """Every list sent is valid by our rules, every message is either in the history or
    was handed over, and none was handed over twice (summary blocks are folded into the
    next one, not handed over)."""
    reducer = conversation.reducer
    for messages in conversation.processed:
        problems = reducer.validate(messages).problems
        assert [p for p in problems if bounded or p.kind != "over_budget"] == []
    counts = Counter(signature(m) for m in pruned)
    assert [s for s, n in counts.items() if n > 1] == []
    seen = {
        signature(m)
        for messages in conversation.processed
        for m in messages
        if (m.metadata or {}).get("agentstate_reducer") != "summary"
    }
    kept = {
        signature(m) for m in history if (m.metadata or {}).get("agentstate_reducer") != "summary"
    }
    assert seen | kept == set(counts) | kept
    assert set(counts).isdisjoint(kept)


def test_a_30_turn_run_sync_conversation_stays_bounded_valid_and_hands_over_once() -> None:
    """Thirty ``run_sync`` turns with parallel calls and retries: the stored history never
    exceeds the bound, every request pydantic-ai sends is the list the processor returned
    and valid by the pydantic-ai format's rules, and every message that left reached the
    hook exactly once, with the namespace given."""
    pruned: list[Any] = []
    namespaces: set[Any] = set()

    def remember(messages: list[Any], namespace: Any) -> None:
        pruned.extend(messages)
        namespaces.add(namespace)

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=6, max_messages=12, on_prune=[remember])
    )
    conversation = Conversation(reducer, namespace=("user-1", "chat-7"))
    history: list[ModelMessage] = []
    for turn in range(30):
        result = conversation.agent.run_sync(f"question {turn}", message_history=history)
        history = result.all_messages()
        assert result.output == f"answer {turn}"
        assert len(history) <= 12
    assert max(len(m) for m in conversation.sent) <= 12
    assert len(conversation.sent) >= 70  # every question needs two or three requests
    check_run(conversation, history, pruned)
    assert len(pruned) > 100 and namespaces == {("user-1", "chat-7")}
    assert [p.part_kind for p in history[0].parts] == ["system-prompt", "user-prompt"]
    retries = [p for m in pruned if isinstance(m, ModelRequest) for p in m.parts if _is_retry(p)]
    assert len(retries) >= 5  # a retry answers its call and leaves with it


def test_an_async_run_with_a_summary_keeps_a_marked_summary_in_the_history() -> None:
    """Thirty ``agent.run`` turns with an async summarizer and ``inject_summary``: the
    summary block is a pydantic-ai message of the history, marked in its metadata, folded
    into a new one at each prune; the summarizer saw every pruned message once."""
    summarized: list[Any] = []
    pruned: list[Any] = []

    async def summarize(messages: list[Any]) -> str:
        summarized.extend(m for m in messages if "agentstate_reducer" not in (m.metadata or {}))
        return f"{len(summarized)} messages so far"

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            summarize_fn=summarize,
            inject_summary=True,
            on_prune=[lambda messages, namespace: pruned.extend(messages)],
        )
    )
    conversation = Conversation(reducer)

    async def chat() -> list[ModelMessage]:
        history: list[ModelMessage] = []
        for turn in range(30):
            result = await conversation.agent.run(f"question {turn}", message_history=history)
            history = result.all_messages()
            assert len(history) <= 13  # the summary block is one of the messages kept
        return history

    history = asyncio.run(chat())
    blocks = [m for m in history if (m.metadata or {}).get("agentstate_reducer") == "summary"]
    assert len(blocks) == 1 and isinstance(blocks[0], ModelResponse)  # after the first request
    assert blocks[0].parts[0].content.startswith("Summary of the earlier conversation:")
    assert str(len(summarized)) in blocks[0].parts[0].content
    originals = [m for m in pruned if (m.metadata or {}).get("agentstate_reducer") != "summary"]
    assert Counter(map(signature, summarized)) == Counter(map(signature, originals))
    check_run(conversation, history, originals)


def test_a_hook_outage_keeps_every_message_and_hands_all_over_once_it_is_back() -> None:
    """While the hook fails the history is kept whole (the run goes on, nothing is lost);
    once it is back the next request prunes, and every message that left reached the hook
    exactly once."""
    pruned: list[Any] = []
    down = False

    def remember(messages: list[Any], namespace: Any) -> None:
        if down:
            raise ConnectionError("memory store unreachable")
        pruned.extend(messages)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            on_prune=[remember],
            handoff=Handoff(retry_backoff=0),
        )
    )
    conversation = Conversation(reducer)
    history: list[ModelMessage] = []
    longest = 0
    for turn in range(32):
        down = 10 <= turn < 16
        result = conversation.agent.run_sync(f"question {turn}", message_history=history)
        history = result.all_messages()
        if down:
            longest = max(longest, len(history))
    assert longest > 20  # nothing left while the hook was down
    assert reducer.handoff_status().failures > 0
    assert reducer.handoff_status().pending_messages == 0
    assert len(history) <= 12
    check_run(conversation, history, pruned, bounded=False)  # over the bound while down


def test_a_token_budget_and_a_namespace_from_the_run_context() -> None:
    """In token mode the requests stay within the budget; a callable namespace is called
    with the run's ``RunContext`` (here the run's deps)."""
    namespaces: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=600, on_prune=[lambda messages, namespace: namespaces.append(namespace)]
        )
    )
    conversation = Conversation(reducer, namespace=lambda ctx: ("deps", ctx.deps))
    history: list[ModelMessage] = []
    for turn in range(30):
        history = conversation.agent.run_sync(
            f"question {turn}", message_history=history, deps="chat-3"
        ).all_messages()
    for messages in conversation.processed:
        assert reducer.validate(messages).problems == []
    assert namespaces and set(namespaces) == {("deps", "chat-3")}


def test_history_processor_refuses_what_is_not_a_reducer() -> None:
    """A config where a reducer belongs is a TypeError that says to wrap it."""
    with pytest.raises(TypeError, match="wrap it"):
        history_processor(ReducerConfig())  # type: ignore[arg-type]

"""agentstate-reducer with the real ``strands-agents`` package: an ``Agent``, its event loop,
its tools, its hooks and its ``FileSessionManager``.

Nothing is mocked on Strands' side. The model is a subclass of Strands' ``Model`` that
answers from a script: per question a reasoning block and two parallel ``add`` calls (every
third question a second round with a ``lookup`` call), then the answer. It records every
request Strands sends it; each must be a valid Converse request (roles alternate from a user
message, every ``toolUse`` answered by a ``toolResult`` in the next message and no result
without its call) and be exactly what ``agent.messages`` held. Given a ``window`` it raises
Strands' ``ContextWindowOverflowException`` for a request of more messages, as a provider
does for too many tokens.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strands import Agent, tool
from strands.agent.conversation_manager import (
    SlidingWindowConversationManager,
)
from strands.hooks import HookProvider, HookRegistry, MessageAddedEvent
from strands.models import Model
from strands.session.file_session_manager import FileSessionManager
from strands.types.exceptions import ContextWindowOverflowException

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.messages import is_summary
from agentstate_reducer.strands import ReducingConversationManager

MAX = 12


def signature(message: Any) -> tuple[Any, ...]:
    """What tells the messages of a scripted conversation apart (each is unique)."""
    blocks = []
    for block in message["content"]:
        if "toolUse" in block:
            blocks.append(("toolUse", block["toolUse"]["toolUseId"]))
        elif "toolResult" in block:
            blocks.append(("toolResult", block["toolResult"]["toolUseId"]))
        elif "reasoningContent" in block:
            blocks.append(("reasoning", block["reasoningContent"]["reasoningText"]["text"]))
        else:
            blocks.append(("text", block.get("text")))
    return (message["role"], tuple(blocks))


def converse_problems(messages: list[Any]) -> list[str]:
    """What Bedrock's Converse API refuses in a request, checked here on its own terms."""
    problems = []
    if not messages or messages[0]["role"] != "user":
        problems.append("the first message is not a user message")
    for index, message in enumerate(messages):
        if index and message["role"] == messages[index - 1]["role"]:
            problems.append(f"messages[{index}]: two {message['role']} messages in a row")
        uses = {b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b}
        following = messages[index + 1]["content"] if index + 1 < len(messages) else None
        if uses and following is None:
            problems.append(f"messages[{index}]: calls {uses} end the request unanswered")
        elif uses and following is not None:
            answered = {b["toolResult"]["toolUseId"] for b in following if "toolResult" in b}
            if uses != answered:
                problems.append(f"messages[{index}]: calls {uses} answered by {answered}")
        results = {b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b}
        previous = messages[index - 1]["content"] if index else []
        asked = {b["toolUse"]["toolUseId"] for b in previous if "toolUse" in b}
        if results and results != asked:
            problems.append(f"messages[{index}]: results {results} for calls {asked}")
    return problems


class ScriptedModel(Model):
    """A Strands model answering from a script; records every request."""

    def __init__(self, window: int | None = None) -> None:
        self.window = window
        self.requests: list[list[Any]] = []
        self.overflows = 0
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(  # type: ignore[override]
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        if self.window is not None and len(messages) > self.window:
            self.overflows += 1
            raise ContextWindowOverflowException(f"{len(messages)} messages do not fit")
        self.requests.append(copy.deepcopy(list(messages)))
        question = next(
            block["text"]
            for message in reversed(messages)
            if message["role"] == "user"
            for block in message["content"]
            if isinstance(block.get("text"), str) and block["text"].startswith("question")
        )
        turn = int(re.findall(r"\d+", question)[0])
        results = [
            b["toolResult"]["toolUseId"] for b in messages[-1]["content"] if "toolResult" in b
        ]
        step = len(self.requests)
        yield {"messageStart": {"role": "assistant"}}
        calls: list[tuple[str, dict[str, Any], str]] = []
        if not results:
            calls = [("add", {"a": turn, "b": k}, f"t{turn}-{step}-{k}") for k in (1, 2)]
        elif turn % 3 == 0 and not any(r.endswith("-lookup") for r in results):
            calls = [("lookup", {"key": f"k{turn}"}, f"t{turn}-{step}-lookup")]
        if calls:
            thought = f"thinking about {turn} at {step}"
            yield {"contentBlockDelta": {"delta": {"reasoningContent": {"text": thought}}}}
            yield {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "sig"}}}}
            yield {"contentBlockStop": {}}
            for name, arguments, call_id in calls:
                start = {"toolUse": {"toolUseId": call_id, "name": name}}
                yield {"contentBlockStart": {"start": start}}
                delta = {"toolUse": {"input": json.dumps(arguments)}}
                yield {"contentBlockDelta": {"delta": delta}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockDelta": {"delta": {"text": f"answer {turn}"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        usage = {"inputTokens": 10 * len(messages), "outputTokens": 5, "totalTokens": 0}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}: " + "a long record " * 40


class Recorder(HookProvider):
    """Every message Strands added to the agent."""

    def __init__(self) -> None:
        self.added: list[Any] = []

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(MessageAddedEvent, lambda event: self.added.append(event.message))


def make_agent(
    reducer: MessageReducer | None,
    model: ScriptedModel,
    recorder: Recorder,
    **options: Any,
) -> Agent:
    manager = options.pop("conversation_manager", None)
    if manager is None and reducer is not None:
        manager = ReducingConversationManager(reducer, namespace=options.pop("namespace", None))
    return Agent(
        model=model,
        tools=[add, lookup],
        system_prompt="You add numbers.",
        conversation_manager=manager,
        hooks=[recorder],
        callback_handler=None,
        **options,
    )


def check_run(
    model: ScriptedModel,
    recorder: Recorder,
    messages: list[Any],
    pruned: list[Any],
    *,
    reducer: MessageReducer,
    bounded: bool = True,
) -> None:
    """Every request was valid Converse (and valid by the reducer's own rules); every message
    Strands added is either still in the history or was handed over, exactly once."""
    for request in model.requests:
        assert converse_problems(request) == []
        problems = reducer.validate(request).problems
        assert [p for p in problems if bounded or p.kind != "over_budget"] == []
    counts = Counter(signature(m) for m in pruned if not is_summary(m))
    assert [s for s, n in counts.items() if n > 1] == []
    kept = {signature(m) for m in messages if not is_summary(m)}
    added = {signature(m) for m in recorder.added}
    assert set(counts).isdisjoint(kept)
    assert set(counts) | kept == added


def remembering(into: list[Any], namespaces: set[Any] | None = None) -> Any:
    def remember(messages: list[Any], namespace: Any) -> None:
        into.extend(messages)
        if namespaces is not None:
            namespaces.add(namespace)

    return remember


def test_a_30_turn_sync_run_stays_bounded_valid_and_hands_over_once() -> None:
    """Thirty ``agent(...)`` turns with parallel calls and reasoning: the history never
    exceeds the bound after a turn, every request Strands sends is valid Converse and holds
    at most the bound (the manager reduces before each model call), and every message that
    left reached the hook exactly once, with the namespace given."""
    pruned: list[Any] = []
    namespaces: set[Any] = set()
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6, max_messages=MAX, on_prune=[remembering(pruned, namespaces)]
        )
    )
    model, recorder = ScriptedModel(), Recorder()
    agent = make_agent(reducer, model, recorder, namespace=("user-1", "chat-7"))
    for turn in range(30):
        result = agent(f"question {turn}")
        assert str(result).strip() == f"answer {turn}"
        assert len(agent.messages) <= MAX
    assert len(model.requests) >= 70  # two or three requests per question
    assert max(len(r) for r in model.requests) <= MAX
    # What the model was sent is what the agent held, reduced (Strands adds nothing).
    assert [signature(m) for m in model.requests[-1]] == [signature(m) for m in agent.messages[:-1]]
    check_run(model, recorder, agent.messages, pruned, reducer=reducer)
    assert len(pruned) > 100 and namespaces == {("user-1", "chat-7")}
    assert agent.messages[0]["content"][0]["text"] == "question 0"  # preserve_first
    reasoning = [m for m in pruned if any("reasoningContent" in b for b in m["content"])]
    assert reasoning and all(m["role"] == "assistant" for m in reasoning)
    manager = agent.conversation_manager
    assert isinstance(manager, ReducingConversationManager)
    # The log's tail starts after everything that left and the pinned first question.
    assert manager.removed_message_count == len(recorder.added) - len(agent.messages) + 1


def test_an_async_run_with_a_running_summary_keeps_one_marked_summary() -> None:
    """Thirty ``invoke_async`` turns with an async summarizer and ``inject_summary``: the
    summary is one Converse message of the history (after the pinned first question, roles
    alternating), folded into a new one at each prune; the summarizer saw every pruned
    message once."""
    summarized: list[Any] = []
    pruned: list[Any] = []

    async def summarize(messages: list[Any]) -> str:
        summarized.extend(m for m in messages if not is_summary(m))
        return f"{len(summarized)} messages so far"

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=MAX,
            summarize_fn=summarize,
            inject_summary=True,
            on_prune=[remembering(pruned)],
        )
    )
    model, recorder = ScriptedModel(), Recorder()
    agent = make_agent(reducer, model, recorder)

    async def chat() -> None:
        for turn in range(30):
            result = await agent.invoke_async(f"question {turn}")
            assert str(result).strip() == f"answer {turn}"
            assert len(agent.messages) <= MAX + 1  # the summary block is one of them

    asyncio.run(chat())
    blocks = [m for m in agent.messages if is_summary(m)]
    assert len(blocks) == 1 and agent.messages[1] is blocks[0]
    assert blocks[0]["role"] == "assistant"  # between two user messages
    assert blocks[0]["content"][0]["text"].startswith("Summary of the earlier conversation:")
    assert str(len(summarized)) in blocks[0]["content"][0]["text"]
    originals = [m for m in pruned if not is_summary(m)]
    assert Counter(map(signature, summarized)) == Counter(map(signature, originals))
    check_run(model, recorder, agent.messages, pruned, reducer=reducer)


def test_a_hook_outage_keeps_every_message_and_hands_all_over_once_it_is_back() -> None:
    """While the hook fails the history is kept whole (the run goes on, nothing is lost);
    once it is back the next reduce prunes, and every message that left reached the hook
    exactly once."""
    pruned: list[Any] = []
    down = False

    def remember(messages: list[Any], namespace: Any) -> None:
        if down:
            raise ConnectionError("memory store unreachable")
        pruned.extend(messages)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6, max_messages=MAX, on_prune=[remember], handoff=Handoff(retry_backoff=0)
        )
    )
    model, recorder = ScriptedModel(), Recorder()
    agent = make_agent(reducer, model, recorder)
    longest = 0
    for turn in range(32):
        down = 10 <= turn < 16
        agent(f"question {turn}")
        if down:
            longest = max(longest, len(agent.messages))
    assert longest > 20  # nothing left while the hook was down
    assert reducer.handoff_status().failures > 0
    assert reducer.handoff_status().pending_messages == 0
    assert len(agent.messages) <= MAX
    check_run(model, recorder, agent.messages, pruned, reducer=reducer, bounded=False)


def test_a_context_overflow_is_recovered_by_shrinking_the_history() -> None:
    """A model whose window is smaller than the reducer's bound raises Strands'
    ``ContextWindowOverflowException``; ``reduce_context`` halves the history by the
    reducer's rules and Strands' retry succeeds: every turn is answered, every accepted
    request is valid, nothing is lost or handed over twice."""
    pruned: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(min_messages=10, max_messages=40, on_prune=[remembering(pruned)])
    )
    model, recorder = ScriptedModel(window=14), Recorder()
    agent = make_agent(reducer, model, recorder)
    for turn in range(30):
        assert str(agent(f"question {turn}")).strip() == f"answer {turn}"
    assert model.overflows >= 5
    assert max(len(r) for r in model.requests) <= 14
    check_run(model, recorder, agent.messages, pruned, reducer=reducer)


def test_an_overflow_during_a_hook_outage_shrinks_and_hands_over_later() -> None:
    """A hook outage grows the history until the model's window overflows; the overflow
    shrinks it anyway (the reducer keeps the messages for a retry), and once the hook is
    back they reach it, each exactly once."""
    pruned: list[Any] = []
    down = False

    def remember(messages: list[Any], namespace: Any) -> None:
        if down:
            raise ConnectionError("memory store unreachable")
        pruned.extend(messages)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6, max_messages=MAX, on_prune=[remember], handoff=Handoff(retry_backoff=0)
        )
    )
    model, recorder = ScriptedModel(window=22), Recorder()
    agent = make_agent(reducer, model, recorder)
    for turn in range(30):
        down = 5 <= turn < 15
        assert str(agent(f"question {turn}")).strip() == f"answer {turn}"
        if turn == 14:
            assert reducer.handoff_status().pending_messages > 0
    assert model.overflows >= 1
    assert reducer.handoff_status().pending_messages == 0
    check_run(model, recorder, agent.messages, pruned, reducer=reducer, bounded=False)


def test_an_overflow_with_nothing_left_to_remove_raises_strands_own_error() -> None:
    """When the model overflows on the question alone, nothing can leave: the manager
    raises ``ContextWindowOverflowException`` (Strands' own), and the question stays."""
    reducer = MessageReducer(config=ReducerConfig(min_messages=2, max_messages=MAX))
    model, recorder = ScriptedModel(window=0), Recorder()
    agent = make_agent(reducer, model, recorder)
    with pytest.raises(ContextWindowOverflowException):
        agent("question 0")
    assert [signature(m) for m in agent.messages] == [("user", (("text", "question 0"),))]


def test_a_file_session_restores_the_bounded_history_and_goes_on(tmp_path: Path) -> None:
    """With Strands' ``FileSessionManager`` an agent built again on the same session gets
    the bounded history back (the pinned first question, the summary block and the kept
    tail, in order), not every message the session stored, and goes on from there with
    valid requests."""
    pruned: list[Any] = []

    def summarize(messages: list[Any]) -> str:
        return f"summary of {len(messages)} messages"

    def reducer() -> MessageReducer:
        return MessageReducer(
            config=ReducerConfig(
                min_messages=6,
                max_messages=MAX,
                summarize_fn=summarize,
                inject_summary=True,
                on_prune=[remembering(pruned)],
            )
        )

    model, recorder = ScriptedModel(), Recorder()
    first = make_agent(
        reducer(), model, recorder,
        session_manager=FileSessionManager("chat-1", storage_dir=str(tmp_path)),
    )  # fmt: skip
    for turn in range(30):
        first(f"question {turn}")
    stored = list(first.messages)
    assert len(stored) <= MAX + 1 and is_summary(stored[1])
    again = make_agent(
        reducer(), ScriptedModel(), Recorder(),
        session_manager=FileSessionManager("chat-1", storage_dir=str(tmp_path)),
    )  # fmt: skip
    assert [signature(m) for m in again.messages] == [signature(m) for m in stored]
    assert again.messages[1]["content"] == stored[1]["content"]
    files = list((tmp_path / "session_chat-1").rglob("message_*.json"))
    assert len(files) == len(recorder.added)  # the session keeps its log; the view is bounded
    later = again.model
    assert isinstance(later, ScriptedModel)
    for turn in range(30, 36):
        assert str(again(f"question {turn}")).strip() == f"answer {turn}"
        assert len(again.messages) <= MAX + 1
    for request in later.requests:
        assert converse_problems(request) == []
    assert [signature(m) for m in later.requests[0][: len(stored)]] == [
        signature(m) for m in stored
    ]


def test_the_namespace_defaults_to_the_session_and_agent() -> None:
    """Without ``namespace=`` the hooks get ``(session_id, agent_id)`` of an agent with a
    session, else its ``agent_id``; a callable is called with the agent."""
    seen: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=6, on_prune=[lambda m, namespace: seen.append(namespace)]
        )
    )
    agent = make_agent(reducer, ScriptedModel(), Recorder(), agent_id="calc")
    for turn in range(4):
        agent(f"question {turn}")
    assert seen and set(seen) == {"calc"}
    seen.clear()
    manager = ReducingConversationManager(reducer, namespace=lambda a: ("agent", a.agent_id))
    agent = make_agent(
        None, ScriptedModel(), Recorder(), agent_id="calc", conversation_manager=manager
    )
    for turn in range(4):
        agent(f"question {turn}")
    assert seen and set(seen) == {("agent", "calc")}


def test_the_converse_checker_accepts_strands_own_requests_and_finds_broken_ones() -> None:
    """A control for the tests above: the checker accepts the requests of Strands' own
    manager (it is not tuned to ours) and finds a result without its call, a call without
    its result and two user messages in a row."""
    model, recorder = ScriptedModel(), Recorder()
    agent = make_agent(
        None,
        model,
        recorder,
        conversation_manager=SlidingWindowConversationManager(window_size=MAX),
    )
    for turn in range(10):
        agent(f"question {turn}")
    assert len(model.requests) >= 20
    assert all(converse_problems(r) == [] for r in model.requests)
    request = model.requests[-1]
    calls = next(i for i, m in enumerate(request) if any("toolUse" in b for b in m["content"]))
    assert converse_problems(request[calls + 1 :])  # starts with results, not a question
    assert converse_problems(request[: calls + 1])  # ends with calls nobody answered
    assert converse_problems([request[0], request[0]])


def test_bad_arguments_are_refused_with_the_reason() -> None:
    """A config where a reducer belongs, a per_turn that is not a bool or a positive int,
    and a reducer fixed to another format are refused."""
    with pytest.raises(TypeError, match="wrap it"):
        ReducingConversationManager(ReducerConfig())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="per_turn"):
        ReducingConversationManager(MessageReducer(), per_turn="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per_turn"):
        ReducingConversationManager(MessageReducer(), per_turn=0)
    with pytest.raises(ValueError, match="Bedrock"):
        ReducingConversationManager(MessageReducer(config=ReducerConfig(format="gemini")))


def test_token_mode_overflow_halves_by_tokens() -> None:
    """In token mode the overflow path halves the history's token count: a model whose
    window is smaller than the budget still gets every turn answered, with valid requests."""
    pruned: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=100_000, on_prune=[remembering(pruned)])
    )
    model, recorder = ScriptedModel(window=14), Recorder()
    agent = make_agent(reducer, model, recorder)
    for turn in range(20):
        assert str(agent(f"question {turn}")).strip() == f"answer {turn}"
    assert model.overflows >= 3 and len(pruned) > 40
    check_run(model, recorder, agent.messages, pruned, reducer=reducer)


def test_a_rewriting_policy_restores_its_rewrites_from_the_session(tmp_path: Path) -> None:
    """With ``ClearToolOutputs`` the kept messages include rewritten copies the session's
    log does not hold; the manager's state carries them, so an agent built again on the
    session gets exactly the history the first one had, placeholders included."""
    from agentstate_reducer.policy import ClearToolOutputs, DropOldest
    from agentstate_reducer.steps.clear import DEFAULT_PLACEHOLDER

    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=400, policy=[ClearToolOutputs(keep_last=2), DropOldest()])
    )
    model, recorder = ScriptedModel(), Recorder()
    first = make_agent(
        reducer, model, recorder,
        session_manager=FileSessionManager("chat-2", storage_dir=str(tmp_path)),
    )  # fmt: skip
    for turn in range(30):
        first(f"question {turn}")
    text = json.dumps(first.messages)
    assert DEFAULT_PLACEHOLDER in text  # some kept results are rewritten copies
    again = make_agent(
        MessageReducer(config=reducer.config), ScriptedModel(), Recorder(),
        session_manager=FileSessionManager("chat-2", storage_dir=str(tmp_path)),
    )  # fmt: skip
    assert [m["content"] for m in again.messages] == [m["content"] for m in first.messages]
    assert all(converse_problems(r) == [] for r in model.requests)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.integers(min_value=1, max_value=16),
    bound=st.integers(min_value=3, max_value=14),
    preserve_first=st.booleans(),
    summary=st.booleans(),
    clear=st.booleans(),
)
def test_any_run_restores_from_its_session_as_it_was(
    tmp_path_factory: pytest.TempPathFactory,
    turns: int,
    bound: int,
    preserve_first: bool,
    summary: bool,
    clear: bool,
) -> None:
    """For any bound, first-message rule, summary and rewriting policy, and any number of
    turns: an agent built again on the session (Strands' ``FileSessionManager``) holds
    exactly the messages the first agent held (the manager's prepended messages, then the
    session's log from ``removed_message_count`` on)."""
    from agentstate_reducer.policy import ClearToolOutputs, DropOldest, Summarize

    fields: dict[str, Any] = {"preserve_first": preserve_first}
    if clear:
        step: Any = Summarize() if summary else DropOldest()
        fields.update(max_tokens=60 * bound, policy=[ClearToolOutputs(keep_last=1), step])
    else:
        fields.update(min_messages=max(1, bound // 2), max_messages=bound)
    if summary:
        fields.update(summarize_fn=lambda messages: f"{len(messages)} earlier", inject_summary=True)
    config = ReducerConfig(**fields)
    storage = str(tmp_path_factory.mktemp("sessions"))
    model = ScriptedModel()
    agent = make_agent(
        MessageReducer(config=config), model, Recorder(),
        session_manager=FileSessionManager("s", storage_dir=storage),
    )  # fmt: skip
    for turn in range(turns):
        agent(f"question {turn}")
    assert all(converse_problems(r) == [] for r in model.requests)
    again = make_agent(
        MessageReducer(config=config), ScriptedModel(), Recorder(),
        session_manager=FileSessionManager("s", storage_dir=storage),
    )  # fmt: skip
    assert [(m["role"], m["content"]) for m in again.messages] == [
        (m["role"], m["content"]) for m in agent.messages
    ]

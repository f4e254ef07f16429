"""agentstate-reducer with the real ``google-adk`` package: an ``LlmAgent``, its runner, its
session services and its tools.

Nothing is mocked on ADK's side. The model is a ``BaseLlm`` subclass (ADK's extension point
for models) that answers from a script: two parallel ``add`` calls per question, then the
answer. It records every request ADK builds for it; each must be valid by the Gemini format's
rules (roles alternate, every call answered in the next content), be a request google-genai
accepts (each content validates as a ``types.Content``) and stay within the bound.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.google_adk import STATE_KEY_PREFIX, before_model_callback
from agentstate_reducer.policy import ClearToolOutputs, DropOldest

APP = "calc-app"


def signature(content: Any) -> tuple[Any, ...]:
    """What tells the contents of a scripted conversation apart (each is unique)."""
    parts = []
    for part in content.parts or ():
        if part.function_call is not None:
            call = part.function_call
            parts.append(("call", call.name, json.dumps(call.args, sort_keys=True)))
        elif part.function_response is not None:
            response = part.function_response
            parts.append(("response", response.name, json.dumps(response.response)))
        else:
            parts.append(("text", part.text))
    return (content.role, tuple(parts))


def asked_turn(contents: list[types.Content]) -> int:
    """The number of the newest question ("question N") in a request's contents."""
    question = next(
        part.text
        for content in reversed(contents)
        if content.role == "user"
        for part in content.parts or ()
        if part.text and part.text.startswith("question")
    )
    return int(question.split()[1])


class ScriptedGemini(BaseLlm):
    """Answers a question with two parallel ``add`` calls, their results with the answer;
    records each request's contents."""

    model: str = "scripted"
    requests: list[list[types.Content]] = []  # noqa: RUF012 - a pydantic field (copied)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = list(llm_request.contents)
        self.requests.append(contents)
        for content in contents:  # google-genai accepts each content as it is
            types.Content.model_validate(content.model_dump())
        last = contents[-1]
        turn = asked_turn(contents)
        if any(part.function_response for part in last.parts or ()):
            parts = [types.Part(text=f"answer {turn}")]
        else:
            parts = [
                types.Part(function_call=types.FunctionCall(name="add", args={"a": turn, "b": k}))
                for k in (1, 2)
            ]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"{a}+{b}={a + b}"


def make_runner(
    reducer: MessageReducer, session_service: Any, model: ScriptedGemini, **options: Any
) -> Runner:
    agent = LlmAgent(
        name="calc",
        model=model,
        instruction="You add numbers.",
        tools=[add],
        before_model_callback=before_model_callback(reducer, **options),
    )
    return Runner(agent=agent, app_name=APP, session_service=session_service)


async def ask(runner: Runner, session_id: str, turn: int) -> str:
    message = types.Content(role="user", parts=[types.Part(text=f"question {turn}")])
    answer = ""
    async for event in runner.run_async(user_id="u1", session_id=session_id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            answer = event.content.parts[0].text
    return answer


def check_requests(reducer: MessageReducer, model: ScriptedGemini, *, bound: int | None) -> None:
    for contents in model.requests:
        problems = reducer.validate(contents).problems
        assert [p for p in problems if p.kind != "over_budget"] == []
        if bound is not None:
            assert len(contents) <= bound


def check_handoff(model: ScriptedGemini, pruned: list[Any], last_view: list[Any]) -> None:
    """Every content the model was ever shown is either in the last view or was handed
    over, and none was handed over twice (summary blocks are folded, not handed over)."""
    counts = Counter(signature(m) for m in pruned)
    assert [s for s, n in counts.items() if n > 1] == []

    def real(contents: list[Any]) -> set[tuple[Any, ...]]:
        return {signature(c) for c in contents if not is_block(c)}

    seen = set().union(*(real(contents) for contents in model.requests))
    kept = real(last_view)
    assert seen - kept == set(counts)
    assert set(counts).isdisjoint(kept)


def run_async_chat(runner: Runner, service: Any, turns: int) -> Any:
    """``turns`` questions through ``Runner.run_async`` in a new session, each answered as
    scripted; the session afterwards."""

    async def chat() -> Any:
        session = await service.create_session(app_name=APP, user_id="u1")
        for turn in range(turns):
            assert await ask(runner, session.id, turn) == f"answer {turn}"
        return await service.get_session(app_name=APP, user_id="u1", session_id=session.id)

    return asyncio.run(chat())


def test_a_30_turn_async_run_keeps_the_models_view_bounded_and_hands_over_once() -> None:
    """Thirty turns through ``Runner.run_async``: every request is valid and bounded, every
    content that left the view reached the hook once with the session's namespace, and the
    record of where the view starts is in the session's state."""
    pruned: list[Any] = []
    namespaces: set[Any] = set()

    def remember(messages: list[Any], namespace: Any) -> None:
        pruned.extend(messages)
        namespaces.add(namespace)

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=6, max_messages=12, on_prune=[remember])
    )
    model = ScriptedGemini(requests=[])
    service = InMemorySessionService()
    runner = make_runner(reducer, service, model)

    session = run_async_chat(runner, service, 30)
    check_requests(reducer, model, bound=12)
    check_handoff(model, pruned, model.requests[-1])
    assert len(model.requests) == 60 and len(pruned) > 100
    assert namespaces == {(APP, "u1", session.id)}
    record = session.state[STATE_KEY_PREFIX + "calc"]
    assert record["left"] == len(pruned)
    assert len(session.events) == 120  # ADK keeps every event: the view is what is bounded


def is_block(content: Any) -> bool:
    """Whether ``content`` is the reducer's summary block (not a content of the chat)."""
    return bool(content.parts) and (content.parts[0].text or "").startswith("Summary of the")


def summarizing_reducer(
    min_messages: int, max_messages: int, *, inject: bool
) -> tuple[MessageReducer, list[Any], list[Any]]:
    """A reducer with a running summary and a hook: it, what the hook took, and what the
    summarizer was given (summary blocks left out)."""
    pruned: list[Any] = []
    summarized: list[Any] = []

    def summarize(messages: list[Any]) -> str:
        summarized.extend(m for m in messages if not is_block(m))
        return f"{len(summarized)} contents summarised"

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=min_messages,
            max_messages=max_messages,
            summarize_fn=summarize,
            inject_summary=inject,
            on_prune=[lambda messages, namespace: pruned.extend(messages)],
        )
    )
    return reducer, pruned, summarized


def test_a_30_turn_sync_run_with_a_summary_shows_the_block_and_records_it() -> None:
    """Thirty turns through the synchronous ``Runner.run`` with ``Summarize`` and
    ``inject_summary``: the model sees the summary block where the pruned turns were (roles
    still alternating), the block is kept in the session's record, and the summarizer saw
    every pruned content once."""
    reducer, pruned, summarized = summarizing_reducer(6, 12, inject=True)
    model = ScriptedGemini(requests=[])
    service = InMemorySessionService()
    runner = make_runner(reducer, service, model, namespace="chat-9")
    session = service.create_session_sync(app_name=APP, user_id="u1")
    for turn in range(30):
        message = types.Content(role="user", parts=[types.Part(text=f"question {turn}")])
        for _ in runner.run(user_id="u1", session_id=session.id, new_message=message):
            pass
    check_requests(reducer, model, bound=13)  # the block is one of the contents
    last = model.requests[-1]
    assert last[1].role == "model" and last[1].parts[0].text.startswith("Summary of the earlier")
    assert f"{len(summarized)} contents summarised" in last[1].parts[0].text
    originals = [m for m in pruned if not is_block(m)]
    assert Counter(map(signature, summarized)) == Counter(map(signature, originals))
    check_handoff(model, originals, last)
    stored = service.get_session_sync(app_name=APP, user_id="u1", session_id=session.id)
    record = stored.state[STATE_KEY_PREFIX + "calc"]
    assert record["block"] == [["model", last[1].parts[0].text]]


class LoopingGemini(ScriptedGemini):
    """Answers a question after ``rounds`` rounds of one ``add`` call each (a long tool loop
    under one question); records each request's contents."""

    rounds: int = 10

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = list(llm_request.contents)
        self.requests.append(contents)
        turn = asked_turn(contents)
        done = sum(
            1
            for content in contents
            for part in content.parts or ()
            if part.function_response is not None
            and json.dumps(part.function_response.response).startswith(f'{{"result": "{turn}+')
        )
        # The rounds of this turn so far: the newest call's b, as the view may have lost
        # older rounds of the turn.
        last_call = next(
            (
                part.function_call
                for content in reversed(contents)
                for part in content.parts or ()
                if part.function_call is not None and part.function_call.args["a"] == turn
            ),
            None,
        )
        step = 0 if last_call is None else int(last_call.args["b"]) + 1
        if done and step >= self.rounds:
            parts = [types.Part(text=f"answer {turn}")]
        else:
            parts = [
                types.Part(
                    function_call=types.FunctionCall(name="add", args={"a": turn, "b": step})
                )
            ]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


@pytest.mark.parametrize("inject", [False, True])
def test_a_long_tool_loop_under_one_question_hands_each_content_over_once(inject: bool) -> None:
    """Three questions, each answered after ten rounds of tool calls: the older rounds of a
    turn leave the model's view while its question stays; each reaches the hook and the
    summarizer once (they used to come back on every later call, handed over and summarised
    again each time), and every request stays within the bound (with an injected summary
    block too)."""
    reducer, pruned, summarized = summarizing_reducer(4, 8, inject=inject)
    model = LoopingGemini(requests=[])
    service = InMemorySessionService()
    runner = make_runner(reducer, service, model)

    session = run_async_chat(runner, service, 3)
    assert len(model.requests) == 33  # eleven calls a question: the loop ran as scripted
    check_requests(reducer, model, bound=8 + inject)
    originals = [m for m in pruned if not is_block(m)]
    check_handoff(model, originals, model.requests[-1])
    assert Counter(map(signature, summarized)) == Counter(map(signature, originals))
    assert len(originals) > 40
    assert session.state[STATE_KEY_PREFIX + "calc"]["skipped"] != []


def test_a_hook_outage_shows_a_bounded_view_and_hands_everything_over_once_it_is_back() -> None:
    """While the hook fails, the model still gets a bounded view, but nothing leaves for
    good (the record stays where it was); once the hook is back every content that left
    reaches it exactly once."""
    pruned: list[Any] = []
    down = False

    def remember(messages: list[Any], namespace: Any) -> None:
        if down:
            raise ConnectionError("memory store unreachable")
        pruned.extend(messages)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6, max_messages=12, on_prune=[remember], handoff=Handoff(retry_backoff=0)
        )
    )
    model = ScriptedGemini(requests=[])
    service = InMemorySessionService()
    runner = make_runner(reducer, service, model)

    async def chat() -> None:
        nonlocal down
        session = await service.create_session(app_name=APP, user_id="u1")
        for turn in range(32):
            down = 10 <= turn < 16
            await ask(runner, session.id, turn)
            if turn == 15:
                state = (await service.get_session(
                    app_name=APP, user_id="u1", session_id=session.id
                )).state  # fmt: skip
                assert state[STATE_KEY_PREFIX + "calc"]["left"] == len(pruned)

    asyncio.run(chat())
    check_requests(reducer, model, bound=12)
    check_handoff(model, pruned, model.requests[-1])
    assert reducer.handoff_status().failures > 0
    assert len(pruned) > 100


def test_the_record_survives_a_restart_on_adks_sqlite_sessions(tmp_path: Path) -> None:
    """Fifteen turns, then a new process's worth of objects (reducer, runner, session
    service) on the same SQLite file, then fifteen more: the view picks up where the
    record says, and no content is handed over twice across the restart."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    pruned: list[Any] = []
    path = str(tmp_path / "sessions.db")
    model = ScriptedGemini(requests=[])

    def reducer() -> MessageReducer:
        return MessageReducer(
            config=ReducerConfig(
                min_messages=6,
                max_messages=12,
                on_prune=[lambda messages, namespace: pruned.extend(messages)],
            )
        )

    async def chat() -> None:
        service = SqliteSessionService(path)
        session = await service.create_session(app_name=APP, user_id="u1")
        runner = make_runner(reducer(), service, model)
        for turn in range(15):
            await ask(runner, session.id, turn)
        restarted = SqliteSessionService(path)
        runner = make_runner(reducer(), restarted, model)
        for turn in range(15, 30):
            await ask(runner, session.id, turn)

    asyncio.run(chat())
    check_requests(reducer(), model, bound=12)
    check_handoff(model, pruned, model.requests[-1])


def test_a_policy_that_rewrites_kept_messages_is_refused() -> None:
    """``ClearToolOutputs`` would be redone on every call (ADK rebuilds the contents), so
    the callback refuses it with NotImplementedError naming the step."""
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=2000, policy=[ClearToolOutputs(keep_last=1), DropOldest()])
    )
    with pytest.raises(NotImplementedError, match="clear_tool_outputs"):
        before_model_callback(reducer)
    with pytest.raises(TypeError, match="wrap it"):
        before_model_callback(ReducerConfig())  # type: ignore[arg-type]

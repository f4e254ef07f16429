"""agentstate-reducer with the real OpenAI Agents SDK: its ``Runner``, tools and sessions.

Nothing is mocked on the SDK's side: the agent, its function tools, the ``Runner`` (sync and
async) and the sessions (``SQLiteSession``; ``SQLAlchemySession`` on SQLite where installed)
are the SDK's own; the model is a scripted ``Model`` (the SDK's model interface, no network):
per question a reasoning item and two or three parallel
``function_call`` items, then, with every output in, a reasoning item and the answer. The
model checks every request it is sent by the Responses API's rules (each call answered,
each output answering a call before it, each reasoning item followed by an item of its turn),
independently of our validator.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import threading
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.messages import is_summary
from agentstate_reducer.openai_agents import ReducingSession, model_input_filter

set_tracing_disabled(True)  # the SDK would export traces over the network

T = TypeVar("T")


def wait(awaitable: Awaitable[T]) -> T:
    """Run a session call on a loop of its own, leaving the thread's current loop alone
    (``Runner.run_sync`` in SDK releases before 0.3 uses the thread's current loop)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(awaitable)
    finally:
        loop.close()


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _text(item: Any) -> str:
    content = _get(item, "content")
    if isinstance(content, str):
        return content
    return "".join(str(_get(block, "text") or "") for block in content or ())


def signature(item: Any) -> tuple[str, ...]:
    """What tells the items of a scripted conversation apart (each is unique)."""
    kind = _get(item, "type") or "message"
    if kind in ("function_call", "function_call_output"):
        return (kind, _get(item, "call_id"))
    if kind == "reasoning":
        return (kind, _get(item, "id"))
    return ("message", _get(item, "role"), _text(item))


def request_problems(items: list[Any]) -> list[str]:
    """What the Responses API would refuse in a request: an output with no call before it, a
    call with no output, a reasoning item not followed by a call or message of its turn."""
    problems: list[str] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for index, item in enumerate(items):
        kind = _get(item, "type")
        if kind == "function_call":
            calls.add(_get(item, "call_id"))
        elif kind == "function_call_output":
            if _get(item, "call_id") not in calls:
                problems.append(f"orphan output {_get(item, 'call_id')} at {index}")
            answered.add(_get(item, "call_id"))
        elif kind == "reasoning":
            after = items[index + 1] if index + 1 < len(items) else None
            if after is None or (
                _get(after, "type") != "function_call" and _get(after, "role") != "assistant"
            ):
                problems.append(f"reasoning item {_get(item, 'id')} alone at {index}")
    problems += [f"unanswered call {c}" for c in sorted(calls - answered)]
    return problems


class ScriptedModel(Model):
    """Per question ``"question N"`` (the newest user message of the request): a reasoning
    item and parallel ``add`` calls (every third question a ``lookup`` call too); once the
    request holds their outputs, a reasoning item and ``"answer N"``. Remembers every request
    and every item it produced."""

    def __init__(self) -> None:
        self.sent: list[list[Any]] = []
        self.produced: list[Any] = []
        self.serial = 0
        self._guard = threading.Lock()

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        items = list(kwargs["input"])
        self.sent.append(items)
        problems = request_problems(items)
        assert problems == [], problems
        newest = max(
            i
            for i, item in enumerate(items)
            if _get(item, "role") == "user" and _text(item).startswith("question")
        )
        question = _text(items[newest])
        tag = question.split()[1]
        number = int(re.findall(r"\d+", tag)[0])
        with self._guard:
            self.serial += 1
            serial = self.serial
        outputs = [i for i in items[newest:] if _get(i, "type") == "function_call_output"]
        reasoning = ResponseReasoningItem(
            id=f"rs_{tag}_{serial}",
            summary=[Summary(text=f"thinking about {question}", type="summary_text")],
            type="reasoning",
        )
        output: list[Any] = [reasoning]
        if not outputs:
            for k in (1, 2):
                output.append(
                    ResponseFunctionToolCall(
                        id=f"fc_{tag}_{serial}_{k}",
                        call_id=f"call_{tag}_{serial}_{k}",
                        name="add",
                        arguments=json.dumps({"a": number, "b": k}),
                        type="function_call",
                    )
                )
            if number % 3 == 0:
                output.append(
                    ResponseFunctionToolCall(
                        id=f"fc_{tag}_{serial}_l",
                        call_id=f"call_{tag}_{serial}_l",
                        name="lookup",
                        arguments=json.dumps({"key": f"k{tag}"}),
                        type="function_call",
                    )
                )
        else:
            output.append(
                ResponseOutputMessage(
                    id=f"msg_{tag}_{serial}",
                    content=[
                        ResponseOutputText(text=f"answer {tag}", type="output_text", annotations=[])
                    ],
                    role="assistant",
                    status="completed",
                    type="message",
                )
            )
        self.produced.extend(output)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not stream")


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _has_sqlalchemy_session() -> bool:
    """The SDK's ``SQLAlchemySession`` (from 0.3) with SQLAlchemy's asyncio SQLite driver."""
    try:
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("agents.extensions.memory.sqlalchemy_session", "sqlalchemy", "aiosqlite")
        )
    except ModuleNotFoundError:
        return False


def sqlite_session(session_id: str, path: Path) -> Any:
    return SQLiteSession(session_id, str(path / "chats.db"))


def sqlalchemy_session(session_id: str, path: Path) -> Any:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    return SQLAlchemySession.from_url(
        session_id, url=f"sqlite+aiosqlite:///{path / 'sqlalchemy.db'}", create_tables=True
    )


INNER = [pytest.param(sqlite_session, id="SQLiteSession")]
"""The sessions the main runs wrap: ``SQLiteSession`` always; ``SQLAlchemySession`` where the
SDK has it and SQLAlchemy's async SQLite driver is installed (the development environment and
the newest release's virtualenv)."""
if _has_sqlalchemy_session():
    INNER.append(pytest.param(sqlalchemy_session, id="SQLAlchemySession"))


def make_agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="adder", instructions="You add numbers.", model=model, tools=[add, lookup])


def expected(model: ScriptedModel, questions: list[str]) -> Counter[tuple[str, ...]]:
    """Every item a run stores: the questions, what the model produced, an output per call."""
    wanted = Counter(("message", "user", q) for q in questions)
    for item in model.produced:
        wanted[signature(item)] += 1
        if item.type == "function_call":
            wanted[("function_call_output", item.call_id)] += 1
    return wanted


def check_nothing_lost(
    stored: list[Any], pruned: list[Any], model: ScriptedModel, questions: list[str]
) -> None:
    """Every item the runs stored is in the session or was handed over, once."""
    originals = [signature(i) for i in pruned if not is_summary(i)]
    kept = [signature(i) for i in stored if not is_summary(i)]
    assert [s for s, n in Counter(originals).items() if n > 1] == []
    assert set(originals).isdisjoint(kept)
    assert Counter(originals) + Counter(kept) == expected(model, questions)


def check_requests(model: ScriptedModel, reducer: MessageReducer, bound: int) -> None:
    for items in model.sent:
        assert request_problems(items) == []
        problems = [p for p in reducer.validate(items).problems if p.kind != "over_budget"]
        assert problems == []
        assert len(items) <= bound


@pytest.mark.parametrize("make_inner", INNER)
def test_a_30_turn_run_sync_conversation_stores_a_bounded_valid_history(
    make_inner: Any, tmp_path: Path
) -> None:
    """Thirty ``Runner.run_sync`` turns with parallel calls and reasoning: after every turn
    the session holds at most ``max_messages`` items, every call with its output and every
    reasoning item with its turn; every request the model is sent is valid, and every item
    that left reached the hook exactly once, with the session id as namespace."""
    pruned: list[Any] = []
    namespaces: set[Any] = set()

    def remember(items: list[Any], namespace: Any) -> None:
        pruned.extend(items)
        namespaces.add(namespace)

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=6, max_messages=12, on_prune=[remember])
    )
    inner = make_inner("chat-7", tmp_path)
    session = ReducingSession(inner, reducer)
    model = ScriptedModel()
    agent = make_agent(model)
    questions = [f"question {turn}" for turn in range(30)]
    for turn, question in enumerate(questions):
        result = Runner.run_sync(agent, question, session=session)
        assert result.final_output == f"answer {turn}"
        now = wait(inner.get_items())
        assert len(now) <= 12 and request_problems(now) == []  # pairs and reasoning whole
    stored = wait(session.get_items())
    check_nothing_lost(stored, pruned, model, questions)
    assert len(pruned) > 200 and namespaces == {"chat-7"}
    assert len(model.sent) == 60
    check_requests(model, reducer, bound=12 + 10)  # the stored history and one turn's items
    assert request_problems(stored) == []
    # A new session object on the same database reads the bounded history back.
    again = make_inner("chat-7", tmp_path)
    assert [signature(i) for i in wait(again.get_items())] == list(map(signature, stored))


def test_an_async_run_with_a_summary_stores_the_summary_block(tmp_path: Path) -> None:
    """Thirty ``Runner.run`` turns with an async summarizer and ``inject_summary``: the
    session holds one summary block (a user message, marked), renewed at each prune, and
    the summarizer saw every item that left once."""
    summarized: list[Any] = []
    pruned: list[Any] = []

    async def summarize(items: list[Any]) -> str:
        summarized.extend(i for i in items if not is_summary(i))
        return f"{len(summarized)} items so far"

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            summarize_fn=summarize,
            inject_summary=True,
            on_prune=[lambda items, namespace: pruned.extend(items)],
        )
    )
    session = ReducingSession(SQLiteSession("chat-8", str(tmp_path / "chats.db")), reducer)
    model = ScriptedModel()
    agent = make_agent(model)
    questions = [f"question {turn}" for turn in range(30)]

    async def chat() -> list[Any]:
        for question in questions:
            await Runner.run(agent, question, session=session)
            assert len(await session.get_items()) <= 13  # the summary block is kept too
        return await session.get_items()

    stored = wait(chat())
    blocks = [i for i in stored if is_summary(i)]
    assert len(blocks) == 1 and blocks[0]["role"] == "user"
    assert str(len(summarized)) in _text(blocks[0])
    originals = [i for i in pruned if not is_summary(i)]
    assert Counter(map(signature, summarized)) == Counter(map(signature, originals))
    check_nothing_lost(stored, pruned, model, questions)
    check_requests(model, reducer, bound=13 + 10)


@pytest.mark.parametrize("make_inner", INNER)
def test_a_hook_outage_keeps_every_item_and_hands_all_over_once_it_is_back(
    make_inner: Any, tmp_path: Path
) -> None:
    """While the hook fails the session keeps every item (the runs go on); once it is back
    the next write prunes, and every item that left reached the hook exactly once."""
    pruned: list[Any] = []
    down = False

    def remember(items: list[Any], namespace: Any) -> None:
        if down:
            raise ConnectionError("memory store unreachable")
        pruned.extend(items)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            on_prune=[remember],
            handoff=Handoff(retry_backoff=0),
        )
    )
    inner = make_inner("chat-9", tmp_path)
    session = ReducingSession(inner, reducer)
    model = ScriptedModel()
    agent = make_agent(model)
    questions = [f"question {turn}" for turn in range(32)]
    longest = 0
    for turn, question in enumerate(questions):
        down = 10 <= turn < 16
        Runner.run_sync(agent, question, session=session)
        if down:
            longest = max(longest, len(wait(inner.get_items())))
    assert longest > 40  # nothing left while the hook was down
    assert reducer.handoff_status().failures > 0
    assert reducer.handoff_status().pending_messages == 0
    stored = wait(inner.get_items())
    assert len(stored) <= 12
    check_nothing_lost(stored, pruned, model, questions)
    for items in model.sent:
        assert request_problems(items) == []


def test_two_runs_at_once_on_one_session_id_lose_nothing(tmp_path: Path) -> None:
    """Two runs at a time on one session id (one through a ``ReducingSession``, one through
    another over a second ``SQLiteSession`` object on the same file), fifteen times: every
    item either run stored is in the session or was handed over, once."""
    pruned: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            on_prune=[lambda items, namespace: pruned.extend(items)],
        )
    )
    path = str(tmp_path / "chats.db")
    first = ReducingSession(SQLiteSession("shared", path), reducer)
    second = ReducingSession(SQLiteSession("shared", path), reducer)
    model = ScriptedModel()
    agent = make_agent(model)
    questions: list[str] = []

    async def chat() -> None:
        for turn in range(15):
            a, b = f"question a{turn}", f"question b{turn}"
            questions.extend([a, b])
            await asyncio.gather(
                Runner.run(agent, a, session=first), Runner.run(agent, b, session=second)
            )

    wait(chat())
    stored = wait(first.get_items())
    assert len(stored) <= 12
    check_nothing_lost(stored, pruned, model, questions)


def test_two_run_sync_threads_on_one_session_lose_nothing(tmp_path: Path) -> None:
    """``Runner.run_sync`` in two threads (two event loops) on one ``ReducingSession``:
    their writes take turns, and nothing is lost."""
    pruned: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            on_prune=[lambda items, namespace: pruned.extend(items)],
        )
    )
    session = ReducingSession(SQLiteSession("threads", str(tmp_path / "chats.db")), reducer)
    model = ScriptedModel()
    agent = make_agent(model)
    questions = [f"question {side}{turn}" for side in "ab" for turn in range(10)]
    errors: list[BaseException] = []

    def chat(side: str) -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())  # older SDKs use the thread's loop
        try:
            for turn in range(10):
                Runner.run_sync(agent, f"question {side}{turn}", session=session)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=chat, args=(side,)) for side in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    stored = wait(session.get_items())
    check_nothing_lost(stored, pruned, model, questions)


def test_the_model_input_filter_bounds_what_the_model_sees_not_what_is_stored() -> None:
    """With ``model_input_filter`` every request stays within the bound and valid, the
    namespace callable is called with the SDK's ``CallModelData``, nothing is handed over,
    and the plain session stores every item."""
    pruned: list[Any] = []
    agents_seen: set[str] = set()
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            on_prune=[lambda items, namespace: pruned.extend(items)],
        )
    )

    def where(data: Any) -> str:
        agents_seen.add(data.agent.name)
        return "view"

    session = SQLiteSession("plain")
    model = ScriptedModel()
    agent = make_agent(model)
    config = RunConfig(call_model_input_filter=model_input_filter(reducer, namespace=where))
    questions = [f"question {turn}" for turn in range(30)]
    for question in questions:
        Runner.run_sync(agent, question, session=session, run_config=config)
    check_requests(model, reducer, bound=12)
    assert 6 < max(len(items) for items in model.sent) <= 12
    assert pruned == [] and agents_seen == {"adder"}
    stored = wait(session.get_items())
    assert Counter(map(signature, stored)) == expected(model, questions)
    assert len(stored) > 200  # the session itself is not bounded by the filter


def test_a_token_budget_bounds_the_stored_history(tmp_path: Path) -> None:
    """In token mode the stored history stays within ``max_tokens`` after every turn."""
    reducer = MessageReducer(config=ReducerConfig(max_tokens=600))
    session = ReducingSession(SQLiteSession("tokens", str(tmp_path / "chats.db")), reducer)
    agent = make_agent(ScriptedModel())
    for turn in range(30):
        Runner.run_sync(agent, f"question {turn}", session=session)
        stored = wait(session.get_items())
        assert reducer.validate(stored).problems == []
    assert len(stored) < 60


def test_an_item_that_is_not_a_responses_item_is_refused_and_kept(tmp_path: Path) -> None:
    """An item the reducer cannot read raises a TypeError naming its position; it was
    stored all the same (nothing is dropped silently)."""
    inner = SQLiteSession("odd", str(tmp_path / "chats.db"))
    session = ReducingSession(inner, MessageReducer(2, 4))
    odd = {"kind": "note", "text": "not an item"}
    with pytest.raises(TypeError, match=r"\[1\]"):
        wait(session.add_items([{"role": "user", "content": "hello"}, odd]))
    assert wait(inner.get_items())[-1] == odd


def test_pop_and_clear_reach_the_inner_session(tmp_path: Path) -> None:
    """``pop_item`` and ``clear_session`` are the inner session's (nothing is handed over),
    and the wrapper is a ``Session`` with the inner one's id and settings."""
    pruned: list[Any] = []
    inner = SQLiteSession("pop", str(tmp_path / "chats.db"))
    session = ReducingSession(
        inner,
        MessageReducer(
            config=ReducerConfig(
                min_messages=4, max_messages=8, on_prune=[lambda m, n: pruned.extend(m)]
            )
        ),
    )
    items = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    wait(session.add_items(items))
    assert wait(session.pop_item()) == items[1]
    assert wait(inner.get_items()) == items[:1]
    wait(session.clear_session())
    assert wait(inner.get_items()) == [] and pruned == []
    assert session.session_id == "pop"
    assert session.session_settings is getattr(inner, "session_settings", None)
    assert isinstance(session, Session)  # the SDK's runtime-checkable protocol


def test_refuses_what_is_not_a_reducer_or_a_session() -> None:
    """A config where a reducer belongs, or an object that is no session, is a TypeError
    saying what is wrong."""
    with pytest.raises(TypeError, match="wrap it"):
        ReducingSession(SQLiteSession("x"), ReducerConfig())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lacks get_items, add_items, pop_item"):
        ReducingSession(object(), MessageReducer(2, 4))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="wrap it"):
        model_input_filter(ReducerConfig())  # type: ignore[arg-type]


# -- the session's invariants, on generated conversations ---------------------------------


def _turn(number: int, calls: int, reasoning: bool) -> list[list[dict[str, Any]]]:
    """One question's items as the SDK stores them, batch by batch: the question; the model
    turn (a reasoning item first when ``reasoning``) with ``calls`` parallel calls and their
    outputs; the answer (after a reasoning item too)."""
    tag = f"t{number}"
    question: list[dict[str, Any]] = [{"role": "user", "content": f"question {tag}"}]
    think = [{"type": "reasoning", "id": f"rs_{tag}", "summary": []}] if reasoning else []
    call_ids = [f"call_{tag}_{k}" for k in range(calls)]
    turn: list[dict[str, Any]] = [
        *think,
        *(
            {"type": "function_call", "call_id": c, "name": "add", "arguments": "{}"}
            for c in call_ids
        ),
        *({"type": "function_call_output", "call_id": c, "output": "3"} for c in call_ids),
    ]
    answer: list[dict[str, Any]] = [
        *([{"type": "reasoning", "id": f"rs_{tag}_a", "summary": []}] if reasoning else []),
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{tag}",
            "content": [{"type": "output_text", "text": f"answer {tag}", "annotations": []}],
        },
    ]
    return [question, turn, answer] if calls else [question, answer]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=25),
    down=st.sets(st.integers(0, 24), max_size=6),
)
def test_the_stored_history_is_bounded_whole_and_loses_nothing(
    turns: list[tuple[int, bool]], down: set[int]
) -> None:
    """For any conversation (questions with zero to three parallel calls, reasoning or not,
    stored batch by batch as the SDK does) and any turns during which the hook fails: after
    every turn the session holds complete turns (every call with its output, every reasoning
    item with its turn), within ``max_messages`` once the hook works; and every item added is
    either stored or was handed over, once. (The bound is 20: a turn holds up to 10 items,
    the newest ``min_messages`` survive whole with their pairs, so the first item, the turn
    they start in and the newest turn can take 1 + 9 + 10.)"""
    pruned: list[Any] = []
    failing = False

    def remember(items: list[Any], namespace: Any) -> None:
        if failing:
            raise ConnectionError("down")
        pruned.extend(items)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=20,
            on_prune=[remember],
            handoff=Handoff(retry_backoff=0),
        )
    )
    session = ReducingSession(SQLiteSession("generated"), reducer)
    added: list[Any] = []
    for number, (calls, reasoning) in enumerate(turns):
        failing = number in down
        for batch in _turn(number, calls, reasoning):
            wait(session.add_items(batch))
            added += batch
        stored = wait(session.get_items())
        assert request_problems(stored) == []
        if not failing:
            assert len(stored) <= 20
    originals = [signature(i) for i in pruned if not is_summary(i)]
    assert [s for s, n in Counter(originals).items() if n > 1] == []
    assert Counter(originals) + Counter(signature(i) for i in stored) == Counter(
        map(signature, added)
    )


class FailingWriteBack(SQLiteSession):
    """A SQLiteSession whose ``clear_session`` or write-back ``add_items`` (the one storing
    several items) fails once when armed: a database error in the middle of the write-back."""

    def __init__(self, session_id: str, db_path: str) -> None:
        super().__init__(session_id, db_path)
        self.fail: str | None = None

    async def clear_session(self) -> None:
        if self.fail == "clear":
            self.fail = None
            raise ConnectionError("the database went away (clear)")
        await super().clear_session()

    async def add_items(self, items: list[Any]) -> None:
        if self.fail == "add" and len(items) > 1:
            self.fail = None
            raise ConnectionError("the database went away (add)")
        await super().add_items(items)


@pytest.mark.parametrize("failing", ["clear", "add"])
def test_a_write_back_that_fails_loses_nothing_stored(tmp_path: Path, failing: str) -> None:
    """The inner session raising in the middle of the write-back (after its clear, or the
    clear itself): the caller sees the error, the session holds everything it held (the new
    item too), and the next add prunes and hands it over; every item is stored or was handed
    over, whatever failed."""
    pruned: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=4,
            on_prune=[lambda items, namespace: pruned.extend(items)],
        )
    )
    inner = FailingWriteBack("write-back", str(tmp_path / "chats.db"))
    session = ReducingSession(inner, reducer)
    sent = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"m{n}"} for n in range(12)]
    for n, item in enumerate(sent):
        if n == 6:
            before = [_text(i) for i in wait(session.get_items())]
            inner.fail = failing
            with pytest.raises(ConnectionError, match=failing):
                wait(session.add_items([item]))
            assert [_text(i) for i in wait(session.get_items())] == [*before, f"m{n}"]
            continue
        wait(session.add_items([item]))
    stored = [_text(i) for i in wait(session.get_items())]
    assert len(stored) <= 4
    handed = {_text(i) for i in pruned}
    assert {f"m{n}" for n in range(12)} == handed | set(stored)

"""The new policy steps in real agents: view-mode clearing, Compress and SelectRelevant in
``create_agent`` (and view mode in ``create_react_agent``), with a scripted model that
records what it was called with and a real checkpointer."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.langgraph.agents import ReducerMiddleware, make_pre_model_hook
from agentstate_reducer.policy import (
    DEFAULT_PLACEHOLDER,
    ClearToolOutputs,
    Compress,
    DropOldest,
    SelectRelevant,
)
from tests.langgraph_saver.conftest import async_inner, sync_inner
from tests.scripted_model import ScriptedChatModel, tool_call

from .validity import assert_valid

__all__ = ["async_inner", "sync_inner"]  # fixtures, imported for the tests below

SYSTEM = "You are a travel assistant."
CODE = "QX-4471"
REPORTS = 5


@tool
def lookup(n: int) -> str:
    """Fetch report number n (0: the traveller's itinerary)."""
    if n == 0:
        return "Itinerary: " + "leg " * 350
    return f"Report {n}: " + "figures " * 80


def step(messages: list[BaseMessage]) -> str | AIMessage:
    """Note the code; fetch a report when asked; for the code question fetch the
    itinerary, then answer from what the model was given (so a dropped turn shows)."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        if str(last.content).startswith("Itinerary"):
            seen = any(CODE in str(m.content) for m in messages[:-1])
            return f"Your code is {CODE}." if seen else "I do not know your code."
        return f"Report received ({len(str(last.content))} characters)."
    text = str(last.content)
    if text.startswith("Fetch report"):
        return tool_call("lookup", {"n": int(text.split()[-1])})
    if "booking code?" in text:
        return tool_call("lookup", {"n": 0})
    return "Noted."


def scripted() -> ScriptedChatModel:
    return ScriptedChatModel(script=[step], cycle=True)


QUESTIONS = [
    f"My booking code is {CODE} for the flight to Oslo.",
    *(f"Fetch report {n}" for n in range(1, REPORTS + 1)),
    "What was my booking code?",
]


class Hook:
    """An ``on_prune`` hook that records what it is handed."""

    def __init__(self) -> None:
        self.got: list[Any] = []

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        self.got.extend(messages)


async def chat(agent: Any, thread: str, how: str) -> list[Any]:
    """Ask every question in turn; each super-step's state must be valid."""
    config: Any = {"configurable": {"thread_id": thread}}
    for question in QUESTIONS:
        update = {"messages": [HumanMessage(question)]}
        if how == "invoke":
            agent.invoke(update, config)
        else:
            await agent.ainvoke(update, config)
        for snapshot in agent.get_state_history(config):
            if snapshot.values.get("messages"):  # the first checkpoint holds none yet
                assert_valid(snapshot.values["messages"])
    return list(agent.get_state(config).values["messages"])


def history_tokens(reducer: MessageReducer, call: list[BaseMessage]) -> int:
    """Tokens of what the model saw besides the system prompt (kept outside the state)."""
    return sum(reducer.count_tokens(m) for m in call if m.type != "system")


BUDGET = 700


def clearing_reducer(hook: Hook) -> MessageReducer:
    return MessageReducer(
        config=ReducerConfig(
            max_tokens=BUDGET,
            policy=[ClearToolOutputs(keep_last=1), DropOldest()],
            on_prune=[hook],
        )
    )


def assert_cleared_view(
    model: ScriptedChatModel, reducer: MessageReducer, final: list[Any]
) -> None:
    """The model saw every old output cleared and the newest one whole, within the
    budget; the stored state kept every original."""
    assert len(final) == 2 + 4 * (REPORTS + 1)  # the code turn, then tool turns
    stored = [m for m in final if isinstance(m, ToolMessage)]
    assert len(stored) == REPORTS + 1
    assert all(str(m.content).startswith(("Report ", "Itinerary")) for m in stored)
    assert not any(str(m.content) == DEFAULT_PLACEHOLDER for m in final)
    cleared_seen = 0
    for call in model.calls:
        assert call[0].type == "system" and call[0].content == SYSTEM
        assert history_tokens(reducer, call) <= BUDGET
        outputs = [m for m in call if isinstance(m, ToolMessage)]
        if sum(reducer.count_tokens(m) for m in call[1:]) > BUDGET or any(
            str(m.content) == DEFAULT_PLACEHOLDER for m in outputs
        ):
            assert all(str(m.content) == DEFAULT_PLACEHOLDER for m in outputs[:-1])
        cleared_seen += sum(str(m.content) == DEFAULT_PLACEHOLDER for m in outputs)
        if outputs and isinstance(call[-1], ToolMessage):
            assert str(outputs[-1].content) != DEFAULT_PLACEHOLDER, "the newest is whole"
    last = model.calls[-1]
    assert sum(isinstance(m, ToolMessage) for m in last) == REPORTS + 1, "clearing sufficed"
    assert cleared_seen >= REPORTS


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_view_mode_middleware_clears_what_the_model_sees_only(how: str) -> None:
    hook = Hook()
    reducer = clearing_reducer(hook)
    model = scripted()
    agent = create_agent(
        model,
        [lookup],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer, mode="view")],
        checkpointer=InMemorySaver(),
    )
    final = await chat(agent, f"view-{how}", how)
    assert_cleared_view(model, reducer, final)
    assert hook.got == []
    assert isinstance(final[-1], AIMessage) and CODE in str(final[-1].content)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_view_mode_pre_model_hook_clears_what_the_model_sees_only(how: str) -> None:
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    hook = Hook()
    reducer = clearing_reducer(hook)
    model = scripted()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*create_react_agent.*")
        agent = prebuilt.create_react_agent(
            model,
            [lookup],
            prompt=SYSTEM,
            pre_model_hook=make_pre_model_hook(reducer, mode="view"),
            checkpointer=InMemorySaver(),
        )
    final = await chat(agent, f"hook-view-{how}", how)
    assert_cleared_view(model, reducer, final)
    assert hook.got == []


async def gist(messages: list[Any]) -> list[str]:
    return [f"gist: {str(m.content)[:9]}" for m in messages]


def sync_gist(messages: list[Any]) -> list[str]:
    return [f"gist: {str(m.content)[:9]}" for m in messages]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_compress_and_select_relevant_in_a_persistent_agent(how: str) -> None:
    """The stored list stays bounded; the model gets the compressed reports and the early
    turn that holds the code, so it answers; every original that left reached the hook
    once and no compressed version did. With DropOldest alone the code is lost."""
    hook = Hook()
    compressor = sync_gist if how == "invoke" else gist
    compress = Compress(compressor, keep_last=1)
    budget = 450
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget,
            policy=[compress, SelectRelevant(), DropOldest()],
            on_prune=[hook],
            handoff=Handoff(dedupe=False),
        )
    )
    model = scripted()
    agent = create_agent(
        model,
        [lookup],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer, on_prune_error="raise")],
        checkpointer=InMemorySaver(),
    )
    final = await chat(agent, f"steps-{how}", how)
    assert final[-1].content == f"Your code is {CODE}."
    last_call = model.calls[-1]
    assert any(m.type == "human" and CODE in str(m.content) for m in last_call)
    assert any(str(m.content).startswith("gist: Report") for c in model.calls for m in c)
    for call in model.calls:
        assert history_tokens(reducer, call) <= budget
    assert history_tokens(reducer, final[:-1]) <= budget
    # What left: originals only, once each, and everything missing from the state.
    assert hook.got and all(not str(m.content).startswith("gist") for m in hook.got)
    assert len({m.id for m in hook.got}) == len(hook.got)
    reports = [m for m in hook.got if isinstance(m, ToolMessage)]
    assert reports and all(str(m.content).startswith("Report ") for m in reports)
    assert not {m.id for m in hook.got if not isinstance(m, ToolMessage)} & {m.id for m in final}

    plain = scripted()
    recency = create_agent(
        plain,
        [lookup],
        system_prompt=SYSTEM,
        middleware=[
            ReducerMiddleware(
                MessageReducer(config=ReducerConfig(max_tokens=budget, policy=[DropOldest()]))
            )
        ],
        checkpointer=InMemorySaver(),
    )
    lost = await chat(recency, f"plain-{how}", how)
    assert lost[-1].content == "I do not know your code."


class IdlessGist:
    """A compressor answering with id-less ``ToolMessage`` s (which the answer check
    accepts: same role and call id), recording what it is given."""

    def __init__(self) -> None:
        self.given: list[tuple[str | None, str]] = []

    def __call__(self, messages: list[Any]) -> list[Any]:
        self.given.extend((m.id, str(m.content)) for m in messages)
        return [
            ToolMessage(content=f"gist: {str(m.content)[:9]}", tool_call_id=m.tool_call_id)
            for m in messages
        ]


def _compressing_agent(saver: Any, hook: Hook, compressor: IdlessGist) -> tuple[Any, Any]:
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=450,
            policy=[Compress(compressor, keep_last=1), DropOldest()],
            on_prune=[hook],
        )
    )
    model = scripted()
    agent = create_agent(
        model,
        [lookup],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer, on_prune_error="raise")],
        checkpointer=saver,
    )
    return agent, model


def _assert_compressed_once(hook: Hook, compressor: IdlessGist, final: list[Any]) -> None:
    assert compressor.given, "nothing was compressed"
    assert len(compressor.given) == len(set(compressor.given)), "a message was compressed twice"
    assert not any(text.startswith("gist") for _, text in compressor.given), (
        "a compressed output was compressed again"
    )
    assert hook.got and not any(str(m.content).startswith("gist") for m in hook.got), (
        "a compressed output reached the hook"
    )
    assert len({(m.id, str(m.content)) for m in hook.got}) == len(hook.got)
    outputs = [m for m in final if str(m.content).startswith("gist")]
    assert all(m.id in {i for i, _ in compressor.given} for m in outputs), (
        "an output did not take its original's id"
    )


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_compress_answers_without_ids_take_the_originals_ids(
    sync_inner: Any, durability: str
) -> None:
    """A compressor answering with id-less ToolMessages: each answer takes its original's
    id, so the next turn recognises it (before: add_messages gave it a new id, it was
    compressed again and again, and its text reached the hooks as if it were original).
    Each output is compressed once, the hooks get originals only, once each."""
    hook, compressor = Hook(), IdlessGist()
    agent, _ = _compressing_agent(sync_inner, hook, compressor)
    config: Any = {"configurable": {"thread_id": f"gist-{durability}"}}
    for question in QUESTIONS:
        agent.invoke({"messages": [("user", question)]}, config, durability=durability)
    _assert_compressed_once(hook, compressor, agent.get_state(config).values["messages"])


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_compress_answers_without_ids_take_the_originals_ids_async(
    async_inner: Any, durability: str
) -> None:
    """Async twin on the async savers."""
    hook, compressor = Hook(), IdlessGist()
    agent, _ = _compressing_agent(async_inner, hook, compressor)
    config: Any = {"configurable": {"thread_id": f"agist-{durability}"}}
    for question in QUESTIONS:
        await agent.ainvoke({"messages": [("user", question)]}, config, durability=durability)
    final = (await agent.aget_state(config)).values["messages"]
    _assert_compressed_once(hook, compressor, final)

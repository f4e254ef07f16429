"""``ReducerMiddleware`` (``create_agent``) and ``make_pre_model_hook`` (``create_react_agent``)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.langgraph.agents import ReducerMiddleware, make_pre_model_hook
from tests.scripted_model import ScriptedChatModel, add, calculator_model

from .graphs import HOWS, How, run
from .validity import assert_valid

SYSTEM = "You add numbers."
TURNS = 6


def _reducer(
    delivered: list[Any] | None = None, summaries: list[Any] | None = None
) -> MessageReducer:
    def summarize(pruned: list[Any]) -> str:
        if summaries is not None:
            summaries.append(len(pruned))
        return f"{len(pruned)} earlier messages"

    return MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=6,
            summarize_fn=summarize,
            inject_summary=True,
            on_prune=lambda pruned, ns: delivered.extend(pruned) if delivered is not None else None,
        )
    )


def _model_saw_a_valid_bounded_list(model: ScriptedChatModel, limit: int) -> None:
    assert model.calls
    for call in model.calls:
        assert isinstance(call[0], SystemMessage) and call[0].content == SYSTEM
        assert len(call) <= limit + 1, [m.type for m in call]


async def _turns(agent: Any, how: How, thread: str) -> Any:
    config: Any = {"configurable": {"thread_id": thread}}
    for turn in range(TURNS):
        question = f"question {turn}"
        for messages in await run(agent, {"messages": [HumanMessage(question)]}, config, how):
            assert_valid(messages, newest_human=question)
    return agent.get_state(config).values["messages"]


@pytest.mark.parametrize("how", HOWS)
async def test_middleware_persistent_mode_prunes_the_state(how: How) -> None:
    """Persistent mode: over six tool turns the stored list stays bounded and valid after
    every super-step, the model always gets the system prompt plus at most max_messages,
    and the pruned messages reach the hook once each."""
    delivered: list[Any] = []
    model = calculator_model()
    agent = create_agent(
        model,
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(_reducer(delivered), mode="persistent")],
        checkpointer=InMemorySaver(),
    )
    final = await _turns(agent, how, f"persistent-{how}")
    assert len(final) <= 6 + 1
    _model_saw_a_valid_bounded_list(model, 6)
    assert delivered
    assert len({m.id for m in delivered}) == len(delivered)
    assert not {m.id for m in delivered} & {m.id for m in final}


@pytest.mark.parametrize("how", HOWS)
async def test_middleware_view_mode_leaves_the_state_alone(how: How) -> None:
    """View mode: the stored list keeps every message of the six turns, the model still
    gets the system prompt plus at most max_messages, and neither the summary nor the
    on_prune hooks run."""
    delivered: list[Any] = []
    summaries: list[Any] = []
    model = calculator_model()
    agent = create_agent(
        model,
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(_reducer(delivered, summaries), mode="view")],
        checkpointer=InMemorySaver(),
    )
    final = await _turns(agent, how, f"view-{how}")
    assert len(final) == 4 * TURNS
    _model_saw_a_valid_bounded_list(model, 6)
    assert delivered == [] and summaries == []


async def test_middleware_with_an_injected_summary_keeps_it_in_place() -> None:
    """Persistent mode with inject_summary: the summary block replaces the pruned block at
    the head of the state, and the model sees it after the system prompt."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=6,
            preserve_first=False,
            summarize_fn=lambda pruned: "earlier sums",
            inject_summary=True,
        )
    )
    model = calculator_model()
    agent = create_agent(
        model,
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
    )
    final = await _turns(agent, "ainvoke", "summary")
    assert str(final[0].content).startswith("Summary of the")
    assert str(model.calls[-1][1].content).startswith("Summary of the")


def test_middleware_rejects_an_unknown_mode() -> None:
    """A wrong mode names both accepted ones."""
    with pytest.raises(ValueError, match=r"'persistent'.*'view'.*got 'trim'"):
        ReducerMiddleware(MessageReducer(), mode="trim")  # type: ignore[arg-type]


def test_two_middlewares_need_distinct_names() -> None:
    """``name=`` lets an agent hold two reducers (create_agent rejects duplicate names)."""
    first = ReducerMiddleware(MessageReducer(), mode="view")
    second = ReducerMiddleware(MessageReducer(), mode="persistent", name="persist")
    agent = create_agent(calculator_model(), [add], middleware=[first, second])
    assert "persist.before_model" in agent.get_graph().nodes


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
@pytest.mark.parametrize("mode", ["view", "persistent"])
@pytest.mark.parametrize("how", HOWS)
async def test_pre_model_hook(how: How, mode: Any) -> None:
    """create_react_agent with the hook: every super-step is valid, the model gets the
    prompt plus at most max_messages, every ``llm_input_messages`` the hook writes is
    non-empty, and only persistent mode shrinks the stored list."""
    model = calculator_model()
    agent = create_react_agent(
        model,
        [add],
        prompt=SYSTEM,
        pre_model_hook=make_pre_model_hook(_reducer(), mode=mode),
        checkpointer=InMemorySaver(),
    )
    final = await _turns(agent, how, f"hook-{mode}-{how}")
    _model_saw_a_valid_bounded_list(model, 6)
    if mode == "view":
        assert len(final) == 4 * TURNS
    else:
        assert len(final) <= 6 + 1
    config: Any = {"configurable": {"thread_id": f"hook-{mode}-{how}"}}
    written = [
        s.values["llm_input_messages"]
        for s in agent.get_state_history(config)
        if "llm_input_messages" in s.values
    ]
    assert written and all(written)


def test_pre_model_hook_refuses_an_empty_history() -> None:
    """With no messages there is nothing to call the model with: the hook says so."""
    hook = make_pre_model_hook(MessageReducer())
    with pytest.raises(ValueError, match="no messages under 'messages'"):
        hook.invoke({"messages": []})


async def test_pre_model_hook_view_is_never_empty() -> None:
    """A reducer that keeps no prunable message still leaves the newest one for the model."""
    reducer = MessageReducer(
        config=ReducerConfig(min_messages=0, max_messages=1, preserve_first=False)
    )
    hook = make_pre_model_hook(reducer)
    state = {"messages": [HumanMessage("a", id="1"), HumanMessage("b", id="2")]}
    out = hook.invoke(state)
    assert [m.content for m in out["llm_input_messages"]] == ["b"]
    assert (await hook.ainvoke(state)) == out


def test_the_first_question_is_not_pinned_when_the_system_prompt_lives_outside() -> None:
    """create_agent keeps its system_prompt outside the state, so index 0 is the first
    question: the middleware runs the reducer with preserve_first="system" and that
    question is pruned like any other; the reducer's own setting is kept on request."""
    delivered: list[Any] = []
    for preserve_first, pinned in (("system", False), (None, True)):
        delivered.clear()
        agent = create_agent(
            calculator_model(),
            [add],
            system_prompt=SYSTEM,
            middleware=[ReducerMiddleware(_reducer(delivered), preserve_first=preserve_first)],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": f"pin-{preserve_first}"}}
        for turn in range(TURNS):
            agent.invoke({"messages": [HumanMessage(f"question {turn}", id=f"q{turn}")]}, config)
        final = agent.get_state(config).values["messages"]
        assert ("q0" in {m.id for m in final}) is pinned
        assert ("q0" in {m.id for m in delivered}) is not pinned


@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
def test_both_agent_helpers_default_to_persistent_mode() -> None:
    """One default for both helpers: persistent (the state is pruned and the hooks run)."""
    import inspect

    middleware = inspect.signature(ReducerMiddleware.__init__).parameters["mode"].default
    hook = inspect.signature(make_pre_model_hook).parameters["mode"].default
    assert middleware == hook == "persistent"
    delivered: list[Any] = []
    model = calculator_model()
    react = create_react_agent(
        model,
        [add],
        pre_model_hook=make_pre_model_hook(_reducer(delivered)),
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "react-default"}}
    for turn in range(TURNS):
        react.invoke({"messages": [HumanMessage(f"question {turn}")]}, config)
    assert delivered and len(react.get_state(config).values["messages"]) <= 6 + 4


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
async def test_a_memory_outage_never_fails_the_agents_turn(how: str) -> None:
    """create_agent + ReducerMiddleware with a memory store that is down for a while: every
    turn goes through (the state stays unpruned meanwhile); once it is back, everything
    reaches it once and the state is bounded again. on_prune_error="raise" fails the turn."""
    taken: list[str] = []
    down = {"on": False}

    def store(messages: list[Any], namespace: Any) -> None:
        if down["on"]:
            raise ConnectionError("memory store down")
        taken.extend(m.id for m in messages)

    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=4, max_messages=8, on_prune=[store], handoff=Handoff(retry_backoff=0)
        )
    )
    agent = create_agent(
        calculator_model(),
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"outage-{how}"}}

    async def turn(n: int) -> None:
        message = {"messages": [HumanMessage(f"question {n}", id=f"q{n}")]}
        if how == "invoke":
            agent.invoke(message, config)
        else:
            await agent.ainvoke(message, config)

    for n in range(2):
        await turn(n)
    down["on"] = True
    for n in range(2, 6):
        await turn(n)
    assert len(agent.get_state(config).values["messages"]) > 8 + 1
    down["on"] = False
    await turn(6)
    state = agent.get_state(config).values["messages"]
    assert len(state) <= 8 + 1
    assert len(taken) == len(set(taken))
    assert {f"q{n}" for n in range(7)} <= set(taken) | {m.id for m in state}

    strict = create_agent(
        calculator_model(),
        [add],
        system_prompt=SYSTEM,
        middleware=[ReducerMiddleware(reducer, on_prune_error="raise")],
        checkpointer=InMemorySaver(),
    )
    down["on"] = True
    from agentstate_reducer import PruneHookError

    with pytest.raises(PruneHookError):
        for n in range(4):
            strict.invoke(
                {"messages": [HumanMessage(f"again {n}")]}, {"configurable": {"thread_id": "s"}}
            )

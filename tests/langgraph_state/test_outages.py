"""What a model receives while the memory store (or the summarizer) is down.

Persistent mode keeps the stored list unpruned during an outage: the list is the retry
buffer, so nothing is lost. The model must still get a bounded list: the middleware's
``wrap_model_call``, the pre-model hook's ``llm_input_messages`` and the state channel's
``get()`` (what nodes read) send the reducer's view (``reducer.view``) of the stored list
while it is over the bound, and the stored list itself keeps every message until the
store is back and the hand-off succeeds.
"""

# No ``from __future__ import annotations``: LangGraph resolves the state classes' hints.

from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import create_react_agent
from typing_extensions import TypedDict

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.langgraph.agents import ReducerMiddleware, make_pre_model_hook
from tests.langgraph_saver.conftest import async_inner, sync_inner
from tests.scripted_model import ScriptedChatModel

__all__ = ["async_inner", "sync_inner"]  # fixtures, imported for the tests below

BUDGET = 400
OUTAGE = range(3, 15)
TURNS = 20
DURABILITIES = ["sync", "async", "exit"]


class Store:
    """An ``on_prune`` hook that is down during ``OUTAGE`` (the turn being run is set by
    the test) and records what it takes."""

    def __init__(self) -> None:
        self.turn = 0
        self.taken: list[Any] = []
        self.failures = 0

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        if self.turn in OUTAGE:
            self.failures += 1
            raise ConnectionError("memory store unreachable")
        self.taken.extend(messages)


def budget_reducer(store: Store) -> MessageReducer:
    # retry_backoff=0: the store is tried on every turn, so it is taken back at once.
    return MessageReducer(
        config=ReducerConfig(
            max_tokens=BUDGET,
            on_prune=[store],
            handoff=Handoff(retry_backoff=0),
            preserve_first="system",
        )
    )


def question(turn: int) -> str:
    return f"question {turn}: " + "some detail about it " * 8


def tokens(reducer: MessageReducer, messages: list[Any]) -> int:
    return sum(reducer.count_tokens(m) for m in messages if m.type != "system")


def check(
    store: Store, reducer: MessageReducer, model: ScriptedChatModel, final: list[Any]
) -> None:
    """Every model call within the budget; nothing lost: every question is stored or taken,
    and once the store is back the stored list is bounded again."""
    assert store.failures, "the outage must have been felt"
    for call in model.calls:
        assert tokens(reducer, call) <= BUDGET, f"the model got {tokens(reducer, call)} tokens"
    held = {str(m.content) for m in [*final, *store.taken]}
    assert all(question(turn) in held for turn in range(TURNS)), "a message was lost"
    assert tokens(reducer, final) <= BUDGET + reducer.count_tokens(final[-1])


async def _drive(agent: Any, store: Store, config: Any, durability: str, is_async: bool) -> Any:
    for turn in range(TURNS):
        store.turn = turn
        message = {"messages": [HumanMessage(question(turn))]}
        if is_async:
            await agent.ainvoke(message, config, durability=durability)
        else:
            agent.invoke(message, config, durability=durability)
    store.turn = TURNS
    state = await agent.aget_state(config) if is_async else agent.get_state(config)
    return state


@pytest.mark.parametrize("durability", DURABILITIES)
def test_the_middleware_sends_a_bounded_view_during_an_outage(
    sync_inner: Any, durability: str
) -> None:
    """create_agent + ReducerMiddleware (persistent): while the store is down the state
    grows unpruned (stored, retried), but every model call gets at most the budget."""
    import asyncio

    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    agent = create_agent(
        model,
        [],
        system_prompt="Be brief.",
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=sync_inner,
    )
    config: Any = {"configurable": {"thread_id": f"mw-{durability}"}}
    state = asyncio.run(_drive(agent, store, config, durability, is_async=False))
    check(store, reducer, model, list(state.values["messages"]))


@pytest.mark.parametrize("durability", DURABILITIES)
async def test_the_middleware_sends_a_bounded_view_during_an_outage_async(
    async_inner: Any, durability: str
) -> None:
    """Async twin (awrap_model_call, aview)."""
    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    agent = create_agent(
        model,
        [],
        system_prompt="Be brief.",
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=async_inner,
    )
    config: Any = {"configurable": {"thread_id": f"amw-{durability}"}}
    state = await _drive(agent, store, config, durability, is_async=True)
    check(store, reducer, model, list(state.values["messages"]))


@pytest.mark.parametrize("is_async", [False, True], ids=["invoke", "ainvoke"])
async def test_the_pre_model_hook_sends_a_bounded_view_during_an_outage(is_async: bool) -> None:
    """create_react_agent + make_pre_model_hook (persistent): llm_input_messages stays
    within the budget while the state is kept unpruned."""
    from langgraph.checkpoint.memory import InMemorySaver

    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(
            model,
            [],
            prompt="Be brief.",
            pre_model_hook=make_pre_model_hook(reducer),
            checkpointer=InMemorySaver(),
        )
    config: Any = {"configurable": {"thread_id": "hook"}}
    state = await _drive(agent, store, config, "sync", is_async=is_async)
    check(store, reducer, model, list(state.values["messages"]))


def _channel_graph(reducer: MessageReducer, model: ScriptedChatModel, saver: Any) -> Any:
    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]

    def chat(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("durability", DURABILITIES)
def test_the_channel_stores_everything_and_nodes_read_the_bounded_view(
    sync_inner: Any, durability: str
) -> None:
    """The state channel: during the outage its checkpointed value is the whole list
    (stored for the retry), while what nodes read (get()) is the reducer's view, within
    the budget; once the store is back the stored list is bounded again."""

    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    graph = _channel_graph(reducer, model, sync_inner)
    config: Any = {"configurable": {"thread_id": f"channel-{durability}"}}
    during: list[int] = []
    for turn in range(TURNS):
        store.turn = turn
        graph.invoke({"messages": [HumanMessage(question(turn))]}, config, durability=durability)
        if turn in OUTAGE:
            stored = sync_inner.get_tuple(config).checkpoint["channel_values"]["messages"]
            during.append(tokens(reducer, stored))
    assert max(during) > BUDGET, "the stored list grows while the store is down"
    store.turn = TURNS
    stored = sync_inner.get_tuple(config).checkpoint["channel_values"]["messages"]
    check(store, reducer, model, list(stored))


@pytest.mark.parametrize("durability", DURABILITIES)
def test_the_channel_and_the_saver_on_one_reducer_hand_each_message_over_once(
    sync_inner: Any, durability: str
) -> None:
    """The state channel and ``ReducingCheckpointSaver`` on one reducer (the guide pairs
    them): after an outage both find the stored list over the bound, the saver at the next
    run's input checkpoint (its hooks get ``("memories", thread_id)``) and the channel
    after the next step (``namespace=None``). Each message reaches the store once: a
    hand-off without a namespace and one with a namespace are the same hand-off (they were
    two, and every message of the outage was stored twice)."""
    from collections import Counter

    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    saver = ReducingCheckpointSaver(sync_inner, reducer)
    graph = _channel_graph(reducer, model, saver)
    config: Any = {"configurable": {"thread_id": f"both-{durability}"}}
    for turn in range(TURNS):
        store.turn = turn
        graph.invoke({"messages": [HumanMessage(question(turn))]}, config, durability=durability)
    store.turn = TURNS
    stored = sync_inner.get_tuple(config).checkpoint["channel_values"]["messages"]
    check(store, reducer, model, list(stored))
    twice = [key for key, n in Counter(m.id for m in store.taken).items() if n > 1]
    assert twice == [], f"{len(twice)} messages reached the store twice"
    assert {m.id for m in store.taken}.isdisjoint(m.id for m in stored)


async def test_the_channel_sends_the_bounded_view_in_async_graphs(async_inner: Any) -> None:
    """Async twin of the channel test (ainvoke)."""
    store = Store()
    reducer = budget_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    graph = _channel_graph(reducer, model, async_inner)
    config: Any = {"configurable": {"thread_id": "achannel"}}
    for turn in range(TURNS):
        store.turn = turn
        await graph.ainvoke({"messages": [HumanMessage(question(turn))]}, config)
    store.turn = TURNS
    stored = (await async_inner.aget_tuple(config)).checkpoint["channel_values"]["messages"]
    check(store, reducer, model, list(stored))


def test_a_node_writing_back_the_view_does_not_replace_the_stored_originals() -> None:
    """During an outage the view a node reads holds cleared tool outputs under their
    originals' ids; a node that writes back every message it read (a no-op with plain
    add_messages) must not store the cleared text in place of the originals, which never
    reached the hooks."""
    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from agentstate_reducer.policy import ClearToolOutputs, DropOldest

    store = Store()
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=BUDGET,
            on_prune=[store],
            handoff=Handoff(retry_backoff=0),
            policy=[ClearToolOutputs(keep_last=1), DropOldest()],
        )
    )

    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]

    def tool_turn(state: Any) -> dict[str, Any]:
        n = len(state["messages"])
        call = AIMessage("", tool_calls=[{"id": f"c{n}", "name": "get", "args": {}}])
        result = ToolMessage("output " * 60, tool_call_id=f"c{n}")
        # Writes back everything it read, as careless nodes do, plus the new turn.
        return {"messages": [*state["messages"], call, result, AIMessage("done")]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("tool_turn", tool_turn)
    builder.add_edge(START, "tool_turn")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "write-back"}}
    store.turn = OUTAGE.start  # the store is down for the whole test
    for turn in range(6):
        graph.invoke({"messages": [HumanMessage(f"question {turn}")]}, config)
    stored = saver.get_tuple(config).checkpoint["channel_values"]["messages"]
    outputs = [m for m in stored if isinstance(m, ToolMessage)]
    assert len(outputs) == 6 and all(str(m.content).startswith("output") for m in outputs)
    read = graph.get_state(config).values["messages"]
    assert tokens(reducer, read) <= BUDGET < tokens(reducer, stored)

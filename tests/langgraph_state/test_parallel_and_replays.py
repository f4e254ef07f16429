"""The channel reducer under parallel writers, fan-out, forks, interrupts and replays.

All writes of a super-step are merged as ``add_messages`` would merge them, then bounded
once; summaries keep their ids across replays and resumes; one reducer serves many threads
without mixing their summaries.
"""

# No ``from __future__ import annotations``: LangGraph resolves these state classes' hints.

import operator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.messages import content_of, is_summary


def _state(channel: Any) -> type[Any]:
    class State(TypedDict):
        messages: Annotated[list[Any], channel]

    return State


def _history(n: int) -> list[Any]:
    return [
        cls(f"{cls.__name__[0]}{i}", id=f"{cls.__name__[0]}{i}")
        for i in range(n)
        for cls in (HumanMessage, AIMessage)
    ]


def _parallel_graph(channel: Any) -> Any:
    """START fans out to ``append`` and ``remove``, which write in the same super-step."""
    state = _state(channel)

    def append(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("aside", id="aside"), HumanMessage("new", id="new")]}

    def remove(current: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id="H1")]}

    def edit(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("A2 (edited)", id="A2")]}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("append", append)
    builder.add_node("remove", remove)
    builder.add_node("edit", edit)
    for node in ("append", "remove", "edit"):
        builder.add_edge(START, node)
    return builder.compile()


def test_parallel_append_remove_and_edit_merge_as_add_messages_then_bound_once() -> None:
    """One node appends, a parallel one removes an old message and a third edits another:
    plain add_messages accepts this; so does the bounded channel, and its result is
    exactly the reducer applied once to what add_messages made of the step (the edit is
    not resurrected at the end, the removal finds its message)."""
    reducer = MessageReducer(min_messages=4, max_messages=8)
    start = {"messages": _history(4)}  # 8: within the bound until the step's writes
    plain = _parallel_graph(add_messages).invoke(start)["messages"]
    bounded = _parallel_graph(reducer.as_langgraph_reducer()).invoke(start)["messages"]
    expected = MessageReducer(min_messages=4, max_messages=8).reduce(plain).surviving
    assert len(plain) == 9 and len(expected) < len(plain), "the step must prune"
    assert [(m.id, m.content) for m in bounded] == [(m.id, m.content) for m in expected]
    assert "H1" not in {m.id for m in bounded}
    assert bounded[-1].id == "new", "an edited old message was appended at the end"


@pytest.mark.parametrize("worker_message", [HumanMessage, AIMessage])
def test_a_fan_out_to_100_tasks_is_bounded_once_per_step(worker_message: type[Any]) -> None:
    """``Send`` to 100 workers, each writing one report: the step's 100 writes are merged,
    then the reducer runs once (one hand-off of everything pruned), where a per-write bound
    would prune, and call the hooks, dozens of times."""
    batches: list[list[Any]] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=10,
            max_messages=20,
            on_prune=[lambda messages, namespace: batches.append(messages)],
        )
    )

    class State(TypedDict):
        messages: Annotated[list[Any], reducer.as_langgraph_reducer()]
        jobs: Annotated[list[int], operator.add]

    def plan(current: Any) -> Command[Any]:
        return Command(goto=[Send("work", {"job": n}) for n in range(100)])

    def work(job: dict[str, int]) -> dict[str, Any]:
        return {"messages": [worker_message(f"report {job['job']}", id=f"w{job['job']}")]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("work", work)
    builder.add_edge(START, "plan")
    result = builder.compile().invoke({"messages": [HumanMessage("go", id="q")], "jobs": []})
    kept = result["messages"]
    assert len(kept) <= 20
    assert len(batches) == 1, f"the step was bounded {len(batches)} times"
    assert len(batches[0]) + len(kept) == 101
    assert kept[0].id == "q" or worker_message is HumanMessage, "the question must stay"
    assert {m.id for m in kept} | {m.id for m in batches[0]} == {"q"} | {
        f"w{n}" for n in range(100)
    }


def _summarizing(calls: list[list[Any]], **options: Any) -> MessageReducer:
    def summarize(messages: list[Any]) -> str:
        calls.append(messages)
        return "; ".join(str(content_of(m)) for m in messages)

    return MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=6,
            summarize_fn=summarize,
            inject_summary=True,
            **options,
        )
    )


def _approval_graph(reducer: MessageReducer) -> Any:
    state = _state(reducer.as_langgraph_reducer())

    def ask(current: Any) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [AIMessage(f"approved: {answer}")]}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def test_summary_ids_survive_get_state_and_a_resume_without_a_second_call() -> None:
    """Interrupted with pending writes: get_state twice shows the same summary id, the
    resume keeps it, and summarize_fn ran once for those messages."""
    calls: list[list[Any]] = []
    reducer = _summarizing(calls)
    graph = _approval_graph(reducer)
    config: Any = {"configurable": {"thread_id": "approve"}}
    graph.invoke({"messages": _history(5)}, config)
    first = [m.id for m in graph.get_state(config).values["messages"] if is_summary(m)]
    second = [m.id for m in graph.get_state(config).values["messages"] if is_summary(m)]
    assert first == second and len(first) == 1
    graph.invoke(Command(resume="yes"), config)
    after = graph.get_state(config).values["messages"]
    assert [m.id for m in after if is_summary(m)] == first
    assert after[-1].content == "approved: yes"
    assert len(calls) == 1


def test_one_reducer_serves_many_threads_without_mixing_their_summaries() -> None:
    """Two threads with the same message ids and different words, one reducer: each
    thread's summary is its own, and summarize_fn ran for both."""
    calls: list[list[Any]] = []
    reducer = _summarizing(calls)
    graph = _approval_graph(reducer)
    for name in ("alice", "bob"):
        words = [
            cls(f"{name} {i}", id=f"{cls.__name__[0]}{i}")
            for i in range(5)
            for cls in (HumanMessage, AIMessage)
        ]
        graph.invoke({"messages": words}, {"configurable": {"thread_id": name}})
    summaries = {
        name: next(
            m.content
            for m in graph.get_state({"configurable": {"thread_id": name}}).values["messages"]
            if is_summary(m)
        )
        for name in ("alice", "bob")
    }
    assert "alice" in summaries["alice"] and "bob" not in summaries["alice"]
    assert "bob" in summaries["bob"] and "alice" not in summaries["bob"]
    assert len(calls) == 2


def test_a_fork_with_an_edited_message_is_summarised_afresh() -> None:
    """Time travel: update_state on an earlier checkpoint with a corrected message forks
    the thread; the fork's summary says the corrected words, not the stale ones."""
    calls: list[list[Any]] = []
    reducer = _summarizing(calls, preserve_first=False)
    state = _state(reducer.as_langgraph_reducer())

    def reply(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(current['messages'])}")]}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "fork"}}
    graph.invoke({"messages": [HumanMessage("first words", id="q0")]}, config)
    early = next(s for s in graph.get_state_history(config) if s.next == ("reply",))
    for n in range(1, 4):
        graph.invoke({"messages": [HumanMessage(f"q{n}", id=f"q{n}")]}, config)
    original = graph.get_state(config).values["messages"]
    assert "first words" in next(m for m in original if is_summary(m)).content
    fork = graph.update_state(
        early.config, {"messages": [HumanMessage("corrected words", id="q0")]}
    )
    graph.invoke(None, fork)  # the fork is now the thread's newest checkpoint
    for n in range(1, 4):
        graph.invoke({"messages": [HumanMessage(f"again {n}", id=f"r{n}")]}, config)
    forked = graph.get_state(config).values["messages"]
    summary = next(m for m in forked if is_summary(m))
    assert "corrected words" in summary.content and "first words" not in summary.content


@pytest.mark.parametrize("merge", ["add_messages", "append"])
def test_an_overwrite_write_is_stored_as_given(merge: str) -> None:
    """LangGraph's ``Overwrite`` bypasses reducers: the channel stores it unbounded (what
    nodes and the output read is the reducer's view of it, within the bound), and two in
    one step are refused as LangGraph refuses them."""
    from langgraph.errors import InvalidUpdateError
    from langgraph.types import Overwrite

    reducer = MessageReducer(min_messages=1, max_messages=2)
    state = _state(reducer.as_langgraph_reducer(merge=merge))  # type: ignore[arg-type]
    many = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(5)]

    def overwrite(current: Any) -> dict[str, Any]:
        return {"messages": Overwrite(many)}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("overwrite", overwrite)
    builder.add_edge(START, "overwrite")
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": f"overwrite-{merge}"}}
    read = builder.compile(checkpointer=saver).invoke({"messages": []}, config)["messages"]
    stored = saver.get_tuple(config).checkpoint["channel_values"]["messages"]  # type: ignore[union-attr]
    assert stored == many
    assert read == reducer.view(many).surviving and len(read) <= 2

    twice: StateGraph[Any] = StateGraph(state)
    twice.add_node("a", overwrite)
    twice.add_node("b", overwrite)
    twice.add_edge(START, "a")
    twice.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="Overwrite"):
        twice.compile().invoke({"messages": []})


def test_a_subgraph_sharing_the_channel_leaves_one_summary_in_place() -> None:
    """Parent and subgraph share the bounded channel: the child summarises, its list is
    merged into the parent's (add_messages appends the child's block), and the parent
    prunes the same messages: the parent recognises the block as its own (same id, no
    second call), so the list holds one summary, right after the kept first message."""
    calls: list[list[Any]] = []
    reducer = _summarizing(calls)
    state = _state(reducer.as_langgraph_reducer())

    def work(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("sub-a", id="sa"), AIMessage("sub-b", id="sb")]}

    sub: StateGraph[Any] = StateGraph(state)
    sub.add_node("work", work)
    sub.add_edge(START, "work")
    parent: StateGraph[Any] = StateGraph(state)
    parent.add_node("child", sub.compile())
    parent.add_edge(START, "child")
    out = parent.compile().invoke(
        {"messages": [HumanMessage(f"q{n}", id=f"q{n}") for n in range(6)]}
    )
    messages = out["messages"]
    assert [i for i, m in enumerate(messages) if is_summary(m)] == [1]
    assert len({m.id for m in messages}) == len(messages), "two messages share an id"
    assert len(calls) == 1


# -- replays of writes without ids (get_state previews, resumes) ---------------------------

from tests.langgraph_saver.conftest import async_inner, sync_inner  # noqa: E402

__all__ = ["async_inner", "sync_inner"]  # fixtures, imported for the tests below

DURABILITIES = ["sync", "async", "exit"]


class _Fanout:
    """A reducer that summarises and hands over, and a ``Send`` fan-out to eight workers
    writing messages without ids (an ``AIMessage`` and an OpenAI-format dict each); worker
    3 waits in ``interrupt()``."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.handed: list[Any] = []

        def summarize(messages: list[Any]) -> str:
            self.calls.append(len(messages))
            return f"{len(messages)} earlier messages"

        self.reducer = MessageReducer(
            config=ReducerConfig(
                min_messages=6,
                max_messages=10,
                summarize_fn=summarize,
                inject_summary=True,
                on_prune=[lambda batch, namespace: self.handed.extend(batch)],
            )
        )

    def graph(self, saver: Any, *, is_async: bool = False) -> Any:
        reducer = self.reducer

        class State(TypedDict):
            messages: Annotated[list[Any], reducer.as_langgraph_reducer()]

        def plan(current: Any) -> Command[Any]:
            return Command(goto=[Send("work", {"job": n}) for n in range(8)])

        def work(job: dict[str, int]) -> dict[str, Any]:
            n = job["job"]
            if n == 3:
                answer = interrupt("approve report 3?")
                return {"messages": [AIMessage(f"report 3 ({answer})")]}
            return {"messages": [AIMessage(f"report {n}"), {"role": "user", "content": "ok"}]}

        async def awork(job: dict[str, int]) -> dict[str, Any]:
            return work(job)

        builder: StateGraph[Any] = StateGraph(State)
        builder.add_node("plan", plan)
        builder.add_node("work", awork if is_async else work)
        builder.add_edge(START, "plan")
        return builder.compile(checkpointer=saver)

    @staticmethod
    def question() -> dict[str, Any]:
        return {"messages": [HumanMessage(f"q{n}", id=f"q{n}") for n in range(5)]}

    def check_previews(self, previews: list[list[Any]], calls_before: int) -> None:
        summaries = [[m.id for m in preview if is_summary(m)] for preview in previews]
        assert len(summaries[0]) == 1 and summaries.count(summaries[0]) == 3, summaries
        for preview in previews:
            assert [m.id for m in preview] == [m.id for m in previews[0]], "ids changed"
        assert len(self.calls) == calls_before, "a replay called summarize_fn again"
        self.check_handoffs()

    def check_handoffs(self) -> None:
        handed = [(m.id, m.content) for m in self.handed]
        assert len(handed) == len(set(handed)), "a replay handed a message over again"

    def check_final(self, final: list[Any]) -> None:
        assert len({m.id for m in final}) == len(final)
        kept_or_handed = [*final, *self.handed]
        assert any(m.content == "report 3 (yes)" for m in kept_or_handed)
        assert len(final) <= 10
        self.check_handoffs()
        assert len(self.calls) <= 2, "more than the preview's and the resume's summaries"


@pytest.mark.parametrize("durability", DURABILITIES)
def test_replays_of_writes_without_ids_call_and_hand_over_nothing_again(
    sync_inner: Any, durability: str
) -> None:
    """Send fan-out, one worker waiting in interrupt(), workers writing id-less messages:
    three get_state calls replay the pending writes through the channel, and each replay
    gives them the same ids, so the summary is the same block (same id, summarize_fn not
    called again) and the hooks get no message twice; the resume keeps that identity."""
    fan = _Fanout()
    graph = fan.graph(sync_inner)
    config: Any = {"configurable": {"thread_id": f"fan-{durability}"}}
    graph.invoke(fan.question(), config, durability=durability)
    assert graph.get_state(config).next == ("work",)
    calls = len(fan.calls)
    previews = [list(graph.get_state(config).values["messages"]) for _ in range(3)]
    fan.check_previews(previews, calls)
    graph.invoke(Command(resume="yes"), config, durability=durability)
    fan.check_final(graph.get_state(config).values["messages"])


@pytest.mark.parametrize("durability", DURABILITIES)
async def test_replays_of_writes_without_ids_call_and_hand_over_nothing_again_async(
    async_inner: Any, durability: str
) -> None:
    """Async twin (ainvoke, aget_state) on the async savers."""
    fan = _Fanout()
    graph = fan.graph(async_inner, is_async=True)
    config: Any = {"configurable": {"thread_id": f"afan-{durability}"}}
    await graph.ainvoke(fan.question(), config, durability=durability)
    assert (await graph.aget_state(config)).next == ("work",)
    calls = len(fan.calls)
    previews = [list((await graph.aget_state(config)).values["messages"]) for _ in range(3)]
    fan.check_previews(previews, calls)
    await graph.ainvoke(Command(resume="yes"), config, durability=durability)
    fan.check_final((await graph.aget_state(config)).values["messages"])


# -- where the running summary goes --------------------------------------------------------


def _system_first_reducer(calls: list[list[Any]]) -> MessageReducer:
    return _summarizing(calls, preserve_first=False)


def _chat_turns(graph: Any, config: Any, turns: int) -> list[Any]:
    graph.invoke({"messages": [SystemMessage("Be brief.", id="sys")]}, config)
    for n in range(turns):
        graph.invoke({"messages": [HumanMessage(f"q{n}", id=f"q{n}")]}, config)
    return list(graph.get_state(config).values["messages"])


def test_the_summary_goes_after_a_system_message_held_in_state(sync_inner: Any) -> None:
    """preserve_first off and a system message at the head of the state: the channel puts
    the running summary after it, turn after turn ([system, summary, ...]), never before
    (which OpenAI-strict, Anthropic and Gemini refuse)."""
    calls: list[list[Any]] = []
    reducer = _system_first_reducer(calls)
    state = _state(reducer.as_langgraph_reducer())

    def reply(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(current['messages'])}")]}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=sync_inner)
    messages = _chat_turns(graph, {"configurable": {"thread_id": "system-first"}}, 6)
    assert calls, "the test must summarise"
    assert messages[0].id == "sys" and is_summary(messages[1])
    assert sum(map(is_summary, messages)) == 1


def test_the_reduction_node_puts_the_summary_after_the_system_message(sync_inner: Any) -> None:
    """The same through create_reduction_node on a plain MessagesState graph."""
    from langgraph.graph import MessagesState

    from agentstate_reducer.langgraph import create_reduction_node

    calls: list[list[Any]] = []
    reducer = _system_first_reducer(calls)

    def reply(current: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(current['messages'])}")]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("reduce", create_reduction_node(reducer))
    builder.add_node("reply", reply)
    builder.add_edge(START, "reduce")
    builder.add_edge("reduce", "reply")
    graph = builder.compile(checkpointer=sync_inner)
    messages = _chat_turns(graph, {"configurable": {"thread_id": "node-system-first"}}, 6)
    assert calls
    assert messages[0].id == "sys" and is_summary(messages[1])

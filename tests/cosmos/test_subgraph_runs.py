"""Subgraph runs on the Cosmos DB savers (real server, real graphs).

Part 1: normal use with subgraphs (a subgraph node, ``sub.invoke`` in a node, nested, a
``checkpointer=True`` subgraph, a ``Send`` fan-out into calls; interrupts inside them, resume,
``update_state``, forks, replays, two saver instances, ``keep_checkpoints=2``, the async saver)
gives what LangGraph's InMemorySaver gives, and ``copy_thread`` onto a deleted thread id
resumes into a subgraph. Part 2: delete_thread while a run is inside a subgraph leaves only the
tombstone. The two xfail cases are the limits written in the Cosmos DB README (a run that goes
on after its refused put under ``durability="async"``).
"""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver, CosmosThreadDeletedError
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt

from .conftest import DATABASE, CosmosTestServer, documents_left, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


# -- graphs ------------------------------------------------------------------------------------


def _leaf(tag: str, ask: bool = False, checkpointer: Any = None) -> Any:
    def s1(state: Items) -> dict[str, Any]:
        return {"items": [f"{tag}1"]}

    def s2(state: Items) -> dict[str, Any]:
        if ask:
            answer = interrupt(f"{tag}?")
            return {"items": [f"{tag}2:{answer}"]}
        return {"items": [f"{tag}2"]}

    b = StateGraph(Items)
    b.add_node("s1", s1)
    b.add_node("s2", s2)
    b.add_edge(START, "s1")
    b.add_edge("s1", "s2")
    return b.compile(checkpointer=checkpointer)


def g_sub_node(saver: Any, ask: bool = False) -> Any:
    b = StateGraph(Items)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("sub", _leaf("s", ask))
    b.add_node("c", lambda s: {"items": ["c"]})
    b.add_edge(START, "a")
    b.add_edge("a", "sub")
    b.add_edge("sub", "c")
    return b.compile(checkpointer=saver)


def g_sub_invoke(saver: Any, ask: bool = False) -> Any:
    sub = _leaf("i", ask)

    def node(state: Items) -> dict[str, Any]:
        return {"items": sub.invoke({"items": ["x"]})["items"]}

    b = StateGraph(Items)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("node", node)
    b.add_edge(START, "a")
    b.add_edge("a", "node")
    return b.compile(checkpointer=saver)


def g_nested(saver: Any, ask: bool = False) -> Any:
    mid = StateGraph(Items)
    mid.add_node("m1", lambda s: {"items": ["m1"]})
    mid.add_node("inner", _leaf("n", ask))
    mid.add_node("m2", lambda s: {"items": ["m2"]})
    mid.add_edge(START, "m1")
    mid.add_edge("m1", "inner")
    mid.add_edge("inner", "m2")
    b = StateGraph(Items)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("mid", mid.compile())
    b.add_edge(START, "a")
    b.add_edge("a", "mid")
    return b.compile(checkpointer=saver)


def g_persistent(saver: Any, ask: bool = False) -> Any:
    """A ``checkpointer=True`` subgraph: its namespace (no task id) keeps its history across
    runs."""
    sub = _leaf("p", ask, checkpointer=True)
    b = StateGraph(Items)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("sub", sub)
    b.add_edge(START, "a")
    b.add_edge("a", "sub")
    return b.compile(checkpointer=saver)


class Fan(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int


def g_send(saver: Any, ask: bool = False) -> Any:
    sub = _leaf("f", ask)

    def fan(state: Fan) -> list[Send]:
        return [Send("sub", {"items": [f"w{i}"]}) for i in range(3)]

    b = StateGraph(Fan)
    b.add_node("a", lambda s: {"items": ["a"]})
    b.add_node("sub", sub)
    b.add_edge(START, "a")
    b.add_conditional_edges("a", fan, ["sub"])
    return b.compile(checkpointer=saver)


GRAPHS = {
    "sub_node": g_sub_node,
    "sub_invoke": g_sub_invoke,
    "nested": g_nested,
    "persistent": g_persistent,
    "send": g_send,
}


# -- comparison with InMemorySaver --------------------------------------------------------------


def _norm_state(state: Any) -> Any:
    tasks = []
    for t in state.tasks:
        sub = t.state
        tasks.append(
            (
                t.name,
                tuple(i.value for i in t.interrupts),
                _norm_state(sub) if sub is not None and not isinstance(sub, dict) else None,
            )
        )
    return (
        sorted(state.values.get("items", [])) if isinstance(state.values, dict) else state.values,
        tuple(state.next),
        tuple(sorted(tasks, key=repr)),
        tuple(i.value for i in state.interrupts),
    )


def _norm_out(out: Any) -> Any:
    if isinstance(out, dict):
        return {
            k: (sorted(v) if k == "items" else [getattr(i, "value", i) for i in v])
            for k, v in out.items()
        }
    return out


def _scenario(saver: Any, other: Any, name: str, durability: str, fork: bool = True) -> list[Any]:
    """Runs, interrupts and resumes, state reads with subgraphs, update_state, a fork from
    an older checkpoint, and a second saver (another process) continuing the thread."""
    ask = name != "send" or True
    graph = GRAPHS[name](saver, ask=ask)
    graph2 = GRAPHS[name](other, ask=ask)
    cfg = {"configurable": {"thread_id": f"t-{name}"}}
    trace: list[Any] = []
    trace.append(_norm_out(graph.invoke({"items": ["u0"]}, cfg, durability=durability)))
    trace.append(_norm_state(graph.get_state(cfg, subgraphs=True)))
    # resume (each pending interrupt: the Send fan-out has three)
    for _ in range(4):
        state = graph.get_state(cfg)
        if not state.interrupts:
            break
        resume = {i.id: f"r{n}" for n, i in enumerate(state.interrupts)}
        trace.append(_norm_out(graph2.invoke(Command(resume=resume), cfg, durability=durability)))
        trace.append(_norm_state(graph.get_state(cfg, subgraphs=True)))
    # a second run, by the other saver
    trace.append(_norm_out(graph2.invoke({"items": ["u1"]}, cfg, durability=durability)))
    for _ in range(4):
        state = graph.get_state(cfg)
        if not state.interrupts:
            break
        resume = {i.id: f"q{n}" for n, i in enumerate(state.interrupts)}
        trace.append(_norm_out(graph.invoke(Command(resume=resume), cfg, durability=durability)))
    trace.append(_norm_state(graph2.get_state(cfg, subgraphs=True)))
    # update_state, then fork from an older checkpoint
    graph.update_state(cfg, {"items": ["upd"]})
    trace.append(_norm_state(graph.get_state(cfg, subgraphs=True)))
    history = list(graph.get_state_history(cfg))
    trace.append(len(history))
    if not fork:
        return trace
    old = next(s for s in reversed(history) if s.next and s.metadata.get("source") == "loop")
    fork = graph.update_state(old.config, {"items": ["fork"]})
    trace.append(_norm_out(graph.invoke(None, fork, durability=durability)))
    for _ in range(4):
        state = graph.get_state(cfg)
        if not state.interrupts:
            break
        resume = {i.id: f"k{n}" for n, i in enumerate(state.interrupts)}
        trace.append(_norm_out(graph.invoke(Command(resume=resume), cfg, durability=durability)))
    trace.append(_norm_state(graph.get_state(cfg, subgraphs=True)))
    # replay from an old checkpoint (no update)
    trace.append(_norm_out(graph2.invoke(None, old.config, durability=durability)))
    trace.append(_norm_state(graph2.get_state(cfg, subgraphs=True)))
    trace.append(len(list(graph.get_state_history(cfg))))
    return trace


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_subgraphs_match_inmemory(server: CosmosTestServer, name: str, durability: str) -> None:
    memory = InMemorySaver()
    expected = _scenario(memory, memory, name, durability)
    container = new_container()
    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as one,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as two,
    ):
        one.setup()
        got = _scenario(one, two, name, durability)
    assert got == expected


# -- copy_thread onto a thread id that was deleted before -------------------------------------


@pytest.mark.parametrize("name", ["sub_node", "nested", "persistent", "send", "sub_invoke"])
def test_copy_onto_a_deleted_thread_id_resumes_a_subgraph_interrupt(
    server: CosmosTestServer, name: str
) -> None:
    """Thread B ran, was deleted, and is then the target of copy_thread from thread A (made
    before B's delete) stopped at an interrupt inside a subgraph: resuming B must work like
    resuming A (B was never deleted after the copy)."""
    container = new_container()
    a = {"configurable": {"thread_id": "A"}}
    b = {"configurable": {"thread_id": "B"}}
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        saver.setup()
        graph = GRAPHS[name](saver, ask=True)
        graph.invoke({"items": ["u0"]}, a)
        graph.invoke({"items": ["b"]}, b)
        saver.delete_thread("B")
        saver.copy_thread("A", "B")
    # another process (no cached heads) resumes the copy
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other:
        graph = GRAPHS[name](other, ask=True)
        state = graph.get_state(b)
        resume = {i.id: "yes" for i in state.interrupts}
        out_b = graph.invoke(Command(resume=resume), b)
        state_a = graph.get_state(a)
        out_a = graph.invoke(Command(resume={i.id: "yes" for i in state_a.interrupts}), a)
    assert _norm_out(out_b) == _norm_out(out_a)


def test_copy_onto_a_deleted_thread_id_continues_before_a_subgraph(
    server: CosmosTestServer,
) -> None:
    """The same with a static breakpoint before the subgraph node (interrupt_before): the
    call starts under the copied root checkpoint, which is older than B's tombstone."""
    container = new_container()
    a = {"configurable": {"thread_id": "A"}}
    b = {"configurable": {"thread_id": "B"}}

    def build(saver: Any) -> Any:
        bld = StateGraph(Items)
        bld.add_node("a", lambda s: {"items": ["a"]})
        bld.add_node("sub", _leaf("s"))
        bld.add_edge(START, "a")
        bld.add_edge("a", "sub")
        return bld.compile(checkpointer=saver, interrupt_before=["sub"])

    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        saver.setup()
        graph = build(saver)
        graph.invoke({"items": ["u0"]}, a)
        graph.invoke({"items": ["b"]}, b)
        saver.delete_thread("B")
        saver.copy_thread("A", "B")
        out_b = graph.invoke(None, b)
        out_a = graph.invoke(None, a)
    assert out_b == out_a  # (was: CosmosThreadDeletedError for B's subgraph call)


# -- part 2: delete_thread under runs with subgraphs -------------------------------------------


def _gated_leaf(tag: str, hold: Any, checkpointer: Any = None) -> Any:
    b = StateGraph(Items)
    b.add_node("s1", lambda s: {"items": [f"{tag}1"]})
    b.add_node("slow", hold)
    b.add_node("s2", lambda s: {"items": [f"{tag}2"]})
    b.add_edge(START, "s1")
    b.add_edge("s1", "slow")
    b.add_edge("slow", "s2")
    return b.compile(checkpointer=checkpointer)


def _builds(hold: Any) -> dict[str, Any]:
    """Graphs whose ``hold`` node (inside the subgraph) blocks until released."""

    def sub_node(saver: Any) -> Any:
        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("sub", _gated_leaf("s", hold))
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(START, "a")
        b.add_edge("a", "sub")
        b.add_edge("sub", "c")
        return b.compile(checkpointer=saver)

    def nested(saver: Any) -> Any:
        mid = StateGraph(Items)
        mid.add_node("m1", lambda s: {"items": ["m1"]})
        mid.add_node("inner", _gated_leaf("n", hold))
        mid.add_node("m2", lambda s: {"items": ["m2"]})
        mid.add_edge(START, "m1")
        mid.add_edge("m1", "inner")
        mid.add_edge("inner", "m2")
        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("mid", mid.compile())
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(START, "a")
        b.add_edge("a", "mid")
        b.add_edge("mid", "c")
        return b.compile(checkpointer=saver)

    def persistent(saver: Any) -> Any:
        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("sub", _gated_leaf("p", hold, checkpointer=True))
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(START, "a")
        b.add_edge("a", "sub")
        b.add_edge("sub", "c")
        return b.compile(checkpointer=saver)

    def send(saver: Any) -> Any:
        sub = _gated_leaf("f", hold)
        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("sub", sub)
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(START, "a")
        b.add_conditional_edges(
            "a", lambda s: [Send("sub", {"items": [f"w{i}"]}) for i in range(3)], ["sub"]
        )
        b.add_edge("sub", "c")
        return b.compile(checkpointer=saver)

    def sub_invoke(saver: Any) -> Any:
        sub = _gated_leaf("i", hold)

        async def anode(state: Items) -> dict[str, Any]:
            return {"items": (await sub.ainvoke({"items": ["x"]}))["items"]}

        def node(state: Items) -> dict[str, Any]:
            return {"items": sub.invoke({"items": ["x"]})["items"]}

        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("node", anode if asyncio.iscoroutinefunction(hold) else node)
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_edge(START, "a")
        b.add_edge("a", "node")
        b.add_edge("node", "c")
        return b.compile(checkpointer=saver)

    def root_hold(saver: Any) -> Any:
        """The hold in the root, before a subgraph, a nested one and a Send fan-out."""
        mid = StateGraph(Items)
        mid.add_node("m1", lambda s: {"items": ["m1"]})
        mid.add_node("inner", _leaf("n"))
        mid.add_edge(START, "m1")
        mid.add_edge("m1", "inner")
        b = StateGraph(Items)
        b.add_node("slow", hold)
        b.add_node("mid", mid.compile())
        b.add_node("sub", _leaf("f"))
        b.add_edge(START, "slow")
        b.add_edge("slow", "mid")
        b.add_conditional_edges(
            "slow", lambda s: [Send("sub", {"items": [f"w{i}"]}) for i in range(2)], ["sub"]
        )
        return b.compile(checkpointer=saver)

    return {
        "sub_node": sub_node,
        "nested": nested,
        "persistent": persistent,
        "send": send,
        "sub_invoke": sub_invoke,
        "root_hold": root_hold,
    }


DELETE_GRAPHS = ["sub_node", "nested", "persistent", "send", "sub_invoke", "root_hold"]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("name", DELETE_GRAPHS)
def test_delete_inside_a_subgraph_node_sync(
    server: CosmosTestServer, name: str, durability: str
) -> None:
    container, cfg = new_container(), {"configurable": {"thread_id": "del-in-sub"}}
    gate, entered = threading.Event(), threading.Event()

    def hold(state: Items) -> dict[str, Any]:
        entered.set()
        gate.wait(20)
        return {"items": ["held"]}

    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        runner.setup()
        graph = _builds(hold)[name](runner)
        memory = _builds(hold)[name](InMemorySaver())
        gate.set()
        first = graph.invoke({"items": ["u0"]}, cfg, durability=durability)
        assert first == memory.invoke({"items": ["u0"]}, cfg)
        gate.clear()
        entered.clear()
        failure: list[BaseException] = []
        result: list[Any] = []

        def run() -> None:
            try:
                result.append(graph.invoke({"items": ["u1"]}, cfg, durability=durability))
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert entered.wait(20)
        other.delete_thread("del-in-sub")
        gate.set()
        worker.join(30)
        assert not worker.is_alive()
        left = documents_left(server, container)
        assert len(failure) == 1 and isinstance(failure[0], CosmosThreadDeletedError), (
            failure,
            result,
            left,
        )
        assert left == ["t.''"], left
        # a new run on the same thread id, same runner process, starts afresh
        fresh = InMemorySaver()
        expected = _builds(hold)[name](fresh).invoke({"items": ["n0"]}, cfg)
        assert graph.invoke({"items": ["n0"]}, cfg, durability=durability) == expected
        again = _builds(hold)[name](fresh).invoke({"items": ["n1"]}, cfg)
        assert graph.invoke({"items": ["n1"]}, cfg, durability=durability) == again


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("name", DELETE_GRAPHS)
async def test_delete_inside_a_subgraph_node_async(
    server: CosmosTestServer, name: str, durability: str
) -> None:
    container, cfg = new_container(), {"configurable": {"thread_id": "adel-in-sub"}}
    gate, entered = asyncio.Event(), asyncio.Event()

    async def hold(state: Items) -> dict[str, Any]:
        entered.set()
        await gate.wait()
        return {"items": ["held"]}

    async with (
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        await runner.setup()
        graph = _builds(hold)[name](runner)
        gate.set()
        await graph.ainvoke({"items": ["u0"]}, cfg, durability=durability)
        gate.clear()
        entered.clear()
        task = asyncio.create_task(graph.ainvoke({"items": ["u1"]}, cfg, durability=durability))
        await asyncio.wait_for(entered.wait(), 20)
        await other.adelete_thread("adel-in-sub")
        gate.set()
        outcome = await asyncio.gather(task, return_exceptions=True)
        left = documents_left(server, container)
        assert isinstance(outcome[0], CosmosThreadDeletedError), (outcome, left)
        # Checked right away: LangGraph may have stopped awaiting the run's background
        # writes (it cancels the other Send calls when one fails), and those must not have
        # stored anything either.
        assert left == ["t.''"], left
        fresh = InMemorySaver()
        expected = await _builds(hold)[name](fresh).ainvoke({"items": ["n0"]}, cfg)
        assert await graph.ainvoke({"items": ["n0"]}, cfg, durability=durability) == expected
        again = await _builds(hold)[name](fresh).ainvoke({"items": ["n1"]}, cfg)
        assert await graph.ainvoke({"items": ["n1"]}, cfg, durability=durability) == again


@pytest.mark.parametrize(
    "stale",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.xfail(
                raises=AssertionError,  # only the leftovers; any other error fails
                strict=False,  # a race: the refusal may land before the next step runs
                reason="limit (Cosmos DB README, 'A thread deleted under a run'): a resume "
                "naming the deleted checkpoint has its first put refused in the background, "
                "LangGraph runs on, and the later steps' writes and subgraph calls "
                "(checkpoints made after the delete, never put) are stored",
            ),
        ),
    ],
)
@pytest.mark.parametrize("name", ["sub_node", "nested", "persistent", "send", "sub_invoke"])
def test_interrupt_delete_resume(server: CosmosTestServer, name: str, stale: bool) -> None:
    """interrupt() inside a subgraph, delete_thread (another saver), then resume with
    Command(resume=...) (``stale``: with the interrupted checkpoint's config): whatever the
    resume does, only the tombstone (or a fresh thread) is left, and a fresh run works."""
    container, cfg = new_container(), {"configurable": {"thread_id": "int-del"}}
    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        runner.setup()
        graph = GRAPHS[name](runner, ask=True)
        graph.invoke({"items": ["u0"]}, cfg)
        state = graph.get_state(cfg)
        assert state.interrupts
        resume = {i.id: "late" for i in state.interrupts}
        other.delete_thread("int-del")
        try:
            graph.invoke(Command(resume=resume), state.config if stale else cfg)
        except CosmosThreadDeletedError:
            assert documents_left(server, container) == ["t.''"]
        except Exception:  # LangGraph's own error for a resume of nothing (EmptyInputError)
            assert documents_left(server, container) == ["t.''"]
        else:
            # the resume started a new thread: it must read whole
            assert graph.get_state(cfg, subgraphs=True).config is not None
        memory = InMemorySaver()
        mem = GRAPHS[name](memory, ask=True)
        runner.delete_thread("int-del")
        out = graph.invoke({"items": ["n0"]}, cfg)
        assert _norm_out(out) == _norm_out(mem.invoke({"items": ["n0"]}, cfg))
        st = graph.get_state(cfg)
        out = graph.invoke(Command(resume={i.id: "ok" for i in st.interrupts}), cfg)
        mst = mem.get_state(cfg)
        assert _norm_out(out) == _norm_out(
            mem.invoke(Command(resume={i.id: "ok" for i in mst.interrupts}), cfg)
        )


@pytest.mark.xfail(
    raises=AssertionError,  # only the leftovers; any other error fails
    strict=False,  # a race: the refusal may land before the next step runs
    reason="limit (Cosmos DB README, 'A thread deleted under a run'): under "
    "durability='async' LangGraph skips the puts after the refused one but runs on; the "
    "writes (and subgraph calls) of checkpoints made after the delete are stored",
)
@pytest.mark.parametrize("with_sub", [False, True])
def test_delete_then_several_steps_under_async_durability(
    server: CosmosTestServer, with_sub: bool
) -> None:
    """START -> a -> slow -> c -> d [-> sub]: deleted while ``slow`` runs. Under
    durability="async" the put after ``slow`` is refused in the background and LangGraph skips
    the later puts but runs on: the writes of the checkpoints after it (made after the delete,
    so no tombstone covers them, and never put, so not recorded as refused) and the subgraph
    calls under them must not outlive the delete either."""
    container, cfg = new_container(), {"configurable": {"thread_id": "del-steps"}}
    gate, entered = threading.Event(), threading.Event()

    def slow(state: Items) -> dict[str, Any]:
        entered.set()
        gate.wait(20)
        return {"items": ["slow"]}

    def build(saver: Any) -> Any:
        b = StateGraph(Items)
        b.add_node("a", lambda s: {"items": ["a"]})
        b.add_node("slow", slow)
        b.add_node("c", lambda s: {"items": ["c"]})
        b.add_node("d", lambda s: {"items": ["d"]})
        b.add_edge(START, "a")
        b.add_edge("a", "slow")
        b.add_edge("slow", "c")
        b.add_edge("c", "d")
        if with_sub:
            b.add_node("sub", _leaf("s"))
            b.add_edge("d", "sub")
        return b.compile(checkpointer=saver)

    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as runner,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as other,
    ):
        runner.setup()
        graph = build(runner)
        gate.set()
        graph.invoke({"items": ["u0"]}, cfg, durability="async")
        gate.clear()
        entered.clear()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                graph.invoke({"items": ["u1"]}, cfg, durability="async")
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert entered.wait(20)
        other.delete_thread("del-steps")
        gate.set()
        worker.join(30)
        left = documents_left(server, container)
        assert len(failure) == 1 and isinstance(failure[0], CosmosThreadDeletedError), failure
        assert left == ["t.''"], left


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_subgraphs_match_inmemory_keep_2(server: CosmosTestServer, name: str) -> None:
    """keep_checkpoints=2: the same outputs and states (history lengths aside)."""
    memory = InMemorySaver()
    expected = [
        x for x in _scenario(memory, memory, name, "async", False) if not isinstance(x, int)
    ]
    container = new_container()
    kw = saver_kwargs(server, keep_checkpoints=2)
    with (
        CosmosDBSaver(DATABASE, container, **kw) as one,
        CosmosDBSaver(DATABASE, container, **kw) as two,
    ):
        one.setup()
        got = [x for x in _scenario(one, two, name, "async", False) if not isinstance(x, int)]
    assert got == expected


@pytest.mark.parametrize("name", sorted(GRAPHS))
async def test_subgraphs_match_inmemory_async_saver(server: CosmosTestServer, name: str) -> None:
    """AsyncCosmosDBSaver under the sync scenario (its sync methods run on its loop)."""
    memory = InMemorySaver()
    expected = await asyncio.to_thread(_scenario, memory, memory, name, "async")
    container = new_container()
    async with (
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as one,
        AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as two,
    ):
        await one.setup()
        got = await asyncio.to_thread(_scenario, one, two, name, "async")
    assert got == expected

"""Graphs, reducers and read-back helpers the saver tests share.

Every graph is a real ``StateGraph`` driven by the scripted calculator model (one ``add``
tool call per human message, then an answer), so a turn writes four messages and about
four checkpoints, as a tool-calling agent does.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig
from agentstate_reducer.messages import (
    content_of,
    id_of,
    is_summary,
    tool_call_id_of,
    tool_call_ids_of,
)
from tests.scripted_model import add, calculator_model, provider_errors

MIN, MAX = 6, 12


class Memory:
    """An ``on_prune`` hook recording what reached long-term memory; can be made to fail."""

    def __init__(self) -> None:
        self.batches: list[tuple[Any, list[Any]]] = []
        self.failing = False
        self.failures = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        if self.failing:
            self.failures += 1
            raise ConnectionError("long-term memory store is down")
        with self._lock:
            self.batches.append((namespace, list(messages)))

    @property
    def ids(self) -> list[str | None]:
        return [id_of(m) for _, batch in self.batches for m in batch]

    @property
    def namespaces(self) -> set[Any]:
        return {ns for ns, _ in self.batches}


def reducer(memory: Memory | None = None, **overrides: Any) -> MessageReducer:
    """A count-mode reducer (MIN..MAX) handing pruned messages to ``memory``; a store that
    comes back is called again at once (no ``retry_backoff``: the tests recover fast)."""
    options: dict[str, Any] = {
        "min_messages": MIN, "max_messages": MAX, "handoff": Handoff(retry_backoff=0)
    }  # fmt: skip
    options.update(overrides)
    if memory is not None:
        options["on_prune"] = [memory]
    return MessageReducer(config=ReducerConfig(**options))


def _agent_node(model: Any) -> Callable[[MessagesState], dict[str, Any]]:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return agent


def _async_agent_node(model: Any) -> Callable[[MessagesState], Any]:
    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return agent


def agent_builder(*, is_async: bool = False, strict: bool = True) -> StateGraph[Any]:
    """The tool-calling loop: agent -> tools -> agent -> end (``strict=False``: the model
    accepts lists a provider would refuse, as concurrent runs of one thread can make)."""
    model = calculator_model(strict=strict).bind_tools([add])
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", _async_agent_node(model) if is_async else _agent_node(model))
    builder.add_node("tools", ToolNode([add]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def agent_graph(
    saver: BaseCheckpointSaver[Any], *, is_async: bool = False, strict: bool = True
) -> Any:
    return agent_builder(is_async=is_async, strict=strict).compile(checkpointer=saver)


def parent_graph(saver: BaseCheckpointSaver[Any], *, is_async: bool = False) -> Any:
    """The agent loop as a subgraph node: its checkpoints live in their own namespace."""
    sub: CompiledStateGraph[Any, Any, Any, Any] = agent_builder(is_async=is_async).compile()
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("assistant", sub)
    builder.add_edge(START, "assistant")
    return builder.compile(checkpointer=saver)


def approval_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """The agent loop with a human approval (``interrupt``) before every tool run."""

    def approve(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"tool_calls": state["messages"][-1].tool_calls})
        return {"messages": [HumanMessage(f"approved: {answer}")]} if answer != "ok" else {}

    model = calculator_model(strict=False).bind_tools([add])
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", _agent_node(model))
    builder.add_node("approve", approve)
    builder.add_node("tools", ToolNode([add]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges(
        "agent", tools_condition, {"tools": "approve", "__end__": "__end__"}
    )
    builder.add_edge("approve", "tools")
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class DictState(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


def dict_graph(saver: BaseCheckpointSaver[Any], *, with_ids: bool = True) -> Any:
    """OpenAI-shaped dict messages in a plain ``operator.add`` list channel."""
    counter = iter(range(1_000_000))

    def msg(role: str, content: str, **extra: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": role, "content": content, **extra}
        if with_ids:
            message["id"] = f"m{next(counter)}"
        return message

    def assistant(state: DictState) -> dict[str, Any]:
        last = state["messages"][-1]
        if last["role"] == "user":
            call = {
                "id": f"call{next(counter)}",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            }
            return {"messages": [msg("assistant", "", tool_calls=[call])]}
        return {"messages": [msg("assistant", f"The sum is {last['content']}.")]}

    def tool(state: DictState) -> dict[str, Any]:
        call = state["messages"][-1]["tool_calls"][0]
        return {"messages": [msg("tool", "3", tool_call_id=call["id"])]}

    def route(state: DictState) -> str:
        return "tool" if state["messages"][-1].get("tool_calls") else "__end__"

    builder: StateGraph[Any] = StateGraph(DictState)
    builder.add_node("assistant", assistant)
    builder.add_node("tool", tool)
    builder.add_edge(START, "assistant")
    builder.add_conditional_edges("assistant", route)
    builder.add_edge("tool", "assistant")
    return builder.compile(checkpointer=saver)


def turn(n: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"question {n}", id=f"h{n}")]}


def config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def stored_lists(tuples: Iterable[CheckpointTuple], key: str = "messages") -> list[list[Any]]:
    """The message list of every stored checkpoint that has one."""
    return [
        t.checkpoint["channel_values"][key] for t in tuples if key in t.checkpoint["channel_values"]
    ]


def assert_bounded(lists: list[list[Any]], bound: int = MAX) -> None:
    assert lists, "no checkpoint with a message list was stored"
    longest = max(len(messages) for messages in lists)
    assert longest <= bound, f"a stored checkpoint holds {longest} messages, above {bound}"
    for messages in lists:
        assert_no_orphan_results(messages)


def assert_no_orphan_results(messages: list[Any]) -> None:
    """No tool result without the call before it (a checkpoint taken between a call and
    its result legitimately ends with an open call)."""
    calls: set[str] = set()
    for position, message in enumerate(messages):
        calls.update(tool_call_ids_of(message))
        call_id = tool_call_id_of(message)
        if call_id is not None:
            assert call_id in calls, f"message {position} answers unknown tool call {call_id!r}"


def assert_provider_valid(messages: list[Any]) -> None:
    """A list a provider accepts: what a finished turn must store."""
    if messages and isinstance(messages[0], BaseMessage):
        assert not provider_errors(messages), provider_errors(messages)


def all_ids(lists: Iterable[list[Any]]) -> set[str | None]:
    return {id_of(m) for messages in lists for m in messages}


def assert_each_once(memory: Memory, created: set[str | None], newest: list[Any]) -> None:
    """Every message created is in the newest stored list or reached memory, exactly once."""
    delivered = memory.ids
    assert len(delivered) == len(set(delivered)), "a pruned message reached memory twice"
    kept = {id_of(m) for m in newest}
    assert not kept & set(delivered), "a message reached memory while still stored"
    assert created == kept | set(delivered), (
        f"lost: {sorted(map(str, created - kept - set(delivered)))}"
    )


async def ticks_while(work: Awaitable[Any], *, at_least: float) -> int:
    """Run ``work`` next to a coroutine that ticks every 10 ms; return the ticks counted.

    A loop blocked by ``work`` (a hook or summary run on the event loop's thread) counts
    almost none; ``work`` must also take at least ``at_least`` seconds (proving it waited).
    """
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def run() -> None:
        try:
            await work
        finally:
            done.set()

    began = time.perf_counter()
    await asyncio.gather(ticker(), run())
    assert time.perf_counter() - began >= at_least
    return ticks


def ai_answer(messages: list[Any]) -> AIMessage:
    return next(m for m in reversed(messages) if isinstance(m, AIMessage))


def lineage_ids(
    tuples: Iterable[CheckpointTuple], key: str = "messages"
) -> tuple[set[Any], set[Any]]:
    """``(held, newest)``: every message id any checkpoint on the newest checkpoint's
    ancestry held, and the ids the newest one holds (a branch written by another run is
    left out: its messages are that branch's)."""
    every = list(tuples)
    assert every, "no checkpoint was stored"
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in every}
    head = every[0]
    held: set[Any] = set()
    node: CheckpointTuple | None = head
    while node is not None:
        held |= {id_of(m) for m in node.checkpoint["channel_values"].get(key, [])}
        parent = node.parent_config
        node = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    newest = {id_of(m) for m in head.checkpoint["channel_values"].get(key, [])}
    return held, newest


def assert_nothing_lost_or_twice(tuples: Iterable[CheckpointTuple], delivered: list[Any]) -> None:
    """Every message the newest checkpoint's ancestry held is in it or reached the hooks,
    and no message reached them twice."""
    held, newest = lineage_ids(tuples)
    assert len(delivered) == len(set(delivered)), "a message reached the hooks twice"
    lost = held - newest - set(delivered)
    assert not lost, f"lost: {sorted(map(str, lost))}"


# -- a subgraph sharing its parent's messages, with a running summary ----------------------


def subgraph_chat(saver: BaseCheckpointSaver[Any], *, interrupts: bool) -> Any:
    """A parent answering, then a subgraph sharing its messages that works and (optionally)
    waits for an approval: the subgraph's checkpoints live in their own namespace."""

    def work(state: MessagesState) -> dict[str, Any]:
        last = content_of(state["messages"][-1])
        return {"messages": [AIMessage(f"step {i} on {last}") for i in range(3)]}

    def approve(state: MessagesState) -> dict[str, Any]:
        verdict = interrupt("approve?") if interrupts else "auto"
        return {"messages": [AIMessage(f"approved {verdict}: {content_of(state['messages'][-1])}")]}

    sub: StateGraph[Any] = StateGraph(MessagesState)
    sub.add_node("work", work)
    sub.add_node("approve", approve)
    sub.add_edge(START, "work")
    sub.add_edge("work", "approve")
    parent: StateGraph[Any] = StateGraph(MessagesState)
    parent.add_node(
        "chat", lambda s: {"messages": [AIMessage(f"noted {s['messages'][-1].content}")]}
    )
    parent.add_node("sub", sub.compile())
    parent.add_edge(START, "chat")
    parent.add_edge("chat", "sub")
    return parent.compile(checkpointer=saver)


def summarise_a_subgraph_chat(
    saver_for: Callable[[MessageReducer], BaseCheckpointSaver[Any]],
    thread_id: str,
    interrupts: bool,
) -> tuple[Counter[str], list[int], list[Any]]:
    """Six turns of :func:`subgraph_chat` with a running summary, on the saver
    ``saver_for(reducer)`` (the saver reducing with that reducer): how often
    each message reached ``summarize_fn``, how many earlier summaries each call got, and
    the thread's final list (each message reaching the ``on_prune`` hook once is checked
    here)."""
    prior_blocks: list[int] = []
    summarised: Counter[str] = Counter()
    handed: Counter[str] = Counter()

    def summarize(messages: list[Any]) -> str:
        prior_blocks.append(sum(map(is_summary, messages)))
        fresh = [str(content_of(m)) for m in messages if not is_summary(m)]
        summarised.update(fresh)
        prior = [str(content_of(m)).splitlines()[-1] for m in messages if is_summary(m)]
        return " | ".join([*prior, *fresh])

    r = MessageReducer(
        config=ReducerConfig(
            min_messages=4,
            max_messages=6,
            preserve_first="system",
            summarize_fn=summarize,
            inject_summary=True,
            on_prune=[lambda pruned, _: handed.update(str(content_of(m)) for m in pruned)],
        )
    )
    graph = subgraph_chat(saver_for(r), interrupts=interrupts)
    cfg = config(thread_id)
    for n in range(6):
        graph.invoke({"messages": [HumanMessage(f"question {n}")]}, cfg)
        if interrupts:
            graph.invoke(Command(resume=f"yes {n}"), cfg)
    assert handed and all(count == 1 for count in handed.values()), handed
    return summarised, prior_blocks, graph.get_state(cfg).values["messages"]


def assert_one_running_summary(
    summarised: Counter[str], prior_blocks: list[int], messages: list[Any]
) -> None:
    assert prior_blocks and max(prior_blocks) <= 1
    assert all(count == 1 for count in summarised.values()), summarised
    blocks = [m for m in messages if is_summary(m)]
    assert len(blocks) == 1
    text = str(content_of(blocks[0])).splitlines()[-1]
    items = text.split(" | ")
    assert len(items) == len(set(items)), "a summary folded twice repeats its text"
    assert "question 0" in items  # the earliest turn is still in the running summary

"""``StoreMemory`` and ``Recall``: what leaves the list goes into a LangGraph store once, and
comes back into the model's view when a later question needs it.

Real stores (``InMemoryStore`` with a deterministic embedding; ``PostgresStore`` and
``AsyncPostgresStore`` on this machine's PostgreSQL, without pgvector, so found by filter
and ranked by BM25), real graphs and agents, a scripted chat model. Outages are a real
store whose ``batch`` raises while it is "down".
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from agentstate_reducer import Handoff, MessageReducer, PruneHookError, ReducerConfig
from agentstate_reducer.langgraph import Recall, StoreMemory
from agentstate_reducer.langgraph.store import EXTRACTED_ROOT
from agentstate_reducer.langgraph.testing import ScriptedChatModel
from agentstate_reducer.policy import DropOldest
from agentstate_reducer.recalled import MEMORY_HEADER, is_memory

USER = ("memories", "user-42")

# -- a deterministic embedding: hashed bag of words ---------------------------------------

DIMS = 256


def embed(texts: list[str]) -> list[list[float]]:
    """Each text as counts of its lowercased words hashed into DIMS buckets, normalised: a
    real (if plain) embedding, the same on every run and machine, no network."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            if len(word) > 2:
                bucket = int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % DIMS
                vector[bucket] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        vectors.append([x / norm for x in vector])
    return vectors


def embedding_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]})


class FlakyStore(InMemoryStore):
    """A real InMemoryStore whose writes fail while ``down`` (an outage), and which counts
    its searches."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.down = False
        self.searches = 0

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        if self.down and any(type(op).__name__ == "PutOp" for op in ops):
            raise ConnectionError("memory store unreachable")
        return super().batch(ops)

    async def abatch(self, ops: Any) -> Any:
        return self.batch(ops)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return super().search(*args, **kwargs)

    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return await super().asearch(*args, **kwargs)


def _items(store: BaseStore, namespace: tuple[str, ...] = USER) -> list[Any]:
    return store.search(namespace, limit=100_000)


def _chat(turns: int, *, fact_at: int | None = None) -> list[Any]:
    history: list[Any] = [SystemMessage("You are a travel assistant.", id="sys")]
    for n in range(turns):
        text = f"Turn {n}: what is the weather in Porto on day {n}?"
        if n == fact_at:
            text = "I booked the Lisbon hotel, reservation QX-4471."
        history += [HumanMessage(text, id=f"h{n}"), AIMessage(f"Noted for turn {n}.", id=f"a{n}")]
    return history


# -- stores, sync and async --------------------------------------------------------------


@pytest.fixture(params=["memory", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """InMemoryStore, and PostgresStore in a schema of its own."""
    if request.param == "memory":
        yield InMemoryStore()
        return
    from langgraph.store.postgres import PostgresStore

    conninfo = request.getfixturevalue("postgres_conninfo")
    with PostgresStore.from_conn_string(conninfo) as postgres:
        postgres.setup()
        yield postgres


@pytest.fixture(params=["memory", "postgres"])
async def astore(request: pytest.FixtureRequest) -> AsyncIterator[BaseStore]:
    """InMemoryStore, and AsyncPostgresStore in a schema of its own."""
    if request.param == "memory":
        yield InMemoryStore()
        return
    from langgraph.store.postgres.aio import AsyncPostgresStore

    conninfo = request.getfixturevalue("postgres_conninfo")
    async with AsyncPostgresStore.from_conn_string(conninfo) as postgres:
        await postgres.setup()
        yield postgres


def _reducer(memory: StoreMemory, **changes: Any) -> MessageReducer:
    config = {"min_messages": 4, "max_messages": 8, "on_prune": [memory], **changes}
    return MessageReducer(config=ReducerConfig(**config))


def test_each_pruned_message_is_one_item_under_the_users_namespace(store: BaseStore) -> None:
    """Every message a reduce prunes becomes one item (its text, role, id and conversation)
    under the namespace given, whatever thread it came from."""
    reducer = _reducer(StoreMemory(store, namespace=USER))
    history = _chat(10)
    result = reducer.reduce(history, namespace=("memories", "thread-1"))
    items = _items(store)
    assert len(items) == len(result.pruned) > 0
    by_id = {item.value["message_id"]: item.value for item in items}
    for message in result.pruned:
        value = by_id[message.id]
        assert value["text"] == message.content and value["kind"] == "message"
        assert value["conversation"] == ["memories", "thread-1"]
    assert value["role"] in ("human", "ai")


def test_replays_retries_and_other_processes_store_nothing_twice(store: BaseStore) -> None:
    """The same messages handed over again (a replay, a retry after the hook's memory was
    lost, a second process with its own reducer) write the same items: the count stays."""
    history = _chat(12)
    first = _reducer(StoreMemory(store, namespace=USER))
    pruned = first.reduce(history, namespace="thread-1").pruned
    count = len(_items(store))
    assert count == len(pruned)
    other_process = _reducer(StoreMemory(store, namespace=USER))
    other_process.reduce(history, namespace="thread-1")
    memory = StoreMemory(store, namespace=USER)
    memory(pruned, "thread-1")  # a retried hand-off of the same batch
    memory(pruned[:3], "thread-1")
    assert len(_items(store)) == count
    memory(pruned[:3], "thread-2")  # another conversation's equal messages are its own
    assert len(_items(store)) == count + 3


async def test_the_async_hook_awaits_the_store(astore: BaseStore) -> None:
    """``areduce`` awaits ``StoreMemory.acall``, which writes with ``abatch``; a replay
    stores nothing twice."""
    reducer = _reducer(StoreMemory(astore, namespace=USER))
    history = _chat(10)
    result = await reducer.areduce(history, namespace="thread-a")
    await StoreMemory(astore, namespace=USER).acall(result.pruned, "thread-a")
    items = await astore.asearch(USER, limit=1000)
    assert sorted(i.value["message_id"] for i in items) == sorted(m.id for m in result.pruned)


def test_a_namespace_function_gets_the_hooks_namespace() -> None:
    """A callable namespace maps the hook's namespace argument (the run's memory namespace)
    to the store's; one returning no valid namespace is named in the error."""
    store = InMemoryStore()
    seen = []

    def per_user(namespace: Any) -> tuple[str, ...]:
        seen.append(namespace)
        return ("memories", namespace[1].split("-")[0])

    reducer = _reducer(StoreMemory(store, namespace=per_user))
    reducer.reduce(_chat(10), namespace=("memories", "ana-thread7"))
    assert seen == [("memories", "ana-thread7")] and _items(store, ("memories", "ana"))
    broken = _reducer(StoreMemory(store, namespace=lambda ns: "ana"))
    with pytest.raises(PruneHookError) as caught:
        broken.reduce(_chat(10), namespace="t")
    assert isinstance(caught.value.__cause__, TypeError)
    assert "StoreMemory.namespace" in str(caught.value.__cause__)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"namespace": "memories"}, TypeError),
        ({"namespace": ()}, ValueError),
        ({"namespace": ("user.42",)}, ValueError),
        ({"namespace": ("langgraph", "x")}, ValueError),
        ({"namespace": USER, "index": "text"}, TypeError),
        ({"namespace": USER, "extract": "llm"}, TypeError),
    ],
)
def test_bad_arguments_are_refused_when_built(kwargs: dict[str, Any], error: type) -> None:
    """Namespaces LangGraph stores refuse, an index that is not a field list and an
    extractor that is not callable fail when the hook is built, not at the first prune."""
    with pytest.raises(error):
        StoreMemory(InMemoryStore(), **kwargs)
    with pytest.raises(TypeError, match="BaseStore"):
        StoreMemory(object(), namespace=USER)  # type: ignore[arg-type]


def test_an_outage_loses_nothing_and_stores_each_message_once_in_a_real_graph() -> None:
    """A checkpointer-wrapped graph whose store is down for a stretch: turns go through
    unpruned, and once it is back every message that left the list is in the store once."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    store = FlakyStore()
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=6,
            max_messages=12,
            preserve_first="system",
            on_prune=[StoreMemory(store, namespace=USER)],
            handoff=Handoff(retry_backoff=0),
        )
    )
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    builder = StateGraph(MessagesState)
    builder.add_node("chat", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "chat")
    saver = ReducingCheckpointSaver(
        SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False)), reducer
    )
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    sent = []
    for n in range(40):
        store.down = 10 <= n < 20
        message = HumanMessage(f"fact {n}", id=f"u{n}")
        sent.append(message.id)
        graph.invoke({"messages": [message]}, config)
        graph.get_state(config)  # replays nothing into the store
    stored = graph.get_state(config).values["messages"]
    assert len(stored) <= 12
    kept = {m.id for m in stored}
    items = _items(store)
    ids = [item.value["message_id"] for item in items]
    assert len(ids) == len(set(ids))  # once each
    left = {m for m in sent if m not in kept}
    assert left <= set(ids)  # every question that left is in the store


def test_extracted_facts_are_stored_and_no_message_is_extracted_twice() -> None:
    """With ``extract`` each fact is one item; a batch that repeats messages (a replay, or
    batches that overlap) extracts only the new ones, and a failed write extracts again
    into the same keys."""
    store = FlakyStore()
    calls: list[list[str]] = []

    def extract(messages: list[Any]) -> list[dict[str, Any]]:
        calls.append([m.id for m in messages])
        return [{"text": f"fact from {m.id}"} for m in messages if m.type == "human"]

    memory = StoreMemory(store, namespace=USER, extract=extract)
    history = _chat(4)
    memory(history[1:4], "t")
    memory(history[1:4], "t")  # replayed
    memory(history[3:6], "t")  # overlaps
    assert calls == [["h0", "a0", "h1"], ["a1", "h2"]]
    facts = sorted(item.value["text"] for item in _items(store))
    assert facts == ["fact from h0", "fact from h1", "fact from h2"]
    records = store.search((*EXTRACTED_ROOT, *USER), limit=100)
    assert len(records) == 5
    store.down = True
    with pytest.raises(ConnectionError):
        memory(history[6:8], "t")
    store.down = False
    memory(history[6:8], "t")
    assert calls[-2] == calls[-1] == ["a2", "h3"]
    assert sorted(item.value["text"] for item in _items(store))[-1] == "fact from h3"
    assert len(_items(store)) == 4


async def test_an_async_extractor_is_awaited() -> None:
    """An async ``extract`` is awaited by ``acall`` and run to completion by ``__call__``;
    an answer that is not a list of dicts is a TypeError naming it."""
    store = InMemoryStore()

    async def extract(messages: list[Any]) -> list[dict[str, Any]]:
        return [{"text": " / ".join(str(m.content) for m in messages)}]

    memory = StoreMemory(store, namespace=USER, extract=extract)
    await memory.acall(_chat(2)[1:3], "t")
    memory(_chat(2)[3:5], "t")
    assert len(_items(store)) == 2
    bad = StoreMemory(store, namespace=USER, extract=lambda messages: "facts")
    with pytest.raises(TypeError, match="list of dicts"):
        bad(_chat(3)[5:7], "t")


# -- Recall -------------------------------------------------------------------------------


def _recall_reducer(store: BaseStore, **recall: Any) -> MessageReducer:
    return MessageReducer(
        config=ReducerConfig(
            max_tokens=600,
            preserve_first="system",
            policy=[Recall(store, namespace=USER, **recall), DropOldest()],
            on_prune=[StoreMemory(store, namespace=USER, index=["text"])],
        )
    )


def test_a_fact_pruned_500_messages_ago_is_recalled_into_the_model_input() -> None:
    """A create_agent chat of 250 turns: the booking from turn 0 left the state 500
    messages ago; asked about it, the model's input holds it in one memory block after the
    system prompt, within the budget, and the state holds no recalled text."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from agentstate_reducer.langgraph import ReducerMiddleware

    store = embedding_store()
    reducer = _recall_reducer(store)
    model = ScriptedChatModel(script=["Noted."], cycle=True)
    agent = create_agent(
        model,
        tools=[],
        system_prompt="You are a travel assistant.",
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
        store=store,
    )
    config = {"configurable": {"thread_id": "trip"}}
    agent.invoke(
        {"messages": [("user", "I booked the Lisbon hotel, reservation QX-4471.")]}, config
    )
    for n in range(1, 250):
        agent.invoke({"messages": [("user", f"What is the weather in Porto on day {n}?")]}, config)
    state = agent.get_state(config).values["messages"]
    assert not any("QX-4471" in str(m.content) for m in state)
    assert not any(is_memory(m) for m in state)
    agent.invoke({"messages": [("user", "What was the reservation of my Lisbon hotel?")]}, config)
    shown = model.calls[-1]
    blocks = [m for m in shown if is_memory(m)]
    assert len(blocks) == 1 and "QX-4471" in blocks[0].content
    assert shown[0].type == "system" and shown[1] is blocks[0]
    assert shown[-1].content == "What was the reservation of my Lisbon hotel?"
    assert reducer.view(shown).tokens_before <= 600


def test_view_mode_agents_recall_too_and_each_question_searches_once() -> None:
    """In view mode the state keeps everything; the view adds the memory block. A question
    asked again (a tool loop, a retry) is answered from the step's cache."""
    store = FlakyStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    memory = StoreMemory(store, namespace=USER)
    memory(_chat(1, fact_at=0)[1:3], "old-thread")
    reducer = _recall_reducer(store)
    history = [*_chat(3), HumanMessage("What was the reservation of my Lisbon hotel?", id="q")]
    first = reducer.view(history)
    second = reducer.view(history)
    assert store.searches == 1
    assert first.surviving == second.surviving
    block = next(m for m in first.surviving if is_memory(m))
    assert "QX-4471" in block.content and block.content.startswith(MEMORY_HEADER)
    assert first.pruned == [] and [s.step for s in first.steps] == ["recall"]
    reducer.view([*history, AIMessage("Noted.", id="r"), HumanMessage("Weather?", id="q2")])
    assert store.searches == 2


def test_recall_never_pushes_out_the_question_and_keeps_its_room() -> None:
    """The block takes at most max_tokens and at most what the budget leaves beside what is
    never dropped; the view still fits, the question stays, and memories that do not fit
    are left out rather than cut."""
    store = embedding_store()
    memory = StoreMemory(store, namespace=USER)
    memory(
        [HumanMessage(f"Lisbon hotel note {n}: " + "detail " * 40, id=f"n{n}") for n in range(5)],
        "t",
    )
    question = HumanMessage("Which Lisbon hotel notes do you have?", id="q")
    budget = MessageReducer(config=ReducerConfig(max_tokens=10_000)).count_tokens(question) + 120
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget,
            policy=[Recall(store, namespace=USER, max_tokens=100), DropOldest()],
        )
    )
    result = reducer.view([*_chat(6), question])
    assert result.surviving[-1] is question
    assert result.tokens_after <= budget
    blocks = [m for m in result.surviving if is_memory(m)]
    assert all(reducer.count_tokens(b) <= 100 for b in blocks)
    tiny = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget - 100,
            policy=[Recall(store, namespace=USER), DropOldest()],
        )
    )
    assert not any(
        is_memory(m) for m in tiny.view([SystemMessage("s", id="s"), question]).surviving
    )


def test_persistent_reduces_skip_recall_and_never_hand_a_memory_block_over() -> None:
    """``reduce`` leaves Recall out (the stored list never holds recalled text); a memory
    block that got into a stored list anyway is kept like a summary, and if it leaves, no
    hook receives it."""
    store = embedding_store()
    handed: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=200,
            policy=[Recall(store, namespace=USER), DropOldest()],
            on_prune=[lambda messages, namespace: handed.extend(messages)],
        )
    )
    StoreMemory(store, namespace=USER)(_chat(1, fact_at=0)[1:3], "t")
    question = HumanMessage("What was the reservation of my Lisbon hotel?", id="q")
    view = reducer.view([*_chat(2), question])
    block = next(m for m in view.surviving if is_memory(m))
    result = reducer.reduce([*_chat(8), question])
    assert not any(is_memory(m) for m in result.surviving)
    assert [s.step for s in result.steps] == ["drop_oldest"]
    stored = [SystemMessage("sys", id="s"), block, *_chat(8)[1:], question]
    again = reducer.reduce(stored)
    assert block in again.surviving and not any(is_memory(m) for m in handed)
    assert StoreMemory(store, namespace=USER)._write([block], "t").__next__ is not None


async def test_async_views_await_the_stores_search() -> None:
    """``aview`` awaits ``asearch``; the block is the same as the sync view's."""
    store = FlakyStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    await StoreMemory(store, namespace=USER).acall(_chat(1, fact_at=0)[1:3], "t")
    history = [*_chat(2), HumanMessage("Where is the reservation QX-4471 for?", id="q")]
    asynchronous = await _recall_reducer(store).aview(history)
    synchronous = _recall_reducer(store).view(history)
    assert [m.content for m in asynchronous.surviving] == [m.content for m in synchronous.surviving]
    assert any(is_memory(m) and "Lisbon" in m.content for m in asynchronous.surviving)


def test_a_store_without_embeddings_is_ranked_by_bm25(store: BaseStore) -> None:
    """Without an index (PostgreSQL here has no pgvector) the store returns unranked items;
    Recall ranks them by BM25 against the question and leaves out those sharing no word."""
    memory = StoreMemory(store, namespace=USER)
    facts = [
        HumanMessage("My sister's birthday is on 3 March.", id="f1"),
        HumanMessage("I booked the Lisbon hotel, reservation QX-4471.", id="f2"),
        HumanMessage("The car is parked on level 4.", id="f3"),
    ]
    memory(facts, "t")
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=2_000, policy=[Recall(store, namespace=USER, k=1)])
    )
    question = HumanMessage("Which hotel did I book in Lisbon?", id="q")
    view = reducer.view([SystemMessage("Be brief.", id="s"), question])
    block = view.surviving[1]
    assert is_memory(block) and view.surviving[-1] is question
    assert "QX-4471" in block.content and "sister" not in block.content


def test_recall_writes_the_lists_own_kind_and_skips_what_the_list_still_shows() -> None:
    """In a list of OpenAI dicts the block is a plain user dict (the header marks it); a
    memory whose message is still in the list is not recalled."""
    store = embedding_store()
    StoreMemory(store, namespace=USER)(
        [{"role": "user", "content": "I booked the Lisbon hotel, reservation QX-4471.", "id": "f"}],
        "t",
    )
    reducer = _recall_reducer(store)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What was my Lisbon hotel reservation?"},
    ]
    block = reducer.view(history).surviving[1]
    assert block == {"role": "user", "content": block["content"]}
    assert block["content"].startswith(MEMORY_HEADER) and "QX-4471" in block["content"]
    still_there = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I booked the Lisbon hotel, reservation QX-4471.", "id": "f"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What was my Lisbon hotel reservation?"},
    ]
    assert not any(is_memory(m) for m in _recall_reducer(store).view(still_there).surviving)


def test_recall_comes_before_the_pruning_steps_and_checks_its_arguments() -> None:
    """A Recall after a pruning step is refused (the pruning could not make room for its
    block); wrong arguments are named."""
    store = InMemoryStore()
    with pytest.raises(ValueError, match="before"):
        ReducerConfig(max_tokens=100, policy=[DropOldest(), Recall(store, namespace=USER)])
    with pytest.raises(TypeError, match=r"Recall\.store"):
        Recall(object(), namespace=USER)
    with pytest.raises(TypeError, match=r"Recall\.namespace"):
        Recall(store, namespace="memories")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Recall\.k"):
        Recall(store, namespace=USER, k=0)


def test_messages_of_equal_text_are_stored_each_in_an_indexed_store() -> None:
    """Two pruned messages saying the same ("Noted.") are two items even in an
    InMemoryStore that embeds ``text`` (which refuses one batch holding both: they go in
    two batches)."""
    store = embedding_store()
    memory = StoreMemory(store, namespace=USER, index=["text"])
    same = [AIMessage("Noted.", id=f"ack{n}") for n in range(3)]
    memory([HumanMessage("hi", id="q"), *same], "t")
    assert sorted(i.value["message_id"] for i in _items(store)) == ["ack0", "ack1", "ack2", "q"]


def test_a_store_that_fails_its_search_skips_the_block_or_raises() -> None:
    """A search that raises: with ``on_prune_error="keep"`` (the integrations' default) the
    model gets the view without a block and the step's report carries the error; with
    ``"raise"`` the view raises ``StepError`` naming the store."""
    from agentstate_reducer import StepError

    class DownStore(InMemoryStore):
        def search(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("store unreachable")

    reducer = _recall_reducer(DownStore())
    history = [*_chat(2), HumanMessage("What was my Lisbon reservation?", id="q")]
    kept = reducer.view(history, on_prune_error="keep")
    assert not any(is_memory(m) for m in kept.surviving)
    assert isinstance(kept.steps[0].error, StepError)
    with pytest.raises(StepError, match=r"DownStore\.search"):
        reducer.view(history, on_prune_error="raise")

"""What a thread stores and what each operation costs, on the loopback server (issue 19):
DeltaChannel refused before anything is stored, subgraph namespaces cleaned with their
parent, copy_thread never moving a head backwards, a 10,000-Send task under the item limit,
costs that do not grow where they need not (filters, list pages, delete_thread, migrate),
time-to-live as documented, and the smaller items (migration reruns, aclose with runs in
flight, a key that is not base64)."""

from __future__ import annotations

import asyncio
import base64
import operator
import os
import warnings
from collections.abc import Sequence
from importlib import metadata
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import (
    AsyncCosmosDBSaver,
    CosmosConfigurationError,
    CosmosDBSaver,
    CosmosSaverClosedError,
    migrate_from_langgraph_checkpoint_cosmosdb,
)
from agentstate_cosmosdb.schema import (
    MARK_PREFIX,
    PART_PREFIX,
    TOMBSTONE_PREFIX,
    WRITE_VALUE_PREFIX,
    WRITES_PREFIX,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send
from packaging.version import Version

from tests._cosmos import import_published_saver

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


# --------------------------------------------------------------------------------------------
# DeltaChannel: refused before anything is stored
# --------------------------------------------------------------------------------------------


def _extend(state: Sequence[str] | None, writes: Sequence[Sequence[str]]) -> list[str]:
    return [*(state or []), *(item for write in writes for item in write)]


class DeltaState(TypedDict):
    items: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=4)]


def delta_graph(saver: Any) -> Any:
    def add(state: DeltaState) -> dict[str, Any]:
        return {"items": [f"item {len(state['items'])}"]}

    builder = StateGraph(DeltaState)
    builder.add_node("add", add)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def test_delta_channel_is_refused_before_anything_is_stored(
    sync_saver: CosmosDBSaver,
) -> None:
    """A graph with a DeltaChannel (LangGraph's beta channel whose history lives in the
    writes) on CosmosDBSaver: the first invoke raises NotImplementedError naming the channel
    and the way out, and the thread holds no document at all."""
    config = {"configurable": {"thread_id": "delta"}}
    with pytest.raises(NotImplementedError, match="DeltaChannel") as info:
        delta_graph(sync_saver).invoke({"items": ["first"]}, config)
    assert "items" in str(info.value)
    assert sync_saver.thread_documents("delta") == []
    assert sync_saver.get_tuple(config) is None


async def test_delta_channel_is_refused_by_the_async_saver(
    async_saver: AsyncCosmosDBSaver,
) -> None:
    """The same with AsyncCosmosDBSaver, and with a DeltaChannel the input does not write:
    no checkpoint is stored. (LangGraph 1.2.0's async loop stores the first task's pending
    writes before the input checkpoint, which later releases store first: there those writes
    may be all the thread holds, and delete_thread takes them.)"""
    config = {"configurable": {"thread_id": "delta-async"}}
    with pytest.raises(NotImplementedError, match="DeltaChannel"):
        await delta_graph(async_saver).ainvoke({"items": []}, config)
    left = await async_saver.athread_documents("delta-async")
    assert await async_saver.aget_tuple(config) is None
    if Version(metadata.version("langgraph")) > Version("1.2.0"):
        assert left == []
    pending = (WRITES_PREFIX, MARK_PREFIX, PART_PREFIX, WRITE_VALUE_PREFIX)
    assert all(d["id"].startswith(pending) for d in left), left
    await async_saver.adelete_thread("delta-async")
    assert [d for d in await async_saver.athread_documents("delta-async")
            if not d["id"].startswith(TOMBSTONE_PREFIX)] == []  # fmt: skip


# --------------------------------------------------------------------------------------------
# Subgraph namespaces
# --------------------------------------------------------------------------------------------


def subgraph_chat(saver: Any) -> Any:
    def inner(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"sub: {state['messages'][-1].content}")]}

    sub = StateGraph(MessagesState)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    builder = StateGraph(MessagesState)
    builder.add_node("sub", sub.compile())
    builder.add_edge(START, "sub")
    builder.add_edge("sub", END)
    return builder.compile(checkpointer=saver)


def _namespaces(saver: CosmosDBSaver, thread: str) -> set[str]:
    return {d["ns"] for d in saver.thread_documents(thread)}


@pytest.mark.parametrize("durability", ["async", "sync"])
def test_subgraph_namespaces_go_with_their_parents_retention(
    server: CosmosTestServer, durability: str
) -> None:
    """40 turns of a graph calling a subgraph (each call checkpoints in a namespace of its
    own) with keep_checkpoints=3: the thread keeps the root namespace and the calls of the
    kept root checkpoints only, and its document count stays flat; the state is whole."""
    with CosmosDBSaver(
        DATABASE, new_container(), keep_checkpoints=3, **saver_kwargs(server)
    ) as saver:
        graph = subgraph_chat(saver)
        config = {"configurable": {"thread_id": "subgraphs"}}
        counts = []
        for turn in range(40):
            graph.invoke(
                {"messages": [HumanMessage(content=f"q{turn}")]}, config, durability=durability
            )
            counts.append(len(saver.thread_documents("subgraphs")))
        assert len(_namespaces(saver, "subgraphs")) <= 1 + 3
        assert max(counts[20:]) <= max(counts[5:15]), counts
        messages = graph.get_state(config).values["messages"]
        assert len(messages) == 80 and messages[-1].content == "sub: q39"


def test_prune_and_delete_thread_clean_subgraph_namespaces(sync_saver: CosmosDBSaver) -> None:
    """prune(keep_latest) leaves the root namespace's latest checkpoint (and no subgraph
    call of an older one); delete_thread leaves nothing in any namespace."""
    graph = subgraph_chat(sync_saver)
    config = {"configurable": {"thread_id": "sub-prune"}}
    for turn in range(5):
        graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
    assert len(_namespaces(sync_saver, "sub-prune")) == 6
    sync_saver.prune(["sub-prune"])
    assert _namespaces(sync_saver, "sub-prune") == {""}
    assert len(list(sync_saver.list(config))) == 1
    assert len(graph.get_state(config).values["messages"]) == 10
    graph.invoke({"messages": [HumanMessage(content="q5")]}, config)
    assert graph.get_state(config).values["messages"][-1].content == "sub: q5"
    sync_saver.delete_thread("sub-prune")
    assert sync_saver.thread_documents("sub-prune") == []


# --------------------------------------------------------------------------------------------
# copy_thread, 10,000 Sends
# --------------------------------------------------------------------------------------------


def _put_chain(saver: CosmosDBSaver, thread: str, values: list[str]) -> list[Any]:
    configs, parent = [], generate_config(thread)
    for i, value in enumerate(values):
        checkpoint = generate_checkpoint(
            channel_values={"v": value}, channel_versions={"v": f"{i + 1:032}.0"}
        )
        parent = saver.put(parent, checkpoint, generate_metadata(step=i), {"v": f"{i + 1:032}.0"})
        configs.append(parent)
    return configs


def test_copy_thread_never_moves_a_head_backwards(sync_saver: CosmosDBSaver) -> None:
    """copy_thread onto a thread whose checkpoints are newer than the source's: the target's
    latest checkpoint stays its own newest; the copied ones are listed beside it."""
    source = _put_chain(sync_saver, "copy-src", ["s0", "s1"])
    target = _put_chain(sync_saver, "copy-dst", ["t0", "t1"])
    sync_saver.copy_thread("copy-src", "copy-dst")
    latest = sync_saver.get_tuple(generate_config("copy-dst"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"v": "t1"}
    assert (
        latest.config["configurable"]["checkpoint_id"]
        == (target[-1]["configurable"]["checkpoint_id"])
    )
    listed = {
        t.checkpoint["channel_values"]["v"] for t in sync_saver.list(generate_config("copy-dst"))
    }
    assert listed == {"s0", "s1", "t0", "t1"}
    assert len(source) == 2


class SendState(TypedDict):
    count: int
    done: Annotated[list[int], operator.add]


def test_a_task_writing_ten_thousand_sends(sync_saver: CosmosDBSaver) -> None:
    """A node returning 10,000 Send packets (one task's pending writes, each entry small):
    stored under the service's 2 MB item limit (the loopback server refuses larger items),
    and the fan-out runs to its end."""

    def fan(state: SendState) -> list[Send]:
        return [Send("work", {"count": i, "done": []}) for i in range(state["count"])]

    def work(state: SendState) -> dict[str, Any]:
        return {"done": [state["count"]]}

    builder = StateGraph(SendState)
    builder.add_node("work", work)
    builder.add_conditional_edges(START, fan, ["work"])
    builder.add_edge("work", END)
    graph = builder.compile(checkpointer=sync_saver)
    config = {"configurable": {"thread_id": "sends"}, "max_concurrency": 64}
    out = graph.invoke({"count": 10_000, "done": []}, config, durability="sync")
    assert sorted(out["done"]) == list(range(10_000))


# --------------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------------


def _grow(saver: CosmosDBSaver, thread: str, checkpoints: int, payload: int = 20_000) -> Any:
    shared = os.urandom(payload // 2).hex()  # one big value every checkpoint inherits
    parent = generate_config(thread)
    for i in range(checkpoints):
        checkpoint = generate_checkpoint(
            channel_values={"big": shared, "n": [i]},
            channel_versions={"big": f"{1:032}.0", "n": f"{i + 1:032}.0"},
        )
        new = {"big": f"{1:032}.0", "n": f"{i + 1:032}.0"} if i == 0 else {"n": f"{i + 1:032}.0"}
        parent = saver.put(parent, checkpoint, generate_metadata(step=i, score={"value": i}), new)
        saver.put_writes(parent, [("out", i)], f"task-{i}")
    return parent


def test_a_filter_the_query_cannot_express_does_not_load_bodies(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """list(filter={"score": {"value": 10}}, limit=1) on 300 checkpoints, the match 290 back
    (a nested filter is not pushed into the query): a few requests and kilobytes, not one load
    of every checkpoint newer than the match with its values and writes."""
    _grow(sync_saver, "filtered", 300)
    server.reset_stats()
    found = list(
        sync_saver.list(generate_config("filtered"), filter={"score": {"value": 10}}, limit=1)
    )
    stats = server.stats()
    assert [t.metadata["score"] for t in found] == [{"value": 10}]
    assert stats["total"] <= 8, stats
    assert stats["bytes_out"] < 200_000, stats


def test_list_pages_do_not_read_shared_values_again(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """Listing 300 checkpoints that all inherit one big value reads that value's document
    once for the whole list, not once per page."""
    _grow(sync_saver, "shared", 300)
    server.reset_stats()
    assert len(list(sync_saver.list(generate_config("shared")))) == 300
    stats = server.stats()
    assert stats.get("read", 0) <= 2, stats


def test_delete_thread_deletes_in_bulk(server: CosmosTestServer, sync_saver: CosmosDBSaver) -> None:
    """delete_thread of a thread of 300 checkpoints (with a pending write each) costs
    requests in proportion to the documents divided by a batch (about 100 per request),
    not one request per document."""
    _grow(sync_saver, "bulk", 300)
    documents = len(sync_saver.thread_documents("bulk"))
    server.reset_stats()
    sync_saver.delete_thread("bulk")
    stats = server.stats()
    assert sync_saver.thread_documents("bulk") == []
    assert stats["total"] <= documents / 50 + 10, (stats, documents)


def test_migrate_one_thread_reads_only_that_thread(
    server: CosmosTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """migrate(thread_ids=[one]) from a container holding many threads reads that thread's
    documents only (bytes received from the source stay those of one thread), and running it
    again leaves exactly the same documents (no orphaned value of a big pending write)."""
    published = import_published_saver()
    monkeypatch.setenv("COSMOSDB_ENDPOINT", server.endpoint)
    monkeypatch.setenv("COSMOSDB_KEY", server.key)
    source_name = new_container()
    big = os.urandom(50_000).hex()  # a pending write over the inline bound
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = published.CosmosDBSaver(database_name="published", container_name=source_name)
        for thread in range(12):
            parent = generate_config(f"old-{thread}")
            for i in range(4):
                parent = old.put(
                    parent,
                    generate_checkpoint(channel_values={"v": big}, channel_versions={"v": i + 1}),
                    generate_metadata(step=i),
                    {"v": i + 1},
                )
            old.put_writes(parent, [("out", big)], "task")
    from agentstate_cosmosdb.settings import tls_hook
    from azure.cosmos import CosmosClient

    src = (
        CosmosClient(server.endpoint, server.key, raw_request_hook=tls_hook(str(server.ca_file)))
        .get_database_client("published")
        .get_container_client(source_name)
    )
    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as target:
        target.setup()
        server.reset_stats()
        report = migrate_from_langgraph_checkpoint_cosmosdb(src, target, thread_ids=["old-3"])
        one_thread_bytes = server.stats()["bytes_out"]
        assert report.threads == 1 and report.checkpoints == 4 and report.writes == 1
        assert one_thread_bytes < 12 * 4 * 100_000 / 4, one_thread_bytes
        before = sorted(d["id"] for d in target.thread_documents("old-3"))
        migrate_from_langgraph_checkpoint_cosmosdb(src, target, thread_ids=["old-3"])
        after = sorted(d["id"] for d in target.thread_documents("old-3"))
        assert after == before
        latest = target.get_tuple(generate_config("old-3"))
        assert latest is not None and latest.pending_writes == [("task", "out", big)]


def test_the_latest_read_is_one_round_trip_of_point_reads(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """After a turn (its last checkpoint has no pending writes), reading the latest
    checkpoint again costs point reads only, sent together: no query."""
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda s: {"messages": [AIMessage(content="ok " * 2000)]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=sync_saver)
    config = {"configurable": {"thread_id": "latest"}}
    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
    server.reset_stats()
    assert sync_saver.get_tuple(config) is not None
    stats = server.stats()
    assert stats.get("query", 0) == 0 and stats["total"] <= 3, stats


# --------------------------------------------------------------------------------------------
# Time-to-live, aclose, keys
# --------------------------------------------------------------------------------------------


def test_a_thread_idle_for_less_than_its_ttl_is_kept(server: CosmosTestServer) -> None:
    """ttl=20: a thread put twice 7 s apart (its value written once, inherited by the second
    checkpoint), then idle for 15 s (the server's clock moved on; the value is 22 s old):
    idle less than its ttl, it reads whole; idle past its ttl it is gone, and stays gone."""
    with CosmosDBSaver(DATABASE, new_container(), ttl=20, **saver_kwargs(server)) as saver:
        big = [os.urandom(100_000).hex()]
        first = saver.put(
            generate_config("idle"),
            generate_checkpoint(
                channel_values={"big": big, "n": [0]}, channel_versions={"big": "1", "n": "1"}
            ),
            generate_metadata(),
            {"big": "1", "n": "1"},
        )
        import time

        time.sleep(7)
        saver.put(
            first,
            generate_checkpoint(
                channel_values={"big": big, "n": [1]}, channel_versions={"big": "1", "n": "2"}
            ),
            generate_metadata(),
            {"n": "2"},
        )
        server.advance_clock(15)
        latest = saver.get_tuple(generate_config("idle"))
        assert latest is not None and latest.checkpoint["channel_values"]["big"] == big
        server.advance_clock(10)
        assert saver.get_tuple(generate_config("idle")) is None
        assert list(saver.list(generate_config("idle"))) == []
        assert saver.get_tuple(generate_config("idle")) is None


async def test_aclose_with_runs_in_flight(server: CosmosTestServer) -> None:
    """aclose() while runs are in flight: each run either completes or fails with
    CosmosSaverClosedError (saying the saver was closed), never an SDK error about a closed
    session."""
    saver = AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server))
    await saver.setup()
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda s: {"messages": [AIMessage(content="ok")]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=saver)

    async def run(i: int) -> None:
        config = {"configurable": {"thread_id": f"closing-{i}"}}
        for turn in range(5):
            await graph.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)

    tasks = [asyncio.create_task(run(i)) for i in range(16)]
    await asyncio.sleep(0.15)
    await saver.aclose()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    unexpected = [r for r in results if r is not None and not isinstance(r, CosmosSaverClosedError)]
    assert unexpected == [], unexpected
    assert any(isinstance(r, CosmosSaverClosedError) for r in results)


@pytest.mark.parametrize("key", ["not base64!", "abc", "abcde"])
def test_a_key_that_is_not_base64_is_named_at_construction(key: str) -> None:
    """An account key that is not valid base64 raises CosmosConfigurationError when the saver
    is built (from credential= or a connection string), saying so, never "Incorrect padding"
    and never the key."""
    with pytest.raises(CosmosConfigurationError, match="base64") as info:
        CosmosDBSaver("db", "c", endpoint="https://acct.documents.azure.com:443/", credential=key)
    assert key not in str(info.value) and "padding" not in str(info.value)
    conn = f"AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey={key};"
    with (
        pytest.raises(CosmosConfigurationError, match="base64"),
        CosmosDBSaver.from_conn_string(conn, database_name="db", container_name="c"),
    ):
        pass
    good = base64.b64encode(b"k" * 64).decode()
    CosmosDBSaver("db", "c", endpoint="https://acct.documents.azure.com:443/", credential=good)

"""What production runs meet, against the real SDK and the loopback server: fan-out graphs,
TTL-less containers, refused batches, interrupted maintenance, connection strings, closed
savers, streaming lists, the index policy, keep-N storage and time-to-live refresh."""

from __future__ import annotations

import json
import operator
import os
import time
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import (
    AsyncCosmosDBSaver,
    CosmosConfigurationError,
    CosmosDBSaver,
    CosmosSaverClosedError,
    CosmosSaverError,
)
from agentstate_cosmosdb.schema import INDEXING_POLICY
from agentstate_cosmosdb.settings import tls_hook
from azure.core.credentials import AccessToken
from azure.cosmos import CosmosClient, PartitionKey
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

from .conftest import DATABASE, FAST_RETRIES, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class StaticToken:
    """A TokenCredential handing out a fixed token (the server treats it as an Entra token)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("token-for-tests", int(time.time()) + 3600)


def admin(server: CosmosTestServer) -> Any:
    return CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )


# --------------------------------------------------------------------------------------------
# Fan-out: 100 tasks of one step
# --------------------------------------------------------------------------------------------


class FanState(TypedDict):
    size: int
    results: Annotated[list[str], operator.add]


def fan_out_graph(saver: Any) -> Any:
    def fan(state: FanState) -> list[Send]:
        return [Send("work", {"i": i, "size": state["size"]}) for i in range(100)]

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        body = (f"{arg['i']:03}" + os.urandom(arg["size"] // 2).hex())[: arg["size"]]
        return {"results": [body]}

    builder = StateGraph(FanState)
    builder.add_node("work", work)
    builder.add_conditional_edges(START, fan, ["work"])
    builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("size", [100, 30_000])
@pytest.mark.parametrize("max_concurrency", [None, 32])
def test_fan_out_of_100_tasks_sync(
    server: CosmosTestServer, size: int, max_concurrency: int | None
) -> None:
    """A step that Sends to 100 tasks (100 B and 30 KB writes each; the executor's default
    concurrency and max_concurrency=32) completes: every task's write is stored as its own
    document, the state has all 100 results, and a fresh saver reads the same state."""
    container = new_container()
    config: Any = {"configurable": {"thread_id": f"fan-{size}-{max_concurrency}"}}
    if max_concurrency:
        config["max_concurrency"] = max_concurrency
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        graph = fan_out_graph(saver)
        out = graph.invoke({"size": size, "results": []}, config, durability="sync")
        assert sorted(r[:3] for r in out["results"]) == [f"{i:03}" for i in range(100)]
        assert all(len(r) == size for r in out["results"])
        docs = saver.thread_documents(config["configurable"]["thread_id"])
        assert sum(1 for d in docs if d["kind"] == "writes") >= 100
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as fresh:
        state = fan_out_graph(fresh).get_state(config)
        assert sorted(state.values["results"]) == sorted(out["results"])


@pytest.mark.parametrize("size", [100, 30_000])
async def test_fan_out_of_100_tasks_async(server: CosmosTestServer, size: int) -> None:
    """The same 100-task fan-out through AsyncCosmosDBSaver (all writes in flight at once)."""
    config = {"configurable": {"thread_id": f"fan-async-{size}"}}
    async with AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        graph = fan_out_graph(saver)
        out = await graph.ainvoke({"size": size, "results": []}, config, durability="sync")
        assert sorted(r[:3] for r in out["results"]) == [f"{i:03}" for i in range(100)]
        state = await graph.aget_state(config)
        assert sorted(state.values["results"]) == sorted(out["results"])


# --------------------------------------------------------------------------------------------
# Graph features: subgraphs, interrupts, update_state, durability modes
# --------------------------------------------------------------------------------------------


def feature_graph(saver: Any) -> Any:
    from langgraph.types import interrupt

    def inner_step(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="from the subgraph")]}

    sub = StateGraph(MessagesState)
    sub.add_node("inner_step", inner_step)
    sub.add_edge(START, "inner_step")
    sub.add_edge("inner_step", END)

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [HumanMessage(content=f"approved: {answer}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("sub", sub.compile())
    builder.add_node("ask", ask)
    builder.add_edge(START, "sub")
    builder.add_edge("sub", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_subgraph_interrupt_resume_and_update_state(
    sync_saver: CosmosDBSaver, durability: str
) -> None:
    """A graph with a subgraph and an interrupt() runs, stops at the interrupt, resumes with
    Command(resume=...), and update_state edits the stored state, in every durability mode."""
    from langgraph.types import Command

    graph = feature_graph(sync_saver)
    config = {"configurable": {"thread_id": f"features-{durability}"}}
    graph.invoke({"messages": [HumanMessage(content="go")]}, config, durability=durability)
    paused = graph.get_state(config)
    assert paused.next == ("ask",)
    assert paused.tasks[0].interrupts[0].value == "approve?"
    graph.invoke(Command(resume="yes"), config, durability=durability)
    done = graph.get_state(config)
    assert [m.content for m in done.values["messages"]] == [
        "go",
        "from the subgraph",
        "approved: yes",
    ]
    graph.update_state(config, {"messages": [AIMessage(content="edited")]})
    assert graph.get_state(config).values["messages"][-1].content == "edited"
    history = list(graph.get_state_history(config))
    assert len(history) >= 3 if durability != "exit" else len(history) >= 2


async def test_subgraph_interrupt_resume_async(async_saver: AsyncCosmosDBSaver) -> None:
    """The same through AsyncCosmosDBSaver."""
    from langgraph.types import Command

    graph = feature_graph(async_saver)
    config = {"configurable": {"thread_id": "features-async"}}
    await graph.ainvoke({"messages": [HumanMessage(content="go")]}, config)
    assert (await graph.aget_state(config)).next == ("ask",)
    await graph.ainvoke(Command(resume="ok"), config)
    state = await graph.aget_state(config)
    assert state.values["messages"][-1].content == "approved: ok"


# --------------------------------------------------------------------------------------------
# Setup: TTL, missing resources, index policy
# --------------------------------------------------------------------------------------------


def test_ttl_on_a_container_without_time_to_live(server: CosmosTestServer) -> None:
    """ttl= on an existing container whose time-to-live is off: with an account key the saver
    turns it on (defaultTtl -1, as the service needs for item ttl to count); with an Entra
    token (not allowed to change containers) setup fails saying what to set."""
    name = new_container()
    database = admin(server).create_database_if_not_exists(DATABASE)
    database.create_container(name, partition_key=PartitionKey(path="/pk"))
    assert database.get_container_client(name).read().get("defaultTtl") is None
    with (
        pytest.raises(CosmosConfigurationError, match="Time to Live") as info,
        CosmosDBSaver(
            DATABASE, name, ttl=600, **saver_kwargs(server, credential=StaticToken())
        ) as saver,
    ):
        saver.setup()
    assert "--ttl -1" in str(info.value)
    with CosmosDBSaver(DATABASE, name, ttl=600, **saver_kwargs(server)) as saver:
        saver.setup()
    assert database.get_container_client(name).read().get("defaultTtl") == -1


def test_token_credential_and_a_missing_container_says_what_to_create(
    server: CosmosTestServer,
) -> None:
    """With an Entra token the saver tries to create what is missing; the service refuses
    management requests for data-plane identities (403), and the error says what to create."""
    name = new_container()
    with (
        pytest.raises(CosmosSaverError, match="partition key path '/pk'") as info,
        CosmosDBSaver(
            "tokendb-" + name, name, **saver_kwargs(server, credential=StaticToken())
        ) as saver,
    ):
        saver.setup()
    assert "may not create" in str(info.value) and name in str(info.value)


def test_a_key_client_creates_a_missing_database_by_default(server: CosmosTestServer) -> None:
    """client= built with an account key creates a missing database and container without
    create_if_missing=True."""
    client = admin(server)
    database = "newdb-" + new_container()
    with CosmosDBSaver(database, "cps", client=client) as saver:
        saver.put(
            generate_config("t"),
            generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"}),
            generate_metadata(),
            {"a": "1"},
        )
        assert saver.get_tuple(generate_config("t")) is not None


def test_a_created_container_indexes_only_what_queries_use(server: CosmosTestServer) -> None:
    """A container the saver creates gets the narrow indexing policy (values and bodies not
    indexed); every query still works on it (list with a metadata filter, delete_for_runs)."""
    name = new_container()
    with CosmosDBSaver(DATABASE, name, **saver_kwargs(server)) as saver:
        saver.setup()
        props = admin(server).get_database_client(DATABASE).get_container_client(name).read()
        included = {p["path"] for p in props["indexingPolicy"]["includedPaths"]}
        assert included == {p["path"] for p in INDEXING_POLICY["includedPaths"]}
        stored = saver.put(
            generate_config("t"),
            generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"}),
            generate_metadata(run_id="r1", source="input"),
            {"a": "1"},
        )
        assert [t.config for t in saver.list(None, filter={"source": "input"})] == [stored]
        saver.delete_for_runs(["r1"])
        assert list(saver.list(generate_config("t"))) == []


# --------------------------------------------------------------------------------------------
# Batches, interrupted maintenance
# --------------------------------------------------------------------------------------------


def test_a_refused_batch_is_written_the_ordered_way(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """When the service refuses a transactional batch as too large (here: the test server
    refuses batches over 20 KB), the put still stores the checkpoint, with ordered writes,
    and it reads back whole."""
    first = sync_saver.put(
        generate_config("refused"),
        generate_checkpoint(channel_values={"a": ["x"]}, channel_versions={"a": "1"}),
        generate_metadata(),
        {"a": "1"},
    )
    sync_saver.get_tuple(generate_config("refused"))
    value = [os.urandom(25_000).hex()]
    server.limit_batches(20_000)
    try:
        server.reset_stats()
        second = sync_saver.put(
            first,
            generate_checkpoint(channel_values={"a": value}, channel_versions={"a": "2"}),
            generate_metadata(),
            {"a": "2"},
        )
        stats = server.stats()
        assert stats.get("batch") == 1  # refused with 413, nothing applied
        assert stats.get("upsert", 0) + stats.get("replace", 0) >= 2  # then the ordered way
    finally:
        server.limit_batches()
    latest = sync_saver.get_tuple(generate_config("refused"))
    assert latest is not None and latest.config == second
    assert latest.checkpoint["channel_values"] == {"a": value}


def _runs_thread(saver: CosmosDBSaver, thread: str) -> list[Any]:
    configs = []
    parent = generate_config(thread)
    for i, run in enumerate(["r1", "r1", "r2", "r2", "r3"]):
        checkpoint = generate_checkpoint(
            channel_values={"a": [i], "b": ["kept"]},
            channel_versions={"a": str(i + 1), "b": "1"},
        )
        new = {"a": str(i + 1), "b": "1"} if i == 0 else {"a": str(i + 1)}
        parent = saver.put(parent, checkpoint, generate_metadata(run_id=run, step=i), new)
        saver.put_writes(parent, [("out", f"w{i}")], f"task-{i}")
        configs.append(parent)
    return configs


@pytest.mark.parametrize("after", [2, 5, 9])
def test_an_interrupted_delete_for_runs_leaves_a_valid_thread(
    server: CosmosTestServer, after: int
) -> None:
    """delete_for_runs cut off after a few requests (the server fails every later request, as
    if the process had died) leaves a valid thread: every listed checkpoint reads, a thread
    with listed checkpoints has a latest one; run again, it completes as if uninterrupted."""
    container = new_container()
    thread = f"interrupted-{after}"
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        configs = _runs_thread(saver, thread)
    server.fail(after=after)
    try:
        with (
            CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver,
            pytest.raises(CosmosSaverError),
        ):
            saver.delete_for_runs(["r2", "r3"])
    finally:
        server.heal()
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        listed = list(saver.list(generate_config(thread)))
        for tup in listed:
            assert tup.checkpoint["channel_values"]["b"] == ["kept"]
        if listed:
            assert saver.get_tuple(generate_config(thread)) is not None
        saver.delete_for_runs(["r2", "r3"])
        remaining = [t.config for t in saver.list(generate_config(thread))]
        assert remaining == [configs[1], configs[0]]
        latest = saver.get_tuple(generate_config(thread))
        assert latest is not None and latest.config == configs[1]
        assert [w[2] for w in latest.pending_writes or []] == ["w1"]


# --------------------------------------------------------------------------------------------
# Construction: connection strings, closed savers, minimal responses
# --------------------------------------------------------------------------------------------


def conn_string(server: CosmosTestServer) -> str:
    return f"AccountEndpoint={server.endpoint};AccountKey={server.key};"


def test_from_conn_string(server: CosmosTestServer) -> None:
    """from_conn_string(conn, database_name=..., container_name=...) yields a ready saver and
    closes it on exit."""
    kwargs = {"connection_verify": str(server.ca_file), **FAST_RETRIES}
    with CosmosDBSaver.from_conn_string(
        conn_string(server), database_name=DATABASE, container_name=new_container(), **kwargs
    ) as saver:
        stored = saver.put(
            generate_config("cs"),
            generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"}),
            generate_metadata(),
            {"a": "1"},
        )
        assert saver.get_tuple(stored) is not None
    with pytest.raises(CosmosSaverClosedError):
        saver.get_tuple(stored)


async def test_from_conn_string_async(server: CosmosTestServer) -> None:
    """The async twin is an async context manager."""
    kwargs = {"connection_verify": str(server.ca_file), **FAST_RETRIES}
    async with AsyncCosmosDBSaver.from_conn_string(
        conn_string(server), database_name=DATABASE, container_name=new_container(), **kwargs
    ) as saver:
        assert await saver.aget_tuple(generate_config("none")) is None
    with pytest.raises(CosmosSaverClosedError):
        await saver.aget_tuple(generate_config("none"))


@pytest.mark.parametrize(
    ("conn", "part"),
    [
        ("AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=;", "AccountEndpoint"),
        ("AccountEndpoint=https://acct.documents.azure.com:443/;", "AccountKey"),
        (
            "AccountEndpoint=acct.documents.azure.com;AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM=",
            "https",
        ),
        ("c2VjcmV0LWtleS1mb3ItdGVzdHM", "Name=Value"),
        ("c2VjcmV0LWtleS1mb3ItdGVzdHM=", "AccountEndpoint"),
    ],
)
def test_malformed_connection_strings_name_the_part_never_the_key(conn: str, part: str) -> None:
    """A malformed connection string raises CosmosConfigurationError (a ValueError) naming what
    is wrong, and the message never contains the key."""
    with (
        pytest.raises(CosmosConfigurationError) as info,
        CosmosDBSaver.from_conn_string(conn, database_name="db", container_name="c"),
    ):
        pass
    assert part in str(info.value)
    assert "c2VjcmV0LWtleS1mb3ItdGVzdHM=" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_wrong_types_are_type_errors() -> None:
    """Wrong argument types raise TypeError naming the argument; wrong values ValueError."""
    with pytest.raises(TypeError, match="database_name"):
        CosmosDBSaver(123, "c", endpoint="https://x/", credential="k")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keep_checkpoints"):
        CosmosDBSaver("d", "c", endpoint="https://x/", credential="k", keep_checkpoints="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep_checkpoints"):
        CosmosDBSaver("d", "c", endpoint="https://x/", credential="k", keep_checkpoints=0)
    with pytest.raises(ValueError, match="compression"):
        CosmosDBSaver("d", "c", endpoint="https://x/", credential="k", compression="lz4")
    with (
        pytest.raises(TypeError, match="conn_str"),
        CosmosDBSaver.from_conn_string(
            None,  # type: ignore[arg-type]
            database_name="d",
            container_name="c",
        ),
    ):
        pass


def test_closed_saver_raises_a_saver_error(server: CosmosTestServer) -> None:
    """A saver used after close() raises CosmosSaverClosedError (a CosmosSaverError), not the
    SDK's RuntimeError."""
    saver = CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server))
    saver.setup()
    saver.close()
    with pytest.raises(CosmosSaverClosedError, match="closed"):
        saver.get_tuple(generate_config("t"))
    with pytest.raises(CosmosSaverClosedError):
        list(saver.list(None))


def test_user_no_response_on_write_does_not_break_the_saver(server: CosmosTestServer) -> None:
    """no_response_on_write=True given by the user (the service then returns no bodies for
    writes) leaves the saver working: a graph runs and its state reads back."""
    kwargs = saver_kwargs(server, no_response_on_write=True)
    with CosmosDBSaver(DATABASE, new_container(), **kwargs) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("reply", lambda s: {"messages": [AIMessage(content="ok")]})
        builder.add_edge(START, "reply")
        builder.add_edge("reply", END)
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "minimal"}}
        for turn in range(3):
            graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config)
        assert len(graph.get_state(config).values["messages"]) == 6


def test_writes_ask_for_minimal_responses(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """Writes ask the service not to echo the stored document: the bytes received for a put of
    a 200 KB value are a small fraction of the bytes sent."""
    value = [os.urandom(100_000).hex()]
    server.reset_stats()
    sync_saver.put(
        generate_config("minimal-bytes"),
        generate_checkpoint(channel_values={"a": value}, channel_versions={"a": "1"}),
        generate_metadata(),
        {"a": "1"},
    )
    stats = server.stats()
    assert stats["bytes_in"] > 100_000  # the value, compressed
    assert stats["bytes_out"] < stats["bytes_in"] / 10


# --------------------------------------------------------------------------------------------
# Lists, keep-N, time-to-live
# --------------------------------------------------------------------------------------------


def test_list_none_streams_page_by_page(
    server: CosmosTestServer, sync_saver: CosmosDBSaver
) -> None:
    """list(None) reads a page at a time: taking its first checkpoint out of 80 costs one
    checkpoint query (and the writes of that page's threads), not a load of the container;
    reading it to the end returns all 80, newest first."""
    for thread in range(8):
        parent = generate_config(f"stream-{thread}")
        for i in range(10):
            parent = sync_saver.put(
                parent,
                generate_checkpoint(channel_values={"a": [i]}, channel_versions={"a": str(i + 1)}),
                generate_metadata(step=i),
                {"a": str(i + 1)},
            )
    server.reset_stats()
    items = sync_saver.list(None)
    next(items)
    first = server.stats()
    assert first.get("query", 0) <= 1 + 8
    everything = [next(items), *items]
    ids = [t.checkpoint["id"] for t in everything]
    assert len(ids) == 79 and ids == sorted(ids, reverse=True)


def test_keep_checkpoints_keeps_storage_flat(server: CosmosTestServer) -> None:
    """keep_checkpoints=6 on a chat graph: the thread lists exactly its newest 6 checkpoints
    after every turn, and its stored bytes stop growing after warm-up (turn 10 to turn 40
    within 25 %, where an unbounded thread grows several-fold)."""
    sizes: dict[str, list[int]] = {}
    for keep in (6, None):
        with CosmosDBSaver(
            DATABASE, new_container(), keep_checkpoints=keep, **saver_kwargs(server)
        ) as saver:
            builder = StateGraph(MessagesState)

            def reply(state: MessagesState) -> dict[str, Any]:
                return {"messages": [AIMessage(content="an answer " * 20)]}

            builder.add_node("reply", reply)
            builder.add_edge(START, "reply")
            builder.add_edge("reply", END)
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "flat"}}
            series = []
            for turn in range(40):
                graph.invoke({"messages": [HumanMessage(content=f"q{turn} " * 20)]}, config)
                if keep:
                    assert len(list(saver.list(config))) == min(keep, 3 * (turn + 1))
                docs = saver.thread_documents("flat")
                series.append(sum(len(json.dumps(d)) for d in docs))
            sizes[str(keep)] = series
            assert len(graph.get_state(config).values["messages"]) == 80
    bounded, unbounded = sizes["6"], sizes["None"]
    # Messages keep growing (no reducer), so bounded storage grows with the one kept list
    # only; unbounded storage grows with every checkpoint.
    assert bounded[-1] < 4 * bounded[9]
    assert unbounded[-1] > 3 * bounded[-1]


def test_ttl_refresh_on_the_server(server: CosmosTestServer) -> None:
    """With ttl=6 s on the real clock (the test server expires items as the service does), a
    thread put every second keeps a value it wrote once, past the ttl: the saver writes it again
    before it can expire. Left alone past the ttl, the thread expires as a whole."""
    with CosmosDBSaver(DATABASE, new_container(), ttl=6, **saver_kwargs(server)) as saver:
        big = [os.urandom(200_000).hex()]
        parent = saver.put(
            generate_config("live"),
            generate_checkpoint(
                channel_values={"a": [0], "big": big}, channel_versions={"a": "1", "big": "1"}
            ),
            generate_metadata(),
            {"a": "1", "big": "1"},
        )
        started = time.monotonic()
        i = 0
        while time.monotonic() - started < 9:
            time.sleep(1)
            i += 1
            parent = saver.put(
                parent,
                generate_checkpoint(
                    channel_values={"a": [i], "big": big},
                    channel_versions={"a": str(i + 1), "big": "1"},
                ),
                generate_metadata(),
                {"a": str(i + 1)},
            )
            latest = saver.get_tuple(generate_config("live"))
            assert latest is not None and latest.checkpoint["channel_values"]["big"] == big
        server.advance_clock(7)
        assert saver.get_tuple(generate_config("live")) is None
        assert list(saver.list(generate_config("live"))) == []

"""Faults: the server going away mid-run, throttling, and partly written puts."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from agentstate_cosmosdb import (
    AsyncCosmosDBSaver,
    CosmosContainerNotFoundError,
    CosmosDBSaver,
    CosmosMissingDocumentError,
    CosmosSaverError,
    CosmosThrottledError,
    CosmosUnavailableError,
)
from agentstate_cosmosdb.schema import blob_id, checkpoint_doc_id, head_id, partition_key
from azure.core.exceptions import AzureError
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.graph import END, START, MessagesState, StateGraph

from .conftest import DATABASE, CosmosTestServer, new_container, raw_container, saver_kwargs

pytestmark = pytest.mark.cosmos

OUTAGE_MS = 1500


def two_step_graph(saver: Any, server: CosmosTestServer, outages: list[int]) -> Any:
    """START -> first -> second -> END; ``second`` takes the server down while ``outages``
    holds entries (one per outage).

    The tests run it with ``durability="sync"``, so the checkpoint after ``first`` is stored
    before ``second`` runs and the outage hits the put that follows ``second``.
    """

    def first(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="first")]}

    def second(state: MessagesState) -> dict[str, Any]:
        if outages:
            outages.pop()
            server.outage(OUTAGE_MS)
            time.sleep(0.2)  # let the listener close before the put that follows
        return {"messages": [AIMessage(content="second")]}

    builder = StateGraph(MessagesState)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


def _assert_all_complete(saver: CosmosDBSaver, config: dict[str, Any]) -> None:
    for tup in saver.list(config):
        again = saver.get_tuple(tup.config)
        assert again is not None, "a listed checkpoint cannot be read back"
        assert again.checkpoint["channel_values"] == tup.checkpoint["channel_values"]


def test_outage_mid_run_then_resume(server: CosmosTestServer) -> None:
    """The server going away mid-run raises our CosmosUnavailableError (wrapping the SDK's)
    within seconds; nothing half-written is visible; the run resumes once it is back."""
    config = {"configurable": {"thread_id": "outage-sync"}}
    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        graph = two_step_graph(saver, server, outages=[1])
        started = time.monotonic()
        with pytest.raises(CosmosUnavailableError) as info:
            graph.invoke({"messages": [HumanMessage(content="go")]}, config, durability="sync")
        assert time.monotonic() - started < 15
        assert isinstance(info.value.__cause__, AzureError)
        assert "could not be reached" in str(info.value)

        server.wait_until_up()
        _assert_all_complete(saver, config)
        before = [m.content for m in graph.get_state(config).values["messages"]]
        assert before == ["go", "first"]

        graph.invoke(None, config)
        after = [m.content for m in graph.get_state(config).values["messages"]]
        assert after == ["go", "first", "second"]
        _assert_all_complete(saver, config)


async def test_outage_mid_run_then_resume_async(server: CosmosTestServer) -> None:
    """The same with AsyncCosmosDBSaver."""
    config = {"configurable": {"thread_id": "outage-async"}}
    async with AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        graph = two_step_graph(saver, server, outages=[1])
        started = time.monotonic()
        with pytest.raises(CosmosUnavailableError) as info:
            await graph.ainvoke(
                {"messages": [HumanMessage(content="go")]}, config, durability="sync"
            )
        assert time.monotonic() - started < 15
        assert isinstance(info.value.__cause__, AzureError)

        server.wait_until_up()
        before = await graph.aget_state(config)
        assert [m.content for m in before.values["messages"]] == ["go", "first"]
        await graph.ainvoke(None, config)
        state = await graph.aget_state(config)
        assert [m.content for m in state.values["messages"]] == ["go", "first", "second"]
        async for tup in saver.alist(config):
            assert await saver.aget_tuple(tup.config) is not None


class _OutageAtStep(CosmosDBSaver):
    """A saver that takes the server down just before the put of one step (``at``)."""

    at: int | None = None
    server: CosmosTestServer

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata.get("step") == self.at:
            self.at = None
            self.server.outage(OUTAGE_MS)
            time.sleep(0.2)  # let the listener close before the put
        return super().put(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("failed", ["input", "after a parallel step"])
def test_the_readme_retry_after_an_outage_runs_each_node_once_and_stores_the_input_once(
    server: CosmosTestServer, failed: str
) -> None:
    """The README's recipe after CosmosUnavailableError: ``invoke(None, config)`` first, then
    the input again only if the state does not hold it. When the failed put followed a
    parallel step whose writes were stored, ``.next`` is empty although the input was
    stored: the recipe finishes the run (the last node once, the branches not again), and
    sending the input again, as ``.next`` suggested, would have stored it twice."""
    runs: dict[str, int] = {}

    def node(name: str) -> Any:
        def run(state: MessagesState) -> dict[str, Any]:
            runs[name] = runs.get(name, 0) + 1
            return {"messages": [AIMessage(content=name)]}

        return run

    builder = StateGraph(MessagesState)
    for name in ("left", "right", "join"):
        builder.add_node(name, node(name))
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    config = {"configurable": {"thread_id": f"recipe-{failed}"}}
    with _OutageAtStep(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        saver.server = server
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage(content="a", id="q-a")]}, config)
        step = graph.get_state(config).metadata["step"]
        # The next run puts its input at step + 1, the branches' step at step + 2, and the
        # checkpoint after them (the one that fails here) at step + 3.
        saver.at = step + 1 if failed == "input" else step + 3
        runs.clear()
        question = HumanMessage(content="b", id="q-b")
        with pytest.raises(CosmosUnavailableError):
            graph.invoke({"messages": [question]}, config, durability="sync")
        server.wait_until_up()
        if failed != "input":
            assert graph.get_state(config).next == ()  # what misled the old recipe
        graph.invoke(None, config)  # the recipe: continue what was stored first
        if not any(m.id == "q-b" for m in graph.get_state(config).values["messages"]):
            graph.invoke({"messages": [question]}, config, durability="sync")
        contents = [m.content for m in graph.get_state(config).values["messages"]]
        assert contents.count("b") == 1, contents
        assert contents[-1] == "join" and contents.count("join") == 2, contents
        assert runs == {"left": 1, "right": 1, "join": 1}  # each node once, over both tries
        _assert_all_complete(saver, config)


def test_unreachable_endpoint_fails_fast(server: CosmosTestServer) -> None:
    """Nothing listening: setup raises CosmosUnavailableError, not an SDK error, quickly."""
    kwargs = saver_kwargs(server, endpoint="https://127.0.0.1:9/")
    started = time.monotonic()
    with pytest.raises(CosmosUnavailableError), CosmosDBSaver(DATABASE, "x", **kwargs) as saver:
        saver.setup()
    assert time.monotonic() - started < 15


def test_throttling_is_retried_within_bounds(sync_saver: CosmosDBSaver, server: Any) -> None:
    """A few 429s are absorbed by the SDK's retries (honouring retry-after) in well under a
    second each; a persistent 429 surfaces as CosmosThrottledError in bounded time."""
    config = generate_config("throttled")
    checkpoint = generate_checkpoint(channel_values={"ch": [1, 2]}, channel_versions={"ch": "1"})
    server.reset_stats()
    server.throttle(2, retry_after_ms=50)
    started = time.monotonic()
    stored = sync_saver.put(config, checkpoint, generate_metadata(), {"ch": "1"})
    assert time.monotonic() - started < 5
    assert server.stats().get("throttled") == 2
    assert sync_saver.get_tuple(stored) is not None

    server.throttle(10_000, retry_after_ms=50)
    started = time.monotonic()
    with pytest.raises(CosmosThrottledError) as info:
        sync_saver.get_tuple(config)
    assert time.monotonic() - started < 10
    assert info.value.status_code == 429
    server.throttle(0)
    assert sync_saver.get_tuple(config) is not None


def test_missing_value_document_is_an_error_not_a_smaller_checkpoint(
    server: CosmosTestServer,
) -> None:
    """A stored value's document deleted behind the saver's back (what a crash could never
    leave, since values are written before what references them) makes every read of the
    checkpoints that need it raise CosmosMissingDocumentError naming the document, instead
    of returning the checkpoint without that channel; the checkpoints that do not need it
    still read whole."""
    container = new_container()
    thread = "partial"
    pk = partition_key(thread)
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        first = saver.put(
            generate_config(thread),
            generate_checkpoint(channel_values={"ch": ["a"]}, channel_versions={"ch": "1"}),
            generate_metadata(step=0),
            {"ch": "1"},
        )
        # Incompressible and big enough to get a blob document of its own.
        big = [os.urandom(300_000).hex()]
        cp2 = generate_checkpoint(channel_values={"ch": big}, channel_versions={"ch": "2"})
        second = saver.put(first, cp2, generate_metadata(step=1), {"ch": "2"})
        items = raw_container(server, container)
        gone = blob_id("", "ch", "2")
        items.delete_item(gone, partition_key=pk)

    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as fresh:
        for read in (
            lambda: fresh.get_tuple(second),
            lambda: fresh.get_tuple(generate_config(thread)),
        ):
            with pytest.raises(CosmosMissingDocumentError) as info:
                read()
            assert info.value.document_id == gone and gone in str(info.value)
            assert "To recover" in str(info.value) and "delete_thread" in str(info.value)
        with pytest.raises(CosmosMissingDocumentError):
            list(fresh.list(generate_config(thread)))
        old = fresh.get_tuple(first)
        assert old is not None and old.checkpoint["channel_values"] == {"ch": ["a"]}
        assert items.read_item(checkpoint_doc_id("", cp2["id"]), partition_key=pk)
        assert items.read_item(head_id(""), partition_key=pk)["checkpoint_id"] == cp2["id"]


def test_errors_are_ours(sync_saver: CosmosDBSaver) -> None:
    """Every failure surfaces as a CosmosSaverError subclass (here: a bad prune strategy is a
    ValueError, raised before any request)."""
    with pytest.raises(ValueError, match="keep_latest"):
        sync_saver.prune(["x"], strategy="everything")
    assert issubclass(CosmosUnavailableError, CosmosSaverError)


def test_a_stale_head_is_read_again_and_the_batch_retried(server: CosmosTestServer) -> None:
    """A saver whose idea of the head is stale (another process moved it) has its atomic batch
    refused, writes nothing from it, reads the head again and stores the checkpoint with one
    more batch: the head ends at the newest checkpoint and every checkpoint is listed once."""
    container = new_container()
    thread = "stale"
    ids = [str(uuid6(clock_seq=i)) for i in range(4)]
    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as first,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as second,
    ):

        def put(saver: CosmosDBSaver, i: int, parent: Any) -> Any:
            checkpoint = generate_checkpoint(
                checkpoint_id=ids[i], channel_values={"ch": [i]}, channel_versions={"ch": str(i)}
            )
            return saver.put(parent, checkpoint, generate_metadata(step=i), {"ch": str(i)})

        c0 = put(first, 0, generate_config(thread))
        first.get_tuple(generate_config(thread))  # first caches the head at c0
        c1 = put(second, 1, c0)  # second moves it
        server.reset_stats()
        c2 = put(first, 2, c1)  # stale etag: batch refused, the head read, a second batch
        assert server.stats().get("batch") == 2
        latest = second.get_tuple(generate_config(thread))
        assert latest is not None and latest.config == c2
        assert latest.checkpoint["channel_values"] == {"ch": [2]}
        c3 = put(second, 3, c2)
        listed = [t.config for t in first.list(generate_config(thread))]
        assert listed == [c3, c2, c1, c0]


async def test_throttling_is_retried_within_bounds_async(
    async_saver: AsyncCosmosDBSaver, server: CosmosTestServer
) -> None:
    """The async saver absorbs a few 429s and reports a persistent one as CosmosThrottledError."""
    config = generate_config("throttled-async")
    checkpoint = generate_checkpoint(channel_values={"ch": [1]}, channel_versions={"ch": "1"})
    server.reset_stats()
    server.throttle(2, retry_after_ms=50)
    started = time.monotonic()
    stored = await async_saver.aput(config, checkpoint, generate_metadata(), {"ch": "1"})
    assert time.monotonic() - started < 5
    assert server.stats().get("throttled") == 2
    server.throttle(10_000, retry_after_ms=50)
    started = time.monotonic()
    with pytest.raises(CosmosThrottledError):
        await async_saver.aget_tuple(stored)
    assert time.monotonic() - started < 10
    server.throttle(0)
    assert await async_saver.aget_tuple(stored) is not None


def test_a_503_after_the_sdk_retries_is_unavailable(server: CosmosTestServer) -> None:
    """A service answering 503 ServiceUnavailable (a transient outage) surfaces as
    CosmosUnavailableError, the class a caller retries on, not as a generic error."""
    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        server.fail(after=0)
        try:
            with pytest.raises(CosmosUnavailableError, match="HTTP 503") as info:
                saver.put(generate_config("t503"), generate_checkpoint(), {}, {})
        finally:
            server.heal()
        assert info.value.status_code == 503
        stored = saver.put(generate_config("t503"), generate_checkpoint(), {}, {})
        assert saver.get_tuple(stored) is not None


def test_a_container_deleted_under_a_running_saver_is_named_and_set_up_again(
    server: CosmosTestServer,
) -> None:
    """The container vanishing under a saver gives CosmosContainerNotFoundError naming it,
    and the saver's next call sets it up again instead of failing from then on."""
    container = new_container()
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        first = saver.put(generate_config("gone"), generate_checkpoint(), {}, {})
        assert saver.get_tuple(first) is not None
        _delete_container(server, container)
        with pytest.raises(CosmosContainerNotFoundError, match=f"{container} no longer exists"):
            saver.put(generate_config("gone"), generate_checkpoint(), {}, {})
        again = saver.put(generate_config("gone"), generate_checkpoint(), {}, {})
        assert saver.get_tuple(again) is not None


async def test_a_container_deleted_under_a_running_async_saver_is_set_up_again(
    server: CosmosTestServer,
) -> None:
    """Async twin: named error, then the next call recreates the container."""
    container = new_container()
    async with AsyncCosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        await saver.aput(generate_config("gone"), generate_checkpoint(), {}, {})
        _delete_container(server, container)
        with pytest.raises(CosmosContainerNotFoundError):
            await saver.aput(generate_config("gone"), generate_checkpoint(), {}, {})
        again = await saver.aput(generate_config("gone"), generate_checkpoint(), {}, {})
        assert await saver.aget_tuple(again) is not None


def test_a_client_of_the_wrong_kind_is_refused_when_the_saver_is_built(
    server: CosmosTestServer,
) -> None:
    """client= must be the driver's own SDK client: a sync client for CosmosDBSaver, an
    azure.cosmos.aio client for AsyncCosmosDBSaver; anything else is a TypeError at once."""
    with pytest.raises(TypeError, match=r"client must be an azure\.cosmos.*got builtins\.str"):
        CosmosDBSaver(DATABASE, new_container(), client="not a client")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="goes to CosmosDBSaver"):
        AsyncCosmosDBSaver(DATABASE, new_container(), client=_sync_client(server))


def _sync_client(server: CosmosTestServer) -> Any:
    from agentstate_cosmosdb.settings import tls_hook
    from azure.cosmos import CosmosClient

    return CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )


def _delete_container(server: CosmosTestServer, container: str) -> None:
    _sync_client(server).get_database_client(DATABASE).delete_container(container)


def test_an_async_saver_used_after_its_event_loop_closed_says_so(
    server: CosmosTestServer,
) -> None:
    """An AsyncCosmosDBSaver belongs to the loop it first ran on: used from a second
    ``asyncio.run`` it raises CosmosSaverClosedError saying why, not an SDK error about a
    closed loop."""
    import asyncio

    from agentstate_cosmosdb import CosmosSaverClosedError

    saver = AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server))

    async def first() -> Any:
        stored = await saver.aput(generate_config("loop"), generate_checkpoint(), {}, {})
        await saver._client.close()  # its connections, not the saver: a user would forget this
        return stored

    stored = asyncio.run(first())
    with pytest.raises(CosmosSaverClosedError, match="event loop that has been closed"):
        asyncio.run(saver.aget_tuple(stored))
    with pytest.raises(CosmosSaverClosedError, match="event loop that has been closed"):
        saver.get_tuple(stored)  # the sync methods too

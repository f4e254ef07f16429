"""AsyncCosmosDBSaver: the async driver (``azure.cosmos.aio``, aiohttp). SDK calls only.

Its twin is :mod:`agentstate_cosmosdb.saver`: the same methods, line for line, with ``await``.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from azure.core import MatchConditions
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base import CheckpointTuple as Tuple
from typing_extensions import override

from agentstate_cosmosdb import ops as o
from agentstate_cosmosdb._base import CLOSE_WAIT_SECONDS, BaseCosmosDBSaver
from agentstate_cosmosdb.errors import CosmosSaverClosedError
from agentstate_cosmosdb.ops import QUERY_PAGE_ITEMS, Ops, Result
from agentstate_cosmosdb.settings import client_options, parse_connection_string

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer  # noqa: F401

__all__ = ["AsyncCosmosDBSaver"]

_LOOP_CLOSED = (
    "this AsyncCosmosDBSaver belongs to an event loop that has been closed (a finished "
    "asyncio.run()); build a new saver inside the running loop, e.g. "
    "`async with AsyncCosmosDBSaver.from_conn_string(...) as saver:`"
)


class AsyncCosmosDBSaver(BaseCosmosDBSaver):
    """Store LangGraph checkpoints in Azure Cosmos DB with ``azure.cosmos.aio``, natively async.

    Same storage, arguments and behaviour as :class:`~agentstate_cosmosdb.CosmosDBSaver`
    (without ``max_workers``: independent requests of one operation are awaited together).
    Give it an ``azure.identity.aio`` credential or an ``azure.cosmos.aio.CosmosClient``. It
    belongs to the event loop it first runs on; its sync methods may be called only from
    another thread, as with ``AsyncPostgresSaver``.

    Raises:
        TypeError: An argument has the wrong type.
        CosmosConfigurationError: An argument has a wrong value, or no endpoint / credential.
    """

    def __init__(self, database_name: str, container_name: str, **kwargs: Any) -> None:
        super().__init__(database_name, container_name, **kwargs)
        self._check_client(CosmosClient, " (a sync azure.cosmos client goes to CosmosDBSaver)")
        self._setup_lock: asyncio.Lock | None = None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    # -- construction ----------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_str: str, *, database_name: str, container_name: str, **kwargs: Any
    ) -> AsyncIterator[AsyncCosmosDBSaver]:
        """The async twin of ``CosmosDBSaver.from_conn_string``::

            async with AsyncCosmosDBSaver.from_conn_string(
                conn, database_name="db", container_name="checkpoints"
            ) as saver:
                graph = builder.compile(checkpointer=saver)

        Raises:
            CosmosConfigurationError: A malformed connection string (named part; no key shown).
            CosmosSaverError: Setup failed (service unreachable or refusing).
        """
        endpoint, key = parse_connection_string(conn_str)
        async with cls.from_endpoint(endpoint, key, database_name, container_name, **kwargs) as s:
            yield s

    @classmethod
    @asynccontextmanager
    async def from_endpoint(
        cls, endpoint: str, credential: Any, database_name: str, container_name: str, **kwargs: Any
    ) -> AsyncIterator[AsyncCosmosDBSaver]:
        """Build a saver, set it up, and close it on exit (async).

        Raises:
            CosmosSaverError: The service could not be reached or refused the setup.
        """
        saver = cls(
            database_name, container_name, endpoint=endpoint, credential=credential, **kwargs
        )
        try:
            await saver.setup()
            yield saver
        finally:
            await saver.aclose()

    async def setup(self) -> None:
        """Async twin of ``CosmosDBSaver.setup``.

        Raises:
            CosmosContainerNotFoundError: No database or container, and none could be created.
            CosmosConfigurationError: The container's partition key is not ``/pk``, or its
                time-to-live is off under ``ttl=`` and the saver may not turn it on.
            CosmosSaverClosedError: ``aclose()`` was called.
            CosmosSaverError: Any other refusal or an unreachable service.
        """
        await self._get_container()

    async def aclose(self) -> None:
        """Close the client if the saver created it; later calls raise CosmosSaverClosedError.

        Requests in flight finish first (up to a minute); a run still using the saver stops
        at its next storage operation with CosmosSaverClosedError, what it stored intact.
        """
        self._begin_close()
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        while self._inflight and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        client = self._release_client()
        if client is not None:
            await client.close()

    async def __aenter__(self) -> AsyncCosmosDBSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _get_container(self) -> Any:
        self._check_open()
        if self.loop is not None and self.loop.is_closed():
            # Its client's connections belong to that loop: they cannot serve another one.
            raise CosmosSaverClosedError(_LOOP_CLOSED)
        if self._container is not None:
            return self._container
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        if self._setup_lock is None:
            self._setup_lock = asyncio.Lock()
        async with self._setup_lock:
            self._check_open()
            if self._container is None:
                s = self._settings
                if self._client is None:
                    options = client_options(s, self._client_kwargs, asynchronous=True)
                    try:
                        self._client = CosmosClient(str(s.endpoint), s.credential, **options)
                    except Exception as exc:
                        raise self._client_failed(exc) from exc
                database = self._client.get_database_client(s.database_name)
                where = (database, database.get_container_client(s.container_name))
                await self._run(self._connect_ops(), "open the checkpoint container", where)
                self._container = where[1]
            return self._container

    # -- the I/O driver ----------------------------------------------------------------------

    async def _run(self, ops: Ops[Any], action: str, where: Any = None) -> Any:
        where = where or (None, await self._get_container())
        try:
            step = next(ops)
            while True:
                if isinstance(step, o.Emit):
                    raise TypeError("streaming operations go through _stream")
                step = ops.send(await self._execute(where, step, action))
        except StopIteration as stop:
            return stop.value

    async def _stream(self, ops: Ops[None], action: str) -> AsyncIterator[Tuple]:
        where = (None, await self._get_container())
        result: Result = None
        while True:
            try:
                step = ops.send(result)
            except StopIteration:
                return
            if isinstance(step, o.Emit):
                result = None
                yield step.value
            else:
                result = await self._execute(where, step, action)

    async def _execute(self, where: Any, step: o.Op | Sequence[o.Op], action: str) -> Result:
        self._enter()
        try:
            return await self._send(where, step, action)
        finally:
            self._leave()

    async def _send(self, where: Any, step: o.Op | Sequence[o.Op], action: str) -> Result:
        if not isinstance(step, (list, tuple)):
            return await self._one(where, step, action)  # type: ignore[arg-type]
        if len(step) < 2:
            return [await self._one(where, op, action) for op in step]
        # Every request of the step is in flight at once on the event loop.
        return list(await asyncio.gather(*(self._one(where, op, action) for op in step)))

    async def _one(self, where: Any, op: o.Op, action: str) -> Result:
        try:
            return await self._call(where, op)
        except Exception as exc:
            return self._refused(op, exc, action)

    async def _call(self, where: Any, op: o.Op) -> Result:
        """The SDK call for ``op`` and its result; refusals are the caller's to map."""
        database, container = where
        if isinstance(op, o.Read):
            return dict(await container.read_item(op.id, partition_key=op.pk))
        if isinstance(op, o.Upsert):
            return _etag(await container.upsert_item(op.doc, no_response=True))
        if isinstance(op, o.Create):
            return _etag(await container.create_item(op.doc, no_response=True))
        if isinstance(op, o.Replace):
            match = MatchConditions.IfNotModified
            return _etag(
                await container.replace_item(
                    op.doc["id"], op.doc, etag=op.etag, match_condition=match, no_response=True
                )
            )
        if isinstance(op, o.Delete):
            await container.delete_item(op.id, partition_key=op.pk)
            return True
        if isinstance(op, o.Query):
            params = [{"name": n, "value": v} for n, v in op.parameters]
            if op.pk is None:
                items = container.query_items(
                    op.sql, parameters=params, max_item_count=QUERY_PAGE_ITEMS
                )
            else:
                items = container.query_items(
                    op.sql,
                    parameters=params,
                    partition_key=op.pk,
                    max_item_count=QUERY_PAGE_ITEMS,
                )
            return [dict(item) async for item in items]
        if isinstance(op, o.Batch):
            operations = o.batch_operations(op.ops)
            return o.batch_etags(
                await container.execute_item_batch(batch_operations=operations, partition_key=op.pk)
            )
        if isinstance(op, o.Sleep):
            await asyncio.sleep(op.seconds)
            return None
        if isinstance(op, o.Clock):
            return time.time()
        if isinstance(op, o.ReadContainer):
            return dict(await container.read())
        if isinstance(op, o.CreateDatabase):
            await self._client.create_database_if_not_exists(self._settings.database_name)
            return o.Outcome.CREATED
        if isinstance(op, (o.CreateContainer, o.ReplaceContainer)):
            create = isinstance(op, o.CreateContainer)
            call = database.create_container_if_not_exists if create else database.replace_container
            await call(
                self._settings.container_name,
                partition_key=PartitionKey(path=op.partition_key_path),
                default_ttl=op.default_ttl,
                indexing_policy=op.indexing_policy,
            )
            return o.Outcome.CREATED
        raise TypeError(f"unknown storage operation {op!r}")

    # -- BaseCheckpointSaver (async) -------------------------------------------------------

    @override
    async def aget_tuple(self, config: RunnableConfig) -> Tuple | None:
        """Fetch a checkpoint (see ``CosmosDBSaver.get_tuple``).

        Raises:
            CosmosMissingDocumentError: A document the checkpoint needs is missing.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        result: Tuple | None = await self._run(self._get_tuple_ops(config), "read a checkpoint")
        return result

    @override
    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[Tuple]:
        """List checkpoints newest first, a page at a time (see ``CosmosDBSaver.list``).

        Raises:
            CosmosMissingDocumentError: A document a listed checkpoint needs is missing.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        ops = self._list_ops(config, filter=filter, before=before, limit=limit)
        async for item in self._stream(ops, "list checkpoints"):
            yield item

    @override
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint, reduced first when a reducer is set (async hooks awaited).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
            CosmosThreadDeletedError: The thread was deleted (``delete_thread``) while this
                run was using it; nothing was stored.
            NotImplementedError: The graph has a DeltaChannel; nothing was stored.
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook of the
                reducer failed; nothing was written.
            SummaryError: With ``on_prune_error="raise"``, the reducer's ``summarize_fn``
                failed; nothing was written.
        """
        self._check_storable(config, checkpoint, metadata)
        if self.message_reduction is not None:
            new_versions = dict(new_versions)
            checkpoint = await self.message_reduction.aapply(
                config, checkpoint, new_versions, metadata=metadata
            )
        ops = self._put_ops(config, checkpoint, metadata, new_versions)
        result: RunnableConfig = await self._run(ops, "store a checkpoint")
        return result

    @override
    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store one task's pending writes for a checkpoint (async).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._check_writable(config)
        ops = self._put_writes_ops(config, writes, task_id, task_path)
        await self._run(ops, "store pending writes")

    async def athread_documents(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        """Every stored document of a thread, as stored (async; for inspection).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        docs: builtins.list[dict[str, Any]] = await self._run(
            self._thread_documents_ops(thread_id), "read a thread's documents"
        )
        return docs

    @override
    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a thread (async; see ``CosmosDBSaver.delete_thread``).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._delete_thread_ops(thread_id), "delete a thread")

    @override
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread (async; see ``CosmosDBSaver.copy_thread``).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        ops = self._copy_thread_ops(source_thread_id, target_thread_id)
        await self._run(ops, "copy a thread")

    @override
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints of runs (async; see ``CosmosDBSaver.delete_for_runs``).

        Raises:
            TypeError: ``run_ids`` is one str.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._delete_for_runs_ops(run_ids), "delete checkpoints of runs")

    @override
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads (async; see ``CosmosDBSaver.prune``).

        Raises:
            ValueError: Unknown strategy.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._prune_ops(thread_ids, strategy), "prune threads")

    # -- sync methods: only from another thread than the saver's loop ------------------------

    def _loop_for_sync_call(self) -> asyncio.AbstractEventLoop:
        loop = self.loop
        if loop is not None and loop.is_closed():
            raise CosmosSaverClosedError(_LOOP_CLOSED)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or (running is not None and running is loop):
            raise asyncio.InvalidStateError(
                "Synchronous calls to AsyncCosmosDBSaver are only allowed from a different "
                "thread than its event loop, once the saver has been used there. From the event "
                "loop, use the async interface (await saver.aget_tuple(...), graph.ainvoke(...)); "
                "for sync code, use CosmosDBSaver."
            )
        return loop

    def _block(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        loop = self._loop_for_sync_call()  # before the coroutine exists: none left unawaited
        return asyncio.run_coroutine_threadsafe(make(), loop).result()

    @override
    def get_tuple(self, config: RunnableConfig) -> Tuple | None:
        """Blocking :meth:`aget_tuple`, for calls from a thread other than the saver's loop."""
        result: Tuple | None = self._block(lambda: self.aget_tuple(config))
        return result

    @override
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[Tuple]:
        """Blocking :meth:`alist`, for calls from a thread other than the saver's loop."""
        items = self.alist(config, filter=filter, before=before, limit=limit)

        async def next_item() -> Tuple:
            return await items.__anext__()

        while True:
            try:
                yield self._block(next_item)
            except StopAsyncIteration:
                return

    @override
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Blocking :meth:`aput`, for calls from a thread other than the saver's loop."""
        result: RunnableConfig = self._block(
            lambda: self.aput(config, checkpoint, metadata, new_versions)
        )
        return result

    @override
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Blocking :meth:`aput_writes`, for calls from a thread other than the saver's loop."""
        self._block(lambda: self.aput_writes(config, writes, task_id, task_path))

    @override
    def delete_thread(self, thread_id: str) -> None:
        """Blocking :meth:`adelete_thread`, for calls from another thread."""
        self._block(lambda: self.adelete_thread(thread_id))

    @override
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Blocking :meth:`acopy_thread`, for calls from another thread."""
        self._block(lambda: self.acopy_thread(source_thread_id, target_thread_id))

    @override
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Blocking :meth:`adelete_for_runs`, for calls from another thread."""
        self._block(lambda: self.adelete_for_runs(run_ids))

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Blocking :meth:`aprune`, for calls from another thread."""
        self._block(lambda: self.aprune(thread_ids, strategy=strategy))


def _etag(response: Any) -> str:
    """The etag of a write, from the response headers (the body is empty: no_response)."""
    headers = response.get_response_headers()
    return str(headers.get("etag") or "")

"""CosmosDBSaver: the sync driver (``azure.cosmos``). SDK calls only; the logic is in _base.

Its twin is :mod:`agentstate_cosmosdb.aio`: the same methods, line for line, with ``await``.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from azure.core import MatchConditions
from azure.cosmos import CosmosClient, PartitionKey
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base import CheckpointTuple as Tuple
from typing_extensions import override

from agentstate_cosmosdb import ops as o
from agentstate_cosmosdb._base import CLOSE_WAIT_SECONDS, BaseCosmosDBSaver
from agentstate_cosmosdb.errors import CosmosConfigurationError
from agentstate_cosmosdb.ops import QUERY_PAGE_ITEMS, Ops, Result
from agentstate_cosmosdb.settings import client_options, parse_connection_string

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer  # noqa: F401

__all__ = ["CosmosDBSaver"]


class CosmosDBSaver(BaseCosmosDBSaver):
    """Store LangGraph checkpoints in an Azure Cosmos DB (NoSQL API) container, sync.

    Takes every argument of :class:`~agentstate_cosmosdb._base.BaseCosmosDBSaver` (database and
    container names, ``endpoint``/``credential`` or ``client``, ``reducer``, ``ttl``,
    ``keep_checkpoints``, ``compression``, ``create_if_missing``, ``connection_verify``,
    ``serde``, SDK client keywords), plus ``max_workers``: how many requests of one operation
    are sent at once (the calling thread plus ``max_workers - 1`` pool threads; ``1`` sends
    them one after another, which is faster when the service runs on the same host).

    The client is created on first use (or by :meth:`setup`), and closed by :meth:`close` when
    the saver created it. Its async methods run the sync ones in worker threads; use
    :class:`~agentstate_cosmosdb.AsyncCosmosDBSaver` for native async.

    Raises:
        TypeError: An argument has the wrong type.
        CosmosConfigurationError: An argument has a wrong value, or no endpoint / credential.
    """

    def __init__(
        self, database_name: str, container_name: str, *, max_workers: int = 8, **kwargs: Any
    ) -> None:
        super().__init__(database_name, container_name, **kwargs)
        self._check_client(CosmosClient, " (an azure.cosmos.aio client goes to AsyncCosmosDBSaver)")
        if not isinstance(max_workers, int) or isinstance(max_workers, bool):
            raise TypeError(f"max_workers must be an int, got {type(max_workers).__name__}")
        if max_workers < 1:
            raise CosmosConfigurationError(f"max_workers must be >= 1, got {max_workers!r}")
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(max_workers=max_workers - 1, thread_name_prefix="cosmos-saver")
            if max_workers > 1
            else None
        )

    # -- construction ----------------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_str: str, *, database_name: str, container_name: str, **kwargs: Any
    ) -> Iterator[CosmosDBSaver]:
        """Build a saver from a portal connection string, set it up, close it on exit::

            with CosmosDBSaver.from_conn_string(conn, database_name="db",
                                                container_name="checkpoints") as saver:
                graph = builder.compile(checkpointer=saver)

        Args:
            conn_str: ``AccountEndpoint=https://...;AccountKey=...;``.
            database_name: Cosmos DB database.
            container_name: Checkpoint container.
            **kwargs: Any other argument of :class:`CosmosDBSaver`.

        Yields:
            The ready saver.

        Raises:
            CosmosConfigurationError: The connection string is malformed (the message names the
                missing part, never the key).
            CosmosSaverError: The service could not be reached or refused the setup.
        """
        endpoint, key = parse_connection_string(conn_str)
        with cls.from_endpoint(endpoint, key, database_name, container_name, **kwargs) as saver:
            yield saver

    @classmethod
    @contextmanager
    def from_endpoint(
        cls, endpoint: str, credential: Any, database_name: str, container_name: str, **kwargs: Any
    ) -> Iterator[CosmosDBSaver]:
        """Build a saver, set it up, and close it on exit (see :meth:`from_conn_string`).

        Raises:
            CosmosSaverError: The service could not be reached or refused the setup.
        """
        saver = cls(
            database_name, container_name, endpoint=endpoint, credential=credential, **kwargs
        )
        try:
            saver.setup()
            yield saver
        finally:
            saver.close()

    def setup(self) -> None:
        """Connect, create what is missing (when allowed), check the container. Idempotent.

        Raises:
            CosmosContainerNotFoundError: The database or container is missing and was not
                created (not allowed, or refused: the message says what to create).
            CosmosConfigurationError: Wrong partition key path, or ``ttl=`` on a container whose
                time-to-live is off and may not be turned on.
            CosmosSaverClosedError: The saver was closed.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._get_container()

    def close(self) -> None:
        """Close the client if the saver created it; later calls raise CosmosSaverClosedError.

        Requests in flight (other threads') finish first (up to a minute); a run still using
        the saver stops at its next storage operation with CosmosSaverClosedError, what it
        stored intact.
        """
        self._begin_close()
        self._wait_idle(CLOSE_WAIT_SECONDS)
        with self._lock:
            client = self._release_client()
        if client is not None:
            # The sync client's close() only exists from azure-cosmos 4.16 (it calls this);
            # leaving its context, which releases the same pipeline, works from 4.0.
            client.__exit__(None, None, None)
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __enter__(self) -> CosmosDBSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_container(self) -> Any:
        self._check_open()
        if self._container is not None:
            return self._container
        with self._lock:
            self._check_open()
            if self._container is None:
                s = self._settings
                if self._client is None:
                    options = client_options(s, self._client_kwargs, asynchronous=False)
                    try:
                        self._client = CosmosClient(str(s.endpoint), s.credential, **options)
                    except Exception as exc:
                        raise self._client_failed(exc) from exc
                database = self._client.get_database_client(s.database_name)
                where = (database, database.get_container_client(s.container_name))
                self._run(self._connect_ops(), "open the checkpoint container", where)
                self._container = where[1]
            return self._container

    # -- the I/O driver ----------------------------------------------------------------------

    def _run(self, ops: Ops[Any], action: str, where: Any = None) -> Any:
        where = where or (None, self._get_container())
        try:
            step = next(ops)
            while True:
                if isinstance(step, o.Emit):
                    raise TypeError("streaming operations go through _stream")
                step = ops.send(self._execute(where, step, action))
        except StopIteration as stop:
            return stop.value

    def _stream(self, ops: Ops[None], action: str) -> Iterator[Tuple]:
        where = (None, self._get_container())
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
                result = self._execute(where, step, action)

    def _execute(self, where: Any, step: o.Op | Sequence[o.Op], action: str) -> Result:
        self._enter()
        try:
            return self._send(where, step, action)
        finally:
            self._leave()

    def _send(self, where: Any, step: o.Op | Sequence[o.Op], action: str) -> Result:
        if not isinstance(step, (list, tuple)):
            return self._one(where, step, action)  # type: ignore[arg-type]
        if self._pool is None or len(step) < 2:
            return [self._one(where, op, action) for op in step]
        # The calling thread sends the first request itself while the pool sends the rest.
        rest = [self._pool.submit(self._one, where, op, action) for op in step[1:]]
        try:
            first = [self._one(where, step[0], action)]
        finally:
            results = [f.result() for f in rest]
        return first + results

    def _one(self, where: Any, op: o.Op, action: str) -> Result:
        try:
            return self._call(where, op)
        except Exception as exc:
            return self._refused(op, exc, action)

    def _call(self, where: Any, op: o.Op) -> Result:
        """The SDK call for ``op`` and its result; refusals are the caller's to map."""
        database, container = where
        if isinstance(op, o.Read):
            return dict(container.read_item(op.id, partition_key=op.pk))
        if isinstance(op, o.Upsert):
            return _etag(container.upsert_item(op.doc, no_response=True))
        if isinstance(op, o.Create):
            return _etag(container.create_item(op.doc, no_response=True))
        if isinstance(op, o.Replace):
            match = MatchConditions.IfNotModified
            return _etag(
                container.replace_item(
                    op.doc["id"], op.doc, etag=op.etag, match_condition=match, no_response=True
                )
            )
        if isinstance(op, o.Delete):
            container.delete_item(op.id, partition_key=op.pk)
            return True
        if isinstance(op, o.Query):
            params = [{"name": n, "value": v} for n, v in op.parameters]
            if op.pk is None:
                items = container.query_items(
                    op.sql,
                    parameters=params,
                    enable_cross_partition_query=True,
                    max_item_count=QUERY_PAGE_ITEMS,
                )
            else:
                items = container.query_items(
                    op.sql,
                    parameters=params,
                    partition_key=op.pk,
                    max_item_count=QUERY_PAGE_ITEMS,
                )
            return [dict(item) for item in items]
        if isinstance(op, o.Batch):
            operations = o.batch_operations(op.ops)
            return o.batch_etags(
                container.execute_item_batch(batch_operations=operations, partition_key=op.pk)
            )
        if isinstance(op, o.Sleep):
            threading.Event().wait(op.seconds)
            return None
        if isinstance(op, o.Clock):
            return time.time()
        if isinstance(op, o.ReadContainer):
            return dict(container.read())
        if isinstance(op, o.CreateDatabase):
            self._client.create_database_if_not_exists(self._settings.database_name)
            return o.Outcome.CREATED
        if isinstance(op, (o.CreateContainer, o.ReplaceContainer)):
            create = isinstance(op, o.CreateContainer)
            call = database.create_container_if_not_exists if create else database.replace_container
            call(
                self._settings.container_name,
                partition_key=PartitionKey(path=op.partition_key_path),
                default_ttl=op.default_ttl,
                indexing_policy=op.indexing_policy,
            )
            return o.Outcome.CREATED
        raise TypeError(f"unknown storage operation {op!r}")

    # -- BaseCheckpointSaver ---------------------------------------------------------------

    @override
    def get_tuple(self, config: RunnableConfig) -> Tuple | None:
        """Fetch a checkpoint: the latest of the thread and namespace, or the one in ``config``.

        Raises:
            CosmosMissingDocumentError: A document the checkpoint needs is missing.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        result: Tuple | None = self._run(self._get_tuple_ops(config), "read a checkpoint")
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
        """List checkpoints newest first, a page at a time.

        Args:
            config: Thread (and optionally namespace and checkpoint id) to list; None lists
                every thread (a cross-partition query).
            filter: Metadata that each returned checkpoint's metadata must contain.
            before: Only checkpoints older than this one.
            limit: At most this many checkpoints.

        Raises:
            CosmosMissingDocumentError: A document a listed checkpoint needs is missing.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        ops = self._list_ops(config, filter=filter, before=before, limit=limit)
        yield from self._stream(ops, "list checkpoints")

    @override
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (reduced first when a reducer is set); see the module docs.

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
            checkpoint = self.message_reduction.apply(
                config, checkpoint, new_versions, metadata=metadata
            )
        ops = self._put_ops(config, checkpoint, metadata, new_versions)
        result: RunnableConfig = self._run(ops, "store a checkpoint")
        return result

    @override
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store one task's pending writes for a checkpoint (a document of its own).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._check_writable(config)
        self._run(self._put_writes_ops(config, writes, task_id, task_path), "store pending writes")

    def thread_documents(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        """Every stored document of a thread, as stored (one query; for inspection).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        docs: builtins.list[dict[str, Any]] = self._run(
            self._thread_documents_ops(thread_id), "read a thread's documents"
        )
        return docs

    @override
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of a thread.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._delete_thread_ops(thread_id), "delete a thread")

    @override
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write of one thread to another.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._copy_thread_ops(source_thread_id, target_thread_id), "copy a thread")

    @override
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) whose metadata ``run_id`` is in ``run_ids``.

        A namespace whose head is deleted falls back to its newest remaining checkpoint.

        Raises:
            TypeError: ``run_ids`` is one str.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._delete_for_runs_ops(run_ids), "delete checkpoints of runs")

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep each namespace's newest checkpoint (with its writes and the
        values it uses); ``"delete"``: delete the threads.

        Raises:
            ValueError: Unknown strategy.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._prune_ops(thread_ids, strategy), "prune threads")

    # -- async methods: run the sync ones in a worker thread ---------------------------------

    @override
    async def aget_tuple(self, config: RunnableConfig) -> Tuple | None:
        """Run :meth:`get_tuple` in a worker thread (use AsyncCosmosDBSaver for native async)."""
        return await asyncio.to_thread(self.get_tuple, config)

    @override
    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[Tuple]:
        """Run :meth:`list` in a worker thread, one page at a time."""
        items = self.list(config, filter=filter, before=before, limit=limit)
        done = object()
        while (item := await asyncio.to_thread(next, items, done)) is not done:
            yield item  # type: ignore[misc]

    @override
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Run :meth:`put` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    @override
    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Run :meth:`put_writes` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    @override
    async def adelete_thread(self, thread_id: str) -> None:
        """Run :meth:`delete_thread` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    @override
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Run :meth:`copy_thread` in a worker thread."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    @override
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Run :meth:`delete_for_runs` in a worker thread."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    @override
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Run :meth:`prune` in a worker thread."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def _etag(response: Any) -> str:
    """The etag of a write, from the response headers (the body is empty: no_response)."""
    headers = response.get_response_headers()
    return str(headers.get("etag") or "")

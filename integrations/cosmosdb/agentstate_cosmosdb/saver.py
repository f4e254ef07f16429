"""CosmosDBSaver: a LangGraph checkpoint saver on Azure Cosmos DB (sync ``azure.cosmos``)."""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from azure.core import MatchConditions
from azure.core.pipeline.transport import RequestsTransport
from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosBatchOperationError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from typing_extensions import override

from agentstate_cosmosdb._base import (
    CONFLICT,
    PARTITION_KEY_PATH,
    PRECONDITION_FAILED,
    BaseCosmosDBSaver,
    ClientSettings,
    Ops,
    batch_failure,
    batch_operations,
    map_sdk_error,
    missing_container_message,
    proxy_env_present,
    resolve_settings,
    tls_hook,
    wrong_partition_key_message,
)
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosSaverError,
)
from agentstate_cosmosdb.ops import Batch, Create, Delete, Emit, Op, Query, Read, Replace, Upsert
from agentstate_cosmosdb.settings import ca_bundle

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer

__all__ = ["CosmosDBSaver"]


class CosmosDBSaver(BaseCosmosDBSaver):
    """Store LangGraph checkpoints in an Azure Cosmos DB (NoSQL API) container.

    All documents of a thread share one logical partition; the latest checkpoint is found with
    two point reads however long the thread is; each channel value is stored once per version;
    values over 1 MB are split across documents. See the package README for the layout.

    The client is created on first use (or by :meth:`setup`). With an account key the saver
    creates the database and container when they are missing (partition key path ``/pk``);
    with a token credential, ``client=`` or ``create_if_missing=False`` it requires them to
    exist (unless ``create_if_missing=True``).

    Args:
        database_name: Cosmos DB database.
        container_name: Container for the checkpoints (partition key path ``/pk``).
        endpoint: Account endpoint; defaults to the ``COSMOSDB_ENDPOINT`` environment variable.
        credential: Account key (str) or an ``azure.core.credentials.TokenCredential``
            (e.g. ``azure.identity.DefaultAzureCredential()``); defaults to ``COSMOSDB_KEY``.
        client: An existing ``azure.cosmos.CosmosClient``. The saver uses it as given and never
            closes it. Not combinable with ``endpoint``/``credential``.
        reducer: A ``MessageReducer`` applied to the ``messages_key`` channel of every
            checkpoint before it is stored, exactly as ``ReducingCheckpointSaver`` does.
        messages_key: The channel that holds the message list.
        ttl: Seconds after its last write at which each stored item expires (Cosmos DB
            time-to-live). The container must have time-to-live enabled; the saver enables it
            when it creates the container. A channel value that has not changed for ``ttl``
            seconds expires too, so choose a ttl longer than a conversation stays in use.
        create_if_missing: Create the database and container when missing. Defaults to True
            with an account key and False otherwise.
        connection_verify: TLS verification: True (system CAs), the path of a CA bundle, or
            False to turn it off. Unlike the SDK alone, verification also applies to
            ``localhost`` and ``127.0.0.1`` endpoints. Ignored with ``client=``.
        serde: Serializer for checkpoints and values (LangGraph's default when None).
        max_workers: How many independent requests of one operation are sent at once (the
            calling thread plus ``max_workers - 1`` pool threads). Concurrency saves round
            trips to a remote service; with ``1`` requests go one after another in the calling
            thread, which is faster when the service is on the same host (CPU-bound client).
        **client_kwargs: Passed to ``CosmosClient`` (e.g. ``retry_total``, ``connection_timeout``,
            ``user_agent``).

    Raises:
        CosmosConfigurationError: Invalid arguments, or no endpoint/credential given or set in
            the environment.
    """

    def __init__(
        self,
        database_name: str,
        container_name: str,
        *,
        endpoint: str | None = None,
        credential: Any = None,
        client: CosmosClient | None = None,
        reducer: MessageReducer | None = None,
        messages_key: str = "messages",
        ttl: int | None = None,
        create_if_missing: bool | None = None,
        connection_verify: bool | str = True,
        serde: SerializerProtocol | None = None,
        max_workers: int = 8,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(serde=serde, reducer=reducer, messages_key=messages_key, ttl=ttl)
        self._settings: ClientSettings = resolve_settings(
            database_name=database_name,
            container_name=container_name,
            endpoint=endpoint,
            credential=credential,
            has_client=client is not None,
            create_if_missing=create_if_missing,
            connection_verify=connection_verify,
        )
        self._client = client
        self._owns_client = client is None
        self._client_kwargs = client_kwargs
        self._container: Any = None
        self._lock = threading.Lock()
        if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
            raise CosmosConfigurationError(
                f"max_workers must be a positive integer, got {max_workers!r}"
            )
        self._pool: ThreadPoolExecutor | None = (
            ThreadPoolExecutor(max_workers=max_workers - 1, thread_name_prefix="cosmos-saver")
            if max_workers > 1
            else None
        )

    def __repr__(self) -> str:
        s = self._settings
        where = s.endpoint or "client"
        return (
            f"{type(self).__name__}(endpoint={where!r}, database={s.database_name!r}, "
            f"container={s.container_name!r}, {self._describe()})"
        )

    # -- construction ----------------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_endpoint(
        cls,
        endpoint: str,
        credential: Any,
        database_name: str,
        container_name: str,
        **kwargs: Any,
    ) -> Iterator[CosmosDBSaver]:
        """Build a saver, set it up, and close its client on exit.

        The sync counterpart of ``PostgresSaver.from_conn_string``::

            with CosmosDBSaver.from_endpoint(url, key, "mydb", "checkpoints") as saver:
                graph = builder.compile(checkpointer=saver)

        Args:
            endpoint: Account endpoint.
            credential: Account key or TokenCredential.
            database_name: Cosmos DB database.
            container_name: Checkpoint container.
            **kwargs: Any other argument of :class:`CosmosDBSaver`.

        Yields:
            The ready saver.

        Raises:
            CosmosContainerNotFoundError: The container is missing and may not be created.
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
        """Connect, and create or check the database and container. Safe to call repeatedly.

        Raises:
            CosmosContainerNotFoundError: The database or container is missing and the saver may
                not create it.
            CosmosConfigurationError: The container's partition key path is not ``/pk``.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._get_container()

    def close(self) -> None:
        """Close the client if the saver created it, and stop its worker threads."""
        with self._lock:
            client, self._container = self._client if self._owns_client else None, None
            if self._owns_client:
                self._client = None
        if client is not None:
            client.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __enter__(self) -> CosmosDBSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_container(self) -> Any:
        container = self._container
        if container is not None:
            return container
        with self._lock:
            if self._container is None:
                self._container = self._connect()
            return self._container

    def _connect(self) -> Any:
        s = self._settings
        try:
            if self._client is None:
                kwargs = dict(self._client_kwargs)
                if s.verify is not False:
                    kwargs["raw_request_hook"] = tls_hook(
                        ca_bundle(s.verify) or "", kwargs.get("raw_request_hook")
                    )
                else:
                    kwargs["connection_verify"] = False
                if "transport" not in kwargs:
                    kwargs["transport"] = RequestsTransport(use_env_settings=proxy_env_present())
                assert s.endpoint is not None  # resolve_settings guarantees it without client=
                self._client = CosmosClient(s.endpoint, credential=s.credential, **kwargs)
            if s.create_if_missing:
                # "if not exists" is a read then a create: savers starting together may race,
                # and the loser sees 409 Conflict; the container exists then, so try again.
                for attempt in range(3):
                    try:
                        database = self._client.create_database_if_not_exists(s.database_name)
                        container = database.create_container_if_not_exists(
                            s.container_name,
                            partition_key=PartitionKey(path=PARTITION_KEY_PATH),
                            default_ttl=-1 if self.ttl is not None else None,
                        )
                        break
                    except CosmosResourceExistsError:
                        if attempt == 2:
                            raise
            else:
                container = self._client.get_database_client(s.database_name).get_container_client(
                    s.container_name
                )
            props = container.read()
        except CosmosResourceNotFoundError as exc:
            raise CosmosContainerNotFoundError(
                missing_container_message(s, "database or container"), status_code=404
            ) from exc
        except CosmosSaverError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, "open the checkpoint container", s.credential) from exc
        paths = (props.get("partitionKey") or {}).get("paths")
        if paths != [PARTITION_KEY_PATH]:
            raise CosmosConfigurationError(wrong_partition_key_message(s, paths))
        return container

    # -- the I/O driver ----------------------------------------------------------------------

    def _run(self, ops: Ops, action: str) -> Any:
        container = self._get_container()
        try:
            step = next(ops)
            while True:
                if isinstance(step, Emit):
                    raise TypeError("streaming operations go through _stream")
                step = ops.send(self._execute(container, step, action))
        except StopIteration as stop:
            return stop.value

    def _stream(self, ops: Ops, action: str) -> Iterator[CheckpointTuple]:
        container = self._get_container()
        result: Any = None
        while True:
            try:
                step = ops.send(result)
            except StopIteration:
                return
            if isinstance(step, Emit):
                result = None
                yield step.value
            else:
                result = self._execute(container, step, action)

    def _execute(self, container: Any, step: Op | Sequence[Op], action: str) -> Any:
        if isinstance(step, (list, tuple)):
            if self._pool is None:
                return [self._one(container, op, action) for op in step]
            # The calling thread sends the first request itself while the pool sends the rest.
            rest = [self._pool.submit(self._one, container, op, action) for op in step[1:]]
            try:
                first = [self._one(container, step[0], action)] if step else []
            finally:
                results = [f.result() for f in rest]
            return first + results
        return self._one(container, step, action)  # type: ignore[arg-type]

    def _one(self, container: Any, op: Op, action: str) -> Any:
        try:
            if isinstance(op, Read):
                try:
                    return container.read_item(op.id, partition_key=op.pk)
                except CosmosResourceNotFoundError:
                    return None
            if isinstance(op, Upsert):
                return container.upsert_item(op.doc)
            if isinstance(op, Create):
                try:
                    return container.create_item(op.doc)
                except CosmosResourceExistsError:
                    return CONFLICT
            if isinstance(op, Replace):
                try:
                    return container.replace_item(
                        op.doc["id"],
                        op.doc,
                        etag=op.etag,
                        match_condition=MatchConditions.IfNotModified,
                    )
                except (CosmosAccessConditionFailedError, CosmosResourceNotFoundError):
                    return PRECONDITION_FAILED
            if isinstance(op, Delete):
                try:
                    container.delete_item(op.id, partition_key=op.pk)
                    return True
                except CosmosResourceNotFoundError:
                    return False
            if isinstance(op, Batch):
                try:
                    results = container.execute_item_batch(
                        batch_operations=batch_operations(op.ops), partition_key=op.pk
                    )
                except CosmosBatchOperationError as exc:
                    outcome = batch_failure(exc.status_code)
                    if outcome is None:
                        raise
                    return outcome
                return [r.get("resourceBody") for r in results]
            if isinstance(op, Query):
                params = [{"name": n, "value": v} for n, v in op.parameters]
                if op.pk is None:
                    items = container.query_items(
                        op.sql, parameters=params, enable_cross_partition_query=True
                    )
                else:
                    items = container.query_items(op.sql, parameters=params, partition_key=op.pk)
                return list(items)
        except CosmosSaverError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, action, self._settings.credential) from exc
        raise TypeError(f"unknown storage operation {op!r}")

    # -- BaseCheckpointSaver ---------------------------------------------------------------

    @override
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint: the latest of the thread and namespace, or the one in ``config``.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        result: CheckpointTuple | None = self._run(self._get_tuple_ops(config), "read a checkpoint")
        return result

    @override
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Thread (and optionally namespace and checkpoint id) to list; None lists
                every thread (a cross-partition query).
            filter: Metadata that each returned checkpoint's metadata must contain.
            before: Only checkpoints older than this one.
            limit: At most this many checkpoints.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        yield from self._stream(
            self._list_ops(config, filter=filter, before=before, limit=limit), "list checkpoints"
        )

    @override
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (reduced first when a reducer is set).

        Only the channels in ``new_versions`` get their values written. Values, checkpoint
        document and head go in one atomic transactional batch when they fit; otherwise the
        head moves only after the values and the checkpoint document are stored. Either way a
        failure part-way never exposes a checkpoint with missing values.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
            PruneHookError: An ``on_prune`` hook of the reducer failed; nothing was written.
            SummaryError: The reducer's ``summarize_fn`` failed; nothing was written.
        """
        if self.message_reduction is not None:
            new_versions = dict(new_versions)
            checkpoint = self.message_reduction.apply(
                config, checkpoint, new_versions, metadata=metadata
            )
        result: RunnableConfig = self._run(
            self._put_ops(config, checkpoint, metadata, new_versions), "store a checkpoint"
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
        """Store the pending writes of one task for a checkpoint.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._put_writes_ops(config, writes, task_id, task_path), "store pending writes")

    def thread_documents(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        """Every stored document of a thread (checkpoints, values, writes, heads), as stored.

        One single-partition query; for inspection and measurement, not a hot path.

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
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is in ``run_ids``.

        Uses one cross-partition query to find them. A namespace whose latest checkpoint is
        deleted falls back to its newest remaining one.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._delete_for_runs_ops(run_ids), "delete checkpoints of runs")

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"keep_latest"`` keeps the newest checkpoint per namespace (with its
        writes and the values it uses); ``"delete"`` removes everything.

        Raises:
            ValueError: Unknown strategy.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        self._run(self._prune_ops(thread_ids, strategy), "prune threads")

    # -- async methods: run the sync ones in a worker thread ---------------------------------

    @override
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
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
    ) -> AsyncIterator[CheckpointTuple]:
        """Run :meth:`list` in a worker thread and yield its results."""
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

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

"""AsyncCosmosDBSaver: the natively async Cosmos DB saver (``azure.cosmos.aio``, aiohttp)."""

from __future__ import annotations

import asyncio
import builtins
import ssl
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from azure.core import MatchConditions
from azure.core.pipeline.transport import AioHttpTransport
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient
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
    wrong_partition_key_message,
)
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosSaverError,
)
from agentstate_cosmosdb.ops import Batch, Create, Delete, Emit, Op, Query, Read, Replace, Upsert
from agentstate_cosmosdb.settings import ssl_context

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer

__all__ = ["AsyncCosmosDBSaver"]


class _VerifyingTransport(AioHttpTransport):  # type: ignore[misc]
    """aiohttp transport that always verifies TLS with one SSL context built up front.

    The SDK turns verification off for loopback endpoints and rebuilds an SSL context from a CA
    path on every request (which defeats connection reuse); this transport does neither.
    """

    def __init__(self, context: ssl.SSLContext, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._context = context

    def _build_ssl_config(self, cert: Any, verify: Any) -> ssl.SSLContext:
        return self._context


class AsyncCosmosDBSaver(BaseCosmosDBSaver):
    """Store LangGraph checkpoints in Azure Cosmos DB with ``azure.cosmos.aio``.

    Same storage, arguments and behaviour as :class:`~agentstate_cosmosdb.CosmosDBSaver`; every
    request is awaited on the event loop, independent requests of one operation concurrently.
    The client is created on first use (or by :meth:`setup`) and closed by :meth:`aclose` when
    the saver created it. The sync methods (``get_tuple``, ``put``, ...) may be called only from
    another thread than the saver's event loop, as with ``AsyncPostgresSaver``.

    Args:
        database_name: Cosmos DB database.
        container_name: Container for the checkpoints (partition key path ``/pk``).
        endpoint: Account endpoint; defaults to ``COSMOSDB_ENDPOINT``.
        credential: Account key (str) or an async ``TokenCredential``
            (``azure.identity.aio``); defaults to ``COSMOSDB_KEY``.
        client: An existing ``azure.cosmos.aio.CosmosClient``, used as given and never closed.
        reducer: A ``MessageReducer`` applied to the ``messages_key`` channel before storing.
        messages_key: The channel that holds the message list.
        ttl: Item time-to-live in seconds (see ``CosmosDBSaver``).
        create_if_missing: Create the database and container when missing; defaults to True
            with an account key and False otherwise.
        connection_verify: True (system CAs), a CA bundle path, or False. Also applies to
            loopback endpoints. Ignored with ``client=`` or a ``transport=`` client option.
        serde: Serializer for checkpoints and values.
        **client_kwargs: Passed to ``azure.cosmos.aio.CosmosClient``.

    Raises:
        CosmosConfigurationError: Invalid arguments, or no endpoint/credential available.
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
        self._setup_lock: asyncio.Lock | None = None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def __repr__(self) -> str:
        s = self._settings
        where = s.endpoint or "client"
        return (
            f"{type(self).__name__}(endpoint={where!r}, database={s.database_name!r}, "
            f"container={s.container_name!r}, {self._describe()})"
        )

    # -- construction ----------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def from_endpoint(
        cls,
        endpoint: str,
        credential: Any,
        database_name: str,
        container_name: str,
        **kwargs: Any,
    ) -> AsyncIterator[AsyncCosmosDBSaver]:
        """Build a saver, set it up, and close its client on exit::

            async with AsyncCosmosDBSaver.from_endpoint(url, key, "mydb", "cps") as saver:
                graph = builder.compile(checkpointer=saver)

        Args:
            endpoint: Account endpoint.
            credential: Account key or async TokenCredential.
            database_name: Cosmos DB database.
            container_name: Checkpoint container.
            **kwargs: Any other argument of :class:`AsyncCosmosDBSaver`.

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
            await saver.setup()
            yield saver
        finally:
            await saver.aclose()

    async def setup(self) -> None:
        """Connect, and create or check the database and container. Safe to call repeatedly.

        Raises:
            CosmosContainerNotFoundError: The database or container is missing and the saver may
                not create it.
            CosmosConfigurationError: The container's partition key path is not ``/pk``.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._get_container()

    async def aclose(self) -> None:
        """Close the client if the saver created it."""
        client = self._client if self._owns_client else None
        self._container = None
        if self._owns_client:
            self._client = None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> AsyncCosmosDBSaver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _get_container(self) -> Any:
        if self._container is not None:
            return self._container
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        if self._setup_lock is None:
            self._setup_lock = asyncio.Lock()
        async with self._setup_lock:
            if self._container is None:
                self._container = await self._connect()
            return self._container

    async def _connect(self) -> Any:
        s = self._settings
        try:
            if self._client is None:
                kwargs = dict(self._client_kwargs)
                if s.verify is False:
                    kwargs["connection_verify"] = False
                elif "transport" not in kwargs:
                    context = ssl_context(s.verify)
                    assert context is not None  # verify is not False here
                    kwargs["transport"] = _VerifyingTransport(
                        context, use_env_settings=proxy_env_present()
                    )
                assert s.endpoint is not None  # resolve_settings guarantees it without client=
                self._client = CosmosClient(s.endpoint, credential=s.credential, **kwargs)
            if s.create_if_missing:
                # "if not exists" is a read then a create: savers starting together may race,
                # and the loser sees 409 Conflict; the container exists then, so try again.
                for attempt in range(3):
                    try:
                        database = await self._client.create_database_if_not_exists(s.database_name)
                        container = await database.create_container_if_not_exists(
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
            props = await container.read()
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

    async def _run(self, ops: Ops, action: str) -> Any:
        container = await self._get_container()
        try:
            step = next(ops)
            while True:
                if isinstance(step, Emit):
                    raise TypeError("streaming operations go through _stream")
                step = ops.send(await self._execute(container, step, action))
        except StopIteration as stop:
            return stop.value

    async def _stream(self, ops: Ops, action: str) -> AsyncIterator[CheckpointTuple]:
        container = await self._get_container()
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
                result = await self._execute(container, step, action)

    async def _execute(self, container: Any, step: Op | Sequence[Op], action: str) -> Any:
        if isinstance(step, (list, tuple)):
            if len(step) == 1:
                return [await self._one(container, step[0], action)]
            return list(await asyncio.gather(*(self._one(container, op, action) for op in step)))
        return await self._one(container, step, action)  # type: ignore[arg-type]

    async def _one(self, container: Any, op: Op, action: str) -> Any:
        try:
            if isinstance(op, Read):
                try:
                    return await container.read_item(op.id, partition_key=op.pk)
                except CosmosResourceNotFoundError:
                    return None
            if isinstance(op, Upsert):
                return await container.upsert_item(op.doc)
            if isinstance(op, Create):
                try:
                    return await container.create_item(op.doc)
                except CosmosResourceExistsError:
                    return CONFLICT
            if isinstance(op, Replace):
                try:
                    return await container.replace_item(
                        op.doc["id"],
                        op.doc,
                        etag=op.etag,
                        match_condition=MatchConditions.IfNotModified,
                    )
                except (CosmosAccessConditionFailedError, CosmosResourceNotFoundError):
                    return PRECONDITION_FAILED
            if isinstance(op, Delete):
                try:
                    await container.delete_item(op.id, partition_key=op.pk)
                    return True
                except CosmosResourceNotFoundError:
                    return False
            if isinstance(op, Batch):
                try:
                    results = await container.execute_item_batch(
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
                    items = container.query_items(op.sql, parameters=params)
                else:
                    items = container.query_items(op.sql, parameters=params, partition_key=op.pk)
                return [item async for item in items]
        except CosmosSaverError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, action, self._settings.credential) from exc
        raise TypeError(f"unknown storage operation {op!r}")

    # -- BaseCheckpointSaver (async) -------------------------------------------------------

    @override
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint: the latest of the thread and namespace, or the one in ``config``.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        result: CheckpointTuple | None = await self._run(
            self._get_tuple_ops(config), "read a checkpoint"
        )
        return result

    @override
    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """List checkpoints, newest first (see ``CosmosDBSaver.list``).

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        async for item in self._stream(
            self._list_ops(config, filter=filter, before=before, limit=limit), "list checkpoints"
        ):
            yield item

    @override
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (reduced first when a reducer is set); see ``CosmosDBSaver.put``.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
            PruneHookError: An ``on_prune`` hook of the reducer failed; nothing was written.
            SummaryError: The reducer's ``summarize_fn`` failed; nothing was written.
        """
        if self.message_reduction is not None:
            new_versions = dict(new_versions)
            checkpoint = await self.message_reduction.aapply(
                config, checkpoint, new_versions, metadata=metadata
            )
        result: RunnableConfig = await self._run(
            self._put_ops(config, checkpoint, metadata, new_versions), "store a checkpoint"
        )
        return result

    @override
    async def aput_writes(
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
        await self._run(
            self._put_writes_ops(config, writes, task_id, task_path), "store pending writes"
        )

    async def athread_documents(self, thread_id: str) -> builtins.list[dict[str, Any]]:
        """Every stored document of a thread (checkpoints, values, writes, heads), as stored.

        One single-partition query; for inspection and measurement, not a hot path.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        docs: builtins.list[dict[str, Any]] = await self._run(
            self._thread_documents_ops(thread_id), "read a thread's documents"
        )
        return docs

    @override
    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of a thread.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._delete_thread_ops(thread_id), "delete a thread")

    @override
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write of one thread to another.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._copy_thread_ops(source_thread_id, target_thread_id), "copy a thread")

    @override
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) whose metadata ``run_id`` is in ``run_ids``.

        Raises:
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._delete_for_runs_ops(run_ids), "delete checkpoints of runs")

    @override
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads (see ``CosmosDBSaver.prune``).

        Raises:
            ValueError: Unknown strategy.
            CosmosSaverError: The service could not be reached or refused the request.
        """
        await self._run(self._prune_ops(thread_ids, strategy), "prune threads")

    # -- sync methods: only from another thread than the saver's loop ------------------------

    def _loop_for_sync_call(self) -> asyncio.AbstractEventLoop:
        loop = self.loop
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

    @override
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Blocking :meth:`aget_tuple`, for calls from a thread other than the saver's loop."""
        loop = self._loop_for_sync_call()
        return asyncio.run_coroutine_threadsafe(self.aget_tuple(config), loop).result()

    @override
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Blocking :meth:`alist`, for calls from a thread other than the saver's loop."""
        loop = self._loop_for_sync_call()

        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from asyncio.run_coroutine_threadsafe(collect(), loop).result()

    @override
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Blocking :meth:`aput`, for calls from a thread other than the saver's loop."""
        loop = self._loop_for_sync_call()
        return asyncio.run_coroutine_threadsafe(
            self.aput(config, checkpoint, metadata, new_versions), loop
        ).result()

    @override
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Blocking :meth:`aput_writes`, for calls from a thread other than the saver's loop."""
        loop = self._loop_for_sync_call()
        asyncio.run_coroutine_threadsafe(
            self.aput_writes(config, writes, task_id, task_path), loop
        ).result()

    @override
    def delete_thread(self, thread_id: str) -> None:
        """Blocking :meth:`adelete_thread`, for calls from another thread."""
        loop = self._loop_for_sync_call()
        asyncio.run_coroutine_threadsafe(self.adelete_thread(thread_id), loop).result()

    @override
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Blocking :meth:`acopy_thread`, for calls from another thread."""
        loop = self._loop_for_sync_call()
        asyncio.run_coroutine_threadsafe(
            self.acopy_thread(source_thread_id, target_thread_id), loop
        ).result()

    @override
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Blocking :meth:`adelete_for_runs`, for calls from another thread."""
        loop = self._loop_for_sync_call()
        asyncio.run_coroutine_threadsafe(self.adelete_for_runs(run_ids), loop).result()

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Blocking :meth:`aprune`, for calls from another thread."""
        loop = self._loop_for_sync_call()
        asyncio.run_coroutine_threadsafe(self.aprune(thread_ids, strategy=strategy), loop).result()

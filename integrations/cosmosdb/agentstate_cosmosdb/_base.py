"""Everything the Cosmos DB savers do except I/O: construction, and every operation generator.

The sync :class:`~agentstate_cosmosdb.CosmosDBSaver` and the async
:class:`~agentstate_cosmosdb.AsyncCosmosDBSaver` share :class:`BaseCosmosDBSaver`. Each saver
operation (``setup``, ``put``, ``get_tuple``, ``prune``, ...) is written once as a generator
that yields storage operations (:mod:`agentstate_cosmosdb.ops`) and receives their results;
the drivers only turn operations into SDK calls. The storage layout is drawn in
:mod:`agentstate_cosmosdb.schema`.

The generators live in one module per family, each a mixin that :class:`BaseCosmosDBSaver`
combines with the constructor, ``repr``, the close bookkeeping and the mapping of SDK
refusals (``_refused``):

* :mod:`~agentstate_cosmosdb._state`: the attributes every family reads (typed), the limits
  and helpers more than one family uses;
* :mod:`~agentstate_cosmosdb._setup`: connect (database, container, partition key, ttl);
* :mod:`~agentstate_cosmosdb._values`: values as documents and back, the head document;
* :mod:`~agentstate_cosmosdb._writes`: ``put``, the head advance, ``put_writes``;
* :mod:`~agentstate_cosmosdb._reads`: ``get_tuple``, head repair, tuple loading, ``list``;
* :mod:`~agentstate_cosmosdb._maintenance`: ``delete_thread``, ``copy_thread``, ``prune``,
  ``delete_for_runs``, and the ``keep_checkpoints`` garbage collection.

Invariants every generator keeps (what a reader may rely on, whatever fails part-way):

* **A referenced document is written before the document that references it**: chunks before
  their blob, blobs before their checkpoint, a checkpoint document before a head points at it,
  a pending-write value before its writes document. So a crash (or an outage, or a refused
  request) between two writes leaves only unreferenced garbage, never a dangling reference.
* **A reader never returns a checkpoint with a value missing**: a referenced document that is
  not there raises :class:`~agentstate_cosmosdb.errors.CosmosMissingDocumentError`. (With
  ``ttl=``, a checkpoint whose values have expired counts as expired itself: ``list`` skips
  it and ``get_tuple`` of its id returns None.)
* **The head only moves forward under concurrent puts** (compare-and-swap on its etag, jittered
  backoff); only ``delete_for_runs`` moves it back, to the newest checkpoint that remains.
* **A thread whose checkpoints are listed has a head**: maintenance removes a namespace's last
  checkpoint and its head in one transactional batch; a reader that finds checkpoints and no
  head (a first put cut short) repairs the head with a create-if-absent, so never backwards.
* **Garbage collection keeps what survivors reach** through
  :func:`~agentstate_cosmosdb.documents.reachable`, **and what a writer may still be working
  on** (a grace period for documents no stored checkpoint reaches); it deletes only in
  batches fenced by the head's etag, and a put reads what it inherits in the batch that
  stores it, so clean-up in one process never deletes what a put in another one references
  (see ``_maintenance`` and ``_writes``).
* **A run the thread was deleted under stores nothing more** (``delete_thread`` leaves a
  tombstone; see ``_writes``).

With ``ttl=``: every put records when each holder it references expires (``expires``); a
holder that would expire before the head the put writes has its value written again. Holders
live twice the ttl, the head the ttl plus one second (the service's ``_ts`` is whole seconds):
a thread reads whole for at least ``ttl`` seconds after its last put (the seconds of
inactivity ``ttl=`` promises), and then expires as a whole (the head first; a namespace
without a head lists nothing). Instances with different ``ttl=`` (or none) on one container
keep each other's threads whole the same way: a put without ttl writes again every value
whose holder has one.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.base import SerializerProtocol

from agentstate_cosmosdb._reads import ReadOps
from agentstate_cosmosdb._setup import SetupOps
from agentstate_cosmosdb._state import RecentIds
from agentstate_cosmosdb._writes import WriteOps
from agentstate_cosmosdb.documents import resolve_codec
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosSaverClosedError,
    CosmosSaverError,
    map_sdk_error,
)
from agentstate_cosmosdb.heads import HeadCache
from agentstate_cosmosdb.ops import UNEXPECTED, Op, Result, refusal
from agentstate_cosmosdb.schema import PARTITION_KEY_PATH, partition_key
from agentstate_cosmosdb.settings import resolve_settings

try:  # langgraph-checkpoint >= 4 stores DeltaChannel snapshots as this type
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as _DeltaSnapshotType
except ImportError:  # pragma: no cover - older langgraph-checkpoint has no DeltaChannel

    class _DeltaSnapshotType:  # type: ignore[no-redef]
        pass


if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer
    from agentstate_reducer.langgraph import CheckpointReduction

__all__ = ["CLOSE_WAIT_SECONDS", "PARTITION_KEY_PATH", "BaseCosmosDBSaver"]

CLOSE_WAIT_SECONDS = 60.0
"""How long ``close()`` / ``aclose()`` waits for requests in flight before closing the client."""

REFUSED_THREADS = 4096
"""Threads whose refused checkpoint one process remembers (see ``_check_writable``)."""

_DELTA_REFUSED = (
    "the Cosmos DB savers do not support DeltaChannel (LangGraph beta): channel {listed} of "
    "this graph is one. Its value is rebuilt from the pending writes of older checkpoints, "
    "which keep_checkpoints, prune and delete_for_runs remove. Nothing was stored. Declare "
    "the channel with a plain reducer (Annotated[list, operator.add]), or use a saver that "
    "supports DeltaChannel (PostgresSaver)"
)


class BaseCosmosDBSaver(SetupOps, WriteOps, ReadOps):
    """Construction, and the operation generators of every family, shared by both savers.

    Args:
        database_name: Cosmos DB database.
        container_name: Container for the checkpoints (partition key path ``/pk``).
        endpoint: Account endpoint; defaults to the ``COSMOSDB_ENDPOINT`` environment variable.
        credential: Account key (str) or a token credential (``azure.identity``; for the async
            saver ``azure.identity.aio``); defaults to ``COSMOSDB_KEY``.
        client: An existing SDK client, used as given and never closed by the saver. Not
            combinable with ``endpoint`` / ``credential``.
        reducer: A ``MessageReducer`` applied to the ``messages_key`` channel of every
            checkpoint before it is stored, exactly as ``ReducingCheckpointSaver`` does.
        messages_key: The channel that holds the message list.
        on_prune_error: What a failing ``on_prune`` hook or ``summarize_fn`` of the reducer
            does to a put: ``"keep"`` (default) stores the checkpoint unpruned and hands the
            messages over again on later puts, so a memory outage never costs the user's
            turn; ``"raise"`` fails the put.
        ttl: Seconds of inactivity after which a thread expires (Cosmos DB time-to-live): it
            reads whole for ``ttl`` seconds after its last put, then expires, its head first;
            its other documents live up to twice the ttl (see the module docstring). Needs
            time-to-live on in the container: :meth:`setup` turns it on when the credential
            may, otherwise raises saying what to set.
        keep_checkpoints: Keep only the newest N checkpoints of each thread namespace (with
            their writes and the values they reach), and the subgraph calls of the root
            checkpoints kept; after each put, older ones are removed, never what a run or a
            fork in progress still needs. None keeps every checkpoint.
        compression: Codec for stored values: ``"auto"`` (zstd when the ``zstandard`` package
            is installed, else zlib), ``"zlib"``, ``"zstd"``, or None (store as serialized).
            Each value records its codec, so any setting reads what any other wrote.
        create_if_missing: Whether to try creating a missing database or container (default
            True: tried with any credential; a refusal says what to create). False only
            checks that they exist, and never changes container settings.
        connection_verify: TLS verification: True (the CA bundle of ``REQUESTS_CA_BUNDLE`` /
            ``SSL_CERT_FILE`` / ``CURL_CA_BUNDLE``, else certifi's), the path of a CA bundle,
            or False. Loopback endpoints are verified too. Ignored with ``client=``.
        serde: Serializer for checkpoints and values (LangGraph's default when None).
        **client_kwargs: Passed to the SDK client (``retry_total``, ``connection_timeout``,
            ``user_agent``, ``no_response_on_write``, ...).

    Raises:
        TypeError: An argument has the wrong type.
        CosmosConfigurationError: An argument has a wrong value, or no endpoint / credential is
            given or set in the environment (a ``ValueError``).
    """

    def __init__(
        self,
        database_name: str,
        container_name: str,
        *,
        endpoint: str | None = None,
        credential: Any = None,
        client: Any = None,
        reducer: MessageReducer | None = None,
        messages_key: str = "messages",
        on_prune_error: Literal["keep", "raise"] = "keep",
        ttl: int | None = None,
        keep_checkpoints: int | None = None,
        compression: str | None = "auto",
        create_if_missing: bool | None = None,
        connection_verify: bool | str = True,
        serde: SerializerProtocol | None = None,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(serde=serde)
        self.ttl = _positive_int_or_none("ttl", ttl)
        self.keep_checkpoints = _positive_int_or_none("keep_checkpoints", keep_checkpoints)
        self._codec = resolve_codec(compression)
        self.message_reduction = _make_reduction(
            reducer, messages_key, self.get_next_version, on_prune_error
        )
        self._settings = resolve_settings(
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
        self._client_kwargs = dict(client_kwargs)
        self._container = None
        self._closed = False
        self._closing = False
        self._inflight = 0
        self._inflight_lock = threading.Condition()
        self._heads = HeadCache()
        self._unfound = RecentIds()
        self._deleted_runs = RecentIds()
        # (pk, ns) of threads whose checkpoint this process refused (a DeltaChannel): their
        # pending writes are refused too, so a refused graph stores nothing.
        self._refused_threads: OrderedDict[tuple[str, str], None] = OrderedDict()

    def __repr__(self) -> str:
        s = self._settings
        return (
            f"{type(self).__name__}(endpoint={s.endpoint or 'client'!r}, "
            f"database={s.database_name!r}, container={s.container_name!r}, "
            f"ttl={self.ttl!r}, keep_checkpoints={self.keep_checkpoints!r}, "
            f"reducer={'on' if self.message_reduction else 'off'})"
        )

    def _check_open(self) -> None:
        if self._closed or self._closing:
            raise CosmosSaverClosedError(
                f"this {type(self).__name__} was closed; build a new saver (or use it inside "
                "its `with` block only). A run still using it when it was closed stops at its "
                "next storage operation, with what it stored before intact"
            )

    def _enter(self) -> None:
        """Count a storage step in flight, so that closing waits for it (and refuse one once
        closing has begun)."""
        with self._inflight_lock:
            self._check_open()
            self._inflight += 1

    def _leave(self) -> None:
        with self._inflight_lock:
            self._inflight -= 1
            if not self._inflight:
                self._inflight_lock.notify_all()

    def _begin_close(self) -> None:
        with self._inflight_lock:
            self._closing = True

    def _wait_idle(self, timeout: float) -> bool:
        """Block until no storage step is in flight (sync saver); False on timeout."""
        with self._inflight_lock:
            return self._inflight_lock.wait_for(lambda: not self._inflight, timeout)

    def _check_storable(
        self,
        config: RunnableConfig,
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
    ) -> None:
        """Refuse a checkpoint the savers cannot store faithfully, before anything is written.

        A graph with a ``DeltaChannel`` (LangGraph's beta channel, whose value is rebuilt
        from the pending writes of older checkpoints) is recognised as LangGraph marks every
        checkpoint of one: update counters in the metadata, or a snapshot value. The pending
        writes its run stores meanwhile (LangGraph stores them in the background) are refused
        too (:meth:`_check_writable`).

        Raises:
            NotImplementedError: The graph has a ``DeltaChannel``; the message names it.
        """
        counters = metadata.get("counters_since_delta_snapshot")
        names = set(counters) if isinstance(counters, Mapping) else set()
        values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
        names.update(k for k, v in values.items() if isinstance(v, _DeltaSnapshotType))
        if not names:
            return
        configurable = config.get("configurable") or {}
        where = (
            partition_key(str(configurable.get("thread_id"))),
            str(configurable.get("checkpoint_ns", "")),
        )
        with self._inflight_lock:
            self._refused_threads[where] = None
            while len(self._refused_threads) > REFUSED_THREADS:
                self._refused_threads.popitem(last=False)
        listed = ", ".join(repr(str(n)) for n in sorted(names))
        raise NotImplementedError(_DELTA_REFUSED.format(listed=listed))

    def _check_writable(self, config: RunnableConfig) -> None:
        """Refuse the pending writes of a run whose checkpoint :meth:`_check_storable`
        refused in this process.

        Raises:
            NotImplementedError: They belong to a graph with a ``DeltaChannel``.
        """
        if not self._refused_threads:
            return
        configurable = config.get("configurable") or {}
        where = (
            partition_key(str(configurable.get("thread_id"))),
            str(configurable.get("checkpoint_ns", "")),
        )
        if where in self._refused_threads:
            raise NotImplementedError(_DELTA_REFUSED.format(listed="of this run"))

    def _release_client(self) -> Any:
        """Mark the saver closed and hand back the client to close (None if not ours)."""
        self._closed = True
        client, self._container = self._client if self._owns_client else None, None
        if self._owns_client:
            self._client = None
        return client

    def _client_failed(self, exc: Exception) -> CosmosSaverError:
        return map_sdk_error(exc, "connect to the account", self._settings.credential)

    def _check_client(self, expected: type, other: str) -> None:
        """Refuse a ``client=`` of another kind when the saver is built, not at first use."""
        if self._client is not None and not isinstance(self._client, expected):
            given = type(self._client)
            raise TypeError(
                f"client must be an {expected.__module__}.{expected.__name__} for "
                f"{type(self).__name__}, got {given.__module__}.{given.__name__}" + other
            )

    def _refused(self, op: Op, exc: Exception, action: str) -> Result:
        """What the drivers return when an SDK call for ``op`` raised ``exc``.

        An expected refusal (see :func:`agentstate_cosmosdb.ops.refusal`) becomes its result;
        anything else is raised as a :class:`CosmosSaverError` naming ``action``.
        """
        from azure.core.exceptions import HttpResponseError
        from azure.cosmos.exceptions import CosmosBatchOperationError

        if isinstance(exc, CosmosSaverError):
            raise exc
        if isinstance(exc, HttpResponseError):
            in_batch = isinstance(exc, CosmosBatchOperationError)
            result = refusal(op, exc.status_code, in_batch=in_batch)
            if result is not UNEXPECTED:
                return result
            if exc.status_code == 404 and not in_batch:
                # The container (or database) went away under a running saver: set it up
                # again on the next call instead of failing every call from now on.
                self._container, self._heads = None, HeadCache()
                names = f"{self._settings.database_name}/{self._settings.container_name}"
                raise CosmosContainerNotFoundError(
                    f"Cosmos DB answered 404 NotFound while trying to {action}: the container "
                    f"{names} no longer exists (deleted?). The saver sets it up again on its "
                    "next call (creating it when it may); what it held is gone."
                ) from exc
        raise map_sdk_error(exc, action, self._settings.credential) from exc

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Return the next channel version, as PostgresSaver does.

        A zero-padded counter followed by a random fraction: versions stay ordered, and two
        forks of one thread never produce the same version (so never overwrite each other's
        stored value).
        """
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(str(current).split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"


def _positive_int_or_none(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be a positive int or None, got {type(value).__name__}")
    if value <= 0:
        raise CosmosConfigurationError(f"{name} must be a positive int or None, got {value!r}")
    return value


def _check_name(name: str, value: Any) -> None:
    # The same errors, word for word, as the core's savers raise for the same misuse.
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    if not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    listed = " or ".join(repr(c) for c in choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {listed}, got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be {listed}, got {value!r}")


def _make_reduction(
    reducer: MessageReducer | None,
    messages_key: str,
    next_version: Any,
    on_prune_error: Literal["keep", "raise"],
) -> CheckpointReduction | None:
    _check_name("messages_key", messages_key)
    _check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
    if reducer is None:
        return None
    try:
        from agentstate_reducer.langgraph import CheckpointReduction
    except ImportError as exc:  # pragma: no cover - depends on the installed core
        raise ImportError(
            "reducer= needs agentstate-reducer with LangGraph support: "
            'pip install "agentstate-reducer[langgraph]"'
        ) from exc
    return CheckpointReduction(
        reducer, messages_key, next_version=next_version, on_prune_error=on_prune_error
    )

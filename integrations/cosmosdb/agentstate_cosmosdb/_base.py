"""Everything the Cosmos DB savers do except I/O.

The sync :class:`~agentstate_cosmosdb.CosmosDBSaver` and the async
:class:`~agentstate_cosmosdb.AsyncCosmosDBSaver` share this module. Each saver operation is written
once here as a generator that *yields* storage operations (:class:`Read`, :class:`Upsert`, ...) and
receives their results; the sync saver runs them with ``azure.cosmos``, the async one with
``azure.cosmos.aio``. A list or tuple of operations means "run these concurrently".

Storage layout (one container, partition key path ``/pk``)::

    pk = digest(thread_id)        every document of a thread lives in this one logical partition

    h.<digest(ns)>                head: a copy of the newest checkpoint document of (thread, ns)
                                  plus, in ``cached``, the values it inherited, when they fit;
                                  found by one point read
    c.<digest(ns, checkpoint_id)> checkpoint: the checkpoint without its values, metadata, small
                                  primitives (``inline``), the new values of the channels it
                                  changed (``values``, up to OWN_VALUE_BYTES each) and, in
                                  ``origins``, the id of the document holding each other value
    b.<digest(ns, ch, version)>   blob: a larger channel value, stored once per version; past
                                  CHUNK_BYTES it continues in chunk documents <blob id>.1, .2, ...
    w.<digest(ns, checkpoint_id)> pending writes of one checkpoint, all tasks in one document
    v.<digest(ns, cp, task, ...)> a pending-write value too big to keep inside the writes document

A checkpoint removed by ``prune`` or ``delete_for_runs`` while a surviving checkpoint still reads
a value from it stays as a ``values`` document (same id, not listed).

Ids are digests because Cosmos DB forbids ``/ \\ # ?`` in ids and limits their length; the raw
thread id, namespace, channel and version are kept in fields, and every read checks that the
document's ``thread_id`` is the one asked for.

A put writes chunks first, then its blobs, checkpoint document and head in one transactional
batch (all or nothing) when they fit in one; otherwise blobs and checkpoint document, then the
head. A checkpoint document whose own blobs are not all present is never returned, so no reader
sees a checkpoint with missing values.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import threading
import uuid
from collections import OrderedDict
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosItemTooLargeError,
    CosmosOperationError,
    CosmosSaverError,
    CosmosThrottledError,
    CosmosUnavailableError,
)

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer
    from agentstate_reducer.langgraph.saver import CheckpointReduction

__all__ = ["PARTITION_KEY_PATH", "BaseCosmosDBSaver"]

# --------------------------------------------------------------------------------------------
# Constants: document schema, sizes, queries
# --------------------------------------------------------------------------------------------

PARTITION_KEY_PATH = "/pk"
"""Partition key path of the checkpoint container."""

ENDPOINT_ENV = "COSMOSDB_ENDPOINT"
KEY_ENV = "COSMOSDB_KEY"

KIND_HEAD = "head"
KIND_CHECKPOINT = "checkpoint"
KIND_BLOB = "blob"
KIND_CHUNK = "chunk"
KIND_WRITES = "writes"
KIND_WRITE_VALUE = "write_value"
KIND_VALUES = "values"

SCHEMA_VERSION = 1

CHUNK_BYTES = 1_000_000
"""Serialized bytes per document; base64 makes this 1.33 MB, under the 2 MB item limit."""

INLINE_PRIMITIVE_BYTES = 1024
"""Primitive channel values up to this size live in the checkpoint document, as in PostgresSaver."""

HEAD_CACHE_BYTES = 1_000_000
"""Budget of encoded channel values copied into the head document."""

OWN_VALUE_BYTES = 256 * 1024
"""Encoded new values up to this size are stored inside their checkpoint document..."""

OWN_VALUES_BYTES = 1_000_000
"""... as long as that document's own values stay within this budget."""

WRITE_INLINE_BYTES = 32 * 1024
"""Pending-write values larger than this get their own document."""

WRITES_DOC_BYTES = 1_800_000
"""Largest writes document the saver will send (the service limit is 2 MB)."""

BATCH_MAX_OPS = 100
"""Operations per transactional batch (the service's limit)."""

BATCH_BYTES = 1_800_000
"""Largest batch the saver sends (the service limits a batch request to 2 MB)."""

CAS_ATTEMPTS = 16
"""Optimistic-concurrency retries for the head and writes documents."""

_SYSTEM_FIELDS = ("_rid", "_self", "_etag", "_ts", "_attachments", "_lsn")

# Every query is parameterised; clauses are appended in this order.
SELECT_CHECKPOINTS_SQL = "SELECT * FROM c WHERE c.kind = 'checkpoint'"
SELECT_TOP_CHECKPOINTS_SQL = "SELECT TOP @limit * FROM c WHERE c.kind = 'checkpoint'"
WHERE_THREAD_SQL = " AND c.pk = @pk AND c.thread_id = @thread_id"
WHERE_NS_SQL = " AND c.ns = @ns"
WHERE_CHECKPOINT_ID_SQL = " AND c.checkpoint_id = @checkpoint_id"
WHERE_BEFORE_SQL = " AND c.checkpoint_id < @before"
WHERE_METADATA_SQL = " AND c.metadata[@mk{i}] = @mv{i}"
ORDER_NEWEST_FIRST_SQL = " ORDER BY c.checkpoint_id DESC"

SELECT_THREAD_DOCS_SQL = "SELECT * FROM c WHERE c.pk = @pk AND c.thread_id = @thread_id"
SELECT_THREAD_INDEX_SQL = (
    "SELECT c.id, c.kind, c.ns, c.checkpoint_id, c.versions, c.origins, c.inline, c.empty,"
    " c.blob_id"
    " FROM c WHERE c.pk = @pk AND c.thread_id = @thread_id"
)
SELECT_RUN_CHECKPOINTS_SQL = (
    "SELECT c.id, c.pk, c.thread_id, c.ns, c.checkpoint_id FROM c"
    " WHERE c.kind = 'checkpoint' AND ARRAY_CONTAINS(@run_ids, c.metadata.run_id)"
)
SELECT_LATEST_IN_NS_SQL = (
    "SELECT TOP 1 * FROM c WHERE c.kind = 'checkpoint' AND c.pk = @pk"
    " AND c.thread_id = @thread_id AND c.ns = @ns ORDER BY c.checkpoint_id DESC"
)
# --------------------------------------------------------------------------------------------
# Storage operations yielded by the operation generators
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """Point-read one document; result: the document, or None when it does not exist."""

    id: str
    pk: str


@dataclass(frozen=True)
class Upsert:
    """Create or replace a document; result: the stored document."""

    doc: dict[str, Any]


@dataclass(frozen=True)
class Create:
    """Create a document; result: the stored document, or CONFLICT if the id exists."""

    doc: dict[str, Any]


@dataclass(frozen=True)
class Replace:
    """Replace a document if its etag still matches; result: the document or PRECONDITION_FAILED.

    PRECONDITION_FAILED is also the result when the document no longer exists.
    """

    doc: dict[str, Any]
    etag: str


@dataclass(frozen=True)
class Delete:
    """Delete a document; result: True, or False when it did not exist."""

    id: str
    pk: str


@dataclass(frozen=True)
class Query:
    """Run a parameterised query; result: every matching document.

    ``pk`` None means a cross-partition query (never used on a hot path).
    """

    sql: str
    parameters: tuple[tuple[str, Any], ...]
    pk: str | None


@dataclass(frozen=True)
class Batch:
    """Apply operations in one partition atomically (a transactional batch).

    Result: one result per operation (the stored or read document), or PRECONDITION_FAILED /
    CONFLICT when an operation failed for that reason, in which case none was applied.
    """

    pk: str
    ops: tuple[Upsert | Create | Replace | Read | Delete, ...]


@dataclass(frozen=True)
class Emit:
    """Not storage: hand one result to the caller of a streaming operation (list)."""

    value: CheckpointTuple


CONFLICT = "conflict"
PRECONDITION_FAILED = "precondition_failed"

Op = Union[Read, Upsert, Create, Replace, Delete, Query, Batch]  # noqa: UP007 (runtime alias)
Step = Union[Op, Sequence[Op], Emit]  # noqa: UP007
Ops = Generator[Step, Any, Any]

# --------------------------------------------------------------------------------------------
# Ids, encoding, chunking
# --------------------------------------------------------------------------------------------


def digest(*parts: object) -> str:
    """Return a 32-character url-safe id fragment for ``parts`` (a 192-bit SHA-256 prefix)."""
    raw = json.dumps([str(p) for p in parts], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(raw.encode("utf-8")).digest()[:24]).decode()


def partition_key(thread_id: str) -> str:
    """Partition key value of a thread: all of its documents share it."""
    return digest("thread", thread_id)


def head_id(ns: str) -> str:
    """Id of the head document of one namespace."""
    return "h." + digest(ns)


def checkpoint_doc_id(ns: str, checkpoint_id: str) -> str:
    """Id of a checkpoint document."""
    return "c." + digest(ns, checkpoint_id)


def blob_id(ns: str, channel: str, version: str) -> str:
    """Id of the document holding one channel value at one version."""
    return "b." + digest(ns, channel, version)


def writes_doc_id(ns: str, checkpoint_id: str) -> str:
    """Id of the pending-writes document of one checkpoint."""
    return "w." + digest(ns, checkpoint_id)


def write_value_id(ns: str, checkpoint_id: str, task_id: str, idx: int, call: str) -> str:
    """Id of the document holding one large pending-write value of one put_writes call."""
    return "v." + digest(ns, checkpoint_id, task_id, idx, call)


def chunk_id(base_id: str, index: int) -> str:
    """Id of the ``index``-th continuation chunk (1-based) of a large value."""
    return f"{base_id}.{index}"


def b64(data: bytes) -> str:
    """Encode bytes for a JSON document."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """Decode :func:`b64`."""
    return base64.b64decode(text)


def split_chunks(data: bytes) -> list[bytes]:
    """Split serialized bytes into pieces of at most CHUNK_BYTES (at least one piece)."""
    if len(data) <= CHUNK_BYTES:
        return [data]
    return [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]


def json_safe(value: Any) -> Any:
    """Return the part of ``value`` that Cosmos DB stores exactly, for metadata filters.

    Integers beyond 2**53 and non-JSON values are dropped (the typed copy keeps them).
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 else _DROP
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else _DROP
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            safe = json_safe(v)
            if safe is not _DROP and isinstance(k, str):
                out[k] = safe
        return out
    if isinstance(value, (list, tuple)):
        items = [json_safe(v) for v in value]
        return [v for v in items if v is not _DROP]
    return _DROP


_DROP = object()


def metadata_matches(metadata: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """PostgreSQL ``metadata @> filter`` containment, evaluated in Python."""
    return all(k in metadata and _contains(metadata[k], v) for k, v in filter.items())


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _contains(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return all(any(_contains(a, e) for a in actual) for e in expected)
    return bool(actual == expected and type(actual) is type(expected)) or (
        isinstance(actual, (int, float))
        and isinstance(expected, (int, float))
        and not isinstance(actual, bool)
        and not isinstance(expected, bool)
        and actual == expected
    )


def _pushdown_value(value: Any) -> bool:
    """Whether a metadata filter value can be compared exactly inside a Cosmos query."""
    if isinstance(value, (bool, str)):
        return True
    return isinstance(value, int) and abs(value) <= 2**53


def strip_system_fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Copy a stored document without the fields the service adds."""
    return {k: v for k, v in doc.items() if k not in _SYSTEM_FIELDS}


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientSettings:
    """How a saver reaches its container (validated; the credential is never shown)."""

    endpoint: str | None
    credential: Any = field(repr=False)
    key_auth: bool
    database_name: str
    container_name: str
    create_if_missing: bool
    verify: bool | str


def resolve_settings(
    *,
    database_name: str,
    container_name: str,
    endpoint: str | None,
    credential: Any,
    has_client: bool,
    create_if_missing: bool | None,
    connection_verify: bool | str,
) -> ClientSettings:
    """Validate construction arguments, filling endpoint and key from the environment.

    Raises:
        CosmosConfigurationError: A name is empty, ``client=`` is combined with ``endpoint=`` or
            ``credential=``, or no endpoint or credential is given or set in the environment.
    """
    for label, value in (("database_name", database_name), ("container_name", container_name)):
        if not isinstance(value, str) or not value:
            raise CosmosConfigurationError(f"{label} must be a non-empty string, got {value!r}")
    if not isinstance(connection_verify, (bool, str)):
        raise CosmosConfigurationError(
            "connection_verify must be True, False or the path of a CA bundle, "
            f"got {type(connection_verify).__name__}"
        )
    if has_client:
        if endpoint is not None or credential is not None:
            raise CosmosConfigurationError(
                "pass either client= or endpoint=/credential=, not both: the saver uses the "
                "client as given"
            )
        return ClientSettings(
            endpoint=None,
            credential=None,
            key_auth=False,
            database_name=database_name,
            container_name=container_name,
            create_if_missing=bool(create_if_missing),
            verify=connection_verify,
        )
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV) or None
    if endpoint is None:
        raise CosmosConfigurationError(
            f"no Cosmos DB endpoint: pass endpoint= or set {ENDPOINT_ENV} "
            "(e.g. https://<account>.documents.azure.com:443/)"
        )
    if credential is None:
        credential = os.environ.get(KEY_ENV) or None
    if credential is None:
        raise CosmosConfigurationError(
            f"no Cosmos DB credential: pass credential= (an account key or an azure-identity "
            f"TokenCredential) or set {KEY_ENV}"
        )
    key_auth = isinstance(credential, str)
    return ClientSettings(
        endpoint=endpoint,
        credential=credential,
        key_auth=key_auth,
        database_name=database_name,
        container_name=container_name,
        create_if_missing=key_auth if create_if_missing is None else create_if_missing,
        verify=connection_verify,
    )


def missing_container_message(settings: ClientSettings, what: str) -> str:
    """Say exactly what to create when the database or container is missing."""
    return (
        f"Cosmos DB {what} not found: database {settings.database_name!r}, container "
        f"{settings.container_name!r}. Create the container with partition key path "
        f"'{PARTITION_KEY_PATH}' (for example: az cosmosdb sql container create "
        f"--database-name {settings.database_name} --name {settings.container_name} "
        f"--partition-key-path {PARTITION_KEY_PATH} ...), or build the saver with an account "
        "key (or create_if_missing=True) to let it create them."
    )


def wrong_partition_key_message(settings: ClientSettings, paths: object) -> str:
    """Explain a container created with another partition key."""
    return (
        f"container {settings.container_name!r} has partition key {paths!r}; the saver needs "
        f"partition key path '{PARTITION_KEY_PATH}'. Use another container or recreate it."
    )


def tls_hook(verify: bool | str, user_hook: Any = None) -> Any:
    """Return a ``raw_request_hook`` that keeps TLS verification as configured.

    The SDK turns certificate verification off by itself for ``localhost`` and ``127.0.0.1``;
    this hook restores the saver's setting on every request (and then calls ``user_hook``).
    """

    def hook(request: Any) -> None:
        request.context.options["connection_verify"] = verify
        request.context.options.pop("connection_cert", None)
        if user_hook is not None:
            user_hook(request)

    return hook


_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def proxy_env_present() -> bool:
    """Whether proxy environment variables are set.

    Without them the saver's transport skips reading the environment on every request (which
    costs about half a millisecond per request in ``requests``).
    """
    return any(os.environ.get(name) for name in _PROXY_ENV)


def requests_verify(verify: bool | str) -> bool | str:
    """The ``verify`` value for ``requests``: a CA bundle from the environment when True."""
    if verify is True:
        return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    return verify


def scrub(text: str, secret: Any) -> str:
    """Remove ``secret`` (an account key) from ``text``."""
    if isinstance(secret, str) and len(secret) >= 8:
        text = text.replace(secret, "***")
    return text


# --------------------------------------------------------------------------------------------
# Head cache: what this process last knew of each head document
# --------------------------------------------------------------------------------------------


@dataclass
class HeadState:
    """The last head document this process saw or wrote for one (thread, namespace)."""

    checkpoint_id: str
    etag: str
    doc: dict[str, Any]
    size: int = 0

    @property
    def cached(self) -> dict[str, list[Any]]:
        return cast(dict[str, list[Any]], self.doc.get("cached") or {})

    @property
    def versions(self) -> dict[str, str]:
        return cast(dict[str, str], self.doc.get("versions") or {})

    @property
    def empty(self) -> frozenset[str]:
        return frozenset(self.doc.get("empty") or ())


class HeadCache:
    """A thread-safe LRU of :class:`HeadState`, keyed by (pk, thread_id, ns), bounded in bytes."""

    def __init__(self, max_bytes: int = 64_000_000, max_entries: int = 4096) -> None:
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._bytes = 0
        self._data: OrderedDict[tuple[str, str, str], HeadState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> HeadState | None:
        with self._lock:
            state = self._data.get(key)
            if state is not None:
                self._data.move_to_end(key)
            return state

    def set(self, key: tuple[str, str, str], state: HeadState) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._data[key] = state
            self._bytes += state.size
            while self._data and (
                self._bytes > self._max_bytes or len(self._data) > self._max_entries
            ):
                _, evicted = self._data.popitem(last=False)
                self._bytes -= evicted.size

    def drop(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old.size

    def drop_thread(self, pk: str, thread_id: str) -> None:
        with self._lock:
            for key in [k for k in self._data if k[0] == pk and k[1] == thread_id]:
                self._bytes -= self._data.pop(key).size


# --------------------------------------------------------------------------------------------
# The shared saver base
# --------------------------------------------------------------------------------------------


class BaseCosmosDBSaver(BaseCheckpointSaver[str]):
    """Document building and the operation generators shared by both Cosmos DB savers."""

    message_reduction: CheckpointReduction | None
    ttl: int | None

    def __init__(
        self,
        *,
        serde: SerializerProtocol | None = None,
        reducer: MessageReducer | None = None,
        messages_key: str = "messages",
        ttl: int | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0):
            raise CosmosConfigurationError(f"ttl must be a positive number of seconds, got {ttl!r}")
        self.ttl = ttl
        self.message_reduction = _make_reduction(reducer, messages_key, self.get_next_version)
        self._heads = HeadCache()

    # -- documents -----------------------------------------------------------------------------

    def _stamp(self, doc: dict[str, Any]) -> dict[str, Any]:
        if self.ttl is not None:
            doc["ttl"] = self.ttl
        return doc

    def _value_docs(
        self,
        base: dict[str, Any],
        type_: str,
        data: bytes | None,
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Split one serialized value into (continuation chunk documents, base document)."""
        chunks = split_chunks(data) if data is not None else [b""]
        base_doc = dict(base)
        base_doc.update(
            type=type_,
            data=b64(chunks[0]) if data is not None else None,
            chunks=len(chunks),
        )
        extra = [
            self._stamp(
                {
                    "id": chunk_id(base["id"], i),
                    "pk": base["pk"],
                    "thread_id": base["thread_id"],
                    "kind": KIND_CHUNK,
                    "blob_id": base["id"],
                    "ns": base["ns"],
                    "data": b64(piece),
                }
            )
            for i, piece in enumerate(chunks[1:], start=1)
        ]
        return extra, self._stamp(base_doc)

    def _load_value(self, doc: Mapping[str, Any]) -> Ops:
        """Rebuild the serialized value of a blob or write-value document (reads its chunks)."""
        if doc.get("data") is None:
            return None
        parts = [unb64(doc["data"])]
        count = int(doc.get("chunks", 1))
        if count > 1:
            chunk_docs = yield [Read(chunk_id(doc["id"], i), doc["pk"]) for i in range(1, count)]
            for i, chunk in enumerate(chunk_docs, start=1):
                if chunk is None:
                    raise CosmosItemTooLargeError(
                        f"chunk {i} of {count} of document {doc['id']!r} is missing; the value "
                        "cannot be rebuilt"
                    )
                parts.append(unb64(chunk["data"]))
        return self.serde.loads_typed((doc["type"], b"".join(parts)))

    # -- put -----------------------------------------------------------------------------------

    def _put_ops(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Ops:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        pk = partition_key(thread_id)
        checkpoint_id = checkpoint["id"]
        values = checkpoint["channel_values"]

        inline: dict[str, list[Any]] = {}
        encoded: dict[str, list[Any]] = {}
        for channel, value in values.items():
            if value is None or isinstance(value, (str, int, float, bool)):
                type_, data = self.serde.dumps_typed(value)
                if len(data) <= INLINE_PRIMITIVE_BYTES:
                    inline[channel] = [type_, b64(data)]

        key = (pk, thread_id, ns)
        state = self._heads.get(key)
        versions = {ch: str(v) for ch, v in checkpoint["channel_versions"].items()}
        own_id = checkpoint_doc_id(ns, checkpoint_id)

        # New values of small channels live in the checkpoint document itself; big ones in
        # blob documents (chunked past CHUNK_BYTES). Either way each version is stored once.
        chunk_docs: list[dict[str, Any]] = []
        blob_docs: list[dict[str, Any]] = []
        empty: list[str] = []
        own_values: dict[str, list[Any]] = {}
        origins: dict[str, str] = {}
        budget = OWN_VALUES_BYTES
        for channel, version in new_versions.items():
            if channel in inline:
                continue
            if channel not in values:
                # No document: a version without a value reads as absent, as an "empty" blob
                # does in PostgresSaver.
                empty.append(channel)
                continue
            type_, data = self.serde.dumps_typed(values[channel])
            enc = [type_, b64(data)]
            if len(data) <= HEAD_CACHE_BYTES:
                encoded[channel] = enc
            if len(enc[1]) <= OWN_VALUE_BYTES and len(enc[1]) <= budget:
                budget -= len(enc[1])
                own_values[channel] = enc
                origins[channel] = own_id
                continue
            base = {
                "id": blob_id(ns, channel, str(version)),
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_BLOB,
                "ns": ns,
                "channel": channel,
                "version": str(version),
            }
            extra, doc = self._value_docs(base, type_, data)
            chunk_docs.extend(extra)
            blob_docs.append(doc)
            origins[channel] = base["id"]

        # Unchanged channels point where the parent found them.
        inherited = [
            ch for ch in versions if ch not in inline and ch not in origins and ch not in empty
        ]
        if inherited:
            parent_doc: Mapping[str, Any] | None = None
            if state is not None and parent_id and state.checkpoint_id == parent_id:
                parent_doc = state.doc
            elif parent_id:
                parent_doc = yield Read(checkpoint_doc_id(ns, str(parent_id)), pk)
            for channel in inherited:
                version = versions[channel]
                found = _origin_in(parent_doc, channel, version)
                if found == _EMPTY:
                    empty.append(channel)
                else:
                    origins[channel] = found or blob_id(ns, channel, version)

        body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        ser_type, ser = self.serde.dumps_typed(body)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        meta_type, meta_ser = self.serde.dumps_typed(meta)
        cp_doc = self._stamp(
            {
                "id": own_id,
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_CHECKPOINT,
                "schema": SCHEMA_VERSION,
                "ns": ns,
                "checkpoint_id": checkpoint_id,
                "parent_checkpoint_id": parent_id,
                "checkpoint": [ser_type, b64(ser)],
                "metadata": json_safe(meta),
                "metadata_typed": [meta_type, b64(meta_ser)],
                "inline": inline,
                "values": own_values,
                "versions": versions,
                "origins": origins,
                "empty": sorted(empty),
                "own": [d["id"] for d in blob_docs],
            }
        )

        head_doc, complete = self._head_doc(cp_doc, values, encoded, state)

        # Chunks go before the blob documents that announce them. A checkpoint document whose
        # own blobs are not all present reads as not written (see _load_tuples_ops).
        if chunk_docs:
            yield [Upsert(d) for d in chunk_docs]
        writes: list[Upsert] = [*(Upsert(d) for d in blob_docs), Upsert(cp_doc)]
        if complete and state is not None and checkpoint_id >= state.checkpoint_id:
            # One atomic transactional batch: values, checkpoint and head, or nothing.
            batch: list[Upsert | Replace] = [*writes, Replace(head_doc, state.etag)]
            if len(batch) <= BATCH_MAX_OPS and _batch_size(batch) <= BATCH_BYTES:
                self._heads.drop(key)
                results = yield Batch(pk, tuple(batch))
                if results not in (PRECONDITION_FAILED, CONFLICT):
                    self._remember_head(key, results[-1])
                    return _stored_config(thread_id, ns, checkpoint_id)
                # Another writer moved the head; nothing was written. Take the ordered path.
        self._heads.drop(key)
        yield writes
        yield from self._advance_head_ops(key, cp_doc, values, encoded)
        return _stored_config(thread_id, ns, checkpoint_id)

    def _head_doc(
        self,
        cp_doc: Mapping[str, Any],
        values: Mapping[str, Any],
        encoded: dict[str, list[Any]],
        previous: HeadState | None,
    ) -> tuple[dict[str, Any], bool]:
        """Build the head document: the checkpoint document plus the values that fit.

        Returns:
            The document, and whether it alone holds every value of the checkpoint.
        """
        versions: dict[str, str] = cp_doc["versions"]
        inline: dict[str, Any] = cp_doc["inline"]
        own: dict[str, Any] = cp_doc["values"]
        cached: dict[str, list[Any]] = {}
        empty = set(cp_doc["empty"])
        budget = HEAD_CACHE_BYTES - sum(len(v[1]) for v in own.values())
        complete = True
        for channel, version in versions.items():
            if channel in inline or channel in empty or channel in own:
                continue
            if channel not in values:
                if (
                    previous is not None
                    and previous.versions.get(channel) == version
                    and channel in previous.empty
                ):
                    empty.add(channel)
                else:
                    complete = False
                continue
            enc = encoded.get(channel)
            if (
                enc is None
                and previous is not None
                and previous.versions.get(channel) == version
                and channel in previous.cached
            ):
                enc = previous.cached[channel]
            if enc is None:
                type_, data = self.serde.dumps_typed(values[channel])
                enc = [type_, b64(data)] if len(data) <= HEAD_CACHE_BYTES else None
            if enc is None or len(enc[1]) > budget:
                complete = False
                continue
            budget -= len(enc[1])
            cached[channel] = enc
        doc = {k: v for k, v in cp_doc.items() if k not in ("id", "kind", "ttl")}
        doc.update(id=head_id(cp_doc["ns"]), kind=KIND_HEAD, cached=cached, empty=sorted(empty))
        return self._stamp(doc), complete

    def _advance_head_ops(
        self,
        key: tuple[str, str, str],
        cp_doc: dict[str, Any],
        values: Mapping[str, Any],
        encoded: dict[str, list[Any]],
    ) -> Ops:
        """Point the head at ``cp_doc`` (already stored) unless it holds a newer checkpoint.

        Compare-and-swap on the head's etag, so concurrent writers never move it backwards.
        """
        pk, thread_id, ns = key
        checkpoint_id = cp_doc["checkpoint_id"]
        state: HeadState | None = None
        for _ in range(CAS_ATTEMPTS):
            current = yield Read(head_id(ns), pk)
            if current is None or current.get("thread_id") != thread_id:
                doc, _ = self._head_doc(cp_doc, values, encoded, None)
                stored = yield Create(doc)
                if stored == CONFLICT:
                    continue
                self._remember_head(key, stored)
                return
            state = self._state_of(current)
            if checkpoint_id < state.checkpoint_id:
                return
            doc, _ = self._head_doc(cp_doc, values, encoded, state)
            stored = yield Replace(doc, state.etag)
            if stored == PRECONDITION_FAILED:
                continue
            self._remember_head(key, stored)
            return
        raise CosmosOperationError(
            f"could not update the head of thread {thread_id!r} after {CAS_ATTEMPTS} attempts: "
            "too many concurrent writers to one thread and namespace"
        )

    @staticmethod
    def _state_of(doc: Mapping[str, Any]) -> HeadState:
        held = [*(doc.get("cached") or {}).values(), *(doc.get("values") or {}).values()]
        size = sum(len(v[1]) for v in held) + len(doc["checkpoint"][1]) + 2048
        return HeadState(
            checkpoint_id=doc["checkpoint_id"], etag=doc["_etag"], doc=dict(doc), size=size
        )

    def _remember_head(self, key: tuple[str, str, str], doc: Mapping[str, Any]) -> None:
        self._heads.set(key, self._state_of(doc))

    # -- put_writes ----------------------------------------------------------------------------

    def _put_writes_ops(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Ops:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = str(configurable["checkpoint_id"])
        pk = partition_key(thread_id)
        overwrite = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        # Large values of this call get ids of their own, so that a call whose entries are
        # dropped (the first write of a task and index wins) cannot replace a kept value.
        call = uuid.uuid4().hex

        entries: list[dict[str, Any]] = []
        value_chunks: list[dict[str, Any]] = []
        value_docs: list[dict[str, Any]] = []
        for idx, (channel, value) in enumerate(writes):
            real_idx = WRITES_IDX_MAP.get(channel, idx)
            type_, data = self.serde.dumps_typed(value)
            entry: dict[str, Any] = {
                "task_id": task_id,
                "task_path": task_path,
                "idx": real_idx,
                "channel": channel,
                "type": type_,
            }
            if len(data) <= WRITE_INLINE_BYTES:
                entry["data"] = b64(data)
            else:
                base = {
                    "id": write_value_id(ns, checkpoint_id, task_id, real_idx, call),
                    "pk": pk,
                    "thread_id": thread_id,
                    "kind": KIND_WRITE_VALUE,
                    "ns": ns,
                    "checkpoint_id": checkpoint_id,
                }
                extra, doc = self._value_docs(base, type_, data)
                value_chunks.extend(extra)
                value_docs.append(doc)
                entry["ref"] = base["id"]
            entries.append(entry)

        if value_chunks:
            yield [Upsert(d) for d in value_chunks]
        if value_docs:
            yield [Upsert(d) for d in value_docs]

        doc_id = writes_doc_id(ns, checkpoint_id)
        fresh = self._stamp(
            {
                "id": doc_id,
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_WRITES,
                "ns": ns,
                "checkpoint_id": checkpoint_id,
                "writes": entries,
            }
        )
        _check_writes_size(fresh)
        stored = yield Create(fresh)
        if stored != CONFLICT:
            return
        for _ in range(CAS_ATTEMPTS):
            current = yield Read(doc_id, pk)
            if current is None:
                stored = yield Create(fresh)
                if stored != CONFLICT:
                    return
                continue
            merged = _merge_writes(current.get("writes") or [], entries, overwrite)
            if merged is None:
                return
            doc = strip_system_fields(current)
            doc["writes"] = merged
            _check_writes_size(doc)
            stored = yield Replace(self._stamp(doc), current["_etag"])
            if stored != PRECONDITION_FAILED:
                return
        raise CosmosOperationError(
            f"could not record writes for checkpoint {checkpoint_id!r} after {CAS_ATTEMPTS} "
            "attempts: too many concurrent writers to one checkpoint"
        )

    # -- reads ---------------------------------------------------------------------------------

    def _get_tuple_ops(self, config: RunnableConfig) -> Ops:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        pk = partition_key(thread_id)
        key = (pk, thread_id, ns)
        checkpoint_id = get_checkpoint_id(config)
        known: dict[str, Any] = {}
        if checkpoint_id:
            doc = yield Read(checkpoint_doc_id(ns, checkpoint_id), pk)
            if doc is not None and doc.get("kind") != KIND_CHECKPOINT:
                doc = None  # a pruned checkpoint kept only as the holder of values
        else:
            state = self._heads.get(key)
            if state is None:
                doc = yield Read(head_id(ns), pk)
            else:
                # Read the writes of the head this process last saw in the same round trip;
                # they are the right ones unless another writer moved the head since.
                expected = writes_doc_id(ns, state.checkpoint_id)
                doc, writes = yield [Read(head_id(ns), pk), Read(expected, pk)]
                if doc is not None and doc.get("checkpoint_id") == state.checkpoint_id:
                    known[expected] = writes
            if doc is not None and doc.get("thread_id") == thread_id:
                self._remember_head(key, doc)
        if doc is None or doc.get("thread_id") != thread_id:
            return None
        tuples = yield from self._load_tuples_ops([doc], known)
        return tuples[0]

    def _load_tuples_ops(
        self, docs: Sequence[Mapping[str, Any]], known: Mapping[str, Any] | None = None
    ) -> Ops:
        """Turn checkpoint (or head) documents into CheckpointTuples: reads blobs and writes.

        ``known`` maps writes-document ids already read to their result.
        """
        known = known or {}
        needed: dict[str, str] = {}
        for doc in docs:
            own_id = checkpoint_doc_id(doc["ns"], doc["checkpoint_id"])
            for channel, version in doc["versions"].items():
                origin = _origin_of(doc, channel, version)
                if origin is not None and origin != own_id:
                    needed[origin] = doc["pk"]
        writes_ids = [(writes_doc_id(d["ns"], d["checkpoint_id"]), d["pk"]) for d in docs]
        to_read = [(i, pk) for i, pk in writes_ids if i not in known]
        reads: list[Op] = [Read(i, pk) for i, pk in needed.items()]
        reads += [Read(i, pk) for i, pk in to_read]
        results = (yield reads) if reads else []
        origin_docs: dict[str, Any] = {}
        blobs: dict[str, Any] = {}
        for origin_id, origin_doc in zip(needed, results[: len(needed)], strict=True):
            if origin_doc is None:
                continue
            origin_docs[origin_id] = origin_doc
            if origin_doc["kind"] in (KIND_BLOB, KIND_WRITE_VALUE):
                blobs[origin_id] = yield from self._load_value(origin_doc)
        fetched = dict(known)
        fetched.update(zip((i for i, _ in to_read), results[len(needed) :], strict=True))
        writes_docs = [fetched[i] for i, _ in writes_ids]

        tuples: list[CheckpointTuple | None] = []
        for doc, writes_doc in zip(docs, writes_docs, strict=True):
            if doc["kind"] == KIND_CHECKPOINT and any(b not in blobs for b in doc.get("own", ())):
                # A put that failed between its blobs and its checkpoint: not a checkpoint.
                tuples.append(None)
                continue
            ns = doc["ns"]
            own_id = checkpoint_doc_id(ns, doc["checkpoint_id"])
            values: dict[str, Any] = {}
            for channel, version in doc["versions"].items():
                if channel in doc["inline"]:
                    values[channel] = self._decode(doc["inline"][channel])
                    continue
                if channel in (doc.get("cached") or {}):
                    values[channel] = self._decode(doc["cached"][channel])
                    continue
                origin = _origin_of(doc, channel, version)
                if origin is None:
                    continue
                if origin == own_id:
                    values[channel] = self._decode(doc["values"][channel])
                elif origin in blobs:
                    values[channel] = blobs[origin]
                elif origin in origin_docs:
                    holder = origin_docs[origin]
                    if (holder.get("versions") or {}).get(channel) == version and channel in (
                        holder.get("values") or {}
                    ):
                        values[channel] = self._decode(holder["values"][channel])
            body_type, body = doc["checkpoint"]
            checkpoint = cast(Checkpoint, self.serde.loads_typed((body_type, unb64(body))))
            checkpoint["channel_values"] = values
            meta_type, meta = doc["metadata_typed"]
            metadata = cast(CheckpointMetadata, self.serde.loads_typed((meta_type, unb64(meta))))
            pending = yield from self._load_writes_ops(writes_doc)
            thread_id = doc["thread_id"]
            parent = doc.get("parent_checkpoint_id")
            tuples.append(
                CheckpointTuple(
                    config={
                        "configurable": {
                            "thread_id": thread_id,
                            "checkpoint_ns": ns,
                            "checkpoint_id": doc["checkpoint_id"],
                        }
                    },
                    checkpoint=checkpoint,
                    metadata=metadata,
                    parent_config=(
                        {
                            "configurable": {
                                "thread_id": thread_id,
                                "checkpoint_ns": ns,
                                "checkpoint_id": parent,
                            }
                        }
                        if parent
                        else None
                    ),
                    pending_writes=pending,
                )
            )
        return tuples

    def _decode(self, encoded: Sequence[Any]) -> Any:
        type_, data = encoded
        return self.serde.loads_typed((type_, unb64(data)))

    def _load_writes_ops(self, writes_doc: Mapping[str, Any] | None) -> Ops:
        if writes_doc is None:
            return []
        entries = sorted(
            writes_doc.get("writes") or [],
            key=lambda e: writes_sort_key(e["task_path"], e["task_id"], int(e["idx"])),
        )
        refs = [e["ref"] for e in entries if "ref" in e]
        ref_docs = (yield [Read(r, writes_doc["pk"]) for r in refs]) if refs else []
        by_ref = dict(zip(refs, ref_docs, strict=True))
        pending: list[PendingWrite] = []
        for entry in entries:
            if "ref" in entry:
                ref_doc = by_ref.get(entry["ref"])
                if ref_doc is None:
                    continue
                value = yield from self._load_value(ref_doc)
            else:
                value = self.serde.loads_typed((entry["type"], unb64(entry["data"])))
            pending.append((entry["task_id"], entry["channel"], value))
        return pending

    def _list_ops(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Ops:
        sql_parts: list[str] = []
        params: list[tuple[str, Any]] = []
        pk: str | None = None
        if config is not None:
            configurable = config.get("configurable", {})
            if "thread_id" in configurable:
                thread_id = str(configurable["thread_id"])
                pk = partition_key(thread_id)
                sql_parts.append(WHERE_THREAD_SQL)
                params += [("@pk", pk), ("@thread_id", thread_id)]
            if configurable.get("checkpoint_ns") is not None:
                sql_parts.append(WHERE_NS_SQL)
                params.append(("@ns", str(configurable["checkpoint_ns"])))
            if checkpoint_id := get_checkpoint_id(config):
                sql_parts.append(WHERE_CHECKPOINT_ID_SQL)
                params.append(("@checkpoint_id", checkpoint_id))
        if before is not None and (before_id := get_checkpoint_id(before)):
            sql_parts.append(WHERE_BEFORE_SQL)
            params.append(("@before", before_id))
        exact_pushdown = True
        for i, (key, value) in enumerate((filter or {}).items()):
            if _pushdown_value(value):
                sql_parts.append(WHERE_METADATA_SQL.format(i=i))
                params += [(f"@mk{i}", key), (f"@mv{i}", value)]
            else:
                exact_pushdown = False
        if limit is not None and limit <= 0:
            return
        head_sql = SELECT_CHECKPOINTS_SQL
        if limit is not None and exact_pushdown:
            head_sql = SELECT_TOP_CHECKPOINTS_SQL
            params.append(("@limit", int(limit)))
        sql = head_sql + "".join(sql_parts) + ORDER_NEWEST_FIRST_SQL
        docs = yield Query(sql, tuple(params), pk)
        remaining = limit
        page = 32
        for start in range(0, len(docs), page):
            batch = docs[start : start + page]
            tuples = yield from self._load_tuples_ops(batch)
            for tup in tuples:
                if tup is None:
                    continue
                if filter and not metadata_matches(tup.metadata, filter):
                    continue
                yield Emit(tup)
                if remaining is not None:
                    remaining -= 1
                    if remaining <= 0:
                        return

    # -- maintenance ---------------------------------------------------------------------------

    def _thread_documents_ops(self, thread_id: str) -> Ops:
        thread_id = str(thread_id)
        pk = partition_key(thread_id)
        docs: list[dict[str, Any]] = yield Query(
            SELECT_THREAD_DOCS_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
        )
        return docs

    def _delete_thread_ops(self, thread_id: str) -> Ops:
        thread_id = str(thread_id)
        pk = partition_key(thread_id)
        self._heads.drop_thread(pk, thread_id)
        docs = yield Query(SELECT_THREAD_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk)
        # Heads first, then checkpoints, then what they point at: readers never see a dangling
        # reference while the deletion is under way.
        order = {KIND_HEAD: 0, KIND_CHECKPOINT: 1}
        yield from _delete_batches(docs, pk, order)
        self._heads.drop_thread(pk, thread_id)

    def _copy_thread_ops(self, source_thread_id: str, target_thread_id: str) -> Ops:
        source, target = str(source_thread_id), str(target_thread_id)
        src_pk, dst_pk = partition_key(source), partition_key(target)
        docs = yield Query(
            SELECT_THREAD_DOCS_SQL, (("@pk", src_pk), ("@thread_id", source)), src_pk
        )
        if not docs:
            return
        self._heads.drop_thread(dst_pk, target)
        stages: list[list[Op]] = [[], [], [], []]
        stage_of = {KIND_CHUNK: 0, KIND_CHECKPOINT: 2, KIND_HEAD: 3}
        for doc in docs:
            copy = strip_system_fields(doc)
            copy.update(pk=dst_pk, thread_id=target)
            self._stamp(copy)
            stages[stage_of.get(doc["kind"], 1)].append(Upsert(copy))
        for stage in stages:
            for i in range(0, len(stage), 64):
                yield stage[i : i + 64]
        self._heads.drop_thread(dst_pk, target)

    def _prune_ops(self, thread_ids: Sequence[str], strategy: str) -> Ops:
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                yield from self._delete_thread_ops(thread_id)
                continue
            thread_id = str(thread_id)
            pk = partition_key(thread_id)
            docs = yield Query(
                SELECT_THREAD_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
            )
            latest: dict[str, Mapping[str, Any]] = {}
            for doc in docs:
                if doc["kind"] == KIND_CHECKPOINT:
                    best = latest.get(doc["ns"])
                    if best is None or doc["checkpoint_id"] > best["checkpoint_id"]:
                        latest[doc["ns"]] = doc
            keep = {(d["ns"], d["checkpoint_id"]) for d in latest.values()}
            yield from self._drop_checkpoints_ops(
                pk, docs, lambda d, keep=keep: (d["ns"], d["checkpoint_id"]) not in keep
            )

    def _drop_checkpoints_ops(
        self,
        pk: str,
        docs: Sequence[Mapping[str, Any]],
        doomed: Any,
    ) -> Ops:
        """Remove the checkpoints ``doomed(doc)`` selects, with their writes, from one thread.

        ``docs`` is the thread's index (SELECT_THREAD_INDEX_SQL). A removed checkpoint whose
        document still holds a value a surviving checkpoint uses becomes a ``values`` holder
        (no longer listed); blobs no surviving checkpoint uses are deleted.
        """
        cps = [d for d in docs if d["kind"] == KIND_CHECKPOINT]
        gone = {(d["ns"], d["checkpoint_id"]) for d in cps if doomed(d)}
        if not gone:
            return
        survivors = [d for d in docs if d["kind"] == KIND_HEAD] + [
            d for d in cps if (d["ns"], d["checkpoint_id"]) not in gone
        ]
        used: set[str] = set()
        for doc in survivors:
            for channel, version in (doc.get("versions") or {}).items():
                origin = _origin_of({"inline": {}, **doc}, channel, version)
                if origin is not None:
                    used.add(origin)
        holders = [d for d in cps if (d["ns"], d["checkpoint_id"]) in gone and d["id"] in used]
        for i in range(0, len(holders), 32):
            full = yield [Read(d["id"], pk) for d in holders[i : i + 32]]
            converted = []
            for doc in full:
                if doc is not None:
                    kept = strip_system_fields(doc)
                    kept["kind"] = KIND_VALUES
                    converted.append(Upsert(kept))
            if converted:
                yield converted
        delete: list[Mapping[str, Any]] = []
        for doc in docs:
            kind = doc["kind"]
            if kind == KIND_CHECKPOINT:
                if (doc["ns"], doc["checkpoint_id"]) in gone and doc["id"] not in used:
                    delete.append(doc)
            elif kind in (KIND_WRITES, KIND_WRITE_VALUE):
                if (doc["ns"], doc["checkpoint_id"]) in gone:
                    delete.append(doc)
            elif kind in (KIND_BLOB, KIND_VALUES):
                if doc["id"] not in used:
                    delete.append(doc)
            elif kind == KIND_CHUNK:
                owner = doc["blob_id"]
                if (owner.startswith("b.") and owner not in used) or (
                    owner.startswith("v.") and _value_chunk_doomed(owner, docs, gone)
                ):
                    delete.append(doc)
        yield from _delete_batches(delete, pk, {KIND_CHECKPOINT: 0})

    def _delete_for_runs_ops(self, run_ids: Sequence[str]) -> Ops:
        if not run_ids:
            return
        found = yield Query(SELECT_RUN_CHECKPOINTS_SQL, (("@run_ids", list(run_ids)),), None)
        threads: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for doc in found:
            threads.setdefault((doc["pk"], doc["thread_id"]), set()).add(
                (doc["ns"], doc["checkpoint_id"])
            )
        for (pk, thread_id), gone in threads.items():
            self._heads.drop_thread(pk, thread_id)
            docs = yield Query(
                SELECT_THREAD_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
            )
            # Heads of the affected namespaces move to their newest remaining checkpoint.
            heads = [
                d for d in docs if d["kind"] == KIND_HEAD and (d["ns"], d["checkpoint_id"]) in gone
            ]
            for head in heads:
                yield Delete(head["id"], pk)
            docs = [d for d in docs if d not in heads]
            yield from self._drop_checkpoints_ops(
                pk, docs, lambda d, gone=gone: (d["ns"], d["checkpoint_id"]) in gone
            )
            for head in heads:
                rest = yield Query(
                    SELECT_LATEST_IN_NS_SQL,
                    (("@pk", pk), ("@thread_id", thread_id), ("@ns", head["ns"])),
                    pk,
                )
                if rest:
                    doc = {k: v for k, v in strip_system_fields(rest[0]).items() if k != "ttl"}
                    doc.update(id=head_id(head["ns"]), kind=KIND_HEAD, cached={})
                    yield Upsert(self._stamp(doc))
            self._heads.drop_thread(pk, thread_id)

    # -- versions ------------------------------------------------------------------------------

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

    def _describe(self) -> str:
        return f"ttl={self.ttl!r}, reducer={'on' if self.message_reduction else 'off'}"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _make_reduction(
    reducer: MessageReducer | None, messages_key: str, next_version: Any
) -> CheckpointReduction | None:
    if not isinstance(messages_key, str) or not messages_key:
        raise CosmosConfigurationError(
            f"messages_key must be a non-empty string, got {messages_key!r}"
        )
    if reducer is None:
        return None
    try:
        from agentstate_reducer.langgraph.saver import CheckpointReduction
    except ImportError as exc:  # pragma: no cover - depends on the installed core
        raise ImportError(
            "reducer= needs agentstate-reducer with LangGraph support: "
            'pip install "agentstate-reducer[langgraph]"'
        ) from exc
    return CheckpointReduction(reducer, messages_key, next_version=next_version)


def map_sdk_error(exc: BaseException, action: str, secret: Any) -> CosmosSaverError:
    """Map an Azure SDK exception to a :class:`CosmosSaverError` naming ``action``."""
    from azure.core.exceptions import ServiceRequestError, ServiceResponseError
    from azure.cosmos.exceptions import (
        CosmosBatchOperationError,
        CosmosClientTimeoutError,
        CosmosHttpResponseError,
    )

    detail = scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, secret)[:300]
    if isinstance(exc, (CosmosClientTimeoutError, ServiceRequestError, ServiceResponseError)):
        return CosmosUnavailableError(
            f"Cosmos DB could not be reached while trying to {action}: {detail}. Check that the "
            "endpoint is right and reachable; the operation was not completed."
        )
    if isinstance(exc, (CosmosHttpResponseError, CosmosBatchOperationError)):
        status = exc.status_code
        if status == 429:
            return CosmosThrottledError(
                f"Cosmos DB kept throttling (429) while trying to {action}, after the SDK's "
                "retries. Raise the container's throughput or the client's retry_total / "
                "retry_backoff_max.",
                status_code=status,
            )
        if status == 413:
            return CosmosItemTooLargeError(
                f"Cosmos DB refused an item as too large while trying to {action}: {detail}",
                status_code=status,
            )
        if status in (401, 403):
            return CosmosOperationError(
                f"Cosmos DB refused the credential while trying to {action} (HTTP {status}). "
                "Check the account key or the identity's data-plane role.",
                status_code=status,
            )
        return CosmosOperationError(
            f"Cosmos DB answered HTTP {status} while trying to {action}: {detail}",
            status_code=status,
        )
    if isinstance(exc, OSError):
        return CosmosUnavailableError(
            f"Cosmos DB could not be reached while trying to {action}: {detail}"
        )
    return CosmosOperationError(f"Cosmos DB call failed while trying to {action}: {detail}")


_EMPTY = "\x00empty"


def _origin_in(parent: Mapping[str, Any] | None, channel: str, version: str) -> str | None:
    """Where ``parent`` found ``channel`` at ``version``: a document id, _EMPTY, or None."""
    if parent is None or (parent.get("versions") or {}).get(channel) != version:
        return None
    if channel in (parent.get("empty") or ()):
        return _EMPTY
    origin = (parent.get("origins") or {}).get(channel)
    return str(origin) if origin else None


def _origin_of(doc: Mapping[str, Any], channel: str, version: str) -> str | None:
    """The id of the document holding ``channel``'s value for ``doc``; None when it has none
    there (inline, cached in a head, or empty)."""
    if channel in doc["inline"] or channel in (doc.get("cached") or {}):
        return None
    if channel in (doc.get("empty") or ()):
        return None
    origins = doc.get("origins")
    if origins is None:
        return blob_id(doc["ns"], channel, version)
    origin = origins.get(channel)
    return str(origin) if origin else None


def _batch_size(ops: Sequence[Upsert | Replace]) -> int:
    docs = [op.doc for op in ops if isinstance(op, (Upsert, Create, Replace))]
    return len(json.dumps(docs, separators=(",", ":")))


def batch_operations(ops: Sequence[Op]) -> list[tuple[Any, ...]]:
    """The ``execute_item_batch`` form of a batch's operations."""
    out: list[tuple[Any, ...]] = []
    for op in ops:
        if isinstance(op, Upsert):
            out.append(("upsert", (op.doc,)))
        elif isinstance(op, Create):
            out.append(("create", (op.doc,)))
        elif isinstance(op, Replace):
            out.append(("replace", (op.doc["id"], op.doc), {"if_match_etag": op.etag}))
        elif isinstance(op, Read):
            out.append(("read", (op.id,)))
        elif isinstance(op, Delete):
            out.append(("delete", (op.id,)))
        else:
            raise TypeError(f"{type(op).__name__} cannot go in a transactional batch")
    return out


def batch_failure(status: int | None) -> str | None:
    """The result a failed batch stands for, or None when the failure is a real error."""
    if status in (404, 412):
        return PRECONDITION_FAILED
    if status == 409:
        return CONFLICT
    return None


def _stored_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _merge_writes(
    existing: list[dict[str, Any]], new: list[dict[str, Any]], overwrite: bool
) -> list[dict[str, Any]] | None:
    """Merge new write entries into a writes document; None when nothing changes."""
    index = {(e["task_id"], int(e["idx"])): i for i, e in enumerate(existing)}
    merged = list(existing)
    changed = False
    for entry in new:
        key = (entry["task_id"], int(entry["idx"]))
        if key in index:
            if overwrite:
                merged[index[key]] = entry
                changed = True
        else:
            index[key] = len(merged)
            merged.append(entry)
            changed = True
    return merged if changed else None


def _check_writes_size(doc: Mapping[str, Any]) -> None:
    size = len(json.dumps(doc, separators=(",", ":")))
    if size > WRITES_DOC_BYTES:
        raise CosmosItemTooLargeError(
            f"the pending writes of checkpoint {doc['checkpoint_id']!r} take {size} bytes, over "
            f"the {WRITES_DOC_BYTES}-byte budget of one document; write fewer small values per "
            "step"
        )


def _value_chunk_doomed(
    owner: str, docs: Sequence[Mapping[str, Any]], gone: set[tuple[str, str]]
) -> bool:
    """Whether a chunk of the write value ``owner`` belongs to a removed checkpoint."""
    for doc in docs:
        if doc["id"] == owner:
            return (doc["ns"], doc["checkpoint_id"]) in gone
    return True


def _delete_batches(
    docs: Sequence[Mapping[str, Any]], pk: str, order: Mapping[str, int]
) -> Iterator[list[Op]]:
    ranked = sorted(docs, key=lambda d: order.get(d.get("kind", ""), len(order)))
    groups: dict[int, list[Op]] = {}
    for doc in ranked:
        groups.setdefault(order.get(doc.get("kind", ""), len(order)), []).append(
            Delete(doc["id"], pk)
        )
    for rank in sorted(groups):
        ops = groups[rank]
        for i in range(0, len(ops), 64):
            yield ops[i : i + 64]

"""Everything the Cosmos DB savers do except I/O: construction, and every operation generator.

The sync :class:`~agentstate_cosmosdb.CosmosDBSaver` and the async
:class:`~agentstate_cosmosdb.AsyncCosmosDBSaver` share this module. Each saver operation
(``setup``, ``put``, ``get_tuple``, ``prune``, ...) is written once here as a generator that
yields storage operations (:mod:`agentstate_cosmosdb.ops`) and receives their results; the
drivers only turn operations into SDK calls. The storage layout is drawn in
:mod:`agentstate_cosmosdb.schema`.

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
* **Garbage collection keeps exactly what survivors reach** through
  :func:`~agentstate_cosmosdb.documents.reachable`.

With ``ttl=``: every put records when each holder it references was written (``written``);
a holder older than half the ttl has its value written again by the next put, and the head's
own ttl is cut so that it expires no later than the oldest holder it references. So a thread
that is put at least once every ``ttl / 2`` seconds never loses a value, and a thread left
alone expires as a whole (the head first).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

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

from agentstate_cosmosdb.documents import (
    EMPTY,
    b64,
    decode,
    decompress,
    encode,
    json_safe,
    metadata_matches,
    origin_in,
    origin_of,
    pushdown_value,
    reachable,
    references,
    resolve_codec,
    split_chunks,
    strip_system_fields,
    unb64,
)
from agentstate_cosmosdb.documents import compress as compress_bytes
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosMissingDocumentError,
    CosmosOperationError,
    CosmosSaverClosedError,
    CosmosSaverError,
    CosmosSchemaError,
    map_sdk_error,
)
from agentstate_cosmosdb.heads import HeadCache, HeadKey, HeadState
from agentstate_cosmosdb.ops import (
    UNEXPECTED,
    BatchOp,
    Create,
    CreateContainer,
    CreateDatabase,
    Delete,
    Document,
    Emit,
    Op,
    Ops,
    Outcome,
    Query,
    Read,
    ReadContainer,
    Replace,
    ReplaceContainer,
    Result,
    Sleep,
    Upsert,
    batch,
    batch_bytes,
    control,
    query,
    read,
    read_many,
    refusal,
    write,
    write_all,
)
from agentstate_cosmosdb.ops import now as clock_now
from agentstate_cosmosdb.schema import (
    INDEXING_POLICY,
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_CHUNK,
    KIND_HEAD,
    KIND_VALUES,
    KIND_WRITE_VALUE,
    KIND_WRITES,
    ORDER_NEWEST_FIRST_SQL,
    PARTITION_KEY_PATH,
    SCHEMA_VERSION,
    SELECT_LATEST_IN_NS_SQL,
    SELECT_NS_INDEX_SQL,
    SELECT_RUN_CHECKPOINTS_SQL,
    SELECT_THREAD_DOCS_SQL,
    SELECT_THREAD_INDEX_SQL,
    SELECT_TOP_CHECKPOINTS_SQL,
    SELECT_WRITES_SQL,
    WHERE_BEFORE_SQL,
    WHERE_CHECKPOINT_ID_SQL,
    WHERE_METADATA_SQL,
    WHERE_NS_SQL,
    WHERE_PAGE_SQL,
    WHERE_THREAD_SQL,
    blob_id,
    checkpoint_doc_id,
    chunk_id,
    head_id,
    partition_key,
    write_value_id,
    writes_doc_id,
)
from agentstate_cosmosdb.settings import (
    ClientSettings,
    missing_container_message,
    resolve_settings,
    wrong_partition_key_message,
)
from agentstate_reducer._checks import check_choice, check_name

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer
    from agentstate_reducer.langgraph import CheckpointReduction

__all__ = ["PARTITION_KEY_PATH", "BaseCosmosDBSaver"]

INLINE_PRIMITIVE_BYTES = 1024
"""Primitive channel values up to this size live in every checkpoint document, as in
PostgresSaver."""

HEAD_VALUES_BYTES = 16 * 1024
"""A checkpoint's own new values up to this size (encoded) are copied into its head, which
saves the latest read a request; larger ones are read from the checkpoint document."""

OWN_VALUE_BYTES = 256 * 1024
"""Encoded new values up to this size are stored inside their checkpoint document..."""

OWN_VALUES_BYTES = 700_000
"""... as long as that document's own values stay within this budget (so that a checkpoint
document and its head always fit in one transactional batch)."""

WRITE_INLINE_BYTES = 64 * 1024
"""Encoded pending-write values larger than this get a document of their own..."""

WRITES_DOC_BYTES = 1_000_000
"""... and so do the largest ones once a task's writes document would pass this."""

BATCH_MAX_OPS = 100
"""Operations per transactional batch (the service's limit)."""

BATCH_BYTES = 1_150_000
"""Largest batch the saver sends: the azure-cosmos README gives 1.2 MB per batch (the service
documentation says 2 MB); a batch refused as too large anyway is written the ordered way."""

CAS_ATTEMPTS = 16
"""Compare-and-swap attempts (head, a task's writes document) before giving up."""

CAS_BACKOFF_SECONDS = 0.01
"""Base of the full-jitter exponential backoff between compare-and-swap attempts."""

CAS_BACKOFF_MAX = 0.5

TTL_MARGIN_SECONDS = 2
"""Slack for the service's one-second ``_ts`` and small clock differences between hosts: a
value is written again a little before half the ttl, and a head expires a little before the
oldest value it references."""

PAGE_SIZE = 32
"""Checkpoints per page of ``list``."""

MAINTENANCE_FANOUT = 32
"""Requests a maintenance step sends at once."""

_NOT_IN_HEAD = ("values", "ttl", "id", "kind", "cached")


class BaseCosmosDBSaver(BaseCheckpointSaver[str]):
    """Construction and the operation generators shared by both Cosmos DB savers.

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
        ttl: Seconds of inactivity after which a thread's documents expire (Cosmos DB
            time-to-live). Values a live thread still uses are refreshed (see the module
            docstring). Needs time-to-live on in the container: :meth:`setup` turns it on
            when the credential may, otherwise raises saying what to set.
        keep_checkpoints: Keep only the newest N checkpoints of each thread namespace (with
            their writes and the values they reach); after each put, older ones are removed.
            None keeps every checkpoint.
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

    message_reduction: CheckpointReduction | None
    ttl: int | None
    keep_checkpoints: int | None

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
        self._client_kwargs = dict(client_kwargs)
        self._container: Any = None
        self._closed = False
        self._heads = HeadCache()

    def __repr__(self) -> str:
        s = self._settings
        return (
            f"{type(self).__name__}(endpoint={s.endpoint or 'client'!r}, "
            f"database={s.database_name!r}, container={s.container_name!r}, "
            f"ttl={self.ttl!r}, keep_checkpoints={self.keep_checkpoints!r}, "
            f"reducer={'on' if self.message_reduction else 'off'})"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise CosmosSaverClosedError(
                f"this {type(self).__name__} was closed; build a new saver (or use it inside "
                "its `with` block only)"
            )

    def _release_client(self) -> Any:
        """Mark the saver closed and hand back the client to close (None if not ours)."""
        self._closed = True
        client, self._container = self._client if self._owns_client else None, None
        if self._owns_client:
            self._client = None
        return client

    def _client_failed(self, exc: Exception) -> CosmosSaverError:
        return map_sdk_error(exc, "connect to the account", self._settings.credential)

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
        raise map_sdk_error(exc, action, self._settings.credential) from exc

    # -- setup ---------------------------------------------------------------------------------

    def _connect_ops(self) -> Ops[None]:
        """Check (and create, when missing and allowed) the database and container.

        Raises:
            CosmosContainerNotFoundError: Missing and not created (not allowed, or refused).
            CosmosConfigurationError: Wrong partition key, or ``ttl=`` with time-to-live off
                and no right to turn it on.
        """
        s = self._settings
        props: Document | None = yield from control(ReadContainer())
        if props is None:
            if not s.create_if_missing:
                raise CosmosContainerNotFoundError(
                    missing_container_message(s, "create_if_missing=False"), status_code=404
                )
            # "If not exists" is a read then a create: savers starting together may race and
            # the loser sees 409 Conflict; the resource exists then, so try again.
            for attempt in range(4):
                created = yield from control(CreateDatabase())
                if created is Outcome.CONFLICT:
                    yield Sleep(_backoff(attempt))
                    continue
                if created is Outcome.FORBIDDEN:
                    raise CosmosContainerNotFoundError(
                        missing_container_message(s, "the credential may not create databases"),
                        status_code=403,
                    )
                created = yield from control(
                    CreateContainer(
                        PARTITION_KEY_PATH,
                        default_ttl=-1 if self.ttl is not None else None,
                        indexing_policy=INDEXING_POLICY,
                    )
                )
                if created is Outcome.FORBIDDEN:
                    raise CosmosContainerNotFoundError(
                        missing_container_message(s, "the credential may not create containers"),
                        status_code=403,
                    )
                if created is Outcome.CONFLICT:
                    yield Sleep(_backoff(attempt))
                    continue
                break
            props = yield from control(ReadContainer())
            if props is None:
                raise CosmosContainerNotFoundError(
                    missing_container_message(s, "still missing after creating it"),
                    status_code=404,
                )
        paths = (props.get("partitionKey") or {}).get("paths")
        if paths != [PARTITION_KEY_PATH]:
            raise CosmosConfigurationError(wrong_partition_key_message(s, paths))
        if self.ttl is not None and props.get("defaultTtl") is None:
            yield from self._enable_ttl_ops(props)

    def _enable_ttl_ops(self, props: Document) -> Ops[None]:
        s = self._settings
        fix = (
            f"turn time-to-live on for container {s.container_name!r} (Azure portal: Settings > "
            "Time to Live > On (no default); CLI: az cosmosdb sql container update ... --ttl -1)"
        )
        if not s.create_if_missing:
            raise CosmosConfigurationError(
                f"ttl={self.ttl} has no effect: the container's time-to-live is off, so the "
                f"service never expires items. {fix}, or let the saver do it "
                "(create_if_missing=True with an account key)."
            )
        replaced = yield from control(
            ReplaceContainer(
                PARTITION_KEY_PATH, default_ttl=-1, indexing_policy=props.get("indexingPolicy")
            )
        )
        if replaced is Outcome.FORBIDDEN:
            raise CosmosConfigurationError(
                f"ttl={self.ttl} has no effect: the container's time-to-live is off and the "
                f"credential may not change it. {fix}."
            )

    # -- encoding ------------------------------------------------------------------------------

    def _encode(self, value: Any) -> list[Any]:
        return encode(self.serde, value, self._codec)

    def _decode(self, encoded: Sequence[Any]) -> Any:
        return decode(self.serde, encoded)

    def _stamp(self, doc: Document, ttl: int | None = None) -> Document:
        if self.ttl is not None:
            doc["ttl"] = ttl if ttl is not None else self.ttl
        return doc

    def _value_docs(self, base: Document, value: Any) -> tuple[list[Document], Document]:
        """One value as a document of its own: (continuation chunk documents, base document)."""
        type_, raw = self.serde.dumps_typed(value)
        data, codec = compress_bytes(raw, self._codec)
        chunks = split_chunks(data)
        doc = dict(base)
        doc.update(type=type_, data=b64(chunks[0]), chunks=len(chunks))
        if codec:
            doc["codec"] = codec
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
        return extra, self._stamp(doc)

    def _load_value_ops(self, doc: Mapping[str, Any]) -> Ops[Any]:
        """Rebuild the value of a blob or write-value document (reads its chunks)."""
        if doc.get("data") is None:
            return None
        parts = [unb64(doc["data"])]
        count = int(doc.get("chunks", 1))
        if count > 1:
            ids = [chunk_id(doc["id"], i) for i in range(1, count)]
            chunks = yield from read_many([Read(i, doc["pk"]) for i in ids])
            for chunk_doc_id, chunk in zip(ids, chunks, strict=True):
                if chunk is None:
                    raise CosmosMissingDocumentError(
                        f"chunk {chunk_doc_id!r} of value document {doc['id']!r} (thread "
                        f"{doc.get('thread_id')!r}) is missing: the value cannot be rebuilt",
                        document_id=chunk_doc_id,
                    )
                parts.append(unb64(chunk["data"]))
        data = decompress(b"".join(parts), doc.get("codec"))
        return self.serde.loads_typed((doc["type"], data))

    # -- put -----------------------------------------------------------------------------------

    def _put_ops(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fresh: bool = False,
    ) -> Ops[RunnableConfig]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        pk = partition_key(thread_id)
        key: HeadKey = (pk, thread_id, ns)
        checkpoint_id = checkpoint["id"]
        values = checkpoint["channel_values"]
        versions = {ch: str(v) for ch, v in checkpoint["channel_versions"].items()}
        own_id = checkpoint_doc_id(ns, checkpoint_id)
        now = yield from clock_now()
        state = None if fresh else self._heads.get(key)
        if state is None:
            # Learn the head first (LangGraph's get_tuple at the start of a run usually did),
            # so that the checkpoint and the head can go in one batch.
            current = yield from read(head_id(ns), pk)
            if current is None or current.get("thread_id") != thread_id:
                state = HeadState.missing()
            else:
                state = _head_state(current, current["_etag"])
        linear = bool(parent_id) and state.checkpoint_id == parent_id

        inline: dict[str, list[Any]] = {}
        for channel, value in values.items():
            if value is None or isinstance(value, (str, int, float, bool)):
                type_, data = self.serde.dumps_typed(value)
                if len(data) <= INLINE_PRIMITIVE_BYTES:
                    inline[channel] = [type_, b64(data)]

        # Unchanged channels point where the parent found them, unless that holder is unknown
        # or (with ttl) old enough to expire soon: then the value is written again here.
        origins: dict[str, str] = {}
        written: dict[str, float] = {}
        empty: list[str] = []
        rewrite: list[str] = []
        inherited = [ch for ch in versions if ch not in inline and ch not in new_versions]
        if inherited:
            parent_doc: Mapping[str, Any] | None = None
            if parent_id and state.checkpoint_id == parent_id:
                parent_doc = state.doc
            elif parent_id:
                parent_doc = yield from read(checkpoint_doc_id(ns, str(parent_id)), pk)
            parent_written: Mapping[str, float] = (parent_doc or {}).get("written") or {}
            for channel in inherited:
                found = origin_in(parent_doc, channel, versions[channel])
                if found == EMPTY:
                    empty.append(channel)
                elif found is None or (
                    self.ttl is not None
                    and now - float(parent_written.get(found, 0.0))
                    > self.ttl / 2 - TTL_MARGIN_SECONDS
                ):
                    rewrite.append(channel)
                else:
                    origins[channel] = found
                    if self.ttl is not None:
                        written[found] = float(parent_written[found])

        # New (and rewritten) values of small channels live in the checkpoint document; big
        # ones in blob documents, chunked past CHUNK_BYTES. Each version is stored once.
        chunk_docs: list[Document] = []
        blob_docs: list[Document] = []
        own_values: dict[str, list[Any]] = {}
        budget = OWN_VALUES_BYTES
        for channel in [*new_versions, *rewrite]:
            if channel in inline or channel in own_values or channel in origins:
                continue
            if channel not in values:
                # A version without a value reads as absent, as an "empty" blob does in
                # PostgresSaver.
                if channel not in empty:
                    empty.append(channel)
                continue
            enc = self._encode(values[channel])
            if len(enc[1]) <= OWN_VALUE_BYTES and len(enc[1]) <= budget:
                budget -= len(enc[1])
                own_values[channel] = enc
                origins[channel] = own_id
                continue
            version = versions.get(channel) or str(new_versions[channel])
            base: Document = {
                "id": blob_id(ns, channel, version),
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_BLOB,
                "ns": ns,
                "channel": channel,
                "version": version,
            }
            if channel in rewrite:
                # A fresh id: the old blob of this version may be expiring.
                base["id"] = blob_id(ns, channel, f"{version}@{uuid.uuid4().hex}")
            extra, doc = self._value_docs(base, values[channel])
            chunk_docs.extend(extra)
            blob_docs.append(doc)
            origins[channel] = base["id"]
        if self.ttl is not None:
            for holder in {*origins.values()}:
                written.setdefault(holder, now)

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
        if self.ttl is not None:
            cp_doc["written"] = written
        head_doc = self._head_doc(cp_doc, now)

        # Chunks before the blob documents that announce them.
        if chunk_docs:
            for i in range(0, len(chunk_docs), MAINTENANCE_FANOUT):
                yield from write_all([Upsert(d) for d in chunk_docs[i : i + MAINTENANCE_FANOUT]])
        blob_ops: list[BatchOp] = [Upsert(d) for d in blob_docs]
        if checkpoint_id >= state.checkpoint_id:
            # The checkpoint document and the head in one atomic transactional batch (with the
            # blobs when they fit): a thread never has listed checkpoints and no head, even
            # after a crash. The head is replaced only if it is still the one this process
            # last saw, or created if it saw none.
            head_op: BatchOp = Create(head_doc) if state.absent else Replace(head_doc, state.etag)
            ops = [*blob_ops, Upsert(cp_doc), head_op]
            if not _fits(ops):
                yield from write_all(blob_ops)  # values first, then what references them
                ops = [Upsert(cp_doc), head_op]
            results: list[str | None] | Outcome = Outcome.TOO_LARGE
            self._heads.drop(key)
            if _fits(ops):
                results = yield from batch(pk, ops)
            if not isinstance(results, Outcome):
                if results[-1]:
                    self._remember_head(key, head_doc, results[-1])
                yield from self._after_put_ops(key, parent_id, linear)
                return _stored_config(thread_id, ns, checkpoint_id)
            # Refused, nothing applied: another writer moved the head, or the service found
            # the batch too large. Store the checkpoint, then move the head the ordered way.
            if results is not Outcome.TOO_LARGE and self.keep_checkpoints is not None and not fresh:
                # Another writer's garbage collection may have removed what the cached parent
                # pointed at: build the checkpoint again from the stored parent.
                stored = yield from self._put_ops(
                    config, checkpoint, metadata, new_versions, fresh=True
                )
                return stored
        self._heads.drop(key)
        yield from write_all([*blob_ops, Upsert(cp_doc)])
        yield from self._advance_head_ops(key, head_doc)
        yield from self._after_put_ops(key, parent_id, linear)
        return _stored_config(thread_id, ns, checkpoint_id)

    def _head_doc(self, cp_doc: Mapping[str, Any], now: float) -> Document:
        """The head for a checkpoint document: the same fields, with its own new values only
        when they are small (HEAD_VALUES_BYTES), so the head stays a pointer.

        With ``ttl=``, the head expires no later than the oldest holder it references.
        """
        doc = {k: v for k, v in cp_doc.items() if k not in _NOT_IN_HEAD}
        doc.update(id=head_id(cp_doc["ns"]), kind=KIND_HEAD)
        own = cp_doc.get("values") or {}
        if own and sum(len(v[1]) for v in own.values()) <= HEAD_VALUES_BYTES:
            doc["values"] = own  # small: the latest checkpoint reads from the head alone
        if self.ttl is None:
            return doc
        written: Mapping[str, float] = cp_doc.get("written") or {}
        oldest = min(written.values(), default=now)
        return self._stamp(doc, max(1, int(self.ttl - (now - oldest) - TTL_MARGIN_SECONDS)))

    def _advance_head_ops(self, key: HeadKey, head_doc: Document) -> Ops[None]:
        """Point the head at ``head_doc``'s checkpoint (stored already) unless it holds a newer
        one: compare-and-swap on the head's etag, jittered backoff between attempts."""
        pk, thread_id, ns = key
        checkpoint_id = head_doc["checkpoint_id"]
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(_backoff(attempt))
            current = yield from read(head_id(ns), pk)
            if current is None or current.get("thread_id") != thread_id:
                stored = yield from write(Create(head_doc))
                if stored is Outcome.CONFLICT:
                    continue
                self._remember_head(key, head_doc, cast(str, stored))
                return
            if checkpoint_id < current["checkpoint_id"]:
                self._remember_head(key, current, current["_etag"])
                return
            stored = yield from write(Replace(head_doc, current["_etag"]))
            if stored is Outcome.PRECONDITION_FAILED:
                continue
            self._remember_head(key, head_doc, cast(str, stored))
            return
        raise CosmosOperationError(
            f"could not move the head of thread {thread_id!r} after {CAS_ATTEMPTS} attempts: "
            "too many concurrent writers to one thread and namespace"
        )

    def _remember_head(self, key: HeadKey, doc: Mapping[str, Any], etag: str) -> None:
        self._heads.set(key, _head_state(doc, etag))

    def _after_put_ops(self, key: HeadKey, parent_id: str | None, linear: bool) -> Ops[None]:
        """Garbage-collect past ``keep_checkpoints`` (a no-op without it).

        ``linear``: the put replaced the head it was built on (its parent).
        """
        if self.keep_checkpoints is None:
            return
        pk, thread_id, ns = key
        index = yield from query(
            SELECT_NS_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns)), pk
        )
        cps = sorted(
            (d["checkpoint_id"] for d in index if d["kind"] == KIND_CHECKPOINT), reverse=True
        )
        if len(cps) <= self.keep_checkpoints:
            return
        keep = set(cps[: self.keep_checkpoints])
        if parent_id and not linear:
            # A fork, or a run that was not building on the head: keep what it builds on.
            keep.add(str(parent_id))
        yield from self._drop_ops(pk, index, {(ns, cp) for cp in keep})

    # -- put_writes ----------------------------------------------------------------------------

    def _put_writes_ops(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Ops[None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = str(configurable["checkpoint_id"])
        pk = partition_key(thread_id)
        if not writes:
            return
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        # Large values get ids of their own per call, so a call whose entries are dropped
        # (the first write of a task and index wins) cannot replace a kept value.
        call = uuid.uuid4().hex
        entries: list[dict[str, Any]] = []
        for idx, (channel, value) in enumerate(writes):
            real_idx = WRITES_IDX_MAP.get(channel, idx)
            enc = self._encode(value)
            entry: dict[str, Any] = {
                "task_id": task_id,
                "task_path": task_path,
                "idx": real_idx,
                "channel": channel,
                "type": enc[0],
                "data": enc[1],
            }
            if len(enc) > 2:
                entry["codec"] = enc[2]
            entries.append(entry)
        # Values over the bound (and the largest, while the document would be too big) apart.
        value_chunks: list[Document] = []
        value_docs: list[Document] = []
        total = sum(len(e["data"]) for e in entries)
        for entry in sorted(entries, key=lambda e: -len(e["data"])):
            if len(entry["data"]) <= WRITE_INLINE_BYTES and total <= WRITES_DOC_BYTES:
                break
            total -= len(entry["data"])
            value = writes[[e is entry for e in entries].index(True)][1]
            base: Document = {
                "id": write_value_id(ns, checkpoint_id, task_id, entry["idx"], call),
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_WRITE_VALUE,
                "ns": ns,
                "checkpoint_id": checkpoint_id,
            }
            extra, doc = self._value_docs(base, value)
            value_chunks.extend(extra)
            value_docs.append(doc)
            for field in ("data", "codec"):
                entry.pop(field, None)
            entry["ref"] = base["id"]
        for docs in (value_chunks, value_docs):
            for i in range(0, len(docs), MAINTENANCE_FANOUT):
                yield from write_all([Upsert(d) for d in docs[i : i + MAINTENANCE_FANOUT]])

        def writes_doc(doc_id: str, items: list[dict[str, Any]]) -> Document:
            return self._stamp(
                {
                    "id": doc_id,
                    "pk": pk,
                    "thread_id": thread_id,
                    "kind": KIND_WRITES,
                    "schema": SCHEMA_VERSION,
                    "ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "task_id": task_id,
                    "special": special,
                    "writes": items,
                }
            )

        if special:
            # Writes to special channels replace the previous one of the same task and index.
            yield from write_all(
                [
                    Upsert(writes_doc(writes_doc_id(ns, checkpoint_id, task_id, e["idx"]), [e]))
                    for e in entries
                ]
            )
            return
        doc_id = writes_doc_id(ns, checkpoint_id, task_id)
        stored = yield from write(Create(writes_doc(doc_id, entries)))
        if stored is not Outcome.CONFLICT:
            return
        # The same task wrote before (a retry): keep its writes, add the indexes it lacked.
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(_backoff(attempt))
            current = yield from read(doc_id, pk)
            if current is None:
                stored = yield from write(Create(writes_doc(doc_id, entries)))
                if stored is not Outcome.CONFLICT:
                    return
                continue
            have = {int(e["idx"]) for e in current.get("writes") or []}
            missing = [e for e in entries if int(e["idx"]) not in have]
            if not missing:
                return
            merged = writes_doc(doc_id, [*(current.get("writes") or []), *missing])
            stored = yield from write(Replace(merged, current["_etag"]))
            if stored is not Outcome.PRECONDITION_FAILED:
                return
        raise CosmosOperationError(
            f"could not record the writes of task {task_id!r} for checkpoint {checkpoint_id!r} "
            f"after {CAS_ATTEMPTS} attempts"
        )

    # -- reads ---------------------------------------------------------------------------------

    def _get_tuple_ops(self, config: RunnableConfig) -> Ops[CheckpointTuple | None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        pk = partition_key(thread_id)
        key: HeadKey = (pk, thread_id, ns)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            doc = yield from read(checkpoint_doc_id(ns, checkpoint_id), pk)
            if doc is None or doc.get("kind") != KIND_CHECKPOINT:
                return None  # never written, removed, or kept only as a holder of values
            if doc.get("thread_id") != thread_id:
                return None
            tuples = yield from self._load_tuples_ops([doc])
            return tuples[0]
        state = self._heads.get(key)
        prefetched: dict[str, Any] = {}
        if state is not None and not state.absent:
            # Read what the head this process last saw needs in the same round trip; it is
            # the right set unless another writer moved the head since.
            refs = references(state.doc)
            results = yield [
                Read(head_id(ns), pk),
                *(Read(r, pk) for r in refs),
                _writes_query(pk, thread_id, ns, [state.checkpoint_id]),
            ]
            seq = cast("list[Any]", results)
            head = cast("Document | None", seq[0])
            if head is not None and head.get("checkpoint_id") == state.checkpoint_id:
                prefetched = dict(zip(refs, seq[1:-1], strict=True))
                prefetched[_WRITES_KEY] = seq[-1]
        else:
            head = yield from read(head_id(ns), pk)
        if head is not None and head.get("thread_id") != thread_id:
            head = None
        if head is None:
            head = yield from self._repair_head_ops(key)
            if head is None:
                self._heads.set(key, HeadState.missing())
                return None
        else:
            self._remember_head(key, head, head["_etag"])
        tuples = yield from self._load_tuples_ops([head], prefetched)
        if tuples[0] is None and self.ttl is not None:
            return None
        return tuples[0]

    def _repair_head_ops(self, key: HeadKey) -> Ops[Document | None]:
        """No head: if the namespace has checkpoints (a first put cut short), create the head
        for the newest one (create-if-absent: a head that appeared meanwhile is kept)."""
        pk, thread_id, ns = key
        newest = yield from query(
            SELECT_LATEST_IN_NS_SQL, (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns)), pk
        )
        if not newest:
            return None
        doc = self._head_doc(strip_system_fields(newest[0]), (yield from clock_now()))
        stored = yield from write(Create(doc))
        if stored is Outcome.CONFLICT:
            current = yield from read(head_id(ns), pk)
            if current is not None:
                self._remember_head(key, current, current["_etag"])
            return current
        self._remember_head(key, doc, cast(str, stored))
        return doc

    def _load_tuples_ops(
        self, docs: Sequence[Mapping[str, Any]], prefetched: Mapping[str, Any] | None = None
    ) -> Ops[list[CheckpointTuple | None]]:
        """Turn checkpoint (or head) documents of one thread into CheckpointTuples.

        Reads every holder the documents reference and their pending writes, concurrently.
        ``prefetched`` maps holder ids already read to their result (and ``_WRITES_KEY`` to the
        writes of a single document). A tuple is None when, with ``ttl=``, one of its values
        has expired.

        Raises:
            CosmosMissingDocumentError: A referenced document is missing (without ``ttl=``).
            CosmosSchemaError: A document of a newer layout.
        """
        prefetched = prefetched or {}
        for doc in docs:
            _check_schema(doc)
        needed: dict[str, str] = {}
        for doc in docs:
            for ref in references(doc):
                if ref not in prefetched:
                    needed[ref] = doc["pk"]
        groups: dict[tuple[str, str, str], list[str]] = {}
        for doc in docs:
            groups.setdefault((doc["pk"], doc["thread_id"], doc["ns"]), []).append(
                doc["checkpoint_id"]
            )
        queries = [] if _WRITES_KEY in prefetched else list(groups)
        steps: list[Any] = [Read(i, pk) for i, pk in needed.items()]
        steps += [
            _writes_query(pk, t, ns, cps) for pk, t, ns in queries for cps in [groups[(pk, t, ns)]]
        ]
        results = cast("list[Any]", (yield steps)) if steps else []
        holders: dict[str, Any] = dict(prefetched)
        holders.update(zip(needed, results[: len(needed)], strict=True))
        write_docs: list[Document] = list(prefetched.get(_WRITES_KEY) or [])
        for found in results[len(needed) :]:
            write_docs.extend(found)
        blobs: dict[str, Any] = {}
        for holder_id, holder in holders.items():
            if (
                holder_id != _WRITES_KEY
                and holder is not None
                and holder.get("kind")
                in (
                    KIND_BLOB,
                    KIND_WRITE_VALUE,
                )
            ):
                blobs[holder_id] = yield from self._load_value_ops(holder)
        writes_of: dict[tuple[str, str], list[Document]] = {}
        for wdoc in write_docs:
            writes_of.setdefault((wdoc["ns"], wdoc["checkpoint_id"]), []).append(wdoc)

        tuples: list[CheckpointTuple | None] = []
        for doc in docs:
            try:
                values = self._values_of(doc, holders, blobs)
            except CosmosMissingDocumentError:
                if self.ttl is None:
                    raise
                tuples.append(None)  # its values expired: the checkpoint counts as expired
                continue
            checkpoint = cast(Checkpoint, self._decode(doc["checkpoint"]))
            checkpoint["channel_values"] = values
            metadata = cast(CheckpointMetadata, self._decode(doc["metadata_typed"]))
            pending = yield from self._pending_writes_ops(
                writes_of.get((doc["ns"], doc["checkpoint_id"]), [])
            )
            thread_id, ns, parent = doc["thread_id"], doc["ns"], doc.get("parent_checkpoint_id")
            tuples.append(
                CheckpointTuple(
                    config=_stored_config(thread_id, ns, doc["checkpoint_id"]),
                    checkpoint=checkpoint,
                    metadata=metadata,
                    parent_config=_stored_config(thread_id, ns, parent) if parent else None,
                    pending_writes=pending,
                )
            )
        return tuples

    def _values_of(
        self, doc: Mapping[str, Any], holders: Mapping[str, Any], blobs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Every channel value of one checkpoint or head document; nothing silently left out."""
        values: dict[str, Any] = {}
        own = doc.get("values") or {}
        for channel, version in (doc.get("versions") or {}).items():
            if channel in (doc.get("inline") or {}):
                values[channel] = self._decode(doc["inline"][channel])
                continue
            if channel in (doc.get("cached") or {}):
                values[channel] = self._decode(doc["cached"][channel])
                continue
            if channel in own:
                values[channel] = self._decode(own[channel])
                continue
            origin = origin_of(doc, channel, version)
            if origin is None:
                continue  # a version without a value ("empty")
            if origin in blobs:
                values[channel] = blobs[origin]
                continue
            holder = holders.get(origin)
            held = (holder or {}).get("values") or {}
            if holder is None or channel not in held:
                raise CosmosMissingDocumentError(
                    f"checkpoint {doc['checkpoint_id']!r} of thread {doc['thread_id']!r} "
                    f"(namespace {doc['ns']!r}) needs document {origin!r} for channel "
                    f"{channel!r}, and it is {'missing' if holder is None else 'without it'}",
                    document_id=origin,
                )
            values[channel] = self._decode(held[channel])
        return values

    def _pending_writes_ops(
        self, write_docs: Sequence[Mapping[str, Any]]
    ) -> Ops[list[PendingWrite]]:
        """Merge the writes documents of one checkpoint, PostgresSaver's way."""
        chosen: dict[tuple[str, int], dict[str, Any]] = {}
        # Regular documents first, special ones after: a special write replaces a regular
        # write of the same task and index; among regular ones the first stored stays.
        for wdoc in sorted(write_docs, key=lambda d: bool(d.get("special"))):
            for entry in wdoc.get("writes") or []:
                slot = (str(entry["task_id"]), int(entry["idx"]))
                if slot not in chosen or wdoc.get("special"):
                    chosen[slot] = entry
        entries = sorted(
            chosen.values(),
            key=lambda e: writes_sort_key(e["task_path"], e["task_id"], int(e["idx"])),
        )
        pk = write_docs[0]["pk"] if write_docs else ""
        refs = [e["ref"] for e in entries if "ref" in e]
        ref_docs = yield from read_many([Read(r, pk) for r in refs])
        by_ref = dict(zip(refs, ref_docs, strict=True))
        pending: list[PendingWrite] = []
        for entry in entries:
            if "ref" in entry:
                ref_doc = by_ref.get(entry["ref"])
                if ref_doc is None:
                    raise CosmosMissingDocumentError(
                        f"the value of pending write {entry['channel']!r} of task "
                        f"{entry['task_id']!r} (document {entry['ref']!r}) is missing",
                        document_id=entry["ref"],
                    )
                value = yield from self._load_value_ops(ref_doc)
            else:
                value = self._decode([entry["type"], entry["data"], entry.get("codec")])
            pending.append((entry["task_id"], entry["channel"], value))
        return pending

    def _list_ops(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Ops[None]:
        """Stream checkpoints newest first, one page of PAGE_SIZE at a time (keyset paging on
        the checkpoint id, so memory stays bounded whatever the container holds)."""
        if limit is not None and limit <= 0:
            return
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
        for i, (name, value) in enumerate((filter or {}).items()):
            if pushdown_value(value):
                sql_parts.append(WHERE_METADATA_SQL.format(i=i))
                params += [(f"@mk{i}", name), (f"@mv{i}", value)]
            else:
                exact_pushdown = False
        remaining = limit
        page_size = PAGE_SIZE
        if limit is not None and exact_pushdown:
            page_size = min(PAGE_SIZE, limit)
        page_from: str | None = None
        seen_at_boundary: set[tuple[str, str]] = set()
        while True:
            page_sql = sql_parts + ([WHERE_PAGE_SQL] if page_from is not None else [])
            page_params = [*params, ("@limit", page_size)]
            if page_from is not None:
                page_params.append(("@page_from", page_from))
            docs = yield from query(
                SELECT_TOP_CHECKPOINTS_SQL + "".join(page_sql) + ORDER_NEWEST_FIRST_SQL,
                tuple(page_params),
                pk,
            )
            fresh = [d for d in docs if (d["pk"], d["id"]) not in seen_at_boundary]
            by_thread: dict[str, list[Document]] = {}
            for doc in fresh:
                by_thread.setdefault(doc["pk"], []).append(doc)
            loaded: dict[tuple[str, str], CheckpointTuple | None] = {}
            for thread_docs in by_thread.values():
                tuples = yield from self._load_tuples_ops(thread_docs)
                for doc, tup in zip(thread_docs, tuples, strict=True):
                    loaded[(doc["pk"], doc["id"])] = tup
            for doc in fresh:
                tup = loaded[(doc["pk"], doc["id"])]
                if tup is None:
                    continue
                if filter and not metadata_matches(tup.metadata, filter):
                    continue
                yield Emit(tup)
                if remaining is not None:
                    remaining -= 1
                    if remaining <= 0:
                        return
            if len(docs) < page_size:
                return
            last = docs[-1]["checkpoint_id"]
            if all(d["checkpoint_id"] == last for d in docs):
                page_size *= 2  # one id shared by a whole page (copied threads): widen
            if last != page_from:
                seen_at_boundary = set()
            page_from = last
            seen_at_boundary |= {(d["pk"], d["id"]) for d in docs if d["checkpoint_id"] == last}

    # -- maintenance ---------------------------------------------------------------------------

    def _thread_documents_ops(self, thread_id: str) -> Ops[list[Document]]:
        thread_id = str(thread_id)
        pk = partition_key(thread_id)
        docs = yield from query(
            SELECT_THREAD_DOCS_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
        )
        return docs

    def _thread_index_ops(self, thread_id: str) -> Ops[tuple[str, list[Document]]]:
        pk = partition_key(thread_id)
        index = yield from query(
            SELECT_THREAD_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
        )
        return pk, index

    def _delete_thread_ops(self, thread_id: str) -> Ops[None]:
        """Delete a thread so that every intermediate state is a valid thread: first the
        history down to each namespace's newest checkpoint, then that checkpoint and its head
        in one transactional batch, then what nothing references any more."""
        thread_id = str(thread_id)
        pk, index = yield from self._thread_index_ops(thread_id)
        self._heads.drop_thread(pk, thread_id)
        if not index:
            return
        latest = _newest_per_ns(index)
        yield from self._drop_ops(pk, index, set(latest.items()))
        for ns, cp in latest.items():
            yield from self._remove_last_ops(pk, ns, cp)
        _, rest = yield from self._thread_index_ops(thread_id)
        yield from _delete_docs(pk, rest)
        self._heads.drop_thread(pk, thread_id)

    def _remove_last_ops(self, pk: str, ns: str, checkpoint_id: str) -> Ops[None]:
        """Remove a namespace's last checkpoint and its head together (atomic when possible)."""
        pair: list[BatchOp] = [
            Delete(head_id(ns), pk),
            Delete(checkpoint_doc_id(ns, checkpoint_id), pk),
        ]
        results = yield from batch(pk, pair)
        if isinstance(results, Outcome):
            # One of them is gone already (an earlier, interrupted run): delete what is left,
            # the checkpoint first so that no listed checkpoint is ever left without a head.
            yield from write_all([pair[1]])
            yield from write_all([pair[0]])

    def _copy_thread_ops(self, source_thread_id: str, target_thread_id: str) -> Ops[None]:
        """Copy a thread: values and writes first, then each namespace's checkpoints oldest
        first, each in one batch with the head moved onto it, so the copy is a valid thread
        at every step."""
        source, target = str(source_thread_id), str(target_thread_id)
        src_pk, dst_pk = partition_key(source), partition_key(target)
        docs = yield from query(
            SELECT_THREAD_DOCS_SQL, (("@pk", src_pk), ("@thread_id", source)), src_pk
        )
        if not docs:
            return
        self._heads.drop_thread(dst_pk, target)
        now = yield from clock_now()
        stages: list[list[Document]] = [[], [], []]
        checkpoints: list[Document] = []
        for doc in docs:
            copy = strip_system_fields(doc)
            copy.update(pk=dst_pk, thread_id=target)
            copy.pop("ttl", None)
            if "written" in copy:
                copy["written"] = {k: now for k in copy["written"]}
            kind = doc["kind"]
            if kind == KIND_HEAD:
                continue  # moved onto each copied checkpoint below
            if kind == KIND_CHECKPOINT:
                checkpoints.append(self._stamp(copy))
                continue
            stages[{KIND_CHUNK: 0, KIND_WRITES: 2}.get(kind, 1)].append(self._stamp(copy))
        for stage in stages:
            for i in range(0, len(stage), MAINTENANCE_FANOUT):
                yield from write_all([Upsert(d) for d in stage[i : i + MAINTENANCE_FANOUT]])
        for cp_doc in sorted(checkpoints, key=lambda d: (d["ns"], d["checkpoint_id"])):
            ops: list[BatchOp] = [Upsert(cp_doc), Upsert(self._head_doc(cp_doc, now))]
            results: list[str | None] | Outcome = Outcome.TOO_LARGE
            if _fits(ops):
                results = yield from batch(dst_pk, ops)
            if isinstance(results, Outcome):
                for op in ops:
                    yield from write_all([op])
        self._heads.drop_thread(dst_pk, target)

    def _prune_ops(self, thread_ids: Sequence[str], strategy: str) -> Ops[None]:
        if not isinstance(strategy, str):
            raise TypeError(f"strategy must be a str, got {type(strategy).__name__}")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                yield from self._delete_thread_ops(thread_id)
                continue
            pk, index = yield from self._thread_index_ops(str(thread_id))
            keep = set(_newest_per_ns(index).items())
            keep |= {(d["ns"], d["checkpoint_id"]) for d in index if d["kind"] == KIND_HEAD}
            yield from self._drop_ops(pk, index, keep)

    def _drop_ops(
        self, pk: str, index: Sequence[Mapping[str, Any]], keep: set[tuple[str, str]]
    ) -> Ops[None]:
        """Remove from one thread every checkpoint not in ``keep`` and everything only they
        reached (:func:`~agentstate_cosmosdb.documents.reachable`).

        A removed checkpoint whose document holds a value a survivor uses becomes a
        ``values`` holder first (no longer listed). Heads are never removed here.
        """
        needed = reachable(index, keep)
        holders = [
            d
            for d in index
            if d["kind"] == KIND_CHECKPOINT
            and (d["ns"], d["checkpoint_id"]) not in keep
            and d["id"] in needed
        ]
        for i in range(0, len(holders), MAINTENANCE_FANOUT):
            full = yield from read_many(
                [Read(d["id"], pk) for d in holders[i : i + MAINTENANCE_FANOUT]]
            )
            converted: list[Upsert | Create | Replace | Delete] = []
            for doc in full:
                if doc is not None:
                    kept = strip_system_fields(doc)
                    kept["kind"] = KIND_VALUES
                    converted.append(Upsert(kept))
            yield from write_all(converted)
        doomed = [d for d in index if d["id"] not in needed and d["kind"] != KIND_HEAD]
        yield from _delete_docs(pk, doomed)

    def _delete_for_runs_ops(self, run_ids: Sequence[str]) -> Ops[None]:
        """Delete the checkpoints of runs: each affected head first moves (compare-and-swap)
        to the newest checkpoint that remains, then the runs' checkpoints go; a namespace left
        with none loses its last checkpoint and its head together."""
        if isinstance(run_ids, str):
            raise TypeError("run_ids must be a sequence of run ids, not one str")
        if not run_ids:
            return
        found = yield from query(
            SELECT_RUN_CHECKPOINTS_SQL, (("@run_ids", [str(r) for r in run_ids]),), None
        )
        threads: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for doc in found:
            threads.setdefault((doc["pk"], doc["thread_id"]), set()).add(
                (doc["ns"], doc["checkpoint_id"])
            )
        for (pk, thread_id), gone in threads.items():
            self._heads.drop_thread(pk, thread_id)
            _, index = yield from self._thread_index_ops(thread_id)
            remaining: dict[str, str] = {}
            for d in index:
                if (
                    d["kind"] == KIND_CHECKPOINT
                    and (d["ns"], d["checkpoint_id"]) not in gone
                    and d["checkpoint_id"] > remaining.get(d["ns"], "")
                ):
                    remaining[d["ns"]] = d["checkpoint_id"]
            last_of: dict[str, str] = {}
            for head in [d for d in index if d["kind"] == KIND_HEAD]:
                ns = head["ns"]
                if (ns, head["checkpoint_id"]) not in gone:
                    continue
                if ns in remaining:
                    yield from self._move_head_back_ops(pk, thread_id, ns, remaining[ns])
                else:
                    last_of[ns] = head["checkpoint_id"]
            _, index = yield from self._thread_index_ops(thread_id)
            keep = {
                (d["ns"], d["checkpoint_id"])
                for d in index
                if d["kind"] == KIND_CHECKPOINT and (d["ns"], d["checkpoint_id"]) not in gone
            }
            keep |= set(last_of.items())
            yield from self._drop_ops(pk, index, keep)
            for ns, cp in last_of.items():
                yield from self._remove_last_ops(pk, ns, cp)
            if last_of:
                _, index = yield from self._thread_index_ops(thread_id)
                yield from self._drop_ops(
                    pk,
                    index,
                    {
                        (d["ns"], d["checkpoint_id"])
                        for d in index
                        if d["kind"] == KIND_CHECKPOINT
                        and (d["ns"], d["checkpoint_id"]) not in gone
                    },
                )
            self._heads.drop_thread(pk, thread_id)

    def _move_head_back_ops(self, pk: str, thread_id: str, ns: str, target: str) -> Ops[None]:
        """Point the head at ``target`` (an older checkpoint), unless another writer moved it
        meanwhile to a checkpoint that stays."""
        cp_doc = yield from read(checkpoint_doc_id(ns, target), pk)
        if cp_doc is None:
            return
        doc = self._head_doc(strip_system_fields(cp_doc), (yield from clock_now()))
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(_backoff(attempt))
            current = yield from read(head_id(ns), pk)
            if current is None:
                stored = yield from write(Create(doc))
                if stored is Outcome.CONFLICT:
                    continue
                return
            if current["checkpoint_id"] == target:
                return
            stored = yield from write(Replace(doc, current["_etag"]))
            if stored is not Outcome.PRECONDITION_FAILED:
                return
        raise CosmosOperationError(
            f"could not move the head of thread {thread_id!r} back after {CAS_ATTEMPTS} attempts"
        )

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


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

_WRITES_KEY = "\x00writes"


def _fits(ops: Sequence[BatchOp]) -> bool:
    return len(ops) <= BATCH_MAX_OPS and batch_bytes(ops) <= BATCH_BYTES


def _positive_int_or_none(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be a positive int or None, got {type(value).__name__}")
    if value <= 0:
        raise CosmosConfigurationError(f"{name} must be a positive int or None, got {value!r}")
    return value


def _make_reduction(
    reducer: MessageReducer | None,
    messages_key: str,
    next_version: Any,
    on_prune_error: Literal["keep", "raise"],
) -> CheckpointReduction | None:
    # The core's checks: the same misuse raises the same error as from every other saver.
    check_name("messages_key", messages_key)
    check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
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


def _backoff(attempt: int) -> float:
    """Full-jitter exponential backoff (seconds) before compare-and-swap attempt ``attempt``."""
    return random.uniform(0, min(CAS_BACKOFF_MAX, CAS_BACKOFF_SECONDS * 2**attempt))


def _head_state(doc: Mapping[str, Any], etag: str) -> HeadState:
    size = len(json.dumps(doc, separators=(",", ":"), default=str)) + 512
    return HeadState(
        checkpoint_id=doc["checkpoint_id"], etag=etag, doc=strip_system_fields(doc), size=size
    )


def _check_schema(doc: Mapping[str, Any]) -> None:
    schema = doc.get("schema", 1)
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise CosmosSchemaError(
            f"document {doc.get('id')!r} was written with storage layout {schema!r}; this "
            f"version of agentstate-cosmosdb reads layouts up to {SCHEMA_VERSION}. Upgrade "
            "agentstate-cosmosdb."
        )


def _writes_query(pk: str, thread_id: str, ns: str, checkpoint_ids: Iterable[str]) -> Query:
    return Query(
        SELECT_WRITES_SQL,
        (
            ("@pk", pk),
            ("@thread_id", thread_id),
            ("@ns", ns),
            ("@checkpoint_ids", list(checkpoint_ids)),
        ),
        pk,
    )


def _newest_per_ns(docs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    latest: dict[str, str] = {}
    for doc in docs:
        if doc["kind"] == KIND_CHECKPOINT and doc["checkpoint_id"] > latest.get(doc["ns"], ""):
            latest[doc["ns"]] = doc["checkpoint_id"]
    return latest


def _delete_docs(pk: str, docs: Sequence[Mapping[str, Any]]) -> Ops[None]:
    """Delete documents so that no surviving document ever references a deleted one.

    Checkpoints first, in waves: a checkpoint goes only once no other checkpoint still to be
    deleted reads a value from it (references run from newer to older ones). Then pending
    writes, then value holders and chunks.
    """
    order = {KIND_CHECKPOINT: 0, KIND_WRITES: 1, KIND_VALUES: 2, KIND_BLOB: 2, KIND_WRITE_VALUE: 2}
    pending = [d for d in docs if d.get("kind") == KIND_CHECKPOINT]
    while pending:
        referenced = {ref for d in pending for ref in references(d)}
        wave = [d for d in pending if d["id"] not in referenced] or pending
        for i in range(0, len(wave), MAINTENANCE_FANOUT):
            yield from write_all([Delete(d["id"], pk) for d in wave[i : i + MAINTENANCE_FANOUT]])
        gone = {d["id"] for d in wave}
        pending = [d for d in pending if d["id"] not in gone]
    rest = [d for d in docs if d.get("kind") != KIND_CHECKPOINT]
    for rank in sorted({order.get(d.get("kind", ""), 3) for d in rest}):
        group = [d for d in rest if order.get(d.get("kind", ""), 3) == rank]
        for i in range(0, len(group), MAINTENANCE_FANOUT):
            yield from write_all([Delete(d["id"], pk) for d in group[i : i + MAINTENANCE_FANOUT]])


def _stored_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }

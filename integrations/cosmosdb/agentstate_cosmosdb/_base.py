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

import json
import random
import uuid
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

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
    EMPTY as _EMPTY,
)
from agentstate_cosmosdb.documents import (
    b64,
    json_safe,
    metadata_matches,
    split_chunks,
    strip_system_fields,
    unb64,
)
from agentstate_cosmosdb.documents import (
    origin_in as _origin_in,
)
from agentstate_cosmosdb.documents import (
    origin_of as _origin_of,
)
from agentstate_cosmosdb.documents import (
    pushdown_value as _pushdown_value,
)
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosItemTooLargeError,
    CosmosOperationError,
    map_sdk_error,
)
from agentstate_cosmosdb.heads import HeadCache, HeadState
from agentstate_cosmosdb.ops import (
    Batch,
    Create,
    Delete,
    Emit,
    Op,
    Outcome,
    Query,
    Read,
    Replace,
    Step,
    Upsert,
    batch_failure,
    batch_operations,
)
from agentstate_cosmosdb.schema import (
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
    SELECT_CHECKPOINTS_SQL,
    SELECT_LATEST_IN_NS_SQL,
    SELECT_RUN_CHECKPOINTS_SQL,
    SELECT_THREAD_DOCS_SQL,
    SELECT_THREAD_INDEX_SQL,
    SELECT_TOP_CHECKPOINTS_SQL,
    WHERE_BEFORE_SQL,
    WHERE_CHECKPOINT_ID_SQL,
    WHERE_METADATA_SQL,
    WHERE_NS_SQL,
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
    proxy_env_present,
    resolve_settings,
    scrub,
    tls_hook,
    wrong_partition_key_message,
)

if TYPE_CHECKING:
    from agentstate_reducer import MessageReducer
    from agentstate_reducer.langgraph.saver import CheckpointReduction

__all__ = [
    "CONFLICT",
    "PARTITION_KEY_PATH",
    "PRECONDITION_FAILED",
    "BaseCosmosDBSaver",
    "ClientSettings",
    "batch_failure",
    "batch_operations",
    "map_sdk_error",
    "missing_container_message",
    "proxy_env_present",
    "resolve_settings",
    "scrub",
    "tls_hook",
    "wrong_partition_key_message",
]

CONFLICT = Outcome.CONFLICT
PRECONDITION_FAILED = Outcome.PRECONDITION_FAILED
Ops = Generator[Step, Any, Any]

INLINE_PRIMITIVE_BYTES = 1024
HEAD_CACHE_BYTES = 1_000_000
OWN_VALUE_BYTES = 256 * 1024
OWN_VALUES_BYTES = 1_000_000
WRITE_INLINE_BYTES = 32 * 1024
WRITES_DOC_BYTES = 1_800_000
BATCH_MAX_OPS = 100
BATCH_BYTES = 1_800_000
CAS_ATTEMPTS = 16


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
                if not isinstance(results, Outcome):
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


def _batch_size(ops: Sequence[Upsert | Replace]) -> int:
    docs = [op.doc for op in ops if isinstance(op, (Upsert, Create, Replace))]
    return len(json.dumps(docs, separators=(",", ":")))


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

"""Writes: ``put`` (values, checkpoint document, head advance by compare-and-swap) and
``put_writes`` (a task's pending writes).

A put with ``keep_checkpoints`` garbage-collects the namespace afterwards with the maintenance
family's ``_drop_ops``, hence :class:`WriteOps` builds on
:class:`~agentstate_cosmosdb._maintenance.MaintenanceOps`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)

from agentstate_cosmosdb._maintenance import MaintenanceOps
from agentstate_cosmosdb._state import (
    CAS_ATTEMPTS,
    MAINTENANCE_FANOUT,
    TTL_MARGIN_SECONDS,
    backoff,
    fits,
    head_state,
    stored_config,
)
from agentstate_cosmosdb.documents import EMPTY, b64, json_safe, origin_in
from agentstate_cosmosdb.errors import CosmosOperationError
from agentstate_cosmosdb.heads import HeadKey, HeadState
from agentstate_cosmosdb.ops import (
    BatchOp,
    Create,
    Document,
    Ops,
    Outcome,
    Replace,
    Sleep,
    Upsert,
    batch,
    query,
    read,
    write,
    write_all,
)
from agentstate_cosmosdb.ops import now as clock_now
from agentstate_cosmosdb.schema import (
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_WRITE_VALUE,
    KIND_WRITES,
    SCHEMA_VERSION,
    SELECT_NS_INDEX_SQL,
    blob_id,
    checkpoint_doc_id,
    head_id,
    partition_key,
    write_value_id,
    writes_doc_id,
)

INLINE_PRIMITIVE_BYTES = 1024
"""Primitive channel values up to this size live in every checkpoint document, as in
PostgresSaver."""

OWN_VALUE_BYTES = 256 * 1024
"""Encoded new values up to this size are stored inside their checkpoint document..."""

OWN_VALUES_BYTES = 700_000
"""... as long as that document's own values stay within this budget (so that a checkpoint
document and its head always fit in one transactional batch)."""

WRITE_INLINE_BYTES = 64 * 1024
"""Encoded pending-write values larger than this get a document of their own..."""

WRITES_DOC_BYTES = 1_000_000
"""... and so do the largest ones once a task's writes document would pass this."""


class WriteOps(MaintenanceOps):
    """The generators of ``put`` and ``put_writes``."""

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
                state = head_state(current, current["_etag"])
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
            if not fits(ops):
                yield from write_all(blob_ops)  # values first, then what references them
                ops = [Upsert(cp_doc), head_op]
            results: list[str | None] | Outcome = Outcome.TOO_LARGE
            self._heads.drop(key)
            if fits(ops):
                results = yield from batch(pk, ops)
            if not isinstance(results, Outcome):
                if results[-1]:
                    self._remember_head(key, head_doc, results[-1])
                yield from self._after_put_ops(key, parent_id, linear)
                return stored_config(thread_id, ns, checkpoint_id)
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
        return stored_config(thread_id, ns, checkpoint_id)

    def _advance_head_ops(self, key: HeadKey, head_doc: Document) -> Ops[None]:
        """Point the head at ``head_doc``'s checkpoint (stored already) unless it holds a newer
        one: compare-and-swap on the head's etag, jittered backoff between attempts."""
        pk, thread_id, ns = key
        checkpoint_id = head_doc["checkpoint_id"]
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(backoff(attempt))
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
                yield Sleep(backoff(attempt))
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

"""Writes: ``put`` (values, checkpoint document, head advance by compare-and-swap) and
``put_writes`` (a task's pending writes).

A put with ``keep_checkpoints`` cleans the thread up afterwards with the maintenance family's
``_collect_ops``, hence :class:`WriteOps` builds on
:class:`~agentstate_cosmosdb._maintenance.MaintenanceOps`.

**What makes a put safe beside clean-up in other processes.** A checkpoint inherits the
values of unchanged channels by pointing at the documents that hold them (``origins``), found
from its parent. Another process's clean-up may delete those documents between the moment the
put read its parent and the moment it stores the checkpoint. Two things close that gap:

* the put stores its checkpoint in one transactional batch that replaces the head if-match the
  etag it read (or, for a checkpoint older than the head, replaces the head with itself), and
  clean-up deletes only in batches that replace the head if-match the etag *it* read
  (``_maintenance``). Of two such batches the one applied second is refused. And a parent
  the put read after the head (as it always does) that was still a listed checkpoint had all
  its values then; with the head unchanged until the put's batch, no clean-up batch ran in
  between, so they are all still there;
* when there is no etag to compare (the put creates the namespace's head) or the parent is
  kept only as a ``values`` holder (whose own references clean-up may have removed), the
  batch also reads every older document the checkpoint inherits from: one that is gone
  refuses it.

A refused put builds its checkpoint again from what is stored (a parent that is gone means its
values are written again, from the checkpoint the put holds in full); refused again (or too
large for a batch, or, with ``ttl=``, older than the head), it stores a self-contained
checkpoint (every value written anew under fresh ids: it inherits nothing) and moves the head
by compare-and-swap, never backwards.

**What makes it safe against a config naming a removed checkpoint.** ``get_tuple`` of an id
that is not stored returns None (the saver contract), and LangGraph then runs from an empty
state whose first put names that id as its parent: stored, it would become the thread's latest
and take its history. Such a put (its parent asked for and not found by this process's
``get_tuple``, still not stored, and the namespace's head newer) is refused with
:class:`~agentstate_cosmosdb.errors.CosmosCheckpointRemovedError`, nothing stored, and so are
pending writes for that id (a ``Command(resume=...)`` stores its resume value first, before
any node runs). That is the earliest point that can tell (for a run with new input under
``durability="exit"``, after the run's nodes). A run
that read its parent whole, which clean-up removed afterwards, holds the parent's state in
full: its put is stored as before.

**What makes it safe against delete_thread.** ``delete_thread`` leaves a tombstone with the
newest checkpoint id the thread had, and the greatest id a checkpoint made before the delete
can have (``deleted_at``). A put that builds on a parent that is gone, in a namespace without
a head, whose parent id the tombstone covers, belongs to a run the thread was deleted under:
it is refused with :class:`~agentstate_cosmosdb.errors.CosmosThreadDeletedError` and stores
nothing; so are pending writes, in a namespace without a head, for a checkpoint it covers
(their batch reads the namespace's head), stored or not yet (``durability="async"`` stores
writes before their checkpoint). A run that starts afresh on the same thread id is not
affected (its checkpoints are made after the delete).

A put that the tombstone refuses, or that finds both its head and its parent gone (the ordered
way, after a delete removed them between its reads and its batches), removes what it stored
for that checkpoint: its pending writes and, for a root checkpoint, the subgraph calls started
from it (their namespaces whole: the metadata of their checkpoints names the root). It
records the refusal first, and every write and put checks that record again after storing,
so what lands after the clean-up read the thread removes itself.

**Subgraph calls.** A call's first put has no parent to be refused by; it is judged by its
root checkpoint (LangGraph's ``checkpoint_map``): refused when this process refused the
root's put, or (read after storing, until this process stored the call's first checkpoint:
one read of the tombstone) when the tombstone covers the root and the root is not stored. A
call refused so removes its namespace whole (its
pending writes may have landed before any of its checkpoints, where the root's clean-up
cannot tell them from a live call's).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)

from agentstate_cosmosdb._maintenance import MaintenanceOps, deletion_waves
from agentstate_cosmosdb._state import (
    CAS_ATTEMPTS,
    HEAD_TTL_SLACK,
    HOLDER_TTL_FACTOR,
    MAINTENANCE_FANOUT,
    TTL_MARGIN_SECONDS,
    backoff,
    fits,
    head_state,
    stored_config,
)
from agentstate_cosmosdb.documents import EMPTY, b64, json_safe, origin_in
from agentstate_cosmosdb.errors import (
    CosmosCheckpointRemovedError,
    CosmosOperationError,
    CosmosThreadDeletedError,
)
from agentstate_cosmosdb.heads import HeadKey, HeadState
from agentstate_cosmosdb.ops import (
    BatchOp,
    Create,
    Delete,
    Document,
    Ops,
    Outcome,
    Read,
    Replace,
    Sleep,
    T,
    Upsert,
    batch,
    query,
    read,
    read_many,
    write,
    write_all,
)
from agentstate_cosmosdb.ops import now as clock_now
from agentstate_cosmosdb.schema import (
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_CHUNK,
    KIND_HEAD,
    KIND_VALUES,
    KIND_WRITE_VALUE,
    KIND_WRITES,
    KIND_WRITES_MARK,
    KIND_WRITES_PART,
    SCHEMA_VERSION,
    SELECT_NS_INDEX_SQL,
    SELECT_THREAD_INDEX_SQL,
    blob_id,
    checkpoint_doc_id,
    head_id,
    partition_key,
    tombstone_id,
    write_value_id,
    writes_doc_id,
    writes_mark_id,
    writes_part_id,
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
"""... and a task's writes documents (and parts) hold at most this much JSON each, every
entry counted whole (its fields and quoting, not only its value: a task writing ten thousand
``Send`` s is mostly that overhead). The service refuses items over 2 MB."""


class _Plan(NamedTuple):
    """The documents of one put, built before anything is written."""

    chunk_docs: list[Document]
    blob_docs: list[Document]
    cp_doc: Document
    head_doc: Document
    refs: list[str]
    """Documents stored before this put that its checkpoint reads values from."""


class WriteOps(MaintenanceOps):
    """The generators of ``put`` and ``put_writes``."""

    def _put_ops(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Ops[RunnableConfig]:
        configurable = config["configurable"]
        call = self._call_of(configurable, metadata)
        store = self._store_put_ops(config, checkpoint, metadata, new_versions)
        return (yield from (store if call is None else self._as_call_ops(call, store)))

    def _store_put_ops(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Ops[RunnableConfig]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        pk = partition_key(thread_id)
        key: HeadKey = (pk, thread_id, ns)
        checkpoint_id = checkpoint["id"]
        now = yield from clock_now()
        parent_doc: Mapping[str, Any] | None = None
        state = HeadState.missing()
        for fresh in (False, True):
            # First with the head this process last saw, then (refused: another writer moved
            # the head, or clean-up removed a document it inherits from) from what is stored.
            cached = None if fresh else self._heads.get(key)
            state = cached if cached is not None else (yield from self._head_state_ops(key))
            parent_doc = yield from self._parent_ops(key, state, parent_id)
            if parent_id and parent_doc is None and state.absent:
                try:
                    yield from self._refuse_if_deleted_ops(pk, thread_id, ns, str(parent_id))
                except CosmosThreadDeletedError:
                    # Writes of this checkpoint stored meanwhile (before it, under
                    # durability="async") go now, and so do subgraph calls started from it;
                    # later ones are refused.
                    yield from self._refused_ops(pk, thread_id, ns, checkpoint_id)
                    raise
            if (
                parent_id
                # gone, or kept only as a holder of values (not a checkpoint any more)
                and (parent_doc is None or parent_doc.get("kind") == KIND_VALUES)
                and state.checkpoint_id > str(parent_id)
                and (pk, thread_id, ns, str(parent_id)) in self._unfound
            ):
                raise _removed_parent(thread_id, ns, str(parent_id), state.checkpoint_id)
            moves_head = checkpoint_id >= state.checkpoint_id
            if not moves_head and self.ttl is not None:
                break  # (a touch of the head would restart its ttl)
            plan = self._put_plan(config, checkpoint, metadata, new_versions, parent_doc, now)
            # With an etag to compare, the head's replace is the fence (see the module
            # docstring); without one, or from a parent kept only as a values holder, the
            # batch reads what the checkpoint inherits.
            check = state.absent or (parent_doc or {}).get("kind") == KIND_VALUES
            outcome = yield from self._put_batch_ops(key, state, plan, moves_head, check)
            if outcome is None:
                # Built on the head (or the same put again, after a crash): not a fork.
                linear = bool(parent_id) and state.checkpoint_id in (parent_id, checkpoint_id)
                yield from self._after_put_ops(key, checkpoint_id, parent_id, linear)
                return stored_config(thread_id, ns, checkpoint_id)
            self._heads.drop(key)
            if outcome is Outcome.TOO_LARGE:
                break
        # The ordered way (refused twice, too large for a batch, or with ttl older than the
        # head): a self-contained checkpoint (it inherits no document, so no clean-up can take
        # what it reads), then the head by compare-and-swap.
        plan = self._put_plan(config, checkpoint, metadata, new_versions, None, now)
        self._heads.drop(key)
        yield from _write_in_groups([Upsert(d) for d in plan.chunk_docs])
        yield from _write_in_groups([Upsert(d) for d in plan.blob_docs])
        yield from write_all([Upsert(plan.cp_doc)])
        try:
            yield from self._advance_head_ops(
                key, plan.head_doc, parent=str(parent_id) if parent_id else None
            )
        except CosmosThreadDeletedError:
            # The thread was deleted while this put ran (its head and parent went between
            # its reads and its batches): what it stored goes, as do its writes.
            mine = [plan.cp_doc, *plan.blob_docs, *plan.chunk_docs]
            yield from _delete_in_groups(pk, [str(d["id"]) for d in mine])
            yield from self._refused_ops(pk, thread_id, ns, checkpoint_id)
            raise
        linear = bool(parent_id) and state.checkpoint_id in (parent_id, checkpoint_id)
        yield from self._after_put_ops(key, checkpoint_id, parent_id, linear)
        return stored_config(thread_id, ns, checkpoint_id)

    def _head_state_ops(self, key: HeadKey) -> Ops[HeadState]:
        pk, thread_id, ns = key
        current = yield from read(head_id(ns), pk)
        if current is None or current.get("thread_id") != thread_id:
            return HeadState.missing()
        return head_state(current, current["_etag"])

    def _parent_ops(
        self, key: HeadKey, state: HeadState, parent_id: str | None
    ) -> Ops[Mapping[str, Any] | None]:
        """The stored parent document (a removed one kept as a ``values`` holder still tells
        where its values live), or None."""
        if not parent_id:
            return None
        if not state.absent and state.checkpoint_id == parent_id:
            return state.doc
        pk, thread_id, ns = key
        doc = yield from read(checkpoint_doc_id(ns, str(parent_id)), pk)
        if (
            doc is None
            or doc.get("thread_id") != thread_id
            or doc.get("kind") not in (KIND_CHECKPOINT, KIND_VALUES)
        ):
            return None
        return doc

    def _refuse_if_deleted_ops(
        self, pk: str, thread_id: str, ns: str, checkpoint_id: str, *, writes: bool = False
    ) -> Ops[Mapping[str, Any] | None]:
        """Raise when the tombstone of ``delete_thread`` covers ``checkpoint_id`` (the parent
        of a put, or the checkpoint of pending writes): it is up to the newest checkpoint the
        thread had, or was made before the delete (``deleted_at``: under
        ``durability="async"`` a run stores a task's writes before their checkpoint, which
        may not have been stored when the thread was deleted)."""
        tomb = yield from read(tombstone_id(), pk)
        if tomb is None:
            return None
        if _covers(tomb, checkpoint_id):
            what = "pending writes for checkpoint" if writes else "checkpoint"
            raise CosmosThreadDeletedError(
                f"thread {thread_id!r} was deleted (delete_thread) while a run was using it: "
                f"{what} {checkpoint_id!r} (namespace {ns!r}) belongs to that run, so it was "
                "refused, as is everything the run stores from now on (what it stored before "
                "the delete went with the thread). Start the thread again with new input (a "
                "run without checkpoint_id)."
            )
        return tomb

    def _refused_ops(self, pk: str, thread_id: str, ns: str, checkpoint_id: str) -> Ops[None]:
        """Record that the put of ``checkpoint_id`` was refused (its thread deleted under the
        run), then remove what the run stored for it meanwhile: its pending writes and, for a
        root checkpoint, the subgraph calls started from it (their namespaces whole). The
        record comes first: a write or call stored after the removal reads the thread sees it
        (see :meth:`_as_call_ops`)."""
        self._deleted_runs.add((pk, thread_id, ns, checkpoint_id))
        yield from self._drop_writes_ops(pk, thread_id, ns, checkpoint_id)
        if ns == "":
            index = yield from query(
                SELECT_THREAD_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
            )
            calls = {
                d["ns"]
                for d in index
                if d["ns"] != ""
                and isinstance(d.get("parents"), Mapping)
                and d["parents"].get("") == checkpoint_id
            }
            for call_ns in sorted(calls):
                docs = [d for d in index if d["ns"] == call_ns]
                yield from self._remove_call_ops(pk, thread_id, call_ns, docs)

    @staticmethod
    def _call_of(
        configurable: Mapping[str, Any], metadata: Mapping[str, Any] | None = None
    ) -> tuple[str, str, str, str] | None:
        """``(pk, thread id, namespace, root checkpoint id)`` of a put or write in a subgraph
        call's namespace (the root checkpoint it runs under: LangGraph's ``checkpoint_map``,
        or the put's ``parents``), else None."""
        ns = str(configurable.get("checkpoint_ns", ""))
        if not ns:
            return None
        roots = configurable.get("checkpoint_map")
        if not isinstance(roots, Mapping) and metadata is not None:
            roots = metadata.get("parents")
        root = roots.get("") if isinstance(roots, Mapping) else None
        if not root:
            return None
        thread_id = str(configurable["thread_id"])
        return partition_key(thread_id), thread_id, ns, str(root)

    def _as_call_ops(self, call: tuple[str, str, str, str], store: Ops[T]) -> Ops[T]:
        """Run ``store`` (a put or write of a subgraph call, ``(pk, thread id, namespace,
        root checkpoint id)``) unless the call belongs to a run ``delete_thread`` deleted,
        and remove the call's namespace (raising) when it turns out to afterwards.

        A call belongs to a deleted run when this process refused its root's put, or the
        tombstone covers its root and the root is not stored. The latter is read after
        storing, while the call's head is not known here (its first put, and writes before
        it): a delete that removes the root after that read reads the thread again and finds
        the call; one that removed it before is seen. ``durability="async"`` also runs the
        root's put beside the call: a refusal of the root recorded meanwhile is seen after
        storing too (its clean-up may have read the thread before the call landed).
        """
        pk, thread_id, ns, root = call
        refused = (pk, thread_id, "", root)
        if refused in self._deleted_runs:
            yield from self._remove_call_ops(pk, thread_id, ns)
            raise _call_of_deleted_run(thread_id, ns, root)
        known = self._heads.get((pk, thread_id, ns))  # get_tuple also remembers "no head"
        first = known is None or known.absent
        result = yield from store
        if first and refused not in self._deleted_runs:
            tomb = yield from read(tombstone_id(), pk)
            yield from self._judge_root_ops(call, tomb)
        if refused in self._deleted_runs:
            yield from self._remove_call_ops(pk, thread_id, ns)
            raise _call_of_deleted_run(thread_id, ns, root)
        return result

    def _judge_root_ops(
        self, call: tuple[str, str, str, str], tomb: Mapping[str, Any] | None
    ) -> Ops[bool]:
        """Whether ``call``'s root checkpoint belongs to a run ``delete_thread`` deleted (this
        process refused its put, or ``tomb``, the thread's tombstone, covers it and it is not
        stored); recorded in ``_deleted_runs`` when so. A stored root is history written
        again (a migration, a copy), or a delete still under way (which reads the thread
        again, this call included)."""
        pk, thread_id, _, root = call
        refused = (pk, thread_id, "", root)
        if refused in self._deleted_runs:
            return True
        if (
            tomb is not None
            and _covers(tomb, root)
            and (yield from read(checkpoint_doc_id("", root), pk)) is None
        ):
            self._deleted_runs.add(refused)
            return True
        return False

    def _remove_call_ops(
        self, pk: str, thread_id: str, ns: str, index: Sequence[Mapping[str, Any]] | None = None
    ) -> Ops[None]:
        """Delete every document of one namespace of a deleted run (its head first): those of
        ``index`` when the caller read them already, else those a query finds."""
        self._heads.drop((pk, thread_id, ns))
        if index is None:
            index = yield from query(
                SELECT_NS_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns)), pk
            )
        yield from _delete_in_groups(pk, [str(d["id"]) for d in index if d["kind"] == KIND_HEAD])
        for wave in deletion_waves(pk, [d for d in index if d["kind"] != KIND_HEAD]):
            yield from _delete_in_groups(pk, [op.id for _, op in wave if isinstance(op, Delete)])

    def _drop_writes_ops(self, pk: str, thread_id: str, ns: str, checkpoint_id: str) -> Ops[None]:
        """Delete every pending-write document of one checkpoint (writes, parts, values and
        their chunks, the mark)."""
        index = yield from query(
            SELECT_NS_INDEX_SQL, (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns)), pk
        )
        kinds = (KIND_WRITES, KIND_WRITES_PART, KIND_WRITE_VALUE, KIND_WRITES_MARK)
        ids = {
            str(d["id"])
            for d in index
            if d.get("kind") in kinds and d.get("checkpoint_id") == checkpoint_id
        }
        ids.update(
            str(d["id"]) for d in index if d.get("kind") == KIND_CHUNK and d.get("blob_id") in ids
        )
        yield from _delete_in_groups(pk, sorted(ids))

    def _put_plan(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        parent_doc: Mapping[str, Any] | None,
        now: float,
    ) -> _Plan:
        """Every document of a put. Unchanged channels point where ``parent_doc`` found them
        (None: nothing is inherited, every value is written here)."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        pk = partition_key(thread_id)
        checkpoint_id = checkpoint["id"]
        values = checkpoint["channel_values"]
        versions = {ch: str(v) for ch, v in checkpoint["channel_versions"].items()}
        own_id = checkpoint_doc_id(ns, checkpoint_id)

        inline: dict[str, list[Any]] = {}
        for channel, value in values.items():
            if value is None or isinstance(value, (str, int, float, bool)):
                type_, data = self.serde.dumps_typed(value)
                if len(data) <= INLINE_PRIMITIVE_BYTES:
                    inline[channel] = [type_, b64(data)]

        # Unchanged channels point where the parent found them, unless that holder is unknown
        # or would expire before the head this put writes (with ttl: sooner than the head's
        # ttl; without: at all, as a holder another instance wrote with ttl= would): then the
        # value is written again here, so that everything the head references outlives it,
        # whatever ttl each instance sharing the container runs with (see _state).
        origins: dict[str, str] = {}
        written: dict[str, float] = {}
        expires: dict[str, float] = {}
        empty: list[str] = []
        rewrite: list[str] = []
        refs: list[str] = []
        for channel in versions:
            if channel in inline or channel in new_versions:
                continue
            found = origin_in(parent_doc, channel, versions[channel])
            if found == EMPTY:
                empty.append(channel)
                continue
            expiry = None if found is None else self._holder_expiry(parent_doc, found)
            if found is None or not self._outlives_head(expiry, now):
                rewrite.append(channel)
                continue
            origins[channel] = found
            if found not in refs:
                refs.append(found)
            if expiry is not None:
                expires[found] = expiry
                if self.ttl is not None:
                    written[found] = expiry - HOLDER_TTL_FACTOR * self.ttl

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
                # A fresh id: the stored blob of this version may be expiring or being removed.
                base["id"] = blob_id(ns, channel, f"{version}@{uuid.uuid4().hex}")
            extra, doc = self._value_docs(base, values[channel])
            chunk_docs.extend(extra)
            blob_docs.append(doc)
            origins[channel] = base["id"]
        if self.ttl is not None:
            for holder in {*origins.values()}:
                written.setdefault(holder, now)
                expires.setdefault(holder, now + HOLDER_TTL_FACTOR * self.ttl)

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
                "parent_checkpoint_id": configurable.get("checkpoint_id"),
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
        cp_doc["expires"] = expires
        if self.ttl is not None:
            cp_doc["written"] = written  # what versions before `expires` read
        return _Plan(chunk_docs, blob_docs, cp_doc, self._head_doc(cp_doc, now), refs)

    def _holder_expiry(self, parent_doc: Mapping[str, Any] | None, holder: str) -> float | None:
        """When (epoch seconds) ``holder`` expires, as the parent recorded it; None: never.

        ``expires`` lists every holder that has a ttl (absent: written without one). Documents
        from before it record only ``written`` (with ``ttl=``: when each holder was written,
        under an unknown ttl): with ``ttl=``, this saver's is assumed, as those versions did;
        without, the holder counts as expiring now (written again once)."""
        doc = parent_doc or {}
        if "expires" in doc:
            recorded = (doc.get("expires") or {}).get(holder)
            return None if recorded is None else float(recorded)
        written = doc.get("written")
        if written is None:
            return None  # a checkpoint written without ttl= by an older version
        when = written.get(holder)
        if when is None or self.ttl is None:
            return 0.0
        return float(when) + HOLDER_TTL_FACTOR * self.ttl

    def _outlives_head(self, expiry: float | None, now: float) -> bool:
        """Whether a holder expiring at ``expiry`` outlives the head a put at ``now`` writes
        (without ttl= the head never expires; with it, it lives ``ttl + HEAD_TTL_SLACK``
        seconds, and a holder expiring sooner than that plus the margin is written again)."""
        if self.ttl is None:
            return expiry is None
        if expiry is None:
            return False  # no ttl: written again with one, so the thread expires as a whole
        return expiry - now >= self.ttl + HEAD_TTL_SLACK + TTL_MARGIN_SECONDS

    def _put_batch_ops(
        self, key: HeadKey, state: HeadState, plan: _Plan, moves_head: bool, check: bool
    ) -> Ops[Outcome | None]:
        """Store a planned checkpoint in one transactional batch that moves the head onto it
        (``moves_head``), or else replaces the head with itself (a checkpoint older than the
        head: the replace fences clean-up all the same), and, with ``check``, reads every
        document it inherits from. None when applied; else why not (nothing applied)."""
        pk = key[0]
        yield from _write_in_groups([Upsert(d) for d in plan.chunk_docs])
        blob_upserts = [Upsert(d) for d in plan.blob_docs]
        blob_ops: list[BatchOp] = list(blob_upserts)
        new_head = plan.head_doc if moves_head else dict(state.doc)
        head_op: BatchOp = Create(new_head) if state.absent else Replace(new_head, state.etag)
        reads: list[BatchOp] = [Read(ref, pk) for ref in plan.refs] if check else []
        ops = [*blob_ops, Upsert(plan.cp_doc), head_op, *reads]
        if not fits(ops):
            yield from _write_in_groups(blob_upserts)  # values first, then what references them
            ops = [Upsert(plan.cp_doc), head_op, *reads]
            if not fits(ops):
                return Outcome.TOO_LARGE
        self._heads.drop(key)
        results = yield from batch(pk, ops)
        if isinstance(results, Outcome):
            return results
        etag = results[ops.index(head_op)]
        if etag:
            self._remember_head(key, new_head, etag)
        return None

    def _advance_head_ops(
        self, key: HeadKey, head_doc: Document, parent: str | None = None
    ) -> Ops[None]:
        """Point the head at ``head_doc``'s checkpoint (stored already) unless it holds a newer
        one: compare-and-swap on the head's etag, jittered backoff between attempts. With
        ``parent``, a head created anew is created in one batch that reads the parent: both
        gone, the thread was deleted under the run when a tombstone covers the parent
        (CosmosThreadDeletedError)."""
        pk, thread_id, ns = key
        checkpoint_id = head_doc["checkpoint_id"]
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(backoff(attempt))
            current = yield from read(head_id(ns), pk)
            if current is None or current.get("thread_id") != thread_id:
                stored: str | Outcome | None = None
                if parent is not None:
                    results = yield from batch(
                        pk, [Read(checkpoint_doc_id(ns, parent), pk), Create(head_doc)]
                    )
                    if results is Outcome.PRECONDITION_FAILED:
                        yield from self._refuse_if_deleted_ops(pk, thread_id, ns, parent)
                        parent = None  # no tombstone covers it: created as before
                    elif results is Outcome.TOO_LARGE:
                        parent = None
                    else:
                        stored = results if isinstance(results, Outcome) else results[1]
                if parent is None:
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
        if (pk, thread_id, ns, checkpoint_id) in self._unfound:
            # A run from an empty state that names a removed checkpoint (a Command(resume=...)
            # stores its resume value first): refused here, before its nodes run.
            where: HeadKey = (pk, thread_id, ns)
            head = yield from self._head_state_ops(where)
            own = yield from self._parent_ops(where, head, checkpoint_id)
            removed = own is None or own.get("kind") == KIND_VALUES
            if removed and head.checkpoint_id > checkpoint_id:
                raise _removed_parent(thread_id, ns, checkpoint_id, head.checkpoint_id)
        run: tuple[str, str, str, str] = (pk, thread_id, ns, checkpoint_id)
        if run in self._deleted_runs:
            raise _refused_with_their_checkpoint(thread_id, ns, checkpoint_id)
        call = self._call_of(configurable)
        store = self._store_writes_ops(
            (pk, thread_id, ns), checkpoint_id, writes, task_id, task_path, call
        )
        yield from (store if call is None else self._as_call_ops(call, store))
        if run in self._deleted_runs:
            # Under durability="async" the put of this checkpoint runs beside these writes: it
            # was refused (the thread deleted) and its clean-up may have read the thread
            # before they were stored, so they go now. (Its refusal is recorded before that
            # read, so either the read saw them or this check sees the refusal.)
            yield from self._drop_writes_ops(pk, thread_id, ns, checkpoint_id)
            raise _refused_with_their_checkpoint(thread_id, ns, checkpoint_id)

    def _store_writes_ops(
        self,
        key: HeadKey,
        checkpoint_id: str,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        in_call: tuple[str, str, str, str] | None = None,
    ) -> Ops[None]:
        pk, thread_id, ns = key
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        # Large values get ids of their own per call, so a call whose entries are dropped
        # (the first write of a task and index wins) cannot replace a kept value; a special
        # write replaces the earlier one of its slot, value included, so its id is the slot's.
        call = "special" if special else uuid.uuid4().hex
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
        # Values over the bound go to documents of their own (with their chunks); the rest
        # stays inline, in as many parts as the entries need.
        apart: list[Document] = []
        for position, entry in enumerate(entries):
            if len(entry["data"]) <= WRITE_INLINE_BYTES:
                continue
            base: Document = {
                "id": write_value_id(ns, checkpoint_id, task_id, entry["idx"], call),
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_WRITE_VALUE,
                "ns": ns,
                "checkpoint_id": checkpoint_id,
            }
            extra, doc = self._value_docs(base, writes[position][1])
            apart.extend([*extra, doc])
            for field in ("data", "codec"):
                entry.pop(field, None)
            entry["ref"] = base["id"]
        yield from _write_in_groups([Upsert(d) for d in apart if d["kind"] != KIND_WRITE_VALUE])
        yield from _write_in_groups([Upsert(d) for d in apart if d["kind"] == KIND_WRITE_VALUE])
        mark = self._stamp(
            {
                "id": writes_mark_id(ns, checkpoint_id),
                "pk": pk,
                "thread_id": thread_id,
                "kind": KIND_WRITES_MARK,
                "ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        )

        if special:
            # Writes to special channels replace the previous one of the same task and index.
            docs = [
                self._writes_doc(key, checkpoint_id, task_id, [e], special=True) for e in entries
            ]
            yield from self._writes_batch_ops(
                key, checkpoint_id, [Upsert(mark), *map(Upsert, docs)], in_call
            )
            return
        doc_id = writes_doc_id(ns, checkpoint_id, task_id)
        main, parts = self._split_writes(key, checkpoint_id, task_id, call, doc_id, entries)
        yield from _write_in_groups([Upsert(p) for p in parts])
        stored = yield from self._writes_batch_ops(
            key, checkpoint_id, [Upsert(mark), Create(main)], in_call
        )
        if stored is not Outcome.CONFLICT:
            return
        # The same task wrote before (a retry, a migration run again): keep its writes, add
        # the indexes it lacked, and remove what this call wrote in vain.
        mine = [*(p["id"] for p in parts), *(d["id"] for d in apart)]
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(backoff(attempt))
            current = yield from read(doc_id, pk)
            if current is None:
                # Removed meanwhile (clean-up, or delete_thread): stored as a first write is,
                # beside the head (or refused by the tombstone).
                created = yield from self._writes_batch_ops(
                    key, checkpoint_id, [Upsert(mark), Create(main)], in_call
                )
                if created is not Outcome.CONFLICT:
                    return
                continue
            old_parts = [str(i) for i in current.get("parts") or []]
            found = yield from read_many([Read(i, pk) for i in old_parts])
            have_entries = [*(current.get("writes") or [])]
            for part in found:
                have_entries.extend((part or {}).get("writes") or [])
            have = {int(e["idx"]) for e in have_entries}
            missing = [e for e in entries if int(e["idx"]) not in have]
            if not missing:
                yield from _delete_in_groups(pk, mine)
                return
            retry_call = uuid.uuid4().hex
            merged, new_parts = self._split_writes(
                key, checkpoint_id, task_id, retry_call, doc_id, [*have_entries, *missing]
            )
            yield from _write_in_groups([Upsert(p) for p in new_parts])
            replaced = yield from write(Replace(merged, current["_etag"]))
            if replaced is not Outcome.PRECONDITION_FAILED:
                used = {e.get("ref") for e in missing}
                unused = [i for i in mine if i not in used and not _chunk_of_any(i, used)]
                yield from _delete_in_groups(pk, [*old_parts, *unused])
                return
            yield from _delete_in_groups(pk, [p["id"] for p in new_parts])
        raise CosmosOperationError(
            f"could not record the writes of task {task_id!r} for checkpoint {checkpoint_id!r} "
            f"after {CAS_ATTEMPTS} attempts"
        )

    def _writes_doc(
        self,
        key: HeadKey,
        checkpoint_id: str,
        task_id: str,
        items: list[dict[str, Any]],
        *,
        special: bool = False,
        doc_id: str | None = None,
        parts: list[str] | None = None,
    ) -> Document:
        pk, thread_id, ns = key
        if doc_id is None:
            idx = int(items[0]["idx"]) if special else None
            doc_id = writes_doc_id(ns, checkpoint_id, task_id, idx)
        doc: Document = {
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
        if parts:
            doc["parts"] = parts
        return self._stamp(doc)

    def _split_writes(
        self,
        key: HeadKey,
        checkpoint_id: str,
        task_id: str,
        call: str,
        doc_id: str,
        entries: list[dict[str, Any]],
    ) -> tuple[Document, list[Document]]:
        """A task's writes document, and the part documents holding what does not fit it
        (each at most WRITES_DOC_BYTES, every entry counted whole)."""
        pk, thread_id, ns = key
        groups: list[list[dict[str, Any]]] = [[]]
        size = 0
        for entry in entries:
            entry_size = _entry_bytes(entry)
            if groups[-1] and size + entry_size > WRITES_DOC_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(entry)
            size += entry_size
        parts = [
            self._stamp(
                {
                    "id": writes_part_id(ns, checkpoint_id, task_id, call, n),
                    "pk": pk,
                    "thread_id": thread_id,
                    "kind": KIND_WRITES_PART,
                    "ns": ns,
                    "checkpoint_id": checkpoint_id,
                    "writes": group,
                }
            )
            for n, group in enumerate(groups[1:], start=1)
        ]
        main = self._writes_doc(
            key, checkpoint_id, task_id, groups[0], doc_id=doc_id, parts=[p["id"] for p in parts]
        )
        return main, parts

    def _writes_batch_ops(
        self,
        key: HeadKey,
        checkpoint_id: str,
        ops: list[BatchOp],
        call: tuple[str, str, str, str] | None = None,
    ) -> Ops[Outcome | None]:
        """Store a writes mark and writes documents in one transactional batch that also reads
        the namespace's head. Without a head (the namespace's first checkpoint not stored yet,
        or the thread deleted), the writes are stored when no tombstone covers their
        checkpoint, and refused (CosmosThreadDeletedError) when one does. Returns the
        refusal of a create (``Outcome.CONFLICT``), else None.

        In a subgraph call (``call``), a tombstone found there is also checked against the
        call's root checkpoint before anything is stored: a call of a deleted run (the
        tombstone covers its root and the root is not stored) stores nothing; it is recorded
        as refused and :meth:`_as_call_ops` removes the call and raises. (Its own checkpoint
        may be newer than the tombstone: a call that goes on after the delete makes new
        ones, and LangGraph may stop awaiting these writes when it cancels the call, so a
        clean-up after storing can come after the run has already failed.)"""
        pk, thread_id, ns = key
        results = yield from _batch_or_too_large(pk, [Read(head_id(ns), pk), *ops])
        if results is Outcome.PRECONDITION_FAILED:
            tomb = yield from self._refuse_if_deleted_ops(
                pk, thread_id, ns, checkpoint_id, writes=True
            )
            if (
                call is not None
                and tomb is not None
                and (yield from self._judge_root_ops(call, tomb))
            ):
                return None
            results = yield from _batch_or_too_large(pk, ops)
        if results is Outcome.TOO_LARGE:
            # Refused as too large: the mark first, then the writes, one by one.
            for op in ops:
                stored = yield from write(cast("Upsert | Create | Replace", op))
                if stored is Outcome.CONFLICT:
                    return Outcome.CONFLICT
            return None
        return results if isinstance(results, Outcome) else None


def _covers(tomb: Mapping[str, Any], checkpoint_id: str) -> bool:
    """Whether a tombstone covers ``checkpoint_id``: up to the newest checkpoint the thread
    had, or made before the delete (``deleted_at``)."""
    before = str(tomb.get("before") or "")
    deleted_at = str(tomb.get("deleted_at") or "")
    return checkpoint_id <= before or checkpoint_id <= deleted_at


def _call_of_deleted_run(thread_id: str, ns: str, root: str) -> CosmosThreadDeletedError:
    return CosmosThreadDeletedError(
        f"thread {thread_id!r} was deleted (delete_thread) while a run was using it: the "
        f"subgraph call in namespace {ns!r} runs under root checkpoint {root!r} of that run, "
        "so it was refused and what it stored removed, as is everything the run stores from "
        "now on. Start the thread again with new input (a run without checkpoint_id)."
    )


def _refused_with_their_checkpoint(
    thread_id: str, ns: str, checkpoint_id: str
) -> CosmosThreadDeletedError:
    return CosmosThreadDeletedError(
        f"thread {thread_id!r} was deleted (delete_thread) while a run was using it: "
        f"pending writes for checkpoint {checkpoint_id!r} (namespace {ns!r}), whose "
        "checkpoint was refused, are refused too. Start the thread again with new "
        "input (a run without checkpoint_id)."
    )


def _removed_parent(
    thread_id: str, ns: str, parent_id: str, latest_id: str
) -> CosmosCheckpointRemovedError:
    return CosmosCheckpointRemovedError(
        f"checkpoint {parent_id!r} of thread {thread_id!r} (namespace {ns!r}), which this run "
        "builds on, is not stored: keep_checkpoints, prune or delete_for_runs removed it (or it "
        f"was never stored), and the thread has moved on to checkpoint {latest_id!r}. LangGraph "
        "found nothing under that id and started from an empty state, which would have "
        "replaced the thread's history; nothing was stored. Continue from the latest "
        "checkpoint: drop checkpoint_id from the config ({'configurable': {'thread_id': "
        f"{thread_id!r}}}}}) and read it again with get_state",
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=parent_id,
        latest_id=latest_id,
    )


def _batch_or_too_large(pk: str, ops: list[BatchOp]) -> Ops[list[str | None] | Outcome]:
    if not fits(ops):
        return Outcome.TOO_LARGE
    results = yield from batch(pk, ops)
    return results


def _entry_bytes(entry: Mapping[str, Any]) -> int:
    """The JSON size of one writes entry as a client may send it (json.dumps's default
    separators, with their spaces: an upper bound of the compact form), with a separator."""
    return len(json.dumps(entry)) + 2


def _chunk_of_any(doc_id: str, bases: set[Any]) -> bool:
    base, sep, tail = doc_id.rpartition(".")
    return bool(sep) and tail.isdigit() and base in bases


def _write_in_groups(ops: Sequence[Upsert | Create | Replace | Delete]) -> Ops[None]:
    for i in range(0, len(ops), MAINTENANCE_FANOUT):
        yield from write_all(ops[i : i + MAINTENANCE_FANOUT])


def _delete_in_groups(pk: str, ids: Sequence[str]) -> Ops[None]:
    yield from _write_in_groups([Delete(i, pk) for i in ids])

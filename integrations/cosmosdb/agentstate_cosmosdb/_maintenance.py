"""Thread maintenance: ``delete_thread``, ``copy_thread``, ``prune``, ``delete_for_runs`` and the
clean-up ``keep_checkpoints`` runs after a put.

Every step leaves a valid thread (see the invariants in :mod:`agentstate_cosmosdb._base`): a
namespace's last checkpoint and its head go together, a head moves back only to a checkpoint
that remains, and a document is deleted only once no survivor references it
(:func:`~agentstate_cosmosdb.documents.garbage`).

**Clean-up beside writers in other processes (why it never deletes what a run still needs).**

* *Fenced by the head.* Clean-up reads the thread (one query: the index, with each head's
  etag), decides what goes, and applies it in transactional batches of at most 100
  operations, each of which also replaces the namespace's head with itself, if-match the etag
  it read (the fence). A put that references older documents moves the head in the same
  batch that reads those documents (see ``_writes``), so a put applied after clean-up read
  the thread refuses every later clean-up batch (the etag moved), and clean-up reads the
  thread again; a clean-up batch applied before the put's makes the put's batch refuse (a
  document it reads is gone), and the put stores its values again. Reference counting would
  need a write to every shared holder on every put; the fence costs one replace of a small
  document per clean-up batch, and nothing on the puts.
* *A grace period for work in progress.* A document no stored checkpoint reaches may belong
  to a put or a run still under way: chunks and blobs written before their checkpoint, and
  the pending writes LangGraph stores before their checkpoint under ``durability="async"``.
  Clean-up removes such an orphan only once it is ``ORPHAN_GRACE_SECONDS`` older than the
  thread's newest write (server timestamps, so no clock of any host is involved) and, for
  pending writes, only once their checkpoint is older than the newest stored one. Everything
  that belongs to a checkpoint being removed goes at once.
* *Subgraph calls go with their parent.* A subgraph call checkpoints in a namespace of its own
  (``name:<task id>``), which the root checkpoint it started from names in its metadata
  (``parents[""]``). When retention or ``prune`` removes that root checkpoint, the call's
  namespace goes with it, whole; a ``checkpointer=True`` subgraph's namespace (no task id)
  is kept to its own newest checkpoints.
* *Deleting a thread leaves a tombstone* (its newest checkpoint id) first, so that a run still
  inside a node when the thread is deleted has its next checkpoint and writes refused instead
  of re-creating half a thread (see ``_writes``). ``delete_thread`` reads the thread again
  until nothing is left.
* Deletes go in transactional batches of up to 100 documents per request. Cosmos DB's
  ``delete_all_items_by_partition_key`` would take one request per thread, but it is a public
  preview, off unless the account enables its ``DeleteAllItemsByPartitionKey`` capability,
  and absent from the local emulators, so nothing could test the savers against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agentstate_cosmosdb._state import (
    BATCH_BYTES,
    BATCH_MAX_OPS,
    CAS_ATTEMPTS,
    HOLDER_TTL_FACTOR,
    MAINTENANCE_FANOUT,
    MAINTENANCE_ROUNDS,
    ORPHAN_GRACE_SECONDS,
    TOMBSTONE_MIN_TTL,
    backoff,
    checkpoint_id_at,
    fits,
)
from agentstate_cosmosdb._values import ValueDocs
from agentstate_cosmosdb.documents import garbage, references, strip_system_fields
from agentstate_cosmosdb.errors import CosmosOperationError
from agentstate_cosmosdb.heads import HeadKey
from agentstate_cosmosdb.ops import (
    BatchOp,
    Create,
    Delete,
    Document,
    Ops,
    Outcome,
    Query,
    Read,
    Replace,
    Sleep,
    Upsert,
    batch,
    batch_bytes,
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
    KIND_DELETED,
    KIND_HEAD,
    KIND_VALUES,
    KIND_WRITE_VALUE,
    KIND_WRITES,
    KIND_WRITES_MARK,
    KIND_WRITES_PART,
    SELECT_NS_INDEX_SQL,
    SELECT_RUN_CHECKPOINTS_SQL,
    SELECT_THREAD_DOCS_SQL,
    SELECT_THREAD_INDEX_SQL,
    checkpoint_doc_id,
    head_id,
    partition_key,
    tombstone_id,
)

_DELETE_ORDER = {
    # Referencing documents first: checkpoints (in waves, see deletion_waves), then pending
    # writes, then what they reference, then chunks.
    KIND_CHECKPOINT: 0,
    KIND_WRITES: 1,
    KIND_WRITES_MARK: 2,
    KIND_WRITES_PART: 2,
    KIND_VALUES: 2,
    KIND_BLOB: 2,
    KIND_WRITE_VALUE: 2,
    KIND_CHUNK: 3,
}


@dataclass
class _Fence:
    """A namespace's head as clean-up read it: each clean-up batch replaces it with itself,
    if-match ``etag``, so a put that moved the head meanwhile refuses the batch."""

    doc: Document
    etag: str

    def touch(self) -> Replace:
        return Replace(self.doc, self.etag)


class MaintenanceOps(ValueDocs):
    """The generators of thread maintenance and clean-up."""

    # -- reading a thread ------------------------------------------------------------------------

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

    def _fences_ops(
        self, pk: str, thread_id: str, index: Sequence[Mapping[str, Any]], namespaces: Iterable[str]
    ) -> Ops[dict[str, _Fence] | None]:
        """The fence of each namespace's head, from the heads as stored now; None when one of
        them changed since ``index`` was read (read the thread again)."""
        rows = {d["ns"]: d for d in index if d["kind"] == KIND_HEAD}
        wanted = [ns for ns in dict.fromkeys(namespaces) if ns in rows]
        if not wanted:
            return {}
        docs = yield from read_many([Read(head_id(ns), pk) for ns in wanted])
        fences: dict[str, _Fence] = {}
        newest = max((float(d.get("_ts") or 0) for d in index), default=0.0)
        for ns, doc in zip(wanted, docs, strict=True):
            if doc is None or doc.get("_etag") != rows[ns].get("_etag"):
                return None
            fences[ns] = _Fence(self._touched(doc, newest), doc["_etag"])
        return fences

    def _touched(self, head: Mapping[str, Any], now_ts: float) -> Document:
        """A head as clean-up writes it back: the same document, its time-to-live what was
        left of it (replacing a document restarts its ttl)."""
        doc = strip_system_fields(head)
        if "ttl" in doc and head.get("_ts"):
            doc["ttl"] = max(1, int(doc["ttl"] - max(0.0, now_ts - float(head["_ts"]))))
        return doc

    # -- applying a clean-up -----------------------------------------------------------------

    def _collect_ops(
        self,
        pk: str,
        index: Sequence[Mapping[str, Any]],
        keep: set[tuple[str, str]],
        fences: Mapping[str, _Fence],
        *,
        orphans_before: float | None,
        drop_namespaces: Iterable[str] = (),
    ) -> Ops[bool]:
        """Remove from one thread every checkpoint not in ``keep``, what only they reached,
        old orphans (:func:`~agentstate_cosmosdb.documents.garbage`) and the namespaces
        ``drop_namespaces`` whole.

        A removed checkpoint whose document holds a value a survivor uses becomes a
        ``values`` holder first (no longer listed). Heads are removed only with their
        namespace. Returns False when a batch was refused (the thread changed under it:
        nothing of that batch was applied); the caller reads the thread again.
        """
        dropped = set(drop_namespaces)
        rest = [d for d in index if d["ns"] not in dropped]
        found = garbage(rest, keep, orphans_before=orphans_before)
        if found.convert:
            full: list[Document | None] = []
            for i in range(0, len(found.convert), MAINTENANCE_FANOUT):
                group = found.convert[i : i + MAINTENANCE_FANOUT]
                full += yield from read_many([Read(d["id"], pk) for d in group])
            converted: list[tuple[str, BatchOp]] = []
            for doc in full:
                if doc is not None:
                    kept = strip_system_fields(doc)
                    kept["kind"] = KIND_VALUES
                    converted.append((doc["ns"], Upsert(kept)))
            if not (yield from self._fenced_ops(pk, [converted], fences)):
                return False
        waves = deletion_waves(pk, [*found.remove, *found.orphans])
        if not (yield from self._fenced_ops(pk, waves, fences)):
            return False
        for ns in sorted(dropped):
            docs = [d for d in index if d["ns"] == ns]
            if not (yield from self._drop_namespace_ops(pk, ns, docs, fences.get(ns))):
                return False
        return True

    def _drop_namespace_ops(
        self, pk: str, ns: str, docs: Sequence[Mapping[str, Any]], fence: _Fence | None
    ) -> Ops[bool]:
        """Remove a namespace whole: every checkpoint but its newest (with what only they
        reach), then the newest with the head, then the rest."""
        gone: set[str] = set()
        newest = _newest_per_ns(docs).get(ns)
        if newest is not None:
            found = garbage(docs, {(ns, newest)}, orphans_before=None)
            first = [*found.remove, *found.orphans]
            fences = {ns: fence} if fence is not None else {}
            if not (yield from self._fenced_ops(pk, deletion_waves(pk, first), fences)):
                return False
            if not (yield from self._remove_last_ops(pk, ns, newest, fence)):
                return False
            gone = {d["id"] for d in first} | {checkpoint_doc_id(ns, newest), head_id(ns)}
        rest = [d for d in docs if d["id"] not in gone and d["kind"] != KIND_HEAD]
        if not (yield from self._fenced_ops(pk, deletion_waves(pk, rest), {})):
            return False
        heads = [d for d in docs if d["kind"] == KIND_HEAD and d["id"] not in gone]
        if heads:
            # A head without checkpoints (their removal was cut short): it goes last.
            return (yield from self._fenced_ops(pk, [[(ns, Delete(heads[0]["id"], pk))]], {}))
        return True

    def _fenced_ops(
        self,
        pk: str,
        waves: Sequence[Sequence[tuple[str, BatchOp]]],
        fences: Mapping[str, _Fence],
    ) -> Ops[bool]:
        """Apply ``(namespace, operation)`` waves in transactional batches, wave after wave;
        each batch holds one namespace's operations and, when it has a fence, replaces its
        head if-match the fence's etag. False when a batch is refused."""
        for wave in waves:
            by_ns: dict[str, list[BatchOp]] = {}
            for ns, op in wave:
                by_ns.setdefault(ns, []).append(op)
            for ns, ops in by_ns.items():
                fence = fences.get(ns)
                for group in _groups(ops, fence):
                    if not (yield from self._fenced_batch_ops(pk, group, fence)):
                        return False
        return True

    def _fenced_batch_ops(self, pk: str, ops: list[BatchOp], fence: _Fence | None) -> Ops[bool]:
        full = [*ops, fence.touch()] if fence is not None else list(ops)
        results = yield from batch(pk, full)
        if results is Outcome.TOO_LARGE and len(ops) > 1:
            # The service's limit is lower than ours: halve.
            half = len(ops) // 2
            first = yield from self._fenced_batch_ops(pk, ops[:half], fence)
            if not first:
                return False
            second = yield from self._fenced_batch_ops(pk, ops[half:], fence)
            return second
        if isinstance(results, Outcome):
            return False
        if fence is not None and results[-1]:
            fence.etag = results[-1]
        return True

    def _remove_last_ops(
        self, pk: str, ns: str, checkpoint_id: str, fence: _Fence | None
    ) -> Ops[bool]:
        """Remove a namespace's last checkpoint and its head together (atomic when possible).
        False when the head changed under it."""
        cp_delete = Delete(checkpoint_doc_id(ns, checkpoint_id), pk)
        head_delete = Delete(head_id(ns), pk, fence.etag if fence is not None else None)
        results = yield from batch(pk, [head_delete, cp_delete])
        if not isinstance(results, Outcome):
            return True
        # One of them is gone already (an earlier, interrupted run), or the head moved.
        current = yield from read(head_id(ns), pk)
        if current is not None and (
            current.get("checkpoint_id") != checkpoint_id
            or (fence is not None and current.get("_etag") != fence.etag)
        ):
            return False
        # The checkpoint first, so that no listed checkpoint is ever left without a head.
        yield from write_all([cp_delete])
        if current is None:
            return True
        gone = yield from batch(pk, [Delete(head_id(ns), pk, current["_etag"])])
        return not isinstance(gone, Outcome)

    # -- the clean-up after a put ------------------------------------------------------------

    def _after_put_ops(
        self, key: HeadKey, checkpoint_id: str, parent_id: str | None, linear: bool
    ) -> Ops[None]:
        """With ``keep_checkpoints``: keep the namespace's newest N checkpoints (plus, for a put
        that did not build on the head, its parent), and with the root namespace the subgraph
        calls of the root checkpoints that stay. Housekeeping: when another writer changed the
        thread meanwhile it stops (that writer's own clean-up does the work)."""
        if self.keep_checkpoints is None:
            return
        pk, thread_id, ns = key
        state = self._heads.get(key)
        if state is None or state.absent:
            return
        params = (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns))
        if ns == "":
            index = yield from query(SELECT_THREAD_INDEX_SQL, params[:2], pk)
        else:
            index = yield from query(SELECT_NS_INDEX_SQL, params, pk)
        row = next((d for d in index if d["kind"] == KIND_HEAD and d["ns"] == ns), None)
        if row is None or row.get("_etag") != state.etag:
            return
        own = sorted(
            (d["checkpoint_id"] for d in index if d["kind"] == KIND_CHECKPOINT and d["ns"] == ns),
            reverse=True,
        )
        kept_here = set(own[: self.keep_checkpoints])
        if parent_id and not linear:
            kept_here.add(str(parent_id))  # a fork, or a run not building on the head
        keep = {(ns, cp) for cp in kept_here}
        keep |= {
            (d["ns"], d["checkpoint_id"])
            for d in index
            if d["kind"] == KIND_CHECKPOINT and d["ns"] != ns
        }
        orphans_before = _newest_ts(index) - ORPHAN_GRACE_SECONDS
        calls = _calls_to_drop(index, kept_here, orphans_before) if ns == "" else set()
        keep = {(n, cp) for n, cp in keep if n not in calls}
        here = [d for d in index if d["ns"] == ns]
        if not calls and not garbage(here, keep, orphans_before=orphans_before):
            return
        fence = _Fence(dict(state.doc), state.etag)
        fences: dict[str, _Fence] = {ns: fence}
        if calls:
            more = yield from self._fences_ops(pk, thread_id, index, sorted(calls))
            if more is None:
                return
            fences.update(more)
        # This namespace and the calls it drops only: other namespaces have their own heads
        # (and fences), and their own clean-up.
        mine = [d for d in index if d["ns"] == ns or d["ns"] in calls]
        yield from self._collect_ops(
            pk, mine, keep, fences, orphans_before=orphans_before, drop_namespaces=calls
        )
        if fence.etag != state.etag:
            self._remember_head(key, fence.doc, fence.etag)

    # -- delete_thread -----------------------------------------------------------------------

    def _delete_thread_ops(self, thread_id: str) -> Ops[None]:
        """Delete a thread so that every intermediate state is a valid thread: first a
        tombstone, then the history down to each namespace's newest checkpoint, then that
        checkpoint and its head in one transactional batch, then what nothing references any
        more; again until nothing is left (a run may have written meanwhile)."""
        thread_id = str(thread_id)
        pk = partition_key(thread_id)
        params = (("@pk", pk), ("@thread_id", thread_id))
        self._heads.drop_thread(pk, thread_id)
        first = cast(
            "list[Any]",
            (yield [Read(tombstone_id(), pk), Query(SELECT_THREAD_INDEX_SQL, params, pk)]),
        )
        tomb = cast("Document | None", first[0])
        index = cast("list[Document]", first[1])
        before = str((tomb or {}).get("before") or "")
        deleted_at = ""  # written again: a delete now covers the runs under way now
        for attempt in range(MAINTENANCE_ROUNDS):
            if attempt:
                if index:
                    # The last round was cut short (one that got to its end empties index):
                    # a writer changed the thread under it. Give it a moment (a run between
                    # two steps), so the next round can fit between its writes.
                    yield Sleep(backoff(attempt))
                index = yield from query(SELECT_THREAD_INDEX_SQL, params, pk)
            if not index:
                self._heads.drop_thread(pk, thread_id)
                return
            newest = max((str(d.get("checkpoint_id") or "") for d in index), default="")
            if newest > before or not deleted_at:
                before = max(before, newest)
                deleted_at = max(deleted_at, checkpoint_id_at((yield from clock_now())))
                yield from write_all([Upsert(self._tombstone(pk, before, deleted_at))])
            latest = _newest_per_ns(index)
            fences = yield from self._fences_ops(pk, thread_id, index, latest)
            if fences is None:
                continue
            keep = set(latest.items())
            if not (yield from self._collect_ops(pk, index, keep, fences, orphans_before=None)):
                continue
            done = True
            for ns, cp in latest.items():
                if not (yield from self._remove_last_ops(pk, ns, cp, fences.get(ns))):
                    done = False
                    break
            if not done:
                continue
            rest = yield from query(SELECT_THREAD_INDEX_SQL, params, pk)
            with_checkpoints = {d["ns"] for d in rest if d["kind"] == KIND_CHECKPOINT}
            for head in [d for d in rest if d["kind"] == KIND_HEAD]:
                if head["ns"] in with_checkpoints:
                    continue
                # A head whose checkpoints are gone (a removal cut short, a document deleted
                # by hand) would keep the rest here forever: it goes, unless it moved since.
                gone = yield from batch(pk, [Delete(head["id"], pk, head.get("_etag"))])
                if not isinstance(gone, Outcome):
                    rest.remove(head)
            if not any(d["kind"] == KIND_HEAD for d in rest):
                yield from self._fenced_ops(pk, deletion_waves(pk, rest), {})
            index = []  # read once more, without waiting, to see nothing was written meanwhile
        rest = yield from query(SELECT_THREAD_INDEX_SQL, params, pk)
        if rest:
            raise CosmosOperationError(
                f"could not delete thread {thread_id!r}: it kept changing while being deleted "
                f"({MAINTENANCE_ROUNDS} rounds; another process keeps writing to it). What is "
                "left is a valid thread; run delete_thread again."
            )
        self._heads.drop_thread(pk, thread_id)

    def _tombstone(self, pk: str, before: str, deleted_at: str) -> Document:
        doc: Document = {
            "id": tombstone_id(),
            "pk": pk,
            "kind": KIND_DELETED,
            "before": before,
            "deleted_at": deleted_at,
        }
        if self.ttl is not None:
            doc["ttl"] = max(TOMBSTONE_MIN_TTL, HOLDER_TTL_FACTOR * self.ttl)
        return doc

    # -- copy_thread -----------------------------------------------------------------------

    def _copy_thread_ops(self, source_thread_id: str, target_thread_id: str) -> Ops[None]:
        """Copy a thread: values and writes first, then each namespace's checkpoints oldest
        first, each in one batch with the head moved onto it when it is newer than the
        target's head (never backwards), so the copy is a valid thread at every step."""
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
            if "origins" in copy:
                # The copies are stamped with this saver's ttl (or none) from now.
                holders = set((copy.get("origins") or {}).values())
                copy["expires"] = (
                    {h: now + HOLDER_TTL_FACTOR * self.ttl for h in holders}
                    if self.ttl is not None
                    else {}
                )
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
        heads: dict[str, Document | None] = {}
        for cp_doc in sorted(checkpoints, key=lambda d: (d["ns"], d["checkpoint_id"])):
            ns = cp_doc["ns"]
            head_doc = self._head_doc(cp_doc, now)
            for attempt in range(CAS_ATTEMPTS):
                if attempt:
                    yield Sleep(backoff(attempt))
                if ns not in heads or attempt:
                    heads[ns] = yield from read(head_id(ns), dst_pk)
                current = heads[ns]
                ops: list[BatchOp] = [Upsert(cp_doc)]
                if current is None:
                    ops.append(Create(head_doc))
                elif current["checkpoint_id"] < cp_doc["checkpoint_id"]:
                    ops.append(Replace(head_doc, current["_etag"]))
                results: list[str | None] | Outcome = Outcome.TOO_LARGE
                if fits(ops):
                    results = yield from batch(dst_pk, ops)
                if results is Outcome.TOO_LARGE:
                    yield from write_all([Upsert(cp_doc)])
                    yield from self._advance_head_ops((dst_pk, target, ns), head_doc)
                    heads.pop(ns, None)
                    break
                if isinstance(results, Outcome):
                    continue  # another writer moved the head: read it again
                if len(ops) > 1:
                    heads[ns] = {**head_doc, "_etag": results[-1]}
                break
            else:
                raise CosmosOperationError(
                    f"could not copy thread {source!r} to {target!r}: the target's head kept "
                    f"changing ({CAS_ATTEMPTS} attempts)"
                )
        self._heads.drop_thread(dst_pk, target)

    def _advance_head_ops(self, key: HeadKey, head_doc: Document) -> Ops[None]:
        """Move a head forward by compare-and-swap (implemented by ``WriteOps``)."""
        raise NotImplementedError  # pragma: no cover - WriteOps overrides it

    # -- prune -------------------------------------------------------------------------------

    def _prune_ops(self, thread_ids: Sequence[str], strategy: str) -> Ops[None]:
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not one str")
        if not isinstance(strategy, str):
            raise TypeError(f"strategy must be a str, got {type(strategy).__name__}")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                yield from self._delete_thread_ops(thread_id)
                continue
            yield from self._keep_latest_ops(str(thread_id))

    def _keep_latest_ops(self, thread_id: str) -> Ops[None]:
        """Keep each namespace's newest checkpoint (and what it reads), drop the subgraph calls
        of every root checkpoint but the newest, and old orphans."""
        for attempt in range(MAINTENANCE_ROUNDS):
            if attempt:
                yield Sleep(backoff(attempt))  # a writer changed it: as delete_thread does
            pk, index = yield from self._thread_index_ops(thread_id)
            if not index:
                return
            latest = _newest_per_ns(index)
            keep = set(latest.items())
            orphans_before = _newest_ts(index) - ORPHAN_GRACE_SECONDS
            roots = {latest[""]} if "" in latest else set()
            calls = _calls_to_drop(index, roots, orphans_before) if roots else set()
            keep = {(ns, cp) for ns, cp in keep if ns not in calls}
            fences = yield from self._fences_ops(pk, thread_id, index, [*latest, *calls])
            if fences is None:
                continue
            done = yield from self._collect_ops(
                pk, index, keep, fences, orphans_before=orphans_before, drop_namespaces=calls
            )
            if done:
                self._heads.drop_thread(pk, thread_id)
                return
        raise CosmosOperationError(
            f"could not prune thread {thread_id!r}: it kept changing ({MAINTENANCE_ROUNDS} "
            "rounds); what is there is a valid thread, prune it again later"
        )

    # -- delete_for_runs ---------------------------------------------------------------------

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
            for attempt in range(MAINTENANCE_ROUNDS):
                if attempt:
                    yield Sleep(backoff(attempt))  # a writer changed it: as delete_thread does
                done = yield from self._delete_checkpoints_ops(pk, thread_id, gone)
                if done:
                    break
            else:
                raise CosmosOperationError(
                    f"could not delete the runs' checkpoints of thread {thread_id!r}: it kept "
                    f"changing ({MAINTENANCE_ROUNDS} rounds); run delete_for_runs again"
                )

    def _delete_checkpoints_ops(
        self, pk: str, thread_id: str, gone: set[tuple[str, str]]
    ) -> Ops[bool]:
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
        moved = False
        for head in [d for d in index if d["kind"] == KIND_HEAD]:
            ns = head["ns"]
            if (ns, head["checkpoint_id"]) not in gone:
                continue
            if ns in remaining:
                yield from self._move_head_back_ops(pk, thread_id, ns, remaining[ns])
                moved = True
            else:
                last_of[ns] = head["checkpoint_id"]
        if moved:
            _, index = yield from self._thread_index_ops(thread_id)
        keep = {
            (d["ns"], d["checkpoint_id"])
            for d in index
            if d["kind"] == KIND_CHECKPOINT and (d["ns"], d["checkpoint_id"]) not in gone
        }
        keep |= set(last_of.items())
        orphans_before = _newest_ts(index) - ORPHAN_GRACE_SECONDS
        heads = {d["ns"] for d in index if d["kind"] == KIND_HEAD}
        fences = yield from self._fences_ops(pk, thread_id, index, heads)
        if fences is None:
            return False
        if not (
            yield from self._collect_ops(pk, index, keep, fences, orphans_before=orphans_before)
        ):
            return False
        for ns, cp in last_of.items():
            if not (yield from self._remove_last_ops(pk, ns, cp, fences.get(ns))):
                return False
        if last_of:
            _, index = yield from self._thread_index_ops(thread_id)
            keep = {
                (d["ns"], d["checkpoint_id"])
                for d in index
                if d["kind"] == KIND_CHECKPOINT and (d["ns"], d["checkpoint_id"]) not in gone
            }
            heads = {d["ns"] for d in index if d["kind"] == KIND_HEAD}
            fences = yield from self._fences_ops(pk, thread_id, index, heads)
            if fences is None:
                return False
            if not (
                yield from self._collect_ops(pk, index, keep, fences, orphans_before=orphans_before)
            ):
                return False
        self._heads.drop_thread(pk, thread_id)
        return True

    def _move_head_back_ops(self, pk: str, thread_id: str, ns: str, target: str) -> Ops[None]:
        """Point the head at ``target`` (an older checkpoint), unless another writer moved it
        meanwhile to a checkpoint that stays."""
        cp_doc = yield from read(checkpoint_doc_id(ns, target), pk)
        if cp_doc is None:
            return
        doc = self._head_doc(strip_system_fields(cp_doc), (yield from clock_now()))
        for attempt in range(CAS_ATTEMPTS):
            if attempt:
                yield Sleep(backoff(attempt))
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


def _newest_per_ns(docs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    latest: dict[str, str] = {}
    for doc in docs:
        if doc["kind"] == KIND_CHECKPOINT and doc["checkpoint_id"] > latest.get(doc["ns"], ""):
            latest[doc["ns"]] = doc["checkpoint_id"]
    return latest


def _newest_ts(index: Iterable[Mapping[str, Any]]) -> float:
    return max((float(d.get("_ts") or 0) for d in index), default=0.0)


def _calls_to_drop(
    index: Sequence[Mapping[str, Any]], kept_roots: set[str], orphans_before: float
) -> set[str]:
    """The subgraph-call namespaces (``name:<task id>``) whose root checkpoint does not stay.

    A call goes with the root checkpoint it started from (its head's ``parents[""]``), once
    that one is stored and not kept; a call whose root checkpoint is gone already goes when it
    is older than every kept root and than the grace period (its root may still be on its
    way: a run stores in the background).
    """
    stored_roots = {
        d["checkpoint_id"]
        for d in index
        if d["ns"] == "" and d["kind"] in (KIND_CHECKPOINT, KIND_VALUES)
    }
    oldest_kept = min(kept_roots, default="")
    by_ns: dict[str, list[Mapping[str, Any]]] = {}
    for doc in index:
        if ":" in doc["ns"]:
            by_ns.setdefault(doc["ns"], []).append(doc)
    calls: set[str] = set()
    for ns, docs in by_ns.items():
        named = [d for d in docs if d["kind"] == KIND_HEAD] or sorted(
            (d for d in docs if d["kind"] == KIND_CHECKPOINT),
            key=lambda d: d["checkpoint_id"],
            reverse=True,
        )
        parents = (named[0].get("parents") if named else None) or {}
        root = parents.get("") if isinstance(parents, Mapping) else None
        if not root or root in kept_roots:
            continue
        if root in stored_roots or (
            oldest_kept and root < oldest_kept and _newest_ts(docs) <= orphans_before
        ):
            calls.add(ns)
    return calls


def deletion_waves(pk: str, docs: Sequence[Mapping[str, Any]]) -> list[list[tuple[str, BatchOp]]]:
    """Delete operations in an order that never leaves a surviving document referencing a
    deleted one: checkpoints first, in waves (a checkpoint goes only once no other checkpoint
    still to be deleted reads a value from it; references run from newer to older ones), then
    pending writes, then what they reference (values, parts, marks), then chunks."""
    waves: list[list[tuple[str, BatchOp]]] = []
    pending = [d for d in docs if d.get("kind") == KIND_CHECKPOINT]
    while pending:
        referenced = {ref for d in pending for ref in references(d)}
        wave = [d for d in pending if d["id"] not in referenced] or pending
        waves.append([(d["ns"], Delete(d["id"], pk)) for d in wave])
        gone = {d["id"] for d in wave}
        pending = [d for d in pending if d["id"] not in gone]
    rest = [d for d in docs if d.get("kind") != KIND_CHECKPOINT]
    for rank in sorted({_DELETE_ORDER.get(d.get("kind", ""), 3) for d in rest}):
        group = [d for d in rest if _DELETE_ORDER.get(d.get("kind", ""), 3) == rank]
        waves.append([(d["ns"], Delete(d["id"], pk)) for d in group])
    return waves


def _groups(ops: list[BatchOp], fence: _Fence | None) -> list[list[BatchOp]]:
    """Split operations into transactional batches (count and size), leaving room for the
    fence."""
    room_ops = BATCH_MAX_OPS - (1 if fence is not None else 0)
    room_bytes = BATCH_BYTES - (batch_bytes([fence.touch()]) if fence is not None else 0)
    groups: list[list[BatchOp]] = [[]]
    size = 0
    for op in ops:
        op_size = batch_bytes([op])
        if groups[-1] and (len(groups[-1]) >= room_ops or size + op_size > room_bytes):
            groups.append([])
            size = 0
        groups[-1].append(op)
        size += op_size
    return [g for g in groups if g]


def _unique(docs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: set[str] = set()
    out = []
    for doc in docs:
        if doc["id"] not in seen:
            seen.add(doc["id"])
            out.append(doc)
    return out

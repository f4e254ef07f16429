"""Thread maintenance: ``delete_thread``, ``copy_thread``, ``prune``, ``delete_for_runs`` and the
garbage collection ``keep_checkpoints`` runs after a put.

Every step leaves a valid thread (see the invariants in :mod:`agentstate_cosmosdb._base`): a
namespace's last checkpoint and its head go together, a head moves back only to a checkpoint
that remains, and a document is deleted only once no survivor references it
(:func:`~agentstate_cosmosdb.documents.reachable`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentstate_cosmosdb._state import CAS_ATTEMPTS, MAINTENANCE_FANOUT, backoff, fits
from agentstate_cosmosdb._values import ValueDocs
from agentstate_cosmosdb.documents import reachable, references, strip_system_fields
from agentstate_cosmosdb.errors import CosmosOperationError
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
    SELECT_RUN_CHECKPOINTS_SQL,
    SELECT_THREAD_DOCS_SQL,
    SELECT_THREAD_INDEX_SQL,
    checkpoint_doc_id,
    head_id,
    partition_key,
)


class MaintenanceOps(ValueDocs):
    """The generators of thread maintenance and garbage collection."""

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
            if fits(ops):
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

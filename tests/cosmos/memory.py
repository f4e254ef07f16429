"""An in-memory executor for the Cosmos operation generators: a test double of the *database*.

It runs the generators of ``agentstate_cosmosdb._base`` and its mixins (the same ones the
real drivers run) against a dict of documents, with the service's semantics that the
generators rely on: etags and ``_ts`` on every write, conflicts and preconditions, atomic
transactional batches (with a settable size limit), time-to-live against a clock the test
moves, and the handful of queries the saver sends (matched by their text from
``agentstate_cosmosdb.schema``). It can stop after the N-th data-plane operation, as a
process dying mid-operation would.

Used only for unit and property tests of the generators; integration tests use the real SDK
against the loopback server (``tests/cosmos_server``).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentstate_cosmosdb import schema
from agentstate_cosmosdb._base import BaseCosmosDBSaver
from agentstate_cosmosdb.ops import (
    Batch,
    Clock,
    Create,
    CreateContainer,
    CreateDatabase,
    Delete,
    Emit,
    Ops,
    Outcome,
    Query,
    Read,
    ReadContainer,
    Replace,
    ReplaceContainer,
    Sleep,
    Upsert,
    batch_bytes,
)
from langgraph.checkpoint.base import CheckpointTuple

__all__ = ["Crash", "MemoryContainer", "memory_saver"]


class Crash(Exception):
    """The executor stopped in the middle of an operation (a dying process)."""


def memory_saver(**kwargs: Any) -> BaseCosmosDBSaver:
    """The shared saver base, built offline (it does no I/O until an executor runs it)."""
    return BaseCosmosDBSaver(
        "db", "memory", endpoint="https://memory.invalid/", credential="k" * 16, **kwargs
    )


@dataclass
class MemoryContainer:
    """One container's documents, keyed by (partition key, id)."""

    default_ttl: int | None = None
    partition_key_path: str = "/pk"
    exists: bool = True
    now: float = 1_700_000_000.0
    batch_limit: int = 2 * 1024 * 1024
    fail_after: int | None = None
    docs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    operations: int = 0
    slept: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)

    # -- running generators ----------------------------------------------------------------

    def run(self, ops: Ops[Any]) -> Any:
        """Run an operation generator to its end and return its value."""
        try:
            step = next(ops)
            while True:
                if isinstance(step, Emit):
                    step = ops.send(None)
                    continue
                step = ops.send(self._step(step))
        except StopIteration as stop:
            return stop.value

    def stream(self, ops: Ops[None]) -> list[CheckpointTuple]:
        """Run a streaming generator (list) and collect what it emits."""
        out: list[CheckpointTuple] = []
        result: Any = None
        while True:
            try:
                step = ops.send(result)
            except StopIteration:
                return out
            if isinstance(step, Emit):
                out.append(step.value)
                result = None
            else:
                result = self._step(step)

    def iterate(self, ops: Ops[None]) -> Iterator[CheckpointTuple]:
        """Like :meth:`stream`, lazily (to count the requests a first item costs)."""
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
                result = self._step(step)

    def _step(self, step: Any) -> Any:
        if isinstance(step, (list, tuple)):
            return [self._op(op) for op in step]
        return self._op(step)

    # -- one operation ---------------------------------------------------------------------

    def _tick(self) -> None:
        if self.fail_after is not None:
            if self.fail_after <= 0:
                raise Crash(f"stopped after {self.operations} operations")
            self.fail_after -= 1
        self.operations += 1
        self._expire()

    def _expire(self) -> None:
        if self.default_ttl is None:
            return
        for key, doc in list(self.docs.items()):
            ttl = doc.get("ttl", self.default_ttl)
            if ttl is not None and ttl > 0 and doc["_ts"] + ttl <= self.now:
                del self.docs[key]

    def _store(self, doc: dict[str, Any]) -> str:
        stored = copy.deepcopy(doc)
        stored["_etag"] = uuid.uuid4().hex
        stored["_ts"] = int(self.now)
        self.docs[(stored["pk"], stored["id"])] = stored
        return str(stored["_etag"])

    def _op(self, op: Any) -> Any:
        if isinstance(op, Clock):
            return self.now
        if isinstance(op, Sleep):
            self.slept += op.seconds
            return None
        if isinstance(op, ReadContainer):
            if not self.exists:
                return None
            props: dict[str, Any] = {
                "id": "memory",
                "partitionKey": {"paths": [self.partition_key_path]},
            }
            if self.default_ttl is not None:
                props["defaultTtl"] = self.default_ttl
            return props
        if isinstance(op, (CreateDatabase,)):
            return Outcome.CREATED
        if isinstance(op, (CreateContainer, ReplaceContainer)):
            self.exists = True
            self.default_ttl = op.default_ttl
            return Outcome.CREATED
        self._tick()
        name = type(op).__name__
        self.counts[name] = self.counts.get(name, 0) + 1
        if isinstance(op, Read):
            doc = self.docs.get((op.pk, op.id))
            return copy.deepcopy(doc) if doc is not None else None
        if isinstance(op, Upsert):
            return self._store(op.doc)
        if isinstance(op, Create):
            if (op.doc["pk"], op.doc["id"]) in self.docs:
                return Outcome.CONFLICT
            return self._store(op.doc)
        if isinstance(op, Replace):
            current = self.docs.get((op.doc["pk"], op.doc["id"]))
            if current is None or current["_etag"] != op.etag:
                return Outcome.PRECONDITION_FAILED
            return self._store(op.doc)
        if isinstance(op, Delete):
            return self.docs.pop((op.pk, op.id), None) is not None
        if isinstance(op, Batch):
            return self._batch(op)
        if isinstance(op, Query):
            self.queries.append(op.sql)
            return [copy.deepcopy(d) for d in self._query(op)]
        raise TypeError(f"unknown operation {op!r}")

    def _batch(self, op: Batch) -> Any:
        # As the service does: operations in order, the first refusal refuses the batch and
        # rolls back what went before.
        if batch_bytes(op.ops) > self.batch_limit:
            return Outcome.TOO_LARGE
        saved = dict(self.docs)
        results: list[str | None] = []
        for item in op.ops:
            doc_key = (
                (op.pk, item.id)
                if isinstance(item, (Delete, Read))
                else (item.doc["pk"], item.doc["id"])
            )
            current = self.docs.get(doc_key)
            refusal = None
            if isinstance(item, Create) and current is not None:
                refusal = Outcome.CONFLICT
            elif isinstance(item, (Replace, Delete, Read)) and current is None:
                refusal = Outcome.PRECONDITION_FAILED
            elif isinstance(item, (Replace, Delete)) and item.etag is not None:
                assert current is not None
                if current["_etag"] != item.etag:
                    refusal = Outcome.PRECONDITION_FAILED
            if refusal is not None:
                self.docs = saved
                return refusal
            if isinstance(item, Delete):
                self.docs.pop(doc_key, None)
                results.append(None)
            elif isinstance(item, Read):
                results.append(None)
            else:
                results.append(self._store(item.doc))
        return results

    # -- the saver's queries ---------------------------------------------------------------

    def _query(self, op: Query) -> list[dict[str, Any]]:
        p = dict(op.parameters)
        sql = op.sql
        docs = [d for (pk, _), d in self.docs.items() if op.pk is None or pk == op.pk]
        if sql == schema.SELECT_WRITES_SQL:
            return [
                d
                for d in docs
                if d["kind"] == "writes"
                and d["thread_id"] == p["@thread_id"]
                and d["ns"] == p["@ns"]
                and d["checkpoint_id"] in p["@checkpoint_ids"]
            ]
        if sql == schema.SELECT_THREAD_DOCS_SQL:
            return [d for d in docs if d.get("thread_id") == p["@thread_id"]]
        if sql == schema.SELECT_THREAD_INDEX_SQL:
            return [_index_row(d) for d in docs if d.get("thread_id") == p["@thread_id"]]
        if sql == schema.SELECT_NS_INDEX_SQL:
            return [
                _index_row(d)
                for d in docs
                if d.get("thread_id") == p["@thread_id"] and d["ns"] == p["@ns"]
            ]
        if sql == schema.SELECT_HEAD_NAMESPACES_SQL:
            return [
                {"ns": d["ns"], "kind": d["kind"]}
                for d in docs
                if d["kind"] == "head" and d.get("thread_id") == p["@thread_id"]
            ]
        if sql == schema.SELECT_RUN_CHECKPOINTS_SQL:
            return [
                d
                for d in docs
                if d["kind"] == "checkpoint"
                and (d.get("metadata") or {}).get("run_id") in p["@run_ids"]
            ]
        if sql == schema.SELECT_LATEST_IN_NS_SQL:
            found = [
                d
                for d in docs
                if d["kind"] == "checkpoint"
                and d["thread_id"] == p["@thread_id"]
                and d["ns"] == p["@ns"]
            ]
            return sorted(found, key=lambda d: d["checkpoint_id"], reverse=True)[:1]
        if sql.startswith((schema.SELECT_TOP_CHECKPOINTS_SQL, schema.SELECT_CHECKPOINTS_SQL)):
            return self._list_query(sql, p, docs)
        if sql.startswith(schema.SELECT_TOP_CHECKPOINT_KEYS_SQL):
            keys = ("id", "pk", "thread_id", "ns", "checkpoint_id", "metadata_typed")
            return [{k: d[k] for k in keys} for d in self._list_query(sql, p, docs)]
        raise AssertionError(f"the memory container does not know the query {sql!r}")

    @staticmethod
    def _list_query(sql: str, p: dict[str, Any], docs: Sequence[dict[str, Any]]) -> list[Any]:
        found = [d for d in docs if d["kind"] == "checkpoint"]
        if schema.WHERE_THREAD_SQL in sql:
            found = [d for d in found if d["thread_id"] == p["@thread_id"]]
        if schema.WHERE_NS_SQL in sql:
            found = [d for d in found if d["ns"] == p["@ns"]]
        if schema.WHERE_CHECKPOINT_ID_SQL in sql:
            found = [d for d in found if d["checkpoint_id"] == p["@checkpoint_id"]]
        if schema.WHERE_BEFORE_SQL in sql:
            found = [d for d in found if d["checkpoint_id"] < p["@before"]]
        if schema.WHERE_PAGE_SQL in sql:
            found = [d for d in found if d["checkpoint_id"] <= p["@page_from"]]
        i = 0
        while f"@mk{i}" in p:
            name, value = p[f"@mk{i}"], p[f"@mv{i}"]
            found = [
                d
                for d in found
                if name in (d.get("metadata") or {})
                and json.dumps(d["metadata"][name]) == json.dumps(value)
            ]
            i += 1
        found.sort(key=lambda d: d["checkpoint_id"], reverse=True)
        if "@limit" in p:
            found = found[: int(p["@limit"])]
        return found


_INDEX_FIELDS = (
    "id",
    "kind",
    "ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "versions",
    "origins",
    "inline",
    "empty",
    "blob_id",
    "chunks",
    "_ts",
    "_etag",
)


def _index_row(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``INDEX_FIELDS_SQL`` returns of a document (absent fields stay absent)."""
    row = {k: doc[k] for k in _INDEX_FIELDS if k in doc}
    parents = (doc.get("metadata") or {}).get("parents")
    if parents is not None:
        row["parents"] = parents
    return row

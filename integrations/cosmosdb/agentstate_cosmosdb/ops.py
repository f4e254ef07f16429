"""Storage operations: what an operation generator yields, and what it gets back.

Every saver operation (put, get_tuple, prune, setup, ...) is written once, in
the base saver (:mod:`agentstate_cosmosdb._base` and the modules it combines: ``_setup``,
``_values``, ``_writes``, ``_reads``, ``_maintenance``), as a generator of type :data:`Ops`: it
yields a :data:`Step` and receives that step's result. The sync saver runs the steps with
``azure.cosmos``, the async one with ``azure.cosmos.aio``, the in-memory executor of the tests
with a dict. A list or tuple of operations is one step: "run these concurrently, return their
results in order".

Each operation documents its result. Writes never need the stored body back: they return the
new etag (the savers ask the service for minimal responses), or an :class:`Outcome`.

The small generator helpers at the end (:func:`read`, :func:`query`, ...) give each result
its precise type, so the generators are type-checked end to end.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union, cast

from langgraph.checkpoint.base import CheckpointTuple

__all__ = [
    "QUERY_PAGE_ITEMS",
    "Batch",
    "Clock",
    "Create",
    "CreateContainer",
    "CreateDatabase",
    "Delete",
    "Document",
    "Emit",
    "Op",
    "Ops",
    "Outcome",
    "Query",
    "Read",
    "ReadContainer",
    "Replace",
    "ReplaceContainer",
    "Result",
    "Sleep",
    "Step",
    "Upsert",
]

Document = dict[str, Any]
"""A stored JSON document, as the service returns it."""

QUERY_PAGE_ITEMS = 1000
"""Items per page of a query's response (the service's default is 100): a thread's index is
read in few requests."""


class Outcome(enum.Enum):
    """Results that are not data: the expected refusals the generators react to."""

    CONFLICT = "conflict"
    """A create found the id taken (409)."""
    PRECONDITION_FAILED = "precondition_failed"
    """A replace found another etag, or no document (412 / 404)."""
    TOO_LARGE = "too_large"
    """A transactional batch was refused as too large (413); nothing was applied."""
    FORBIDDEN = "forbidden"
    """A control-plane request was refused for the credential (403)."""
    CREATED = "created"
    """A database or container was created (or already existed)."""


# -- data plane -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """Point-read one document. Result: the :data:`Document`, or None when it does not exist."""

    id: str
    pk: str


@dataclass(frozen=True)
class Upsert:
    """Create or replace a document. Result: its new etag (str)."""

    doc: Document


@dataclass(frozen=True)
class Create:
    """Create a document. Result: its etag, or ``Outcome.CONFLICT`` if the id exists."""

    doc: Document


@dataclass(frozen=True)
class Replace:
    """Replace a document if its etag still matches.

    Result: the new etag, or ``Outcome.PRECONDITION_FAILED`` (also when the document is gone).
    """

    doc: Document
    etag: str


@dataclass(frozen=True)
class Delete:
    """Delete a document. Result: True, or False when it did not exist.

    ``etag``: only if it is still that version (inside a transactional batch only).
    """

    id: str
    pk: str
    etag: str | None = None


@dataclass(frozen=True)
class Query:
    """Run a parameterised query. Result: every matching :data:`Document`, as a list.

    ``pk`` None means a cross-partition query (never used on a hot path).
    """

    sql: str
    parameters: tuple[tuple[str, Any], ...]
    pk: str | None


BatchOp = Union[Upsert, Create, Replace, Delete, Read]  # noqa: UP007 (runtime alias)


@dataclass(frozen=True)
class Batch:
    """Apply operations in one partition atomically (a transactional batch).

    Result: the new etag of each operation (None for deletes and reads), or
    ``Outcome.PRECONDITION_FAILED`` / ``Outcome.CONFLICT`` / ``Outcome.TOO_LARGE`` when the
    batch was refused for that reason, in which case none was applied. A :class:`Read` in a
    batch is an existence check: a missing document refuses the batch (404, reported as
    ``PRECONDITION_FAILED``), so a write that references documents is applied only while they
    all exist; a :class:`Replace` (or an etag'd :class:`Delete`) of a document another writer
    changed refuses it too (412).
    """

    pk: str
    ops: tuple[BatchOp, ...]


@dataclass(frozen=True)
class Clock:
    """Read the wall clock. Result: seconds since the epoch (float)."""


@dataclass(frozen=True)
class Sleep:
    """Wait (a backoff between compare-and-swap attempts). Result: None."""

    seconds: float


# -- control plane ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadContainer:
    """Read the container's properties. Result: a :data:`Document`, or None when the database
    or the container does not exist."""


@dataclass(frozen=True)
class CreateDatabase:
    """Create the database unless it exists. Result: ``Outcome.CREATED``, ``Outcome.CONFLICT``
    (a concurrent creator won the race) or ``Outcome.FORBIDDEN``."""


@dataclass(frozen=True)
class CreateContainer:
    """Create the container unless it exists. Result: as :class:`CreateDatabase`."""

    partition_key_path: str
    default_ttl: int | None
    indexing_policy: Document | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class ReplaceContainer:
    """Replace the container's settings (same partition key).

    Result: ``Outcome.CREATED`` (replaced), or ``Outcome.FORBIDDEN``.
    """

    partition_key_path: str
    default_ttl: int | None
    indexing_policy: Document | None = field(default=None, hash=False, compare=False)


# -- not storage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Emit:
    """Hand one result to the caller of a streaming operation (list). Result: None."""

    value: CheckpointTuple


Op = Union[  # noqa: UP007 (runtime alias)
    Read,
    Upsert,
    Create,
    Replace,
    Delete,
    Query,
    Batch,
    Clock,
    Sleep,
    ReadContainer,
    CreateDatabase,
    CreateContainer,
    ReplaceContainer,
]
Step = Union[Op, Sequence[Op], Emit]  # noqa: UP007
Result = Union[  # noqa: UP007
    Document,
    list[Document],
    list[Document | None],
    list[str | None],
    list["Result"],
    str,
    bool,
    float,
    Outcome,
    None,
]
"""Anything an executor sends back into a generator (see each operation for which)."""

T = TypeVar("T")
Ops = Generator[Step, Result, T]
"""An operation generator that finally returns a ``T``."""


# -- typed steps ------------------------------------------------------------------------------


def now() -> Ops[float]:
    """The executor's wall clock (seconds since the epoch)."""
    result = yield Clock()
    return cast(float, result)


def read(id: str, pk: str) -> Ops[Document | None]:
    """Point-read one document."""
    result = yield Read(id, pk)
    return cast("Document | None", result)


def read_many(reads: Sequence[Read]) -> Ops[list[Document | None]]:
    """Point-read documents concurrently, results in order."""
    if not reads:
        return []
    result = yield list(reads)
    return cast("list[Document | None]", result)


def query(sql: str, parameters: tuple[tuple[str, Any], ...], pk: str | None) -> Ops[list[Document]]:
    """Run one query and return every matching document."""
    result = yield Query(sql, parameters, pk)
    return cast("list[Document]", result)


def write(op: Upsert | Create | Replace) -> Ops[str | Outcome]:
    """Run one write; its etag or the refusal."""
    result = yield op
    return cast("str | Outcome", result)


def write_all(ops: Sequence[Upsert | Create | Replace | Delete]) -> Ops[list[Result]]:
    """Run writes concurrently."""
    if not ops:
        return []
    result = yield list(ops)
    return cast("list[Result]", result)


def batch(pk: str, ops: Sequence[BatchOp]) -> Ops[list[str | None] | Outcome]:
    """Run one transactional batch."""
    result = yield Batch(pk, tuple(ops))
    return cast("list[str | None] | Outcome", result)


def control(op: ReadContainer | CreateDatabase | CreateContainer | ReplaceContainer) -> Ops[Any]:
    """Run one control-plane operation (its result type is documented on the operation)."""
    result = yield op
    return result


# -- batch helpers ----------------------------------------------------------------------------


def batch_bytes(ops: Sequence[BatchOp]) -> int:
    """Approximate request size of a batch: the JSON of its documents, and per operation."""
    docs = [op.doc for op in ops if isinstance(op, (Upsert, Create, Replace))]
    return len(json.dumps(docs, separators=(",", ":"))) + 64 * len(ops)


def batch_operations(ops: Sequence[BatchOp]) -> list[tuple[Any, ...]]:
    """The ``execute_item_batch`` form of a batch's operations."""
    out: list[tuple[Any, ...]] = []
    for op in ops:
        if isinstance(op, Upsert):
            out.append(("upsert", (op.doc,)))
        elif isinstance(op, Create):
            out.append(("create", (op.doc,)))
        elif isinstance(op, Replace):
            out.append(("replace", (op.doc["id"], op.doc), {"if_match_etag": op.etag}))
        elif isinstance(op, Delete):
            if op.etag is None:
                out.append(("delete", (op.id,)))
            else:
                out.append(("delete", (op.id,), {"if_match_etag": op.etag}))
        elif isinstance(op, Read):
            out.append(("read", (op.id,)))
        else:  # pragma: no cover - the type forbids it
            raise TypeError(f"{type(op).__name__} cannot go in a transactional batch")
    return out


def batch_failure(status: int | None) -> Outcome | None:
    """The outcome a refused batch stands for, or None when the failure is a real error."""
    if status in (404, 412):
        return Outcome.PRECONDITION_FAILED
    if status == 409:
        return Outcome.CONFLICT
    if status == 413:
        return Outcome.TOO_LARGE
    return None


def batch_etags(results: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """The etag of each operation of an applied batch (None for a delete)."""
    return [r.get("eTag") or (r.get("resourceBody") or {}).get("_etag") for r in results]


class _Unexpected(enum.Enum):
    UNEXPECTED = "unexpected"


UNEXPECTED = _Unexpected.UNEXPECTED
"""What :func:`refusal` returns for a refusal that is a real error (the driver raises it)."""

_EXPECTED_REFUSALS: dict[type[Any], dict[int, Result]] = {
    # The answers the generators wait for: a missing item, a lost compare-and-swap, a taken id,
    # a control-plane request the credential may not make.
    Read: {404: None},
    Create: {409: Outcome.CONFLICT},
    Replace: {412: Outcome.PRECONDITION_FAILED, 404: Outcome.PRECONDITION_FAILED},
    Delete: {404: False},
    Batch: {413: Outcome.TOO_LARGE},
    ReadContainer: {404: None},
    CreateDatabase: {409: Outcome.CONFLICT, 403: Outcome.FORBIDDEN},
    CreateContainer: {409: Outcome.CONFLICT, 403: Outcome.FORBIDDEN},
    ReplaceContainer: {403: Outcome.FORBIDDEN},
}


def refusal(op: Op, status: int | None, *, in_batch: bool = False) -> Result | _Unexpected:
    """The result a driver returns when the service refuses ``op`` with HTTP ``status``.

    ``in_batch`` says that an operation inside a transactional batch failed (the SDK's
    ``CosmosBatchOperationError``): the whole batch was rolled back, and the failed operation's
    status says why. Anything not listed is :data:`UNEXPECTED`: a real error to raise.
    """
    if in_batch:
        outcome = batch_failure(status) if isinstance(op, Batch) else None
        return UNEXPECTED if outcome is None else outcome
    if status is None:
        return UNEXPECTED
    return _EXPECTED_REFUSALS.get(type(op), {}).get(status, UNEXPECTED)

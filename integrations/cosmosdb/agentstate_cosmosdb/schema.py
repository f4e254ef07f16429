"""The stored documents: their kinds and fields, their ids, and every query the savers send.

One container, partition key path ``/pk``; every document of a thread lives in the thread's
logical partition, so no hot-path request crosses partitions::

    pk = digest("thread", thread_id)

    h.<digest(ns)>                    HeadDoc        points at the newest checkpoint of (thread,
                                                     ns): the checkpoint document (body,
                                                     metadata, small inline values, where each
                                                     value lives) with its own values only when
                                                     they are small; one point read
    c.<digest(ns, checkpoint_id)>     CheckpointDoc  one checkpoint: body, metadata, small
                                                     values inline, the new values of the
                                                     channels it changed (compressed), and
                                                     where every other value lives (origins)
    b.<digest(ns, ch, version)>       BlobDoc        a channel value too big for its checkpoint
                                                     document, once per version
    <id>.<n>                          ChunkDoc       the n-th continuation of a value over
                                                     CHUNK_BYTES (n = 1, 2, ...)
    w.<digest(ns, cp, task)>          WritesDoc      the pending writes of one task of one
                                                     checkpoint (LangGraph's special channels
                                                     -- errors, interrupts -- one document per
                                                     write: w.<digest(ns, cp, task, idx)>)
    p.<digest(ns, cp, task, call, n)> WritesPartDoc  more writes of a task whose writes do not
                                                     fit one document (its WritesDoc lists them)
    v.<digest(ns, cp, task, idx, ..)> WriteValueDoc  a pending-write value too big to stay in
                                                     its WritesDoc
    m.<digest(ns, cp)>                WritesMarkDoc  "this checkpoint has pending writes":
                                                     written in the same transactional batch as
                                                     each writes document, so a reader that
                                                     finds no mark skips the writes query
    t.<digest("deleted")>             TombstoneDoc   left by delete_thread: the newest checkpoint
                                                     id the thread had, and the greatest id a
                                                     checkpoint made before the delete can have
                                                     (no thread id in it)

A checkpoint removed by ``prune``, ``delete_for_runs`` or ``keep_checkpoints`` while a
surviving one still reads a value from it keeps its document with ``kind = "values"`` (no
longer listed).

Ids are digests because Cosmos DB forbids ``/ \\ # ?`` in ids and limits their length; the raw
thread id, namespace, channel and version are kept in fields, and every read checks that a
document's ``thread_id`` is the one asked for. Every query is parameterised.

Layout versions (``schema`` in checkpoint and head documents): 1 kept every pending write of a
checkpoint in one document and a copy of the values in the head; 2 kept one writes document
per task; 3 (this one) adds the writes mark, so the latest checkpoint reads with point reads
only when it has no pending writes (a layout-2 checkpoint is read with the writes query, as
before). Documents of layouts 1 and 2 read as they are; newer ones are refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Literal, TypedDict

__all__ = [
    "BLOB_PREFIX",
    "CHECKPOINT_PREFIX",
    "HEAD_PREFIX",
    "MARK_PREFIX",
    "PARTITION_KEY_PATH",
    "PART_PREFIX",
    "SCHEMA_VERSION",
    "TOMBSTONE_PREFIX",
    "WRITES_PREFIX",
    "WRITE_VALUE_PREFIX",
    "BlobDoc",
    "CheckpointDoc",
    "ChunkDoc",
    "HeadDoc",
    "TombstoneDoc",
    "WriteEntry",
    "WriteValueDoc",
    "WritesDoc",
    "WritesMarkDoc",
    "WritesPartDoc",
]

PARTITION_KEY_PATH = "/pk"
"""Partition key path of the checkpoint container."""

SCHEMA_VERSION = 3
"""Layout version written in every checkpoint and head document (``schema``).

A reader refuses documents of a newer layout (:class:`~agentstate_cosmosdb.errors.
CosmosSchemaError`) instead of misreading them.
"""

KIND_HEAD = "head"
KIND_CHECKPOINT = "checkpoint"
KIND_BLOB = "blob"
KIND_CHUNK = "chunk"
KIND_WRITES = "writes"
KIND_WRITE_VALUE = "write_value"
KIND_VALUES = "values"
KIND_WRITES_PART = "writes_part"
KIND_WRITES_MARK = "writes_mark"
KIND_DELETED = "deleted"

Kind = Literal[
    "head",
    "checkpoint",
    "blob",
    "chunk",
    "writes",
    "write_value",
    "values",
    "writes_part",
    "writes_mark",
    "deleted",
]

MARKED_SCHEMA = 3
"""The first layout whose checkpoints have a writes mark whenever they have pending writes."""

SYSTEM_FIELDS = ("_rid", "_self", "_etag", "_ts", "_attachments", "_lsn")
"""Fields the service adds to every stored document."""

Encoded = list[Any]
"""A serialized value in a document: ``[serde type, base64 bytes]`` or, compressed,
``[serde type, base64 bytes, codec]`` (codec ``"zlib"`` or ``"zstd"``)."""


# --------------------------------------------------------------------------------------------
# Document kinds
# --------------------------------------------------------------------------------------------


class _Doc(TypedDict):
    id: str
    pk: str
    thread_id: str
    kind: str
    ns: str


class _Stamped(_Doc, total=False):
    ttl: int
    _etag: str
    _ts: int


class CheckpointDoc(_Stamped):
    """One checkpoint (``c.``); also the shape of a head and of a ``values`` holder."""

    schema: int
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: Encoded
    """The checkpoint without ``channel_values``."""
    metadata: dict[str, Any]
    """The JSON-exact part of the metadata, for query filters."""
    metadata_typed: Encoded
    """The metadata as serialized (what readers return)."""
    inline: dict[str, Encoded]
    """Primitive values up to INLINE_PRIMITIVE_BYTES, of every channel."""
    values: dict[str, Encoded]
    """New values of the channels this checkpoint changed, when they fit."""
    versions: dict[str, str]
    origins: dict[str, str]
    """Channel -> id of the document holding its value at this checkpoint's version."""
    empty: list[str]
    """Channels with a version and no value."""
    own: list[str]
    """Blob documents this checkpoint wrote."""
    written: dict[str, float]
    """With ``ttl=`` only: holder id -> when (epoch seconds) it was written (kept for versions
    before ``expires``, which read it)."""
    expires: dict[str, float]
    """Holder id -> when (epoch seconds) it expires, for every referenced holder that has a
    ttl (absent: none). A put writes again each value whose holder would expire before the
    head it writes (see ``_state.HOLDER_TTL_FACTOR``). Absent from documents written before
    it: ``written`` is read instead."""


class HeadDoc(CheckpointDoc, total=False):
    """The head (``h.``): the newest checkpoint document of (thread, ns); ``values`` only when
    they are small (otherwise they are read from the checkpoint document).

    Layout 1 heads also carry ``values`` and ``cached`` (copies of values); they read as is.
    """

    cached: dict[str, Encoded]


class _ValueDoc(_Stamped, total=False):
    type: str
    data: str | None
    chunks: int
    codec: str


class BlobDoc(_ValueDoc):
    """A channel value (``b.``) at one version."""

    channel: str
    version: str


class WriteValueDoc(_ValueDoc):
    """A large pending-write value (``v.``)."""

    checkpoint_id: str


class ChunkDoc(_Stamped):
    """A continuation chunk of a blob or write value."""

    blob_id: str
    data: str


class WriteEntry(TypedDict, total=False):
    """One pending write inside a :class:`WritesDoc`: ``data`` inline or a ``ref``."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    data: str
    codec: str
    ref: str


class WritesDoc(_Stamped, total=False):
    """The pending writes of one task of one checkpoint (``w.``).

    ``special`` marks a document holding one write to a LangGraph special channel (error,
    interrupt, resume, scheduled): those replace an earlier write of the same task and index,
    while regular writes keep the first one, as in PostgresSaver. ``parts`` names the
    :class:`WritesPartDoc` s holding the rest of the task's writes when they do not fit one
    document (written before it, so a reader never sees a part of them).
    """

    checkpoint_id: str
    task_id: str
    special: bool
    writes: list[WriteEntry]
    parts: list[str]


class WritesPartDoc(_Stamped):
    """More writes of one task (``p.``), named by its :class:`WritesDoc`."""

    checkpoint_id: str
    writes: list[WriteEntry]


class WritesMarkDoc(_Stamped):
    """``m.``: the checkpoint has pending writes (see the module docstring)."""

    checkpoint_id: str


class TombstoneDoc(TypedDict, total=False):
    """``t.``: what ``delete_thread`` leaves. A put whose parent checkpoint is gone, in a
    namespace without a head, with a parent id up to ``before`` or ``deleted_at``, belongs to
    a run the thread was deleted under, and is refused (:class:`~agentstate_cosmosdb.errors.
    CosmosThreadDeletedError`); so are pending writes for such a checkpoint id."""

    id: str
    pk: str
    kind: str
    before: str
    deleted_at: str
    """The greatest checkpoint id (a uuid6, ordered by time) made before the delete, on the
    deleting host's clock (absent from tombstones of earlier versions)."""
    ttl: int


# --------------------------------------------------------------------------------------------
# Ids
# --------------------------------------------------------------------------------------------

HEAD_PREFIX = "h."
CHECKPOINT_PREFIX = "c."
BLOB_PREFIX = "b."
WRITES_PREFIX = "w."
WRITE_VALUE_PREFIX = "v."
PART_PREFIX = "p."
MARK_PREFIX = "m."
TOMBSTONE_PREFIX = "t."


def digest(*parts: object) -> str:
    """Return a 32-character url-safe id fragment for ``parts`` (a 192-bit SHA-256 prefix)."""
    raw = json.dumps([str(p) for p in parts], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(raw.encode("utf-8")).digest()[:24]).decode()


def partition_key(thread_id: str) -> str:
    """Partition key value of a thread: all of its documents share it."""
    return digest("thread", thread_id)


def head_id(ns: str) -> str:
    """Id of the head document of one namespace."""
    return HEAD_PREFIX + digest(ns)


def checkpoint_doc_id(ns: str, checkpoint_id: str) -> str:
    """Id of a checkpoint document."""
    return CHECKPOINT_PREFIX + digest(ns, checkpoint_id)


def blob_id(ns: str, channel: str, version: str) -> str:
    """Id of the document holding one channel value at one version."""
    return BLOB_PREFIX + digest(ns, channel, version)


def writes_doc_id(ns: str, checkpoint_id: str, task_id: str, idx: int | None = None) -> str:
    """Id of the pending-writes document of one task (``idx``: of one special write)."""
    if idx is None:
        return WRITES_PREFIX + digest(ns, checkpoint_id, task_id)
    return WRITES_PREFIX + digest(ns, checkpoint_id, task_id, idx)


def write_value_id(ns: str, checkpoint_id: str, task_id: str, idx: int, call: str) -> str:
    """Id of the document holding one large pending-write value of one put_writes call."""
    return WRITE_VALUE_PREFIX + digest(ns, checkpoint_id, task_id, idx, call)


def writes_part_id(ns: str, checkpoint_id: str, task_id: str, call: str, n: int) -> str:
    """Id of the ``n``-th part of the writes one put_writes call stored for a task."""
    return PART_PREFIX + digest(ns, checkpoint_id, task_id, call, n)


def writes_mark_id(ns: str, checkpoint_id: str) -> str:
    """Id of the writes mark of a checkpoint."""
    return MARK_PREFIX + digest(ns, checkpoint_id)


def tombstone_id() -> str:
    """Id of the tombstone ``delete_thread`` leaves in a thread's partition."""
    return TOMBSTONE_PREFIX + digest("deleted")


def chunk_id(base_id: str, index: int) -> str:
    """Id of the ``index``-th continuation chunk (1-based) of a large value."""
    return f"{base_id}.{index}"


def chunk_number(doc_id: str) -> int | None:
    """The ``index`` of a :func:`chunk_id`, or None for an id that is not a chunk's."""
    _, sep, tail = doc_id.rpartition(".")
    return int(tail) if sep and tail.isdigit() else None


# --------------------------------------------------------------------------------------------
# Queries (clauses of the list query are appended in this order)
# --------------------------------------------------------------------------------------------

SELECT_CHECKPOINTS_SQL = "SELECT * FROM c WHERE c.kind = 'checkpoint'"
SELECT_TOP_CHECKPOINTS_SQL = "SELECT TOP @limit * FROM c WHERE c.kind = 'checkpoint'"
SELECT_TOP_CHECKPOINT_KEYS_SQL = (
    "SELECT TOP @limit c.id, c.pk, c.thread_id, c.ns, c.checkpoint_id, c.metadata_typed"
    " FROM c WHERE c.kind = 'checkpoint'"
)
"""A page of checkpoints without bodies or values: what a metadata filter the query cannot
express is evaluated on (only the matches are then read whole)."""
WHERE_THREAD_SQL = " AND c.pk = @pk AND c.thread_id = @thread_id"
WHERE_NS_SQL = " AND c.ns = @ns"
WHERE_CHECKPOINT_ID_SQL = " AND c.checkpoint_id = @checkpoint_id"
WHERE_BEFORE_SQL = " AND c.checkpoint_id < @before"
WHERE_PAGE_SQL = " AND c.checkpoint_id <= @page_from"
WHERE_METADATA_SQL = " AND c.metadata[@mk{i}] = @mv{i}"
ORDER_NEWEST_FIRST_SQL = " ORDER BY c.checkpoint_id DESC"

SELECT_WRITES_SQL = (
    "SELECT * FROM c WHERE c.pk = @pk AND c.kind = 'writes' AND c.thread_id = @thread_id"
    " AND c.ns = @ns AND ARRAY_CONTAINS(@checkpoint_ids, c.checkpoint_id)"
)
SELECT_THREAD_DOCS_SQL = "SELECT * FROM c WHERE c.pk = @pk AND c.thread_id = @thread_id"
INDEX_FIELDS_SQL = (
    "SELECT c.id, c.kind, c.ns, c.checkpoint_id, c.parent_checkpoint_id, c.versions, c.origins,"
    " c.inline, c.empty, c.blob_id, c.chunks, c.metadata.parents, c._ts, c._etag"
    " FROM c WHERE c.pk = @pk AND c.thread_id = @thread_id"
)
SELECT_THREAD_INDEX_SQL = INDEX_FIELDS_SQL
SELECT_NS_INDEX_SQL = INDEX_FIELDS_SQL + " AND c.ns = @ns"
SELECT_HEAD_NAMESPACES_SQL = (
    "SELECT c.ns, c.kind FROM c WHERE c.pk = @pk AND c.kind = 'head' AND c.thread_id = @thread_id"
)
SELECT_RUN_CHECKPOINTS_SQL = (
    "SELECT c.id, c.pk, c.thread_id, c.ns, c.checkpoint_id FROM c"
    " WHERE c.kind = 'checkpoint' AND ARRAY_CONTAINS(@run_ids, c.metadata.run_id)"
)
SELECT_LATEST_IN_NS_SQL = (
    "SELECT TOP 1 * FROM c WHERE c.kind = 'checkpoint' AND c.pk = @pk"
    " AND c.thread_id = @thread_id AND c.ns = @ns ORDER BY c.checkpoint_id DESC"
)

INDEXING_POLICY: dict[str, Any] = {
    "indexingMode": "consistent",
    "automatic": True,
    "includedPaths": [
        {"path": "/pk/?"},
        {"path": "/kind/?"},
        {"path": "/thread_id/?"},
        {"path": "/ns/?"},
        {"path": "/checkpoint_id/?"},
        {"path": "/metadata/*"},
    ],
    "excludedPaths": [{"path": "/*"}, {"path": '/"_etag"/?'}],
}
"""Index only what the queries above filter or sort on (values and bodies are never
indexed, which keeps the request units of every write low)."""

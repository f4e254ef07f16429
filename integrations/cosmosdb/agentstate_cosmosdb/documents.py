"""Values in documents: encoding, chunks, metadata filters, and what each checkpoint reaches.

:func:`references` is the one answer to "which documents does this checkpoint (or head) need
to be read whole"; every reader reads exactly those, and garbage collection
(:func:`reachable`, :func:`garbage`: prune, delete_for_runs, keep-N) keeps exactly what the
surviving checkpoints reach through it, and what may still be a writer's work in progress. A
bug here would delete data, so it has a property test against a slow, obvious version
(``tests/cosmos/test_generators.py``).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstate_cosmosdb.errors import CosmosConfigurationError, CosmosDataError
from agentstate_cosmosdb.schema import (
    BLOB_PREFIX,
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_CHUNK,
    KIND_HEAD,
    KIND_VALUES,
    KIND_WRITE_VALUE,
    KIND_WRITES,
    KIND_WRITES_MARK,
    KIND_WRITES_PART,
    SYSTEM_FIELDS,
    blob_id,
    chunk_number,
)

__all__ = [
    "WRITES_FAMILY",
    "Garbage",
    "b64",
    "decode",
    "encode",
    "garbage",
    "json_safe",
    "kept_checkpoints",
    "metadata_matches",
    "reachable",
    "references",
    "split_chunks",
    "strip_system_fields",
    "unb64",
]

CHUNK_BYTES = 1_000_000
"""Serialized bytes per document; base64 makes this 1.33 MB, under the 2 MB item limit."""

EMPTY = "\x00empty"
"""Marker: a channel has a version and no value."""


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


# --------------------------------------------------------------------------------------------
# Compression: every stored value carries its codec, so documents of any setting stay readable
# --------------------------------------------------------------------------------------------

COMPRESS_MIN_BYTES = 256
"""Values shorter than this are stored as they are (compression would not pay)."""

CODECS = ("zlib", "zstd")


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError as exc:
        raise CosmosConfigurationError(
            "compression='zstd' (or reading values stored with it) needs the zstandard package: "
            'pip install "agentstate-cosmosdb[zstd]"'
        ) from exc
    return zstandard


def resolve_codec(compression: str | None) -> str | None:
    """The codec new values are written with: ``"auto"`` is zstd when installed, else zlib.

    Raises:
        TypeError: ``compression`` is not a str or None.
        CosmosConfigurationError: Unknown codec, or ``"zstd"`` without the zstandard package.
    """
    if compression is None:
        return None
    if not isinstance(compression, str):
        raise TypeError(f"compression must be a str or None, got {type(compression).__name__}")
    if compression == "auto":
        try:
            import zstandard  # noqa: F401
        except ImportError:
            return "zlib"
        return "zstd"
    if compression not in CODECS:
        raise CosmosConfigurationError(
            f"compression must be 'auto', 'zlib', 'zstd' or None, got {compression!r}"
        )
    if compression == "zstd":
        _zstd()
    return compression


def compress(data: bytes, codec: str | None) -> tuple[bytes, str | None]:
    """Compress ``data`` with ``codec`` when that makes it smaller; return (bytes, codec used)."""
    if codec is None or len(data) < COMPRESS_MIN_BYTES:
        return data, None
    packed = (
        _zstd().ZstdCompressor(level=3).compress(data)
        if codec == "zstd"
        else zlib.compress(data, 6)
    )
    if len(packed) >= len(data):
        return data, None
    return packed, codec


def decompress(data: bytes, codec: str | None) -> bytes:
    """Undo :func:`compress`.

    Raises:
        CosmosDataError: Unknown codec tag (written by a newer saver).
        CosmosConfigurationError: A zstd value and no zstandard package.
    """
    if not codec:
        return data
    if codec == "zlib":
        return zlib.decompress(data)
    if codec == "zstd":
        return bytes(_zstd().ZstdDecompressor().decompress(data))
    raise CosmosDataError(f"a stored value uses the unknown codec {codec!r}")


def encode(serde: Any, value: Any, codec: str | None) -> list[Any]:
    """Serialize ``value`` into an Encoded list: ``[type, base64]`` or ``[type, base64, codec]``."""
    type_, data = serde.dumps_typed(value)
    packed, used = compress(data, codec)
    return [type_, b64(packed), used] if used else [type_, b64(packed)]


def decode(serde: Any, encoded: Sequence[Any]) -> Any:
    """Undo :func:`encode` (also reads the two-element form of layout 1)."""
    codec = encoded[2] if len(encoded) > 2 else None
    return serde.loads_typed((encoded[0], decompress(unb64(encoded[1]), codec)))


def strip_system_fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Copy a stored document without the fields the service adds."""
    return {k: v for k, v in doc.items() if k not in SYSTEM_FIELDS}


# --------------------------------------------------------------------------------------------
# Metadata filters
# --------------------------------------------------------------------------------------------

_DROP = object()


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


def pushdown_value(value: Any) -> bool:
    """Whether a metadata filter value can be compared exactly inside a Cosmos query."""
    if isinstance(value, (bool, str)):
        return True
    return isinstance(value, int) and abs(value) <= 2**53


# --------------------------------------------------------------------------------------------
# Reachability: the one place that says which documents a checkpoint needs
# --------------------------------------------------------------------------------------------


def origin_in(parent: Mapping[str, Any] | None, channel: str, version: str) -> str | None:
    """Where ``parent`` found ``channel`` at ``version``: a document id, EMPTY, or None."""
    if parent is None or (parent.get("versions") or {}).get(channel) != version:
        return None
    if channel in (parent.get("empty") or ()):
        return EMPTY
    origin = (parent.get("origins") or {}).get(channel)
    return str(origin) if origin else None


def origin_of(doc: Mapping[str, Any], channel: str, version: str) -> str | None:
    """The id of the document holding ``channel``'s value for ``doc``; None when it needs none
    (inline, in the document's own ``values``, cached in a layout-1 head, or empty)."""
    if channel in (doc.get("inline") or {}) or channel in (doc.get("cached") or {}):
        return None
    if channel in (doc.get("values") or {}):
        return None
    if channel in (doc.get("empty") or ()):
        return None
    origins = doc.get("origins")
    if origins is None:
        return blob_id(doc["ns"], channel, version)
    origin = origins.get(channel)
    return str(origin) if origin else None


def references(doc: Mapping[str, Any]) -> list[str]:
    """The ids of the value documents a checkpoint or head document needs, besides itself.

    These are its *holders*: blob documents, and the checkpoint (or ``values``) documents
    whose ``values`` carry a channel it inherited; for a head, also its own checkpoint
    document. Chunks are found from the holders, pending writes from the checkpoint id.
    """
    out: list[str] = []
    for channel, version in (doc.get("versions") or {}).items():
        origin = origin_of(doc, channel, version)
        if origin is not None and origin != doc["id"] and origin not in out:
            out.append(origin)
    return out


WRITES_FAMILY = frozenset({KIND_WRITES, KIND_WRITE_VALUE, KIND_WRITES_PART, KIND_WRITES_MARK})
"""Documents that belong to one checkpoint's pending writes (found by ``(ns, checkpoint_id)``)."""

_CHECKPOINT_KINDS = (KIND_CHECKPOINT, KIND_VALUES)


def kept_checkpoints(
    index: Sequence[Mapping[str, Any]], keep: Iterable[tuple[str, str]]
) -> set[tuple[str, str]]:
    """``keep`` and the checkpoint of every head (a head's checkpoint always stays)."""
    kept = set(keep)
    kept.update((d["ns"], d["checkpoint_id"]) for d in index if d["kind"] == KIND_HEAD)
    return kept


def reachable(index: Sequence[Mapping[str, Any]], keep: Iterable[tuple[str, str]]) -> set[str]:
    """Every document id that the checkpoints ``keep`` (and every head) still need.

    Args:
        index: The thread's documents (at least ``id``, ``kind``, ``ns``, ``checkpoint_id``,
            ``versions``, ``origins``, ``inline``, ``empty``, ``blob_id``, ``chunks``).
        keep: The ``(ns, checkpoint_id)`` of the checkpoints that stay.

    Returns:
        Ids of the kept checkpoint documents, heads, the value holders they reference, the
        chunks of those holders (up to each holder's chunk count), and the pending writes
        (their documents, parts, marks, values and the values' chunks) of the kept
        checkpoints. Everything else in ``index`` may be deleted.
    """
    kept = kept_checkpoints(index, keep)
    roots = [
        d
        for d in index
        if d["kind"] == KIND_HEAD
        or (d["kind"] == KIND_CHECKPOINT and (d["ns"], d["checkpoint_id"]) in kept)
    ]
    needed: set[str] = {d["id"] for d in roots}
    for doc in roots:
        needed.update(references(doc))
    for doc in index:
        if doc["kind"] in WRITES_FAMILY and (doc["ns"], doc["checkpoint_id"]) in kept:
            needed.add(doc["id"])
    _add_chunks(index, needed)
    return needed


def _add_chunks(index: Sequence[Mapping[str, Any]], needed: set[str]) -> None:
    count = {d["id"]: d.get("chunks") for d in index if d["id"] in needed}
    for doc in index:
        if doc["kind"] != KIND_CHUNK or doc.get("blob_id") not in needed:
            continue
        chunks, n = count.get(doc["blob_id"]), chunk_number(str(doc["id"]))
        # A chunk past its holder's count is left over from a longer value of the same id.
        if chunks is None or n is None or n < int(chunks):
            needed.add(doc["id"])


@dataclass
class Garbage:
    """What a clean-up of one thread may remove (:func:`garbage`)."""

    convert: list[Mapping[str, Any]]
    """Removed checkpoints whose document holds a value a survivor reads: they stay as
    ``values`` holders (no longer listed)."""
    remove: list[Mapping[str, Any]]
    """The other removed checkpoints, and everything only removed checkpoints reach (their
    writes, the values only they use): deleted now."""
    orphans: list[Mapping[str, Any]]
    """Documents no checkpoint reaches (left by a put or a clean-up cut short), old enough
    to be nobody's work in progress: deleted too."""

    def __bool__(self) -> bool:
        return bool(self.convert or self.remove or self.orphans)


def garbage(
    index: Sequence[Mapping[str, Any]],
    keep: Iterable[tuple[str, str]],
    *,
    orphans_before: float | None,
) -> Garbage:
    """Sort a thread's documents for a clean-up that keeps the checkpoints ``keep``.

    A document no stored checkpoint reaches is an *orphan*, and may be the work of a writer
    still in progress: the chunks and blobs a put writes before its checkpoint, and (LangGraph
    ``durability="async"``) the pending writes of a checkpoint not stored yet. An orphan is
    removed only once its ``_ts`` is at most ``orphans_before`` (a grace period before the
    newest write of the thread; None: any orphan) and, for pending writes, once its checkpoint
    is older than the newest stored checkpoint of its namespace. Everything that belongs to a
    removed checkpoint goes at once.
    """
    kept = kept_checkpoints(index, keep)
    needed = reachable(index, kept)
    stored = {(d["ns"], d["checkpoint_id"]) for d in index if d["kind"] in _CHECKPOINT_KINDS}
    every = reachable(index, stored | kept)
    newest: dict[str, str] = {}
    for doc in index:
        if doc["kind"] == KIND_CHECKPOINT and doc["checkpoint_id"] > newest.get(doc["ns"], ""):
            newest[doc["ns"]] = doc["checkpoint_id"]
    convert, remove, orphans = [], [], []
    for doc in index:
        if doc["kind"] == KIND_HEAD:
            continue
        if doc["id"] in needed:
            if doc["kind"] == KIND_CHECKPOINT and (doc["ns"], doc["checkpoint_id"]) not in kept:
                convert.append(doc)
            continue
        if doc["id"] in every:
            remove.append(doc)
            continue
        if orphans_before is not None and float(doc.get("_ts") or 0) > orphans_before:
            continue
        if (
            orphans_before is not None
            and doc["kind"] in WRITES_FAMILY
            and doc["ns"] in newest
            and doc["checkpoint_id"] >= newest[doc["ns"]]
        ):
            continue  # the writes of a checkpoint on its way
        orphans.append(doc)
    return Garbage(convert, remove, orphans)


def is_value_holder(doc: Mapping[str, Any]) -> bool:
    """Whether a document can hold channel values for other checkpoints."""
    return doc["kind"] in (KIND_CHECKPOINT, KIND_VALUES, KIND_BLOB) or str(doc["id"]).startswith(
        BLOB_PREFIX
    )

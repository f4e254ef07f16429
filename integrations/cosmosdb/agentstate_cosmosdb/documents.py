"""Values in documents: encoding, chunks, metadata filters, and what each checkpoint reaches.

:func:`references` is the one answer to "which documents does this checkpoint (or head) need
to be read whole"; every reader reads exactly those, and garbage collection
(:func:`reachable`: prune, delete_for_runs, keep-N) keeps exactly what the surviving
checkpoints reach through it. A bug here would delete data, so it has a property test against
a slow, obvious version (``tests/cosmos/test_documents.py``).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable, Mapping, Sequence
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
    SYSTEM_FIELDS,
    blob_id,
)

__all__ = [
    "b64",
    "decode",
    "encode",
    "json_safe",
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


def reachable(index: Sequence[Mapping[str, Any]], keep: Iterable[tuple[str, str]]) -> set[str]:
    """Every document id that the checkpoints ``keep`` (and every head) still need.

    Args:
        index: The thread's documents (at least ``id``, ``kind``, ``ns``, ``checkpoint_id``,
            ``versions``, ``origins``, ``inline``, ``empty``, ``blob_id``).
        keep: The ``(ns, checkpoint_id)`` of the checkpoints that stay.

    Returns:
        Ids of the kept checkpoint documents, heads, the value holders they reference, the
        chunks of those holders, and the pending writes (with their values and chunks) of the
        kept checkpoints. Everything else in ``index`` may be deleted.
    """
    kept = set(keep)
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
        kind = doc["kind"]
        if kind in (KIND_WRITES, KIND_WRITE_VALUE) and (doc["ns"], doc["checkpoint_id"]) in kept:
            needed.add(doc["id"])
    for doc in index:
        if doc["kind"] == KIND_CHUNK and doc.get("blob_id") in needed:
            needed.add(doc["id"])
    return needed


def is_value_holder(doc: Mapping[str, Any]) -> bool:
    """Whether a document can hold channel values for other checkpoints."""
    return doc["kind"] in (KIND_CHECKPOINT, KIND_VALUES, KIND_BLOB) or str(doc["id"]).startswith(
        BLOB_PREFIX
    )

"""Channel values as documents, and back: encoding, value documents and their chunks, the ttl
stamp, and the head document built from a checkpoint document.

Writers (:mod:`~agentstate_cosmosdb._writes`), readers (:mod:`~agentstate_cosmosdb._reads`)
and maintenance (:mod:`~agentstate_cosmosdb._maintenance`) all build or read these documents;
their layout is drawn in :mod:`agentstate_cosmosdb.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentstate_cosmosdb._state import (
    HEAD_TTL_SLACK,
    HOLDER_TTL_FACTOR,
    TTL_MARGIN_SECONDS,
    SaverState,
)
from agentstate_cosmosdb.documents import b64, decode, decompress, encode, split_chunks, unb64
from agentstate_cosmosdb.documents import compress as compress_bytes
from agentstate_cosmosdb.errors import CosmosMissingDocumentError
from agentstate_cosmosdb.ops import Document, Ops, Read, read_many
from agentstate_cosmosdb.schema import KIND_CHUNK, KIND_HEAD, chunk_id, head_id

HEAD_VALUES_BYTES = 16 * 1024
"""A checkpoint's own new values up to this size (encoded) are copied into its head, which
saves the latest read a request; larger ones are read from the checkpoint document."""

_NOT_IN_HEAD = ("values", "ttl", "id", "kind", "cached")


class ValueDocs(SaverState):
    """Encode, decode and stamp values; build value and head documents."""

    def _encode(self, value: Any) -> list[Any]:
        return encode(self.serde, value, self._codec)

    def _decode(self, encoded: Sequence[Any]) -> Any:
        return decode(self.serde, encoded)

    def _stamp(self, doc: Document, ttl: int | None = None) -> Document:
        """Stamp a document's time-to-live (with ``ttl=``): ``ttl`` when given (the head),
        else the holders' (``HOLDER_TTL_FACTOR * ttl``, see ``_state``)."""
        if self.ttl is not None:
            doc["ttl"] = ttl if ttl is not None else HOLDER_TTL_FACTOR * self.ttl
        return doc

    def _value_docs(self, base: Document, value: Any) -> tuple[list[Document], Document]:
        """One value as a document of its own: (continuation chunk documents, base document)."""
        type_, raw = self.serde.dumps_typed(value)
        data, codec = compress_bytes(raw, self._codec)
        chunks = split_chunks(data)
        doc = dict(base)
        doc.update(type=type_, data=b64(chunks[0]), chunks=len(chunks))
        if codec:
            doc["codec"] = codec
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
        return extra, self._stamp(doc)

    def _load_value_ops(self, doc: Mapping[str, Any]) -> Ops[Any]:
        """Rebuild the value of a blob or write-value document (reads its chunks)."""
        if doc.get("data") is None:
            return None
        parts = [unb64(doc["data"])]
        count = int(doc.get("chunks", 1))
        if count > 1:
            ids = [chunk_id(doc["id"], i) for i in range(1, count)]
            chunks = yield from read_many([Read(i, doc["pk"]) for i in ids])
            for chunk_doc_id, chunk in zip(ids, chunks, strict=True):
                if chunk is None:
                    raise CosmosMissingDocumentError(
                        f"chunk {chunk_doc_id!r} of value document {doc['id']!r} (thread "
                        f"{doc.get('thread_id')!r}) is missing: the value cannot be rebuilt",
                        document_id=chunk_doc_id,
                    )
                parts.append(unb64(chunk["data"]))
        data = decompress(b"".join(parts), doc.get("codec"))
        return self.serde.loads_typed((doc["type"], data))

    def _head_doc(self, cp_doc: Mapping[str, Any], now: float) -> Document:
        """The head for a checkpoint document: the same fields, with its own new values only
        when they are small (HEAD_VALUES_BYTES), so the head stays a pointer.

        With ``ttl=``, the head lives ``ttl + HEAD_TTL_SLACK`` seconds, and never longer than
        the first holder it references expires (the put wrote again each one that would).
        """
        doc = {k: v for k, v in cp_doc.items() if k not in _NOT_IN_HEAD}
        doc.update(id=head_id(cp_doc["ns"]), kind=KIND_HEAD)
        own = cp_doc.get("values") or {}
        if own and sum(len(v[1]) for v in own.values()) <= HEAD_VALUES_BYTES:
            doc["values"] = own  # small: the latest checkpoint reads from the head alone
        if self.ttl is None:
            return doc
        expires: Mapping[str, float] | None = cp_doc.get("expires")
        if expires is None:  # a document from before `expires` (copy_thread of an old one)
            written: Mapping[str, float] = cp_doc.get("written") or {}
            first = min(written.values(), default=now) + HOLDER_TTL_FACTOR * self.ttl
        else:
            first = min(expires.values(), default=now + HOLDER_TTL_FACTOR * self.ttl)
        holders_left = first - now - TTL_MARGIN_SECONDS
        return self._stamp(doc, max(1, int(min(self.ttl + HEAD_TTL_SLACK, holders_left))))

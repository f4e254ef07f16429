"""Reads: ``get_tuple`` (with the head repair of a first put cut short), ``list``, and the
loading of checkpoint documents into ``CheckpointTuple`` s with their pending writes.

**The latest checkpoint in one round trip.** A process remembers the head it last saw (see
:mod:`~agentstate_cosmosdb.heads`); ``get_tuple`` then sends, at once, a point read of the
head, of every document that head references and of the checkpoint's writes mark (layout 3:
written with every pending write). When the head has not moved, that is the whole read; only
a checkpoint with pending writes (its mark exists) costs a second round trip, the writes
query.

**Reads beside clean-up in another process.** A reader may find a document gone that a
checkpoint it read a moment earlier referenced: another process removed that checkpoint in
between. The reader then reads the checkpoint (or the head) again: gone, or moved on, it is
skipped (``list``) or the read starts over (``get_tuple``); still there, the document is
really missing and the read raises :class:`~agentstate_cosmosdb.errors.
CosmosMissingDocumentError`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)

from agentstate_cosmosdb._state import TTL_MARGIN_SECONDS, stored_config
from agentstate_cosmosdb._values import ValueDocs
from agentstate_cosmosdb.documents import (
    metadata_matches,
    origin_of,
    pushdown_value,
    references,
    strip_system_fields,
)
from agentstate_cosmosdb.errors import CosmosMissingDocumentError, CosmosSchemaError
from agentstate_cosmosdb.heads import HeadKey, HeadState
from agentstate_cosmosdb.ops import (
    Create,
    Document,
    Emit,
    Ops,
    Outcome,
    Query,
    Read,
    query,
    read,
    read_many,
    write,
)
from agentstate_cosmosdb.ops import now as clock_now
from agentstate_cosmosdb.schema import (
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_HEAD,
    KIND_WRITE_VALUE,
    MARKED_SCHEMA,
    ORDER_NEWEST_FIRST_SQL,
    SCHEMA_VERSION,
    SELECT_HEAD_NAMESPACES_SQL,
    SELECT_LATEST_IN_NS_SQL,
    SELECT_TOP_CHECKPOINT_KEYS_SQL,
    SELECT_TOP_CHECKPOINTS_SQL,
    SELECT_WRITES_SQL,
    WHERE_BEFORE_SQL,
    WHERE_CHECKPOINT_ID_SQL,
    WHERE_METADATA_SQL,
    WHERE_NS_SQL,
    WHERE_PAGE_SQL,
    WHERE_THREAD_SQL,
    checkpoint_doc_id,
    head_id,
    partition_key,
    writes_mark_id,
)

PAGE_SIZE = 32
"""Checkpoints per page of ``list``."""

KEY_PAGE_SIZE = 256
"""Checkpoints per page when a metadata filter is evaluated on their metadata alone."""

READ_ATTEMPTS = 3
"""How often ``get_tuple`` starts over when clean-up in another process moved the head on
under it."""

HOLDERS_CACHE_BYTES = 32_000_000
"""What one ``list`` remembers of the value documents it read, so that the checkpoints of
later pages that share them do not read them again."""

_WRITES_KEY = "\x00writes"


class _Missing:
    """A document a checkpoint needs was not found when it was loaded."""

    def __init__(self, error: CosmosMissingDocumentError) -> None:
        self.error = error


Loaded = CheckpointTuple | _Missing | None
"""What loading one checkpoint document gives: its tuple; ``_Missing``; or None (with
``ttl=``: a value has expired, so the checkpoint counts as expired)."""


class _Holders:
    """The value documents (and their decoded values) one ``list`` has read, bounded in bytes:
    reading a checkpoint's values again gives the same documents, since a holder never
    changes (it is written once per version, or rewritten with the same values)."""

    def __init__(self, max_bytes: int = HOLDERS_CACHE_BYTES) -> None:
        self.docs: OrderedDict[str, Any] = OrderedDict()
        self.values: dict[str, Any] = {}
        self._sizes: dict[str, int] = {}
        self._bytes = 0
        self._max = max_bytes

    def add(self, holder_id: str, doc: Any) -> None:
        if doc is None or holder_id in self.docs:
            return
        size = len(str(doc.get("data") or "")) + sum(
            len(str(v[1])) for v in (doc.get("values") or {}).values()
        )
        self.docs[holder_id] = doc
        self._sizes[holder_id] = size
        self._bytes += size
        while self._bytes > self._max and self.docs:
            old, _ = self.docs.popitem(last=False)
            self._bytes -= self._sizes.pop(old)
            self.values.pop(old, None)


class ReadOps(ValueDocs):
    """The generators of ``get_tuple`` and ``list``."""

    def _get_tuple_ops(self, config: RunnableConfig) -> Ops[CheckpointTuple | None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        pk = partition_key(thread_id)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            found = yield from self._get_by_id_ops(pk, thread_id, ns, checkpoint_id)
            if found is None:
                # LangGraph runs from an empty state now; its first put is refused when the
                # thread has moved on (see _writes).
                self._unfound.add((pk, thread_id, ns, checkpoint_id))
            return found
        key: HeadKey = (pk, thread_id, ns)
        for attempt in range(READ_ATTEMPTS):
            loaded, head = yield from self._latest_ops(key)
            if not isinstance(loaded, _Missing):
                return loaded
            # A document the head references is gone: read the head again. Moved on (or
            # gone), another process's clean-up removed the checkpoint meanwhile: start over.
            self._heads.drop(key)
            again = yield from read(head_id(ns), pk)
            if attempt + 1 < READ_ATTEMPTS and (
                again is None or again.get("_etag") != (head or {}).get("_etag")
            ):
                continue
            if again is None:
                return None
            raise loaded.error
        return None  # pragma: no cover - the loop returns or raises

    def _latest_ops(self, key: HeadKey) -> Ops[tuple[Loaded, Document | None]]:
        """The latest checkpoint of a namespace, and the head it was read from."""
        pk, thread_id, ns = key
        state = self._heads.get(key)
        prefetched: dict[str, Any] = {}
        head: Document | None
        if state is not None and not state.absent:
            # Read what the head this process last saw needs in the same round trip; it is
            # the right set unless another writer moved the head since.
            refs = references(state.doc)
            writes: Read | Query = (
                Read(writes_mark_id(ns, state.checkpoint_id), pk)
                if _marked(state.doc)
                else _writes_query(pk, thread_id, ns, [state.checkpoint_id])
            )
            results = cast(
                "list[Any]", (yield [Read(head_id(ns), pk), *(Read(r, pk) for r in refs), writes])
            )
            head = cast("Document | None", results[0])
            if head is not None and head.get("checkpoint_id") == state.checkpoint_id:
                prefetched = dict(zip(refs, results[1:-1], strict=True))
                if isinstance(writes, Query):
                    prefetched[_WRITES_KEY] = results[-1]
                elif results[-1] is None:
                    prefetched[_WRITES_KEY] = []  # no mark: no pending writes
        else:
            head = yield from read(head_id(ns), pk)
        if head is not None and head.get("thread_id") != thread_id:
            head = None
        if head is None:
            head = yield from self._repair_head_ops(key)
            if head is None:
                self._heads.set(key, HeadState.missing())
                return None, None
        else:
            self._remember_head(key, head, head["_etag"])
        loaded = yield from self._load_tuples_ops([head], prefetched)
        return loaded[0], head

    def _get_by_id_ops(
        self, pk: str, thread_id: str, ns: str, checkpoint_id: str
    ) -> Ops[CheckpointTuple | None]:
        doc_id = checkpoint_doc_id(ns, checkpoint_id)
        steps: list[Any] = [Read(doc_id, pk)]
        if self.ttl is not None:
            steps.append(Read(head_id(ns), pk))  # a namespace without a head has expired
        results = cast("list[Any]", (yield steps))
        doc = cast("Document | None", results[0])
        if doc is None or doc.get("kind") != KIND_CHECKPOINT or doc.get("thread_id") != thread_id:
            return None  # never written, removed, or kept only as a holder of values
        if self.ttl is not None and results[1] is None:
            return None
        prefetched: dict[str, Any] = {}
        loaded = yield from self._load_tuples_ops([doc], prefetched)
        if isinstance(loaded[0], _Missing):
            again = yield from read(doc_id, pk)
            if again is None or again.get("kind") != KIND_CHECKPOINT:
                return None  # removed while it was read
            raise loaded[0].error
        return loaded[0]

    def _repair_head_ops(self, key: HeadKey) -> Ops[Document | None]:
        """No head: if the namespace has checkpoints (a first put cut short), create the head
        for the newest one (create-if-absent: a head that appeared meanwhile is kept).

        Not with ``ttl=``: there a namespace without a head has expired (its head first), and
        its other documents only wait for their own ttl; a first put cut short is then lost,
        as a put cut short before its batch is.
        """
        if self.ttl is not None:
            return None
        pk, thread_id, ns = key
        newest = yield from query(
            SELECT_LATEST_IN_NS_SQL, (("@pk", pk), ("@thread_id", thread_id), ("@ns", ns)), pk
        )
        if not newest:
            return None
        doc = self._head_doc(strip_system_fields(newest[0]), (yield from clock_now()))
        stored = yield from write(Create(doc))
        if stored is Outcome.CONFLICT:
            current = yield from read(head_id(ns), pk)
            if current is not None:
                self._remember_head(key, current, current["_etag"])
            return current
        self._remember_head(key, doc, cast(str, stored))
        return doc

    def _load_tuples_ops(
        self,
        docs: Sequence[Mapping[str, Any]],
        prefetched: Mapping[str, Any] | None = None,
        holders_cache: _Holders | None = None,
    ) -> Ops[list[Loaded]]:
        """Turn checkpoint (or head) documents of one thread into CheckpointTuples.

        Reads every holder the documents reference and their pending writes, concurrently.
        ``prefetched`` maps holder ids already read to their result (and ``_WRITES_KEY`` to the
        writes of a single document); ``holders_cache`` remembers holders across calls.

        Raises:
            CosmosSchemaError: A document of a newer layout.
        """
        prefetched = dict(prefetched or {})
        cache = holders_cache or _Holders(0)
        for doc in docs:
            _check_schema(doc)
        needed: dict[str, str] = {}
        for doc in docs:
            for ref in references(doc):
                if ref not in prefetched and ref not in cache.docs:
                    needed[ref] = doc["pk"]
        groups: dict[tuple[str, str, str], list[str]] = {}
        for doc in docs:
            groups.setdefault((doc["pk"], doc["thread_id"], doc["ns"]), []).append(
                doc["checkpoint_id"]
            )
        queries = [] if _WRITES_KEY in prefetched else list(groups)
        mark: Read | None = None
        if queries and len(docs) == 1 and _marked(docs[0]):
            # One checkpoint of layout 3: a point read of its writes mark instead of the
            # query; the query only when the mark says there are writes.
            doc = docs[0]
            mark, queries = Read(writes_mark_id(doc["ns"], doc["checkpoint_id"]), doc["pk"]), []
        steps: list[Any] = [Read(i, pk) for i, pk in needed.items()]
        steps += [
            _writes_query(pk, t, ns, cps) for pk, t, ns in queries for cps in [groups[(pk, t, ns)]]
        ]
        if mark is not None:
            steps.append(mark)
        results = cast("list[Any]", (yield steps)) if steps else []
        if mark is not None:
            marked = results.pop()
            if marked is not None:
                doc = docs[0]
                writes = _writes_query(
                    doc["pk"], doc["thread_id"], doc["ns"], [doc["checkpoint_id"]]
                )
                results.append(cast("list[Document]", (yield writes)))
        holders: dict[str, Any] = {
            ref: cache.docs[ref] for doc in docs for ref in references(doc) if ref in cache.docs
        }
        holders.update((k, v) for k, v in prefetched.items() if k != _WRITES_KEY)
        holders.update(zip(needed, results[: len(needed)], strict=True))
        write_docs: list[Document] = list(prefetched.get(_WRITES_KEY) or [])
        for found in results[len(needed) :]:
            write_docs.extend(found)
        blobs: dict[str, Any] = {}
        broken: dict[str, CosmosMissingDocumentError] = {}
        for holder_id, holder in holders.items():
            cache.add(holder_id, holder)
            if holder is not None and holder.get("kind") in (KIND_BLOB, KIND_WRITE_VALUE):
                if holder_id in cache.values:
                    blobs[holder_id] = cache.values[holder_id]
                    continue
                try:
                    blobs[holder_id] = yield from self._load_value_ops(holder)
                except CosmosMissingDocumentError as error:
                    broken[holder_id] = error  # a chunk is gone: reported by who needs it
                    continue
                if holder_id in cache.docs:
                    cache.values[holder_id] = blobs[holder_id]
        writes_of: dict[tuple[str, str], list[Document]] = {}
        for wdoc in write_docs:
            writes_of.setdefault((wdoc["ns"], wdoc["checkpoint_id"]), []).append(wdoc)

        tuples: list[Loaded] = []
        for doc in docs:
            try:
                values = self._values_of(doc, holders, blobs, broken)
                pending = yield from self._pending_writes_ops(
                    writes_of.get((doc["ns"], doc["checkpoint_id"]), [])
                )
            except CosmosMissingDocumentError as error:
                # With ttl, its values expired: the checkpoint counts as expired. Only when a
                # holder it references can have expired by now (its recorded expiry passed):
                # a document gone before that (deleted by hand, restored partially) is missing,
                # not expired, and reading it as expired would let the next run replace the
                # thread's history with an empty state.
                expired = False
                if self.ttl is not None:
                    expires = doc.get("expires")
                    if not isinstance(expires, Mapping):
                        expired = True  # a layout without it: as before
                    elif expires:
                        now = yield from clock_now()
                        expired = (
                            min(float(v) for v in expires.values()) <= now + TTL_MARGIN_SECONDS
                        )
                tuples.append(None if expired else _Missing(error))
                continue
            checkpoint = cast(Checkpoint, self._decode(doc["checkpoint"]))
            checkpoint["channel_values"] = values
            metadata = cast(CheckpointMetadata, self._decode(doc["metadata_typed"]))
            thread_id, ns, parent = doc["thread_id"], doc["ns"], doc.get("parent_checkpoint_id")
            tuples.append(
                CheckpointTuple(
                    config=stored_config(thread_id, ns, doc["checkpoint_id"]),
                    checkpoint=checkpoint,
                    metadata=metadata,
                    parent_config=stored_config(thread_id, ns, parent) if parent else None,
                    pending_writes=pending,
                )
            )
        return tuples

    def _values_of(
        self,
        doc: Mapping[str, Any],
        holders: Mapping[str, Any],
        blobs: Mapping[str, Any],
        broken: Mapping[str, CosmosMissingDocumentError],
    ) -> dict[str, Any]:
        """Every channel value of one checkpoint or head document; nothing silently left out.

        Raises:
            CosmosMissingDocumentError: A document (or a chunk of one) it needs is missing.
        """
        values: dict[str, Any] = {}
        own = doc.get("values") or {}
        for channel, version in (doc.get("versions") or {}).items():
            if channel in (doc.get("inline") or {}):
                values[channel] = self._decode(doc["inline"][channel])
                continue
            if channel in (doc.get("cached") or {}):
                values[channel] = self._decode(doc["cached"][channel])
                continue
            if channel in own:
                values[channel] = self._decode(own[channel])
                continue
            origin = origin_of(doc, channel, version)
            if origin is None:
                continue  # a version without a value ("empty")
            if origin in blobs:
                values[channel] = blobs[origin]
                continue
            if origin in broken:
                raise broken[origin]
            holder = holders.get(origin)
            held = (holder or {}).get("values") or {}
            if holder is None or channel not in held:
                what = "missing" if holder is None else "without it"
                raise CosmosMissingDocumentError(
                    f"checkpoint {doc['checkpoint_id']!r} of thread {doc['thread_id']!r} "
                    f"(namespace {doc['ns']!r}) needs document {origin!r} for channel "
                    f"{channel!r}, and it is {what}",
                    document_id=origin,
                )
            values[channel] = self._decode(held[channel])
        return values

    def _pending_writes_ops(
        self, write_docs: Sequence[Mapping[str, Any]]
    ) -> Ops[list[PendingWrite]]:
        """Merge the writes documents of one checkpoint, PostgresSaver's way.

        Raises:
            CosmosMissingDocumentError: A part or a value of one of them is missing.
        """
        pk = write_docs[0]["pk"] if write_docs else ""
        part_ids = [str(p) for wdoc in write_docs for p in wdoc.get("parts") or []]
        parts = yield from read_many([Read(p, pk) for p in part_ids])
        part_of = dict(zip(part_ids, parts, strict=True))
        chosen: dict[tuple[str, int], dict[str, Any]] = {}
        # Regular documents first, special ones after: a special write replaces a regular
        # write of the same task and index; among regular ones the first stored stays.
        for wdoc in sorted(write_docs, key=lambda d: bool(d.get("special"))):
            items = list(wdoc.get("writes") or [])
            for part_id in wdoc.get("parts") or []:
                part = part_of.get(str(part_id))
                if part is None:
                    raise CosmosMissingDocumentError(
                        f"part {part_id!r} of the pending writes of task {wdoc['task_id']!r} "
                        f"(checkpoint {wdoc['checkpoint_id']!r}) is missing",
                        document_id=str(part_id),
                    )
                items.extend(part.get("writes") or [])
            for entry in items:
                slot = (str(entry["task_id"]), int(entry["idx"]))
                if slot not in chosen or wdoc.get("special"):
                    chosen[slot] = entry
        entries = sorted(
            chosen.values(),
            key=lambda e: writes_sort_key(e["task_path"], e["task_id"], int(e["idx"])),
        )
        refs = [e["ref"] for e in entries if "ref" in e]
        ref_docs = yield from read_many([Read(r, pk) for r in refs])
        by_ref = dict(zip(refs, ref_docs, strict=True))
        pending: list[PendingWrite] = []
        for entry in entries:
            if "ref" in entry:
                ref_doc = by_ref.get(entry["ref"])
                if ref_doc is None:
                    raise CosmosMissingDocumentError(
                        f"the value of pending write {entry['channel']!r} of task "
                        f"{entry['task_id']!r} (document {entry['ref']!r}) is missing",
                        document_id=entry["ref"],
                    )
                value = yield from self._load_value_ops(ref_doc)
            else:
                value = self._decode([entry["type"], entry["data"], entry.get("codec")])
            pending.append((entry["task_id"], entry["channel"], value))
        return pending

    def _list_ops(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Ops[None]:
        """Stream checkpoints newest first, one page at a time (keyset paging on the
        checkpoint id, so memory stays bounded whatever the container holds).

        Filters the query can express exactly are part of it; any other filter is evaluated on
        pages of metadata alone, and only the matches are read whole. The value documents one
        page read are remembered (bounded) for the next pages.
        """
        if limit is not None and limit <= 0:
            return
        sql_parts: list[str] = []
        params: list[tuple[str, Any]] = []
        pk: str | None = None
        thread_id: str | None = None
        if config is not None:
            configurable = config.get("configurable", {})
            if "thread_id" in configurable:
                thread_id = str(configurable["thread_id"])
                pk = partition_key(thread_id)
                sql_parts.append(WHERE_THREAD_SQL)
                params += [("@pk", pk), ("@thread_id", thread_id)]
            if configurable.get("checkpoint_ns") is not None:
                sql_parts.append(WHERE_NS_SQL)
                params.append(("@ns", str(configurable["checkpoint_ns"])))
            if checkpoint_id := get_checkpoint_id(config):
                sql_parts.append(WHERE_CHECKPOINT_ID_SQL)
                params.append(("@checkpoint_id", checkpoint_id))
        if before is not None and (before_id := get_checkpoint_id(before)):
            sql_parts.append(WHERE_BEFORE_SQL)
            params.append(("@before", before_id))
        exact_pushdown = True
        for i, (name, value) in enumerate((filter or {}).items()):
            if pushdown_value(value):
                sql_parts.append(WHERE_METADATA_SQL.format(i=i))
                params += [(f"@mk{i}", name), (f"@mv{i}", value)]
            else:
                exact_pushdown = False
        live: set[str] | None = None
        if self.ttl is not None and pk is not None and thread_id is not None:
            # With ttl, a namespace whose head has expired has expired as a whole (its other
            # documents live a while longer, see _state.HOLDER_TTL_FACTOR).
            heads = yield from query(
                SELECT_HEAD_NAMESPACES_SQL, (("@pk", pk), ("@thread_id", thread_id)), pk
            )
            live = {h["ns"] for h in heads if h.get("kind") == KIND_HEAD}
        remaining = limit
        keys_only = not exact_pushdown
        page_size = KEY_PAGE_SIZE if keys_only else PAGE_SIZE
        if limit is not None and exact_pushdown:
            page_size = min(PAGE_SIZE, limit)
        select = SELECT_TOP_CHECKPOINT_KEYS_SQL if keys_only else SELECT_TOP_CHECKPOINTS_SQL
        cache = _Holders()
        page_from: str | None = None
        seen_at_boundary: set[tuple[str, str]] = set()
        while True:
            page_sql = sql_parts + ([WHERE_PAGE_SQL] if page_from is not None else [])
            page_params = [*params, ("@limit", page_size)]
            if page_from is not None:
                page_params.append(("@page_from", page_from))
            docs = yield from query(
                select + "".join(page_sql) + ORDER_NEWEST_FIRST_SQL, tuple(page_params), pk
            )
            fresh = [d for d in docs if (d["pk"], d["id"]) not in seen_at_boundary]
            if live is not None:
                fresh = [d for d in fresh if d["ns"] in live]
            if keys_only:
                fresh = [
                    d
                    for d in fresh
                    if metadata_matches(
                        cast(CheckpointMetadata, self._decode(d["metadata_typed"])), filter or {}
                    )
                ]
                if remaining is not None:
                    fresh = fresh[:remaining]
                full = yield from read_many([Read(d["id"], d["pk"]) for d in fresh])
                fresh = [
                    f
                    for f in full
                    if f is not None
                    and f.get("kind") == KIND_CHECKPOINT
                    and (thread_id is None or f.get("thread_id") == thread_id)
                ]
            loaded = yield from self._load_page_ops(fresh, cache)
            for doc in fresh:
                tup = loaded.get((doc["pk"], doc["id"]))
                if tup is None:
                    continue
                if filter and not metadata_matches(tup.metadata, filter):
                    continue
                yield Emit(tup)
                if remaining is not None:
                    remaining -= 1
                    if remaining <= 0:
                        return
            if len(docs) < page_size:
                return
            last = docs[-1]["checkpoint_id"]
            if all(d["checkpoint_id"] == last for d in docs):
                page_size *= 2  # one id shared by a whole page (copied threads): widen
            if last != page_from:
                seen_at_boundary = set()
            page_from = last
            seen_at_boundary |= {(d["pk"], d["id"]) for d in docs if d["checkpoint_id"] == last}

    def _load_page_ops(
        self, docs: Sequence[Mapping[str, Any]], cache: _Holders
    ) -> Ops[dict[tuple[str, str], CheckpointTuple | None]]:
        """Load one page of checkpoint documents (any threads). A checkpoint that needs a
        document found missing is read again: removed meanwhile (by clean-up in another
        process), it is left out; still there, the read raises."""
        by_thread: dict[str, list[Mapping[str, Any]]] = {}
        for doc in docs:
            by_thread.setdefault(doc["pk"], []).append(doc)
        out: dict[tuple[str, str], CheckpointTuple | None] = {}
        for thread_docs in by_thread.values():
            tuples = yield from self._load_tuples_ops(thread_docs, holders_cache=cache)
            failed: list[tuple[Mapping[str, Any], _Missing]] = []
            for doc, tup in zip(thread_docs, tuples, strict=True):
                if isinstance(tup, _Missing):
                    failed.append((doc, tup))
                else:
                    out[(doc["pk"], doc["id"])] = tup
            if not failed:
                continue
            again = yield from read_many([Read(d["id"], d["pk"]) for d, _ in failed])
            survivors = [
                doc
                for (doc, _), current in zip(failed, again, strict=True)
                if current is not None and current.get("kind") == KIND_CHECKPOINT
            ]
            if not survivors:
                continue
            # Still listed: read them once more without what was remembered; what is missing
            # now is missing.
            retried = yield from self._load_tuples_ops(survivors)
            for doc, tup in zip(survivors, retried, strict=True):
                if isinstance(tup, _Missing):
                    current = yield from read(doc["id"], doc["pk"])
                    if current is None or current.get("kind") != KIND_CHECKPOINT:
                        continue
                    raise tup.error
                out[(doc["pk"], doc["id"])] = tup
        return out


def _marked(doc: Mapping[str, Any]) -> bool:
    """Whether a checkpoint's pending writes always come with a writes mark (layout 3)."""
    schema = doc.get("schema", 1)
    return isinstance(schema, int) and schema >= MARKED_SCHEMA


def _check_schema(doc: Mapping[str, Any]) -> None:
    schema = doc.get("schema", 1)
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise CosmosSchemaError(
            f"document {doc.get('id')!r} was written with storage layout {schema!r}; this "
            f"version of agentstate-cosmosdb reads layouts up to {SCHEMA_VERSION}. Upgrade "
            "agentstate-cosmosdb."
        )


def _writes_query(pk: str, thread_id: str, ns: str, checkpoint_ids: Iterable[str]) -> Query:
    return Query(
        SELECT_WRITES_SQL,
        (
            ("@pk", pk),
            ("@thread_id", thread_id),
            ("@ns", ns),
            ("@checkpoint_ids", list(checkpoint_ids)),
        ),
        pk,
    )

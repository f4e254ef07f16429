"""Reads: ``get_tuple`` (with the head repair of a first put cut short), ``list``, and the
loading of checkpoint documents into ``CheckpointTuple`` s with their pending writes.
"""

from __future__ import annotations

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

from agentstate_cosmosdb._state import stored_config
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
    KIND_WRITE_VALUE,
    ORDER_NEWEST_FIRST_SQL,
    SCHEMA_VERSION,
    SELECT_LATEST_IN_NS_SQL,
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
)

PAGE_SIZE = 32
"""Checkpoints per page of ``list``."""

_WRITES_KEY = "\x00writes"


class ReadOps(ValueDocs):
    """The generators of ``get_tuple`` and ``list``."""

    def _get_tuple_ops(self, config: RunnableConfig) -> Ops[CheckpointTuple | None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = str(configurable.get("checkpoint_ns", ""))
        pk = partition_key(thread_id)
        key: HeadKey = (pk, thread_id, ns)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            doc = yield from read(checkpoint_doc_id(ns, checkpoint_id), pk)
            if doc is None or doc.get("kind") != KIND_CHECKPOINT:
                return None  # never written, removed, or kept only as a holder of values
            if doc.get("thread_id") != thread_id:
                return None
            tuples = yield from self._load_tuples_ops([doc])
            return tuples[0]
        state = self._heads.get(key)
        prefetched: dict[str, Any] = {}
        if state is not None and not state.absent:
            # Read what the head this process last saw needs in the same round trip; it is
            # the right set unless another writer moved the head since.
            refs = references(state.doc)
            results = yield [
                Read(head_id(ns), pk),
                *(Read(r, pk) for r in refs),
                _writes_query(pk, thread_id, ns, [state.checkpoint_id]),
            ]
            seq = cast("list[Any]", results)
            head = cast("Document | None", seq[0])
            if head is not None and head.get("checkpoint_id") == state.checkpoint_id:
                prefetched = dict(zip(refs, seq[1:-1], strict=True))
                prefetched[_WRITES_KEY] = seq[-1]
        else:
            head = yield from read(head_id(ns), pk)
        if head is not None and head.get("thread_id") != thread_id:
            head = None
        if head is None:
            head = yield from self._repair_head_ops(key)
            if head is None:
                self._heads.set(key, HeadState.missing())
                return None
        else:
            self._remember_head(key, head, head["_etag"])
        tuples = yield from self._load_tuples_ops([head], prefetched)
        if tuples[0] is None and self.ttl is not None:
            return None
        return tuples[0]

    def _repair_head_ops(self, key: HeadKey) -> Ops[Document | None]:
        """No head: if the namespace has checkpoints (a first put cut short), create the head
        for the newest one (create-if-absent: a head that appeared meanwhile is kept)."""
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
        self, docs: Sequence[Mapping[str, Any]], prefetched: Mapping[str, Any] | None = None
    ) -> Ops[list[CheckpointTuple | None]]:
        """Turn checkpoint (or head) documents of one thread into CheckpointTuples.

        Reads every holder the documents reference and their pending writes, concurrently.
        ``prefetched`` maps holder ids already read to their result (and ``_WRITES_KEY`` to the
        writes of a single document). A tuple is None when, with ``ttl=``, one of its values
        has expired.

        Raises:
            CosmosMissingDocumentError: A referenced document is missing (without ``ttl=``).
            CosmosSchemaError: A document of a newer layout.
        """
        prefetched = prefetched or {}
        for doc in docs:
            _check_schema(doc)
        needed: dict[str, str] = {}
        for doc in docs:
            for ref in references(doc):
                if ref not in prefetched:
                    needed[ref] = doc["pk"]
        groups: dict[tuple[str, str, str], list[str]] = {}
        for doc in docs:
            groups.setdefault((doc["pk"], doc["thread_id"], doc["ns"]), []).append(
                doc["checkpoint_id"]
            )
        queries = [] if _WRITES_KEY in prefetched else list(groups)
        steps: list[Any] = [Read(i, pk) for i, pk in needed.items()]
        steps += [
            _writes_query(pk, t, ns, cps) for pk, t, ns in queries for cps in [groups[(pk, t, ns)]]
        ]
        results = cast("list[Any]", (yield steps)) if steps else []
        holders: dict[str, Any] = dict(prefetched)
        holders.update(zip(needed, results[: len(needed)], strict=True))
        write_docs: list[Document] = list(prefetched.get(_WRITES_KEY) or [])
        for found in results[len(needed) :]:
            write_docs.extend(found)
        blobs: dict[str, Any] = {}
        for holder_id, holder in holders.items():
            if (
                holder_id != _WRITES_KEY
                and holder is not None
                and holder.get("kind")
                in (
                    KIND_BLOB,
                    KIND_WRITE_VALUE,
                )
            ):
                blobs[holder_id] = yield from self._load_value_ops(holder)
        writes_of: dict[tuple[str, str], list[Document]] = {}
        for wdoc in write_docs:
            writes_of.setdefault((wdoc["ns"], wdoc["checkpoint_id"]), []).append(wdoc)

        tuples: list[CheckpointTuple | None] = []
        for doc in docs:
            try:
                values = self._values_of(doc, holders, blobs)
            except CosmosMissingDocumentError:
                if self.ttl is None:
                    raise
                tuples.append(None)  # its values expired: the checkpoint counts as expired
                continue
            checkpoint = cast(Checkpoint, self._decode(doc["checkpoint"]))
            checkpoint["channel_values"] = values
            metadata = cast(CheckpointMetadata, self._decode(doc["metadata_typed"]))
            pending = yield from self._pending_writes_ops(
                writes_of.get((doc["ns"], doc["checkpoint_id"]), [])
            )
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
        self, doc: Mapping[str, Any], holders: Mapping[str, Any], blobs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Every channel value of one checkpoint or head document; nothing silently left out."""
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
            holder = holders.get(origin)
            held = (holder or {}).get("values") or {}
            if holder is None or channel not in held:
                raise CosmosMissingDocumentError(
                    f"checkpoint {doc['checkpoint_id']!r} of thread {doc['thread_id']!r} "
                    f"(namespace {doc['ns']!r}) needs document {origin!r} for channel "
                    f"{channel!r}, and it is {'missing' if holder is None else 'without it'}",
                    document_id=origin,
                )
            values[channel] = self._decode(held[channel])
        return values

    def _pending_writes_ops(
        self, write_docs: Sequence[Mapping[str, Any]]
    ) -> Ops[list[PendingWrite]]:
        """Merge the writes documents of one checkpoint, PostgresSaver's way."""
        chosen: dict[tuple[str, int], dict[str, Any]] = {}
        # Regular documents first, special ones after: a special write replaces a regular
        # write of the same task and index; among regular ones the first stored stays.
        for wdoc in sorted(write_docs, key=lambda d: bool(d.get("special"))):
            for entry in wdoc.get("writes") or []:
                slot = (str(entry["task_id"]), int(entry["idx"]))
                if slot not in chosen or wdoc.get("special"):
                    chosen[slot] = entry
        entries = sorted(
            chosen.values(),
            key=lambda e: writes_sort_key(e["task_path"], e["task_id"], int(e["idx"])),
        )
        pk = write_docs[0]["pk"] if write_docs else ""
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
        """Stream checkpoints newest first, one page of PAGE_SIZE at a time (keyset paging on
        the checkpoint id, so memory stays bounded whatever the container holds)."""
        if limit is not None and limit <= 0:
            return
        sql_parts: list[str] = []
        params: list[tuple[str, Any]] = []
        pk: str | None = None
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
        remaining = limit
        page_size = PAGE_SIZE
        if limit is not None and exact_pushdown:
            page_size = min(PAGE_SIZE, limit)
        page_from: str | None = None
        seen_at_boundary: set[tuple[str, str]] = set()
        while True:
            page_sql = sql_parts + ([WHERE_PAGE_SQL] if page_from is not None else [])
            page_params = [*params, ("@limit", page_size)]
            if page_from is not None:
                page_params.append(("@page_from", page_from))
            docs = yield from query(
                SELECT_TOP_CHECKPOINTS_SQL + "".join(page_sql) + ORDER_NEWEST_FIRST_SQL,
                tuple(page_params),
                pk,
            )
            fresh = [d for d in docs if (d["pk"], d["id"]) not in seen_at_boundary]
            by_thread: dict[str, list[Document]] = {}
            for doc in fresh:
                by_thread.setdefault(doc["pk"], []).append(doc)
            loaded: dict[tuple[str, str], CheckpointTuple | None] = {}
            for thread_docs in by_thread.values():
                tuples = yield from self._load_tuples_ops(thread_docs)
                for doc, tup in zip(thread_docs, tuples, strict=True):
                    loaded[(doc["pk"], doc["id"])] = tup
            for doc in fresh:
                tup = loaded[(doc["pk"], doc["id"])]
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

"""Move threads written by ``langgraph-checkpoint-cosmosdb`` 0.4 into this package's layout.

The published saver keeps one document per checkpoint (the whole checkpoint, values included,
base64 of LangGraph's serializer) with ids ``checkpoint$<thread>$<ns>$<checkpoint id>`` in the
partition ``checkpoint$<thread>$<ns>$``, and one document per pending write
(``writes$<thread>$<ns>$<checkpoint id>$<task>$<idx>``) in the partition
``writes$<thread>$<ns>$<checkpoint id>$$``, in a container partitioned on ``/partition_key``.

:func:`migrate_from_langgraph_checkpoint_cosmosdb` reads those documents and stores every
checkpoint, oldest first per namespace, with its metadata, parent and pending writes, through
the target saver's own put path (without its reducer: history is copied as it was), so each
channel value is stored once per version. Channel versions, which the published saver counts
with ints, become our ordered strings of the same rank (values, history and pending writes are
unchanged), so a migrated thread runs on. The source is only read. Running it again is safe:
it stores the same documents again and the head never moves backwards.

Command line (endpoint and key from ``COSMOSDB_ENDPOINT`` / ``COSMOSDB_KEY`` or
``--conn-string``)::

    python -m agentstate_cosmosdb migrate --source-database langgraph --source-container \\
        checkpoints --database agentstate --container checkpoints [--thread ID ...]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint, CheckpointMetadata

from agentstate_cosmosdb.documents import unb64
from agentstate_cosmosdb.errors import CosmosSaverError, map_sdk_error
from agentstate_cosmosdb.saver import CosmosDBSaver

__all__ = ["MigrationReport", "migrate_from_langgraph_checkpoint_cosmosdb"]

SEPARATOR = "$"
_CHECKPOINTS_SQL = "SELECT * FROM c WHERE STARTSWITH(c.id, 'checkpoint$')"
# One thread's checkpoints: their ids start with "checkpoint$<thread>$" (the thread's
# partitions, one per namespace; the query filters, so only matching documents are read).
_THREAD_CHECKPOINTS_SQL = "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)"
_WRITES_SQL = "SELECT * FROM c WHERE c.partition_key = @pk"


@dataclass
class MigrationReport:
    """What a migration copied."""

    threads: int = 0
    checkpoints: int = 0
    writes: int = 0
    skipped: int = 0
    """Source documents whose id could not be parsed (left alone)."""


def _split_checkpoint_id(doc_id: str) -> tuple[str, str, str] | None:
    parts = doc_id.split(SEPARATOR)
    if len(parts) < 4 or parts[0] != "checkpoint":
        return None
    return SEPARATOR.join(parts[1:-2]), parts[-2], parts[-1]


def migrate_from_langgraph_checkpoint_cosmosdb(
    source: Any,
    target: CosmosDBSaver,
    *,
    thread_ids: Iterable[str] | None = None,
) -> MigrationReport:
    """Copy the threads ``langgraph-checkpoint-cosmosdb`` 0.4 stored in ``source`` into ``target``.

    Args:
        source: The published saver's container (an ``azure.cosmos`` ``ContainerProxy``,
            for example ``published_saver.container``); only read.
        target: A :class:`~agentstate_cosmosdb.CosmosDBSaver`; its reducer is not applied.
        thread_ids: Only these threads (default: every thread in the container); the query
            reads only their documents.

    Returns:
        How many threads, checkpoints and pending writes were copied.

    Raises:
        TypeError: ``target`` is not a CosmosDBSaver.
        CosmosSaverError: The source could not be read, or the target refused a write.
    """
    if not isinstance(target, CosmosDBSaver):
        raise TypeError(
            f"target must be a CosmosDBSaver (the migration is a sync batch job), "
            f"got {type(target).__name__}"
        )
    if isinstance(thread_ids, str):
        raise TypeError("thread_ids must be a collection of thread ids, not one str")
    wanted = None if thread_ids is None else {str(t) for t in thread_ids}
    report = MigrationReport()
    try:
        if wanted is None:
            docs = list(source.query_items(_CHECKPOINTS_SQL, enable_cross_partition_query=True))
        else:
            docs = []
            for thread in sorted(wanted):
                prefix = SEPARATOR.join(["checkpoint", thread, ""])
                docs += source.query_items(
                    _THREAD_CHECKPOINTS_SQL,
                    parameters=[{"name": "@prefix", "value": prefix}],
                    enable_cross_partition_query=True,
                )
    except Exception as exc:
        raise map_sdk_error(exc, "read the published saver's checkpoints", None) from exc
    groups: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for doc in docs:
        parsed = _split_checkpoint_id(str(doc.get("id", "")))
        if parsed is None or "checkpoint" not in doc or "metadata" not in doc:
            report.skipped += 1
            continue
        thread_id, ns, checkpoint_id = parsed
        if wanted is not None and thread_id not in wanted:
            continue
        groups.setdefault((thread_id, ns), []).append((checkpoint_id, doc))
    serde = target.serde
    threads: set[str] = set()
    for (thread_id, ns), items in sorted(groups.items()):
        threads.add(thread_id)
        versions_of: dict[str, dict[str, Any]] = {}
        for checkpoint_id, doc in sorted(items, key=lambda item: item[0]):
            checkpoint = _our_versions(
                cast(Checkpoint, serde.loads_typed((doc["type"], unb64(doc["checkpoint"]))))
            )
            meta_type, meta_data = doc["metadata"]
            metadata = cast(CheckpointMetadata, serde.loads_typed((meta_type, unb64(meta_data))))
            parent_id = doc.get("parent_checkpoint_id") or None
            parent_versions = versions_of.get(parent_id or "", {})
            versions = dict(checkpoint.get("channel_versions") or {})
            new_versions = {ch: v for ch, v in versions.items() if parent_versions.get(ch) != v}
            config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
            if parent_id:
                config["configurable"]["checkpoint_id"] = parent_id
            stored = target._run(
                target._put_ops(config, checkpoint, metadata, new_versions), "migrate a checkpoint"
            )
            versions_of[checkpoint_id] = versions
            report.checkpoints += 1
            report.writes += _copy_writes(source, target, stored, thread_id, ns, checkpoint_id)
    report.threads = len(threads)
    return report


def _version(value: Any) -> Any:
    """The published saver counts versions with ints; ours are ordered strings (see
    ``get_next_version``). Ints become the string of the same rank, so a migrated thread
    continues with our versions and LangGraph never compares an int with a str."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:032}.{0:016}"
    return value


def _our_versions(checkpoint: Checkpoint) -> Checkpoint:
    checkpoint["channel_versions"] = {
        ch: _version(v) for ch, v in (checkpoint.get("channel_versions") or {}).items()
    }
    checkpoint["versions_seen"] = {
        node: {ch: _version(v) for ch, v in seen.items()}
        for node, seen in (checkpoint.get("versions_seen") or {}).items()
    }
    return checkpoint


def _copy_writes(
    source: Any, target: CosmosDBSaver, config: Any, thread_id: str, ns: str, checkpoint_id: str
) -> int:
    pk = SEPARATOR.join(["writes", thread_id, ns, checkpoint_id, "", ""])
    try:
        docs = list(
            source.query_items(
                _WRITES_SQL, parameters=[{"name": "@pk", "value": pk}], partition_key=pk
            )
        )
    except Exception as exc:
        raise map_sdk_error(exc, "read the published saver's pending writes", None) from exc
    by_task: dict[str, list[tuple[int, str, Any]]] = {}
    for doc in docs:
        parts = str(doc["id"]).split(SEPARATOR)
        task_id, idx = parts[-2], int(parts[-1])
        value = target.serde.loads_typed((doc["type"], unb64(doc["value"])))
        by_task.setdefault(task_id, []).append((idx, doc["channel"], value))
    for task_id, writes in sorted(by_task.items()):
        regular = [
            (ch, v) for idx, ch, v in sorted(writes, key=lambda w: w[0]) if ch not in WRITES_IDX_MAP
        ]
        calls: list[Sequence[tuple[str, Any]]] = [regular] if regular else []
        calls += [[(ch, v)] for _, ch, v in writes if ch in WRITES_IDX_MAP]
        for call in calls:
            target._run(target._put_writes_ops(config, call, task_id, ""), "migrate pending writes")
    return len(docs)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentstate_cosmosdb migrate ...``; returns the exit status."""
    import argparse
    import os

    from agentstate_cosmosdb.settings import parse_connection_string

    parser = argparse.ArgumentParser(
        prog="python -m agentstate_cosmosdb",
        description="Copy threads stored by langgraph-checkpoint-cosmosdb 0.4 into the "
        "agentstate-cosmosdb layout (the source is only read).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("migrate", help="copy threads from langgraph-checkpoint-cosmosdb 0.4")
    cmd.add_argument("--source-database", required=True)
    cmd.add_argument("--source-container", required=True)
    cmd.add_argument("--database", required=True, help="target database")
    cmd.add_argument("--container", required=True, help="target container (partition key /pk)")
    cmd.add_argument("--thread", action="append", help="only this thread (repeatable)")
    cmd.add_argument("--conn-string", help="AccountEndpoint=...;AccountKey=...; (else env)")
    args = parser.parse_args(argv)
    try:
        if args.conn_string:
            endpoint, key = parse_connection_string(args.conn_string)
        else:
            endpoint = os.environ.get("COSMOSDB_ENDPOINT", "")
            key = os.environ.get("COSMOSDB_KEY", "")
        with CosmosDBSaver(
            args.database, args.container, endpoint=endpoint or None, credential=key or None
        ) as target:
            target.setup()
            from azure.cosmos import CosmosClient

            from agentstate_cosmosdb.settings import ca_bundle, tls_hook

            bundle = ca_bundle(True)
            hook = tls_hook(bundle) if bundle else None
            source = (
                CosmosClient(endpoint, credential=key, raw_request_hook=hook)
                .get_database_client(args.source_database)
                .get_container_client(args.source_container)
            )
            report = migrate_from_langgraph_checkpoint_cosmosdb(
                source, target, thread_ids=args.thread
            )
    except CosmosSaverError as exc:
        print(f"migration failed: {exc}")
        return 1
    print(
        f"copied {report.checkpoints} checkpoints and {report.writes} pending writes of "
        f"{report.threads} threads ({report.skipped} documents skipped)"
    )
    return 0

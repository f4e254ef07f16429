"""Bounded storage per thread: keep only a thread's recent checkpoints.

Reducing the message channel bounds each checkpoint; a thread still gains a checkpoint
per step, forever. :class:`CheckpointRetention` counts the puts to each thread and, once a
thread has had ``keep_checkpoints`` puts since it was last pruned, prunes it to its latest
checkpoint per namespace with the saver's own ``prune(strategy="keep_latest")`` (the only
pruning LangGraph's saver interface offers), so a thread holds at most about
``keep_checkpoints`` checkpoints per namespace and its stored bytes stay flat.

Pruning is storage housekeeping: when it fails (a concurrent transaction), the put that
triggered it still succeeds, the failure is logged, and the next put tries again.

What pruning never takes: a saver's ``prune`` decides, and the savers that implement it
delete pending writes only with the checkpoints they delete (PostgresSaver since 3.2,
langgraph-checkpoint-redis's RedisSaver and AsyncRedisSaver, the Cosmos DB savers). That
matters because LangGraph (``durability="async"``) stores a task's writes for checkpoint k
before checkpoint k itself: a prune that ran in between and removed every write not
belonging to a stored checkpoint would lose a finished task's writes (it would run again
after a crash) or a pending interrupt. (The Redis savers lose such writes by themselves,
pruning or not: docs/guides/limits.md.)

What pruning makes unsafe: a config that names a checkpoint pruning removed (a human-in-the-loop
UI holding ``get_state(cfg).config``, a fork from ``update_state``, time travel). LangGraph's
``get_tuple`` finds nothing under that id and the run starts from an empty state, whose first
put would become the thread's latest and take its history. :meth:`CheckpointRetention.
check_parent` refuses that put (and, before it, a ``Command(resume=...)``'s resume value,
written for that id) (``ValueError`` naming thread, namespace and ids, nothing
stored): a put whose parent checkpoint the wrapper's ``get_tuple`` found nothing under, still
not stored, while the namespace holds a newer one. ``get_tuple`` itself still returns None for
an id it lacks (the saver contract), so the first put is the earliest point that can tell:
with ``durability="sync"`` or ``"async"`` usually before any node runs, with ``"exit"`` at the
end of the run. Other puts cost nothing more; a refused one two ``get_tuple`` s. A run that read
its parent whole, which pruning removed afterwards, holds the parent's state in full: its put
is stored as before.

A graph with a ``DeltaChannel`` is refused (:meth:`CheckpointRetention.before_put`,
``NotImplementedError`` before anything is stored): its value is rebuilt from the writes of
older checkpoints, which keep-latest pruning deletes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata

from .._checks import check_int

try:  # langgraph-checkpoint >= 4 stores DeltaChannel snapshots as this type
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as _DeltaSnapshotType
except ImportError:  # pragma: no cover - older langgraph-checkpoint has no DeltaChannel

    class _DeltaSnapshotType:  # type: ignore[no-redef]
        pass


logger = logging.getLogger(__name__)

__all__ = ["CheckpointRetention"]

#: Threads whose put count is remembered (the oldest forgotten first).
_COUNTED_THREADS = 4096


def _overrides(saver: BaseCheckpointSaver[Any], name: str) -> bool:
    return getattr(type(saver), name, None) is not getattr(BaseCheckpointSaver, name, None)


class CheckpointRetention:
    """Prunes a saver's threads to their latest checkpoints every ``keep_checkpoints`` puts.

    Args:
        saver: The saver whose ``prune`` / ``aprune`` runs.
        keep_checkpoints: Puts to a thread between two prunes (at least 1).

    Raises:
        TypeError: ``keep_checkpoints`` is not an int.
        ValueError: ``keep_checkpoints`` is below 1.
        NotImplementedError: The saver implements neither ``prune`` nor ``aprune``
            (InMemorySaver and SqliteSaver do not; PostgresSaver, the Redis savers and the
            Cosmos DB savers do).
    """

    def __init__(self, saver: BaseCheckpointSaver[Any], keep_checkpoints: int) -> None:
        self.keep_checkpoints = check_int("keep_checkpoints", keep_checkpoints, minimum=1)
        self._saver = saver
        self._sync = _overrides(saver, "prune")
        self._async = _overrides(saver, "aprune")
        if not (self._sync or self._async):
            raise NotImplementedError(
                f"keep_checkpoints needs a saver that can prune; {type(saver).__name__} "
                "implements neither prune nor aprune. Use a saver that does (PostgresSaver, "
                "RedisSaver, the Cosmos DB savers) or leave keep_checkpoints unset"
            )
        self._counts: OrderedDict[str, int] = OrderedDict()
        # (thread id, namespace, checkpoint id) s that get_tuple found nothing under.
        self._unfound: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def before_put(self, checkpoint: Checkpoint, metadata: CheckpointMetadata) -> None:
        """Refuse a checkpoint of a graph with a ``DeltaChannel``, before anything is stored.

        LangGraph marks such a checkpoint with the channel's update counters in its metadata
        or a snapshot value in ``channel_values`` (every checkpoint carries one or the other).

        Raises:
            NotImplementedError: The checkpoint has a DeltaChannel; the message names it.
        """
        names = _delta_channels(checkpoint, metadata)
        if names:
            raise NotImplementedError(
                "keep_checkpoints cannot bound a graph with a DeltaChannel "
                f"({', '.join(map(repr, names))}):"
                " its value is rebuilt from the pending writes of older checkpoints, which "
                "pruning to the latest checkpoint deletes. Nothing was stored. Leave "
                "keep_checkpoints unset for this graph, or declare the channel with a plain "
                "reducer (Annotated[list, operator.add])"
            )

    def note_read(self, config: RunnableConfig, found: object) -> None:
        """Remember a ``get_tuple`` by id that found nothing (LangGraph then runs from an
        empty state and names that id as the parent of its first put)."""
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        checkpoint_id = configurable.get("checkpoint_id")
        if found is not None or not checkpoint_id or configurable.get("thread_id") is None:
            return
        key = (
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
            str(checkpoint_id),
        )
        with self._lock:
            self._unfound.pop(key, None)
            self._unfound[key] = None
            while len(self._unfound) > _COUNTED_THREADS:
                self._unfound.popitem(last=False)

    def check_parent(self, config: RunnableConfig) -> None:
        """Refuse a put whose parent checkpoint (``config``'s ``checkpoint_id``) ``get_tuple``
        found nothing under, still not stored, while the namespace has a newer checkpoint (see
        the module docstring).

        Raises:
            ValueError: The parent checkpoint is gone and the thread moved on; the message
                names the thread, the namespace, both ids and how to continue.
        """
        parent = self._unfound_parent(config)
        if parent is None or self._saver.get_tuple(config) is not None:
            return
        latest = self._saver.get_tuple(_latest_config(config))
        _refuse_removed(config, parent, latest.config if latest is not None else None)

    async def acheck_parent(self, config: RunnableConfig) -> None:
        """Async :meth:`check_parent` (the saver's ``aget_tuple``, or ``get_tuple`` in a
        worker thread when it has no async reads)."""
        parent = self._unfound_parent(config)
        if parent is None:
            return
        if _overrides(self._saver, "aget_tuple"):
            if await self._saver.aget_tuple(config) is not None:
                return
            latest = await self._saver.aget_tuple(_latest_config(config))
        else:
            if await asyncio.to_thread(self._saver.get_tuple, config) is not None:
                return
            latest = await asyncio.to_thread(self._saver.get_tuple, _latest_config(config))
        _refuse_removed(config, parent, latest.config if latest is not None else None)

    def _unfound_parent(self, config: RunnableConfig) -> str | None:
        """The parent id of a put when ``get_tuple`` found nothing under it, else None."""
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        parent = configurable.get("checkpoint_id")
        if not parent or configurable.get("thread_id") is None:
            return None
        key = (
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
            str(parent),
        )
        with self._lock:
            return str(parent) if key in self._unfound else None

    def after_put(self, config: RunnableConfig) -> None:
        """Count a put; prune its thread when it is due."""
        if not self._sync:
            # An async-only prune belongs to the saver's event loop: it runs from aput only.
            return
        thread_id = self._due(config)
        if thread_id is None:
            return
        try:
            self._saver.prune([thread_id], strategy="keep_latest")
        except Exception as exc:
            self._failed(thread_id, exc)

    async def aafter_put(self, config: RunnableConfig) -> None:
        """Async :meth:`after_put`."""
        thread_id = self._due(config)
        if thread_id is None:
            return
        try:
            if self._async:
                await self._saver.aprune([thread_id], strategy="keep_latest")
            else:
                await asyncio.to_thread(self._saver.prune, [thread_id], strategy="keep_latest")
        except Exception as exc:
            self._failed(thread_id, exc)

    def _due(self, config: RunnableConfig) -> str | None:
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        thread = configurable.get("thread_id")
        if thread is None:
            return None
        thread_id = str(thread)
        with self._lock:
            count = self._counts.pop(thread_id, 0) + 1
            due = count >= self.keep_checkpoints
            self._counts[thread_id] = 0 if due else count
            while len(self._counts) > _COUNTED_THREADS:
                self._counts.popitem(last=False)
        return thread_id if due else None

    def _failed(self, thread_id: str, error: Exception) -> None:
        with self._lock:
            self._counts[thread_id] = self.keep_checkpoints - 1  # try again on the next put
        logger.warning(
            "keep_checkpoints: pruning thread %r failed (%s: %s); the checkpoint was stored, "
            "and the next put tries again",
            thread_id,
            type(error).__name__,
            error,
        )


def _latest_config(config: RunnableConfig) -> RunnableConfig:
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        }
    }


def _refuse_removed(config: RunnableConfig, parent: str, latest: RunnableConfig | None) -> None:
    """Raise when the namespace holds a checkpoint newer than the missing ``parent``."""
    latest_id = str(((latest or {}).get("configurable") or {}).get("checkpoint_id") or "")
    if not latest_id or latest_id <= parent:
        return  # nothing newer: a run building on a checkpoint not stored yet, or a new thread
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    thread_id = configurable["thread_id"]
    raise ValueError(
        f"checkpoint {parent!r} of thread {thread_id!r} (namespace "
        f"{configurable.get('checkpoint_ns', '')!r}), which this run builds on, is not stored: "
        "keep_checkpoints pruned it (or it was removed otherwise, or never stored), and the "
        f"thread has moved on to checkpoint {latest_id!r}. LangGraph found nothing under that "
        "id and started from an empty state, which would have replaced the thread's history; "
        "nothing was stored. Continue from the latest checkpoint: drop checkpoint_id from the "
        f"config ({{'configurable': {{'thread_id': {thread_id!r}}}}}) and read it again with "
        "get_state"
    )


def _delta_channels(checkpoint: Checkpoint, metadata: Mapping[str, Any] | None) -> list[str]:
    """The channels of a checkpoint that LangGraph backs with a ``DeltaChannel``, sorted:
    those with update counters in ``counters_since_delta_snapshot`` (metadata) and those
    whose stored value is a snapshot."""
    counters = (metadata or {}).get("counters_since_delta_snapshot")
    names = set(counters) if isinstance(counters, Mapping) else set()
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    names.update(k for k, v in values.items() if isinstance(v, _DeltaSnapshotType))
    return sorted(str(n) for n in names)

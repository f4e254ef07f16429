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


def _delta_channels(checkpoint: Checkpoint, metadata: Mapping[str, Any] | None) -> list[str]:
    """The channels of a checkpoint that LangGraph backs with a ``DeltaChannel``, sorted:
    those with update counters in ``counters_since_delta_snapshot`` (metadata) and those
    whose stored value is a snapshot."""
    counters = (metadata or {}).get("counters_since_delta_snapshot")
    names = set(counters) if isinstance(counters, Mapping) else set()
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    names.update(k for k, v in values.items() if isinstance(v, _DeltaSnapshotType))
    return sorted(str(n) for n in names)

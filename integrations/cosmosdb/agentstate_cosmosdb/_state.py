"""What every family of Cosmos operation generators shares: the saver's state and the limits.

:class:`SaverState` declares, typed, the attributes that
:class:`~agentstate_cosmosdb._base.BaseCosmosDBSaver` sets in its constructor, so that each
mixin (:mod:`~agentstate_cosmosdb._setup`, :mod:`~agentstate_cosmosdb._values`,
:mod:`~agentstate_cosmosdb._writes`, :mod:`~agentstate_cosmosdb._reads`,
:mod:`~agentstate_cosmosdb._maintenance`) type-checks on its own. The constants and helpers
here are the ones more than one family uses: batch limits, compare-and-swap backoff, the ttl
margin and the config of a stored checkpoint.
"""

from __future__ import annotations

import json
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from agentstate_cosmosdb.documents import strip_system_fields
from agentstate_cosmosdb.heads import HeadCache, HeadKey, HeadState
from agentstate_cosmosdb.ops import BatchOp, batch_bytes
from agentstate_cosmosdb.settings import ClientSettings

if TYPE_CHECKING:
    from agentstate_reducer.langgraph import CheckpointReduction

__all__ = [
    "BATCH_BYTES",
    "BATCH_MAX_OPS",
    "CAS_ATTEMPTS",
    "HEAD_TTL_SLACK",
    "HOLDER_TTL_FACTOR",
    "MAINTENANCE_FANOUT",
    "MAINTENANCE_ROUNDS",
    "ORPHAN_GRACE_SECONDS",
    "TOMBSTONE_MIN_TTL",
    "TTL_MARGIN_SECONDS",
    "SaverState",
    "backoff",
    "checkpoint_id_at",
    "fits",
    "head_state",
    "stored_config",
]

BATCH_MAX_OPS = 100
"""Operations per transactional batch (the service's limit)."""

BATCH_BYTES = 1_150_000
"""Largest batch the saver sends: the azure-cosmos README gives 1.2 MB per batch (the service
documentation says 2 MB); a batch refused as too large anyway is written the ordered way."""

CAS_ATTEMPTS = 16
"""Compare-and-swap attempts (head, a task's writes document) before giving up."""

CAS_BACKOFF_SECONDS = 0.01
"""Base of the full-jitter exponential backoff between compare-and-swap attempts."""

CAS_BACKOFF_MAX = 0.5

TTL_MARGIN_SECONDS = 2
"""Slack for the service's one-second ``_ts`` and small clock differences between hosts: a
value is written again a little before it is ``ttl`` old, and a head expires a little before
the oldest value it references."""

HOLDER_TTL_FACTOR = 2
"""With ``ttl=``, every document but the head lives ``HOLDER_TTL_FACTOR * ttl`` seconds after
its last write, the head ``ttl + HEAD_TTL_SLACK``: a put writes again each value it references
that would expire sooner than its head (plus the margin), so everything the head needs
outlives it, and a thread reads whole for ``ttl`` seconds after its last put.

Each checkpoint records when each holder it references expires (``expires``; a holder without
a ttl is not listed), so instances with different ``ttl=`` (or none) on one container keep
each other's threads whole: a put without ttl writes again every value whose holder has one,
a put with a longer ttl every value whose holder would expire before its head."""

HEAD_TTL_SLACK = 1
"""The service stamps ``_ts`` in whole seconds (rounded down) and expires a document once
``_ts + ttl`` has passed, so a document stamped with ``ttl`` can expire up to a second short of
it: the head gets this much more."""

TOMBSTONE_MIN_TTL = 86_400
"""With ``ttl=``, a tombstone lives at least this long (or the holders' ttl, if longer)."""

ORPHAN_GRACE_SECONDS = 600
"""A document no stored checkpoint reaches may be a writer's work in progress (chunks and
blobs written before their checkpoint; pending writes stored before their checkpoint under
``durability="async"``): clean-up removes it only once it is this much older than the
thread's newest write (server ``_ts``)."""

MAINTENANCE_FANOUT = 32
"""Requests a maintenance step sends at once."""

MAINTENANCE_ROUNDS = 10
"""How often ``prune`` / ``delete_thread`` / ``delete_for_runs`` read a thread again after a
concurrent writer changed it under them, before giving up; each round that follows one cut
short waits a jittered backoff first (:func:`backoff`: up to 0.5 s a round; the nine after
the first wait 1.3 s in all on average, 2.6 s at most), so a run under way, which writes
between its steps, leaves a round the gap it needs."""


class SaverState(BaseCheckpointSaver[str]):
    """The attributes every operation family reads (set by ``BaseCosmosDBSaver.__init__``),
    and the head cache they all keep current."""

    message_reduction: CheckpointReduction | None
    ttl: int | None
    keep_checkpoints: int | None
    _codec: str | None
    _settings: ClientSettings
    _client: Any
    _owns_client: bool
    _client_kwargs: dict[str, Any]
    _container: Any
    _closed: bool
    _heads: HeadCache
    _unfound: RecentIds
    """Checkpoints ``get_tuple`` of this process asked for by id and found nothing under (at
    that moment). LangGraph then runs from an empty checkpoint and names that id as the parent
    of its first put; a put whose parent is here, still not stored, while the namespace has a
    newer head, is that run, and is refused (see ``_writes``). A run whose parent was read
    whole and removed afterwards is not here: its put holds the parent's state in full."""
    _deleted_runs: RecentIds
    """Checkpoints whose put this process refused because their thread was deleted under
    their run: their pending writes are refused too (see ``_writes``)."""

    def _remember_head(self, key: HeadKey, doc: Mapping[str, Any], etag: str) -> None:
        self._heads.set(key, head_state(doc, etag))


RECENT_IDS = 4096
"""Entries a :class:`RecentIds` keeps."""


class RecentIds:
    """A bounded, thread-safe set of (partition key, thread id, namespace, checkpoint id) s,
    the most recent kept (what each set holds is stated where :class:`SaverState` declares
    it)."""

    def __init__(self, max_entries: int = RECENT_IDS) -> None:
        self._max = max_entries
        self._data: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, key: tuple[str, str, str, str]) -> None:
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = None
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data


_UUID_EPOCH_OFFSET = 0x01B21DD213814000
"""100-nanosecond intervals from 1582-10-15 (the UUID epoch) to 1970-01-01."""


def checkpoint_id_at(seconds: float) -> str:
    """The greatest checkpoint id LangGraph (a uuid6: its time first, so ids sort by time)
    can make at ``seconds`` since the epoch: every id made before then sorts below it."""
    ts = int(seconds * 10_000_000) + _UUID_EPOCH_OFFSET
    high, mid, low = (ts >> 28) & 0xFFFFFFFF, (ts >> 12) & 0xFFFF, ts & 0x0FFF
    return f"{high:08x}-{mid:04x}-6{low:03x}-ffff-ffffffffffff"


def fits(ops: Sequence[BatchOp]) -> bool:
    return len(ops) <= BATCH_MAX_OPS and batch_bytes(ops) <= BATCH_BYTES


def backoff(attempt: int) -> float:
    """Full-jitter exponential backoff (seconds) before compare-and-swap attempt ``attempt``."""
    return random.uniform(0, min(CAS_BACKOFF_MAX, CAS_BACKOFF_SECONDS * 2**attempt))


def head_state(doc: Mapping[str, Any], etag: str) -> HeadState:
    size = len(json.dumps(doc, separators=(",", ":"), default=str)) + 512
    return HeadState(
        checkpoint_id=doc["checkpoint_id"], etag=etag, doc=strip_system_fields(doc), size=size
    )


def stored_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }

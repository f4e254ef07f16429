"""What this process last knew of each head document: a bounded, thread-safe LRU.

Invariant: an entry ``(pk, thread_id, ns) -> HeadState`` holds a head document exactly as this
process last read or wrote it, with the etag the service gave it then. It may be stale (another
process may have moved the head since); every use of it is either checked by the service
(a transactional batch replaces the head only ``if-match`` that etag) or confirmed by a read
sent in the same round trip (``get_tuple``). It never holds a head this process did not see.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["HeadCache", "HeadState"]

HeadKey = tuple[str, str, str]
"""(partition key, thread id, namespace)."""


@dataclass
class HeadState:
    """The last head document this process saw or wrote for one (thread, namespace)."""

    checkpoint_id: str
    etag: str
    doc: dict[str, Any]
    size: int = 0

    @classmethod
    def missing(cls) -> HeadState:
        """This process read the namespace and found no head (its first put creates one)."""
        return cls(checkpoint_id="", etag="", doc={}, size=64)

    @property
    def absent(self) -> bool:
        """Whether this records a namespace seen without a head."""
        return not self.etag

    @property
    def versions(self) -> dict[str, str]:
        """The head checkpoint's channel versions."""
        versions: dict[str, str] = self.doc.get("versions") or {}
        return versions

    @property
    def empty(self) -> frozenset[str]:
        """Channels of the head checkpoint with a version and no value."""
        return frozenset(self.doc.get("empty") or ())


class HeadCache:
    """A thread-safe LRU of :class:`HeadState`, bounded in bytes and entries."""

    def __init__(self, max_bytes: int = 64_000_000, max_entries: int = 4096) -> None:
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._bytes = 0
        self._data: OrderedDict[HeadKey, HeadState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: HeadKey) -> HeadState | None:
        """The state last seen for ``key``, or None."""
        with self._lock:
            state = self._data.get(key)
            if state is not None:
                self._data.move_to_end(key)
            return state

    def set(self, key: HeadKey, state: HeadState) -> None:
        """Remember ``state``, evicting the least recently used entries past the bounds."""
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._data[key] = state
            self._bytes += state.size
            while self._data and (
                self._bytes > self._max_bytes or len(self._data) > self._max_entries
            ):
                _, evicted = self._data.popitem(last=False)
                self._bytes -= evicted.size

    def drop(self, key: HeadKey) -> None:
        """Forget ``key``."""
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old.size

    def drop_thread(self, pk: str, thread_id: str) -> None:
        """Forget every namespace of one thread."""
        with self._lock:
            for key in [k for k in self._data if k[0] == pk and k[1] == thread_id]:
                self._bytes -= self._data.pop(key).size

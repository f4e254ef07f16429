"""``Bounded``: a thread-safe mapping that keeps only its newest entries, and
:func:`namespace_key`, the conversation part of every memory's keys.

The reducer and its steps remember things by content across reduces (rewrites made, a
compressor's answers and outputs, turn vectors and terms) in the process; each memory is
bounded so a long-lived reducer serving many conversations does not grow without end.
What says something about a conversation (a rewrite, an answer) is keyed by its namespace
too: another user's message with the same words is that user's own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def namespace_key(namespace: Any) -> Hashable:
    """``namespace`` as a dict key (its ``repr`` when it is not hashable)."""
    try:
        hash(namespace)
    except TypeError:
        return ("repr", repr(namespace))
    return namespace  # type: ignore[no-any-return]


class Bounded(Generic[_K, _V]):
    """At most ``limit`` entries; the least recently used is forgotten first. Safe to share
    between threads."""

    def __init__(self, limit: int) -> None:
        self._items: OrderedDict[_K, _V] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: _K) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: _K) -> tuple[bool, _V | None]:
        """``(True, value)`` for a key held (now the most recently used), else
        ``(False, None)``: a held value may itself be None."""
        with self._lock:
            if key not in self._items:
                return False, None
            self._items.move_to_end(key)
            return True, self._items[key]

    def put(self, key: _K, value: _V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)

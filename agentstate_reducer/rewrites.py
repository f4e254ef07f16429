"""``Rewrites``: the messages a reducer's steps wrote in place of others.

When a step rewrites a message (clears, compresses or truncates it), the original reaches
the ``on_prune`` hooks at once. The rewrite itself must not be handed over again when it
leaves the list later, in this reduce or a later one: the hand-off asks this memory.
"""

from __future__ import annotations

from typing import Any

from ._memory import Bounded
from .messages import fingerprint

#: How many rewritten messages a reducer remembers (see Rewrites).
_REWRITES_KEPT = 10_000


class Rewrites:
    """Fingerprints of the messages steps put in place of others (the newest
    :data:`_REWRITES_KEPT`), by conversation, in the process: their originals reached the
    hooks, so they themselves are not handed over when they leave. Safe to share between
    threads."""

    def __init__(self) -> None:
        self._seen: Bounded[tuple[Any, str], None] = Bounded(_REWRITES_KEPT)

    def add(self, message: Any, conversation: Any) -> None:
        self._seen.put((conversation, fingerprint(message)), None)

    def holds(self, message: Any, conversation: Any) -> bool:
        if not self._seen:  # no step has rewritten anything: skip the fingerprint
            return False
        return (conversation, fingerprint(message)) in self._seen

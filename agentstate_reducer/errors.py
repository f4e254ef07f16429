"""Exceptions raised by agentstate-reducer.

::

    ReducerError                 base of everything below
    ├── SummaryError             summarize_fn raised or returned something unusable
    └── PruneHookError           an on_prune hook failed; the pruned messages are attached
        └── BackgroundHookError  a Background hook failed earlier; its batches are attached

Configuration and input problems are reported with the built-in ``ValueError`` and
``TypeError``, naming the field or list position at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import ReducerResult


class ReducerError(Exception):
    """Base class of the errors the reducer raises while reducing."""


class SummaryError(ReducerError):
    """``summarize_fn`` failed, so nothing was pruned.

    Attributes:
        pruned: The messages the reducer was about to prune and summarise.
    """

    def __init__(self, message: str, pruned: Sequence[Any]) -> None:
        super().__init__(message)
        self.pruned = list(pruned)


class PruneHookError(ReducerError):
    """One or more ``on_prune`` hooks failed to take the pruned messages.

    The messages were not remembered as delivered to the failing hooks, so the next
    reduce that prunes them hands them over again. Callers that store the reduced
    list (checkpoint savers) must not store it, so that the messages are not lost.

    Attributes:
        pruned: Every message the reduce pruned.
        namespace: The namespace the hooks were called with.
        failures: ``(hook, exception)`` pairs, one per failing hook.
        result: The result the reduce would have returned, for callers that choose
            to go on regardless.
    """

    def __init__(
        self,
        message: str,
        *,
        pruned: Sequence[Any],
        namespace: Any,
        failures: Sequence[tuple[Any, BaseException]],
        result: ReducerResult | None = None,
    ) -> None:
        super().__init__(message)
        self.pruned = list(pruned)
        self.namespace = namespace
        self.failures = list(failures)
        self.result = result


class BackgroundHookError(PruneHookError):
    """A hook run by :class:`~agentstate_reducer.Background` failed after its retries.

    Attributes:
        batches: ``(messages, namespace, exception)`` for every batch that failed. They
            are handed to you here and no longer kept by the ``Background``: replay them
            (for example with ``Background.run_now``) or store them elsewhere.
    """

    def __init__(
        self, message: str, batches: Sequence[tuple[list[Any], Any, BaseException]]
    ) -> None:
        pruned = [msg for batch, _, _ in batches for msg in batch]
        namespace = batches[0][1] if batches else None
        super().__init__(
            message,
            pruned=pruned,
            namespace=namespace,
            failures=[(None, exc) for _, _, exc in batches],
        )
        self.batches = list(batches)

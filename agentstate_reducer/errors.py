"""Exceptions raised by agentstate-reducer.

::

    ReducerError                 base of everything below
    ├── SummaryError             summarize_fn raised or returned something unusable
    └── PruneHookError           an on_prune hook failed to take messages
        └── BackgroundHookError  a Background hook keeps failing; its batches are kept

Configuration and input problems are reported with the built-in ``ValueError`` and
``TypeError``, naming the field or list position at fault; LangGraph features that are not
supported raise ``NotImplementedError``.
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
        pruned: The messages the reducer was about to prune and summarise (after any
            summary being folded into the new one).
    """

    def __init__(self, message: str, pruned: Sequence[Any]) -> None:
        super().__init__(message)
        self.pruned = list(pruned)


class PruneHookError(ReducerError):
    """One or more ``on_prune`` hooks failed to take messages.

    Nothing is lost: with ``on_prune_error="raise"`` the reducer keeps the messages a hook
    did not take and hands them over again, first thing, on its next hand-off (see
    ``reducer.handoff_status()``); ``kept`` is False only when its retry store was full,
    and then nothing was pruned. Callers that store the reduced list (checkpoint savers)
    may store ``result`` when ``kept`` is True.

    Attributes:
        pruned: The messages the failing hooks did not take.
        namespace: The namespace the hooks were called with.
        failures: ``(hook, exception)`` pairs, one per failing hook.
        result: The result the reduce would have returned (None when nothing may be
            pruned because the failed messages could not be kept).
        kept: Whether the reducer keeps the failed messages for a retry.
    """

    def __init__(
        self,
        message: str,
        *,
        pruned: Sequence[Any],
        namespace: Any,
        failures: Sequence[tuple[Any, BaseException]],
        result: ReducerResult | None = None,
        kept: bool = True,
    ) -> None:
        super().__init__(message)
        self.pruned = list(pruned)
        self.namespace = namespace
        self.failures = list(failures)
        self.result = result
        self.kept = kept


class BackgroundHookError(PruneHookError):
    """A hook run by :class:`~agentstate_reducer.Background` keeps failing.

    Attributes:
        batches: ``(messages, namespace, exception)`` for every batch that failed. The
            ``Background`` still keeps them and retries them (``failed_batches``,
            ``discard_failed()``).
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

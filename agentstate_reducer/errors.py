"""Exceptions raised by agentstate-reducer.

::

    ReducerError                 base of everything below
    ├── SummaryError             summarize_fn raised or returned something unusable (or
    │                            another reduce's summary outlasted Handoff.wait)
    ├── StepError                user code a policy step called (a compressor) failed
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
    """``summarize_fn`` failed, so nothing was pruned; or another reduce of the
    conversation was still making its summary after ``Handoff.wait`` seconds (then the
    cause is a ``TimeoutError``, and this reduce kept the messages that summary may cover
    instead of summarising them a second time).

    Attributes:
        pruned: The messages the reducer was about to prune and summarise (after any
            summary being folded into the new one).
        waiting: True when ``summarize_fn`` was not called at all, because it failed
            moments ago and is left alone for a while (``retry_backoff``).
    """

    def __init__(self, message: str, pruned: Sequence[Any], *, waiting: bool = False) -> None:
        super().__init__(message)
        self.pruned = list(pruned)
        self.waiting = waiting


class StepError(ReducerError):
    """User code a policy step called (a compressor, an embeddings model) raised.

    With ``on_prune_error="raise"`` the reduce stops and nothing changes (nothing was
    pruned or handed over); with ``"keep"`` the step stops, its report carries the error
    (``result.steps[i].error``) and the policy goes on with the next step.

    Attributes:
        step: The id of the step.
        waiting: True when the code was not called at all, because it failed moments
            ago and is left alone for a while (the step's ``retry_backoff``).
    """

    def __init__(self, message: str, *, step: str, waiting: bool = False) -> None:
        super().__init__(message)
        self.step = step
        self.waiting = waiting


class PruneHookError(ReducerError):
    """One or more ``on_prune`` hooks failed to take messages.

    Nothing is lost: with ``on_prune_error="raise"`` the reducer keeps the messages a hook
    did not take and hands them over again, first thing, on its next reduce (see
    ``reducer.handoff_status()``), and ``result`` is the reduced list, safe to go on with.
    When its retry store is full (``max_pending_handoff``) it cannot keep them, and when
    another reduce was still handing them over after ``Handoff.wait`` it does not (that
    hand-off may yet succeed): then ``kept`` is False and ``result`` is the input with
    nothing pruned, still safe to go on with. Either way ``error.result.surviving`` is the
    list to use.

    Attributes:
        pruned: The messages the failing hooks did not take.
        namespace: The namespace the hooks were called with.
        failures: ``(hook, exception)`` pairs, one per failing hook.
        result: The list to go on with (see above); None for ``reducer.deliver``.
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

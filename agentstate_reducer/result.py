"""``ReducerResult``: what a reduce kept, what it pruned, and the summary it made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import PruneHookError, SummaryError
    from .steps.contract import StepReport
    from .tokens.usage import Calibration
    from .validate import Problem


@dataclass
class ReducerResult:
    """The outcome of one :meth:`~agentstate_reducer.MessageReducer.reduce`.

    Attributes:
        surviving: The messages that remain, oldest first, as given (plus the injected
            summary block, and the new versions of messages a step rewrote).
        pruned: The messages removed, oldest first, as given (a message a step rewrote
            and then pruned in the same reduce is listed as it was given). Summary blocks
            folded into a new summary are in ``folded_summaries`` instead.
        summary: What ``summarize_fn`` returned, when it ran (or was reused).
        summary_messages: The injected summary messages (also in ``surviving``).
        folded_summaries: The summary messages the new summary replaced.
        rewritten: The messages a step rewrote (cleared, truncated) and kept, as they were
            given: their text left the list and was handed to the hooks.
        hook_error: With ``on_prune_error="keep"``, the hook failure that made this reduce
            keep every message; None otherwise.
        summary_error: With ``on_prune_error="keep"``, the summarizer failure that made this
            reduce keep every message; None otherwise.
        steps: One report per policy step that ran, in order.
        tokens_before: The list's tokens before reducing (token mode; else 0).
        tokens_after: The list's tokens after reducing (token mode; else 0).
        problems: What an audit found (``validate()`` or ``mode="validate"``).
        calibration: With ``calibrate=True``, which of ``tokens_before`` was measured by
            the provider and which estimated (a
            :class:`~agentstate_reducer.tokens.Calibration`: the messages before
            ``calibration.anchor`` count what the newest response that reports its input
            tokens measured, the rest are estimated); None when nothing was calibrated
            (calibration off, or no response in the list reports a count), and then every
            count is the reducer counter's.
    """

    surviving: list[Any] = field(default_factory=list)
    pruned: list[Any] = field(default_factory=list)
    summary: str | None = None
    summary_messages: list[Any] = field(default_factory=list)
    folded_summaries: list[Any] = field(default_factory=list)
    rewritten: list[Any] = field(default_factory=list)
    hook_error: PruneHookError | None = None
    summary_error: SummaryError | None = None
    steps: list[StepReport] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    problems: list[Problem] = field(default_factory=list)
    calibration: Calibration | None = None

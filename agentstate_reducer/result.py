"""``ReducerResult``: what a reduce kept, what it pruned, and the summary it made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import PruneHookError


@dataclass
class ReducerResult:
    """The outcome of one :meth:`~agentstate_reducer.MessageReducer.reduce`.

    Attributes:
        surviving: The messages that remain, oldest first, as given (plus the injected
            summary block, when ``inject_summary`` is on).
        pruned: The messages removed, oldest first, as given.
        summary: What ``summarize_fn`` returned, when it ran.
        summary_messages: The injected summary messages (also in ``surviving``).
        hook_error: With ``on_prune_error="keep"``, the hook failure that made this reduce
            keep every message; None otherwise.
    """

    surviving: list[Any] = field(default_factory=list)
    pruned: list[Any] = field(default_factory=list)
    summary: str | None = None
    summary_messages: list[Any] = field(default_factory=list)
    hook_error: PruneHookError | None = None

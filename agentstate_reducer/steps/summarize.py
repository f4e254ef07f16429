"""``Summarize``: prune as ``DropOldest`` does, then summarise what went (a running
summary)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .drop import DropOldest


@dataclass(frozen=True)
class Summarize(DropOldest):
    """Prune as :class:`DropOldest` does, then summarise what went with ``summarize_fn``.

    The summary block already in the list is folded in: ``summarize_fn`` receives it first
    (marked, see :func:`~agentstate_reducer.messages.is_summary`), then the pruned
    messages, and the new block replaces it. The block counts towards the bound: in count
    mode it is one of the ``min_messages`` kept, in token mode room is left for it
    (``summary_max_tokens``). In view mode (``MessageReducer.view``) nothing is
    summarised: it drops as ``DropOldest`` does.

    Attributes:
        id: The step's name.
    """

    id: str = "summarize"
    summarizes: bool = field(default=True, init=False, repr=False)

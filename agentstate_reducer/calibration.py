"""Calibrating a list's token count to the count its provider reported.

``ReducerConfig(calibrate=True)`` (on in ``ReducerConfig.for_model``): when the list holds a
response that reports its call's input tokens (:func:`~agentstate_reducer.tokens.usage.
reported_input_tokens`), the messages before the newest such response count what the
provider measured and only the messages from it on are estimated
(:meth:`~agentstate_reducer.planner.PlanState.calibrate` says how the report is spread).

The report covers what the model was *shown* for that call, which need not be the
messages before the response in the list as it is now: a reduce after the call may have
pruned some of them (a checkpointer wrapper prunes on every put), and in view mode the
model saw the reducer's view, not the stored list. So the reducer remembers, per
conversation, its own count of what the model was shown (:class:`ShownMemory`):

* what :meth:`~agentstate_reducer.MessageReducer.view` returned, by its last message: a
  response right after that message answered that view;
* else what it counted before the response the first time a reduce saw it (a reduce sees
  the list right after the response was added, before pruning anything of it);

and counts the report against that. Messages that left since then take their own counts
with them; nothing is counted twice.

Cheap per turn: only the messages a reduce has not seen are searched for a report (the
plan state keeps the calibration as the list grows), and a new report costs one pass over
the counts before it. Pure: nothing is called but the reducer's counter.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from ._memory import Bounded
from .messages import AI, fingerprint
from .planner import PlanState
from .tokens.usage import Calibration, reported_input_tokens

__all__ = ["ShownMemory", "calibrate", "calibration_of"]

#: What the model was shown, remembered for this many calls.
_SHOWN = 10_000


class ShownMemory:
    """The reducer's count of what a model was shown, per conversation: for the view it
    returned (keyed by its last message), and for a reporting response (keyed by the
    response) the first time a reduce saw it. Bounded; safe to share between threads."""

    def __init__(self, size: int = _SHOWN) -> None:
        self._counts: Bounded[tuple[Hashable, str, str], int] = Bounded(size)

    def record_view(self, conversation: Hashable, messages: Sequence[Any], counted: int) -> None:
        """Remember that a view ending with ``messages[-1]`` counted ``counted``."""
        if messages:
            self._counts.put((conversation, "view", fingerprint(messages[-1])), counted)

    def shown(
        self,
        conversation: Hashable,
        messages: Sequence[Any],
        anchor: int,
        counted: int,
        *,
        remember: bool = True,
    ) -> int:
        """The count of what the model was shown for the response at ``anchor``:
        ``counted`` (the messages before it now) unless remembered otherwise; with
        ``remember``, the first sight of a response is remembered."""
        if anchor:
            found, view = self._counts.get(
                (conversation, "view", fingerprint(messages[anchor - 1]))
            )
            if found and view is not None:
                return view
        key = (conversation, "first", fingerprint(messages[anchor]))
        found, first = self._counts.get(key)
        if found and first is not None:
            return first
        if remember:
            self._counts.put(key, counted)
        return counted


def calibrate(
    state: PlanState,
    messages: Sequence[Any],
    known: int,
    memory: ShownMemory,
    conversation: Hashable,
    *,
    remember: bool = True,
) -> None:
    """Calibrate ``state`` (which describes ``messages``) to the newest report among the
    messages from ``known`` on; a state resumed with an earlier calibration keeps it when
    none of them reports. Needs token counts (token mode). ``remember=False`` leaves the
    memory as it is (a pure plan or audit)."""
    views = state.views
    for position in range(len(messages) - 1, known - 1, -1):
        if views[position].role != AI:
            continue
        report = reported_input_tokens(messages[position])
        if report is None:
            continue
        raw = state.raw if state.raw is not None else state.tokens
        shown = memory.shown(
            conversation, messages, position, sum(raw[:position]), remember=remember
        )
        state.calibrate(position, report, shown)
        return


def calibration_of(state: PlanState) -> Calibration | None:
    """How ``state``'s counts are calibrated, for the result; None when they are not."""
    if state.report is None:
        return None
    report, shown, scale = state.report
    anchor = state.estimated_from()
    estimated = sum(state.tokens[anchor:])
    return Calibration(
        anchor=anchor,
        reported=report.tokens,
        source=report.source,
        shown=shown,
        measured=state.total - estimated,
        estimated=estimated,
        outside=state.offset,
        scale=scale,
    )

"""The pruning plan: which positions of a message list go. Pure, and incremental.

Rules, in the words of the README:

* only human and ai messages are pruned directly; a tool result, or a legacy function
  result, goes only with the ai message that called it (when cascading); system and unknown
  roles stay, and so does a result that answers no call;
* a summary block (``MessageView.summary``) is never pruned as an ordinary message: a
  summarising prune folds it into the new summary instead (``fold=True``), and it does not
  start a user turn;
* the first message stays when ``preserve_first`` is True, and when it is ``"system"``
  if that message is a system or developer message;
* the newest human message (the question being answered) is never pruned, but the older
  tool calls and results of its turn may be, so a long tool loop or a fan-out after one
  question is bounded too;
* pruning takes the prunable messages of a *window* ``[start, end)``; everything at or after
  ``end`` stays. ``end`` never passes the newest message, and never falls between an ai
  message and any of its tool (or function) results, so no call loses a result and no
  result its call;
* with ``start_on_human``, ``end`` is at a human message (whole user turns go) or inside
  the newest turn (its question kept, so the history still starts on it), and with
  ``keep_groups`` it never passes the start of the newest ``keep_groups`` user turns;
* count mode: ``end`` is at most ``len - (min_messages - reserve)``, once the list is
  longer than ``max_messages``, and as large as the rules allow (``reserve``: the messages
  of the summary block a summarising prune will insert, which count towards
  ``min_messages``);
* token mode: the smallest ``end`` whose survivors fit ``target_tokens - reserve``, once
  the list is over ``max_tokens`` (``reserve``: the summary block's tokens); when nothing
  fits, the largest ``end`` allowed (so only the newest message, its tool group and what
  is never pruned remain).

:class:`PlanState` holds what the plan needs per position (token count, whether prunable,
tool links) for one list, and keeps it as the list grows and is pruned, so a chat that
grows by a turn and is pruned from the front costs work in proportion to what was added
and what was pruned, not to the whole window. Positions carry sequence numbers that only
grow, so tool links survive the compaction that pruning does.

A tool result is linked to the ai message whose call has its id. A legacy function call has
no id: its key (:func:`~agentstate_reducer.messages.function_call_key`) names the function,
and a function result is linked to the newest unanswered call of that name, which it then
answers, so a function called again in a later turn pairs with its own result, and a
second result of one call answers nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .messages import AI, FUNCTION, HUMAN, SYSTEM, TOOL, MessageView
from .tokens.usage import UsageReport

if TYPE_CHECKING:
    from .config import ReducerConfig

_NO_LINK = -1
_T = TypeVar("_T")
#: Roles of the message ``preserve_first="system"`` keeps at index 0.
_INSTRUCTION_ROLES = (SYSTEM, "developer")


@dataclass(frozen=True)
class PlanLimits:
    """The parts of the configuration the plan needs.

    ``max_tokens`` and ``target_tokens`` are the history's own budget: the configured
    ones minus the reply reserve.
    """

    preserve_first: bool | str
    """True, False, or ``"system"`` (keep index 0 only if it is a system/developer message)."""
    cascade: bool
    min_messages: int
    max_messages: int | None
    max_tokens: int | None = None
    target_tokens: int | None = None
    start_on_human: bool = False
    keep_groups: int = 0

    @classmethod
    def from_config(cls, config: ReducerConfig) -> PlanLimits:
        """The limits a :class:`~agentstate_reducer.ReducerConfig` sets."""
        return cls(
            preserve_first=config.preserve_first,
            cascade=config.cascade_tool_messages,
            min_messages=config.min_messages,
            max_messages=config.max_messages,
            max_tokens=config.history_max_tokens,
            target_tokens=config.history_target_tokens,
            start_on_human=config.start_on_human,
            keep_groups=config.keep_groups,
        )

    def may_prune(self, length: int) -> bool:
        """Whether a list of ``length`` messages can be over the limit at all.

        False only when that is sure without reading the messages: in count mode, a list
        of at most ``max_messages`` (or any list, when ``max_messages`` is None). Token
        mode has to count, so it is always True there.
        """
        if self.max_tokens is not None:
            return True
        return self.max_messages is not None and length > self.max_messages


class PlanState:
    """Per-position facts of one message list, kept up to date as it grows and shrinks."""

    __slots__ = (
        "_anchor_seq",
        "_caller_of_call",
        "_caller_seq",
        "_human_seqs",
        "_last_result",
        "_limits",
        "_next_seq",
        "_prunable",
        "_seq",
        "_start",
        "offset",
        "raw",
        "report",
        "tokens",
        "total",
        "views",
    )

    def __init__(self, limits: PlanLimits) -> None:
        self._limits = limits
        self._start = 1 if limits.preserve_first is True else 0
        self.views: list[MessageView] = []
        self.tokens: list[int] = []
        self.total = 0
        self._prunable: list[bool] = []
        self._seq: list[int] = []
        # For a linked tool result: the sequence number of its (prunable) caller.
        self._caller_seq: list[int] = []
        self._next_seq = 0
        # call id or function-call key -> caller's seq; a function-call key is removed
        # once answered (one call, one result).
        self._caller_of_call: dict[str, int] = {}
        self._last_result: dict[int, int] = {}  # caller's seq -> seq of its last result
        self._human_seqs: list[int] = []  # where each user turn starts, oldest first
        # Calibration (see calibrate()): None and 0 until a provider-reported count is used.
        self.raw: list[int] | None = None
        """Each message's count by the reducer's counter, once calibrated (``tokens`` then
        holds the calibrated counts); None otherwise."""
        self.offset = 0
        """Tokens counted for no message: the part of a provider-reported count carried on
        its own (see :meth:`calibrate`); included in ``total``, never pruned."""
        self._anchor_seq = _NO_LINK
        self.report: tuple[UsageReport, int, float] | None = None
        """The report the counts are calibrated to, the reducer's count of what the model
        was shown for it, and the scale applied (see :meth:`calibrate`)."""

    def __len__(self) -> int:
        return len(self.views)

    def extend(self, views: Sequence[MessageView], tokens: Sequence[int] | None = None) -> None:
        """Append messages (oldest first) with their token counts (token mode)."""
        position = len(self.views)
        if position == 0 and views and self._limits.preserve_first == "system":
            self._start = 1 if views[0].role in _INSTRUCTION_ROLES else 0
        start = self._start
        cascade = self._limits.cascade
        caller_of_call = self._caller_of_call
        for offset, view in enumerate(views):
            seq = self._next_seq
            self._next_seq += 1
            role = view.role
            prunable = False
            caller = _NO_LINK
            if view.summary:
                pass  # kept, and folded by a summarising prune; not a user turn
            elif role in (HUMAN, AI):
                prunable = position + offset >= start
                if role == HUMAN:
                    self._human_seqs.append(seq)
                if role == AI and prunable and cascade:
                    for call_id in view.call_ids:
                        caller_of_call[call_id] = seq
            elif role in (TOOL, FUNCTION) and cascade and view.result_for is not None:
                found = (
                    caller_of_call.get(view.result_for)
                    if role == TOOL
                    else caller_of_call.pop(view.result_for, None)
                )
                if found is not None:
                    caller = found
                    prunable = True
                    self._last_result[found] = seq
            self._prunable.append(prunable)
            self._seq.append(seq)
            self._caller_seq.append(caller)
        self.views.extend(views)
        if tokens is not None:
            self.tokens.extend(tokens)
            self.total += sum(tokens)
            if self.raw is not None:
                self.raw.extend(tokens)  # newer than the anchor: estimated as they are

    def over_limit(self) -> bool:
        """Whether the list is over the limit that starts pruning."""
        limits = self._limits
        if limits.max_tokens is not None:
            return self.total > limits.max_tokens
        return limits.may_prune(len(self.views))

    def fits(self) -> bool:
        """Whether the list is within what pruning aims for (always, in count mode, once
        nothing is over the limit)."""
        limits = self._limits
        if limits.max_tokens is not None:
            target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
            return self.total <= target
        return not self.over_limit()

    def window_end(self) -> int | None:
        """Where the pruning window ends, or None when nothing is to be pruned."""
        return self.end_for_target() if self.over_limit() else None

    def end_for_target(self, reserve: int = 0, *, fold: bool = False) -> int | None:
        """Where the window must end to bring the list down to its target, pruning as
        little as possible, or None when no allowed window prunes anything.

        Args:
            reserve: Room to leave for a summary block that will be inserted: messages in
                count mode, tokens in token mode.
            fold: The summary blocks inside the window go too (they are folded into the
                new summary), so their tokens do not count as surviving.
        """
        limits = self._limits
        size = len(self.views)
        bound = min(size - 1, self._kept_turns_start())
        if limits.max_tokens is not None:
            target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
            latest = self._last_valid_end(bound)
            if latest is None:
                return None
            return self._first_fitting_end(latest, target - reserve, fold=fold)
        return self._last_valid_end(min(size - max(limits.min_messages - reserve, 0), bound))

    def _pinned(self) -> int:
        """The sequence number of the newest human message (never pruned), or -1."""
        humans = self._human_seqs
        return humans[-1] if humans else _NO_LINK

    def _goes(self, position: int, pinned: int) -> bool:
        return self._prunable[position] and self._seq[position] != pinned

    def _kept_turns_start(self) -> int:
        """The position of the oldest of the ``keep_groups`` newest turns (or the end)."""
        wanted = self._limits.keep_groups
        humans = self._human_seqs
        if wanted == 0 or not humans:
            return len(self.views)
        first_kept = humans[-wanted] if len(humans) >= wanted else humans[0]
        return bisect_left(self._seq, first_kept)

    @property
    def start(self) -> int:
        """Where the pruning window starts (1 when the first message is preserved)."""
        return self._start

    def can_drop(self, position: int) -> bool:
        """Whether ``position`` may leave the list: a human or ai message after the kept
        first message, or a tool result linked to its call; never the newest human
        message, a summary block, or a message of the newest ``keep_groups`` turns."""
        return (
            self._goes(position, self._pinned())
            and position < self._kept_turns_start()
            and not self._awaits_results(position)
        )

    def _awaits_results(self, position: int) -> bool:
        """Whether ``position`` is an ai message with calls still unanswered and nothing
        after it but its own results: its tool calls are running, and their results, when
        they come, would answer nothing if it left now (the plan never prunes it either,
        as the window never passes the newest message)."""
        view = self.views[position]
        if view.role != AI or not view.call_ids:
            return False
        group = self.group_of(position)
        if any(p not in group for p in range(position, len(self.views))):
            return False
        answered = {self.views[p].result_for for p in group[1:]}
        return not set(view.call_ids) <= answered

    def why_kept(self, position: int) -> str:
        """Why :meth:`can_drop` is False for ``position`` (for error messages)."""
        view = self.views[position]
        if position < self._start:
            return "the first message, which preserve_first keeps"
        if view.summary:
            return "the summary block (a summarising drop folds it instead)"
        if self._seq[position] == self._pinned():
            return "the newest human message (the question being answered)"
        if self._prunable[position] and position >= self._kept_turns_start():
            return "in the newest keep_groups turns"
        if self._prunable[position] and self._awaits_results(position):
            return "an ai message whose tool calls still wait for their results"
        if view.role == TOOL:
            return "a tool result whose call is not in the list (or cascade is off)"
        return f"a {view.role} message, which pruning never removes"

    def group_of(self, position: int) -> list[int]:
        """The positions that leave the list together with ``position``: an ai message and
        the tool results linked to it (ascending); just ``position`` otherwise."""
        seq = self._seq
        caller = self._caller_seq[position]
        if caller == _NO_LINK:
            caller = seq[position]
            first = position
        else:
            first = bisect_left(seq, caller)
            if first == len(seq) or seq[first] != caller:  # pragma: no cover - kept linked
                return [position]
        if caller not in self._last_result:
            return [position]
        last = bisect_left(seq, self._last_result[caller])
        members = [first]
        members += [p for p in range(first + 1, last + 1) if self._caller_seq[p] == caller]
        return members

    def splits_group(self, position: int) -> bool:
        """Whether inserting before ``position`` would separate a tool call from one of its
        results (a result at ``position`` or later whose call comes before it)."""
        if position == 0:
            return False
        seq = self._seq
        for later in range(position, len(seq)):
            caller = self._caller_seq[later]
            if caller != _NO_LINK and caller <= seq[position - 1]:
                return True
        return False

    def newest_human(self) -> int | None:
        """The position of the newest human message (never pruned), or None."""
        pinned = self._pinned()
        if pinned == _NO_LINK:
            return None
        return bisect_left(self._seq, pinned)

    def turn_starts(self) -> list[int]:
        """The positions where user turns start (human messages), oldest first."""
        return [bisect_left(self._seq, s) for s in self._human_seqs]

    def pruned_positions(self, end: int) -> list[int]:
        """The positions a window ending at ``end`` prunes, ascending."""
        pinned = self._pinned()
        return [p for p in range(self._start, end) if self._goes(p, pinned)]

    def summary_positions(self, end: int) -> list[int]:
        """The summary blocks before ``end`` (after the kept first message), ascending."""
        views = self.views
        return [p for p in range(self._start, end) if views[p].summary]

    def kept_in_window(self, end: int) -> list[int]:
        """The positions before ``end`` that a window ending there keeps (never prunable,
        and the newest human message)."""
        pinned = self._pinned()
        return [p for p in range(self._start, end) if not self._goes(p, pinned)]

    def prune(self, end: int) -> None:
        """Drop the prunable positions before ``end``, as :meth:`pruned_positions` lists."""
        start = self._start
        pinned = self._pinned()
        gone = self.pruned_positions(end)
        kept = self.kept_in_window(end)
        for p in gone:
            self._forget(p)
        if end > start:
            # Pruned turn starts are a run of the sorted list (only index 0 and the newest
            # human message, the last of the list, are ever kept).
            low = bisect_left(self._human_seqs, self._seq[start])
            high = bisect_left(self._human_seqs, self._seq[end])
            if high and self._human_seqs[high - 1] == pinned:
                high -= 1
            del self._human_seqs[low:high]
        if self.tokens:
            self.total -= sum(self.tokens[p] for p in gone)
            self.tokens = _compact(self.tokens, start, kept, end)
            if self.raw is not None:
                self.raw = _compact(self.raw, start, kept, end)
        self.views = _compact(self.views, start, kept, end)
        self._prunable = _compact(self._prunable, start, kept, end)
        self._seq = _compact(self._seq, start, kept, end)
        self._caller_seq = _compact(self._caller_seq, start, kept, end)

    def replace(self, position: int, view: MessageView, tokens: int = 0) -> None:
        """Swap in a message whose content changed (same role, id and tool calls)."""
        old = self.views[position]
        if (old.role, old.call_ids, old.result_for) != (view.role, view.call_ids, view.result_for):
            raise ValueError(f"position {position}: a replacement must keep role and tool links")
        self.views[position] = view
        if self.tokens:
            raw = self.raw
            if raw is not None:
                # A calibrated count keeps its calibration: the new text is counted at the
                # old message's measured-to-estimated ratio.
                before, counted = raw[position], self.tokens[position]
                raw[position] = tokens
                if before and counted != before:
                    tokens = -(-tokens * counted // before)
            self.total += tokens - self.tokens[position]
            self.tokens[position] = tokens

    # -- calibration to a provider-reported count ----------------------------------------

    def calibrate(self, anchor: int, report: UsageReport, shown: int) -> None:
        """Calibrate the counts of the messages before ``anchor`` to ``reported``, the
        input tokens a provider reported for the call that produced the response at
        ``anchor``, for which the model was shown messages the reducer counted ``shown``.

        When ``reported >= shown`` every message keeps its own count and the difference
        becomes :attr:`offset` (what the provider counts beyond the messages: a system
        prompt and tool schemas outside the list, framing, a tokenizer that counts more),
        which no prune removes, so the count never drops below the truth after a prune.
        When it is below, the counts before ``anchor`` are scaled by ``reported / shown``
        (rounded up along the running sum, so they add up to the scaled total exactly)
        and the offset is 0. Messages from ``anchor`` on keep their estimates. Only the
        counts change, so the plan reads them as always. Replaces any earlier calibration.

        Args:
            anchor: The position of the reporting response (``0..len``).
            report: What it reported (``report.tokens > 0``).
            shown: The reducer's count of what the model was shown (``>= 0``).
        """
        reported = report.tokens
        raw = self.raw if self.raw is not None else list(self.tokens)
        self.raw = raw
        if reported >= shown:
            offset, scale = reported - shown, 1.0
            tokens = list(raw)
        else:
            offset, scale = 0, reported / shown
            tokens = []
            running = rounded = 0
            for count in raw[:anchor]:
                running += count
                now = -(-running * reported // shown)  # ceil, in ints
                tokens.append(now - rounded)
                rounded = now
            tokens += raw[anchor:]
        self.tokens = tokens
        self.offset = offset
        self.total = sum(tokens) + offset
        self._anchor_seq = self._seq[anchor] if anchor < len(self._seq) else self._next_seq
        self.report = (report, shown, scale)

    def carry(self, other: PlanState, counts: Sequence[int | None], estimated_from: int) -> None:
        """Take over ``other``'s calibration (after a block was inserted, the list is
        planned afresh): ``counts`` per position (None: keep this state's own count, for a
        new message); ``estimated_from`` is where estimated counts start."""
        self.raw = list(self.tokens)
        self.tokens = [
            own if given is None else given for own, given in zip(self.raw, counts, strict=True)
        ]
        self.offset = offset = other.offset
        self.report = other.report
        self.total = sum(self.tokens) + offset
        seq = self._seq
        self._anchor_seq = seq[estimated_from] if estimated_from < len(seq) else self._next_seq

    @property
    def calibrated(self) -> bool:
        """Whether the counts are calibrated to a provider-reported count."""
        return self.raw is not None

    def estimated_from(self) -> int:
        """Where estimated counts start: the position of the reporting response (or of the
        first message after it, when it has left the list); 0 when not calibrated."""
        if self._anchor_seq == _NO_LINK:
            return 0
        return bisect_left(self._seq, self._anchor_seq)

    def _forget(self, position: int) -> None:
        view = self.views[position]
        seq = self._seq[position]
        for call_id in view.call_ids:
            if self._caller_of_call.get(call_id) == seq:
                del self._caller_of_call[call_id]
        self._last_result.pop(seq, None)

    def _last_valid_end(self, bound: int) -> int | None:
        """The largest end <= ``bound`` that splits no tool group, if above ``start``.

        An end ``e`` is valid when every linked tool result at ``e`` or later has its
        caller at ``e`` or later: scanning down from the newest message, keep the lowest
        caller seen and stop at the first position not past it.
        """
        seq = self._seq
        caller_seq = self._caller_seq
        lowest_caller = self._next_seq
        start = self._start
        on_human = self._limits.start_on_human
        pinned = self._pinned()
        views = self.views
        for position in range(len(seq) - 1, start, -1):
            caller = caller_seq[position]
            if caller != _NO_LINK and caller < lowest_caller:
                lowest_caller = caller
            if (
                position <= bound
                and lowest_caller >= seq[position]
                and (not on_human or views[position].role == HUMAN or seq[position] > pinned)
            ):
                return position
        return None

    def _first_fitting_end(self, latest: int, target: int, *, fold: bool = False) -> int:
        """The smallest valid end whose survivors fit ``target``; ``latest`` if none does."""
        seq = self._seq
        tokens = self.tokens
        last_result = self._last_result
        surviving = self.total
        on_human = self._limits.start_on_human
        pinned = self._pinned()
        views = self.views
        reach = _NO_LINK  # the furthest result seq of any ai message inside the window
        for end in range(self._start + 1, latest + 1):
            before = end - 1
            if self._goes(before, pinned):
                surviving -= tokens[before]
                result = last_result.get(seq[before], _NO_LINK)
                if result > reach:
                    reach = result
            elif fold and views[before].summary:
                surviving -= tokens[before]
            if (
                surviving <= target
                and reach < seq[end]
                and (not on_human or views[end].role == HUMAN or seq[end] > pinned)
            ):
                return end
        return latest


def _compact(values: list[_T], start: int, kept: list[int], end: int) -> list[_T]:
    return values[:start] + [values[p] for p in kept] + values[end:]


def plan_prune(
    views: Sequence[MessageView],
    limits: PlanLimits,
    tokens: Sequence[int] | None = None,
) -> list[int]:
    """Positions to prune from a list, ascending (a fresh, one-shot plan).

    Args:
        views: One view per message, oldest first.
        limits: The limits to enforce.
        tokens: One count per message; required when ``limits.max_tokens`` is set.

    Raises:
        ValueError: Token mode without token counts.
    """
    if limits.max_tokens is not None and tokens is None:
        raise ValueError("token mode needs a token count per message")
    state = PlanState(limits)
    state.extend(views, tokens)
    end = state.window_end()
    return [] if end is None else state.pruned_positions(end)

"""The pruning plan: which positions of a message list go. Pure; O(n) in the list length.

The plan works on :class:`~agentstate_reducer.messages.MessageView` values and, in token
mode, one token count per message. It never touches the messages themselves.

Rules, in the words of the README:

* only human and ai messages are pruned directly; a tool result goes only with the ai
  message that called it (when cascading); system, function and unknown roles stay;
* the first message stays when ``preserve_first`` is set;
* pruning takes the oldest prunable messages of a *window* ``[start, end)``; everything at
  or after ``end`` stays. ``end`` never passes the newest message, and never falls between
  an ai message and any of its tool results, so no call loses a result and no result loses
  its call;
* count mode: ``end = len - min_messages`` once the list is longer than ``max_messages``;
* token mode: the smallest ``end`` whose survivors fit ``target_tokens``, once the list is
  over ``max_tokens``; when nothing fits, the largest ``end`` allowed (so only the newest
  message, its tool group and what is never pruned remain).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .messages import AI, HUMAN, TOOL, MessageView


@dataclass(frozen=True)
class PlanLimits:
    """The parts of the configuration the plan needs."""

    preserve_first: bool
    cascade: bool
    min_messages: int
    max_messages: int | None
    max_tokens: int | None = None
    target_tokens: int | None = None


def plan_prune(
    views: Sequence[MessageView],
    limits: PlanLimits,
    tokens: Sequence[int] | None = None,
) -> list[int]:
    """Positions to prune, ascending.

    Args:
        views: One view per message, oldest first.
        limits: The limits to enforce.
        tokens: One count per message; required when ``limits.max_tokens`` is set.
    """
    size = len(views)
    if size == 0:
        return []
    start = 1 if limits.preserve_first else 0
    prunable, blocked = _prunable_and_blocked(views, start, limits.cascade)
    # The newest message always survives: the window ends before it at the latest.
    latest_end = _last_valid_end(size - 1, start, blocked)
    if latest_end is None:
        return []

    if limits.max_tokens is not None:
        if tokens is None:
            raise ValueError("token mode needs a token count per message")
        end = _token_window_end(tokens, prunable, blocked, start, latest_end, limits)
    else:
        if limits.max_messages is None or size <= limits.max_messages:
            return []
        end = _last_valid_end(min(size - limits.min_messages, latest_end), start, blocked)
    if end is None:
        return []
    return [i for i in range(start, end) if prunable[i]]


def _prunable_and_blocked(
    views: Sequence[MessageView], start: int, cascade: bool
) -> tuple[list[bool], list[bool]]:
    """Which positions may be pruned, and which window ends would split a tool group.

    ``blocked[e]`` is True when ending the window at ``e`` would prune an ai message while
    keeping one of its results (at ``e`` or later).
    """
    size = len(views)
    prunable = [False] * size
    caller_of_call: dict[str, int] = {}
    last_result: dict[int, int] = {}
    for index, view in enumerate(views):
        role = view.role
        if role in (HUMAN, AI):
            prunable[index] = index >= start
            if role == AI:
                for call_id in view.call_ids:
                    caller_of_call[call_id] = index
        elif role == TOOL and cascade and view.result_for is not None:
            caller = caller_of_call.get(view.result_for)
            if caller is not None and caller >= start:
                prunable[index] = index >= start
                last_result[caller] = index
    blocked = [False] * (size + 1)
    if cascade and last_result:
        # Ends in (caller, last result] are blocked: mark with a difference array.
        delta = [0] * (size + 2)
        for caller, last in last_result.items():
            delta[caller + 1] += 1
            delta[last + 1] -= 1
        running = 0
        for end in range(size + 1):
            running += delta[end]
            blocked[end] = running > 0
    return prunable, blocked


def _last_valid_end(end: int, start: int, blocked: Sequence[bool]) -> int | None:
    while end > start and blocked[end]:
        end -= 1
    return end if end > start else None


def _token_window_end(
    tokens: Sequence[int],
    prunable: Sequence[bool],
    blocked: Sequence[bool],
    start: int,
    latest_end: int,
    limits: PlanLimits,
) -> int | None:
    total = sum(tokens)
    assert limits.max_tokens is not None
    if total <= limits.max_tokens:
        return None
    target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
    surviving = total
    for end in range(start, latest_end + 1):
        # ``surviving`` counts what stays when the window is [start, end).
        if end > start and prunable[end - 1]:
            surviving -= tokens[end - 1]
        if not blocked[end] and end > start and surviving <= target:
            return end
    return latest_end

"""``PlanCache``: the plan state of the last list a reducer returned, so that a chat growing
by a turn costs work for that turn only."""

from __future__ import annotations

from typing import Any, NamedTuple

from .planner import PlanLimits, PlanState

_new = tuple.__new__


class Session(NamedTuple):
    """The plan state of the last list a reducer returned, to plan its next turn from.

    Invariant: ``state`` describes ``messages`` position by position (views, token counts,
    tool links), exactly as a fresh ``PlanState`` extended with ``messages`` would, and
    ``messages`` is the reducer's own copy of the list it returned (a caller changing the
    returned list cannot change it). A reduce uses it only when its input starts with
    ``messages`` item for item (``==``); then only the rest is read, which is what makes a
    growing chat cost work for the new turn. Anything else (an edit, another conversation)
    plans afresh. A reduce that raises leaves no session. ``tests/test_incremental.py``
    checks that plans made this way equal fresh ones, in count and token mode.
    """

    state: PlanState
    messages: list[Any]


class PlanCache:
    """One reducer's :class:`Session`. A reduce takes it out while it runs; another reduce
    meanwhile finds none and plans from scratch. Safe to share between threads: the session
    lives in a one-item list, taken out by ``list.pop`` and put back by a slice assignment,
    each one atomic (no lock to take twice per reduce)."""

    def __init__(self, limits: PlanLimits) -> None:
        self._limits = limits
        # The session as a plain (state, messages) pair, or nothing: every reduce makes
        # one, and a pair costs a fraction of a Session (current() gives the Session).
        self._slot: list[tuple[PlanState, list[Any]]] = []

    def resume(self, messages: list[Any]) -> tuple[PlanState, int]:
        """The remembered plan state (taken out, see :class:`Session`) and how many
        messages it covers, if ``messages`` starts with the list it describes (the list a
        reduce plans, or only its ``existing`` part: the rest need not be built first);
        else a fresh state and 0."""
        try:
            session = self._slot.pop()
        except IndexError:
            return PlanState(self._limits), 0
        state, remembered = session
        known = len(remembered)
        try:
            # Element by element, each compared by identity first: a list of the same
            # messages (a caller's copy of the list returned) costs no message's __eq__.
            if len(messages) == known:
                same = messages == remembered
            else:
                same = len(messages) > known and messages[:known] == remembered
        except Exception:  # a message type whose == raises: just start afresh
            same = False
        if same:
            return state, known
        return PlanState(self._limits), 0

    def remember(self, state: PlanState, messages: list[Any]) -> None:
        """Keep ``state``, which describes ``messages``, for the next reduce."""
        self._slot[:] = ((state, messages[:]),)

    def current(self) -> Session | None:
        """The session remembered now (left in place), or None."""
        slot = self._slot
        return _new(Session, slot[0]) if slot else None

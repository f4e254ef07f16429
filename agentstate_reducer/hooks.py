"""Handing messages that leave the list to ``on_prune`` hooks: once each, never lost.

:class:`HookDelivery` runs the hooks of one reducer. Per hook it keeps

* a **delivered** memory (bounded, oldest forgotten first) of the messages the hook took,
  keyed by namespace, id and content (:func:`~agentstate_reducer.messages.fingerprint`), so
  the overlapping lists a checkpointer reduces several times per run reach it once, while
  the same id in another conversation, or with new content, is new. A message without an
  id is named by its place: a digest of the whole list it was pruned from and its
  position there (:func:`message_keys`), so the same list reduced again (a replay, a
  double-submitted request) hands nothing over twice, while the same words in any other
  list are a message of their own;
* a **claim** per message being handed over (under way, or kept for a retry), so
  overlapping reduces of one conversation are linearizable (below);
* the **pending** batches: failed hand-offs it keeps for a retry (bounded by
  ``pending_limit`` messages). Each delivery first retries them; a hook whose retry fails
  is not called again in that delivery, and the new batch waits with them;
* its **outage**: after a failure the hook is not called for ``backoff`` seconds (doubling
  on each further failure, up to a minute), deliveries meanwhile treat it as still failing,
  so a store that is down, or times out, costs one failing call per wait rather than one
  per reduce.

Overlapping reduces of one conversation (threads, tasks, the agent middleware and the
checkpoint saver sharing a reducer, a double-submitted request) never lose or repeat a
message. A delivery claims the messages it hands over; another delivery that meets a
claimed message does not skip it (the first one's list, which alone would keep it on a
failure, may be thrown away) but, once its own claims are settled, **waits for that
hand-off's outcome** (a :class:`~agentstate_reducer._calls.Wait` effect: ``reduce``
blocks its thread, ``areduce`` awaits, never blocking the event loop), then treats the
message exactly as its own outcome would:

* taken by the hook: pruned, not handed over again;
* kept for a retry by the other delivery (``on_prune_error="raise"``): kept there too, so
  with ``"raise"`` this reduce raises ``PruneHookError(kept=True)``, with ``"keep"`` it
  keeps the message in its list;
* not taken and not kept (the other reduce kept it in its own list): with ``"raise"`` this
  delivery keeps it for a retry under its own claim, with ``"keep"`` it stays in the list;
* still under way after ``Handoff.wait`` seconds (a hook that hangs): it stays in this
  reduce's list (nothing is pruned), in both modes, so a hook that never returns holds
  other reduces for that long at most.

A delivery waits only after settling its own claims, so two deliveries never wait for
each other. A message is remembered as delivered only after the hook returns.

Processes share no memory: two processes reducing one conversation (through a shared
checkpoint store) each hand a message over at most once, and never lose one, but the same
message may reach the hooks of both (at least once across processes): make a hook shared
by several processes idempotent (for example an upsert by message id).

:class:`Background` runs a slow hook on a small thread pool, so the reduce does not wait;
its failed batches are kept and retried (see there).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ._calls import Call, Effects, Outage, Signal, Wait, call_sync, hook_name
from ._checks import check_int, check_number
from ._memory import namespace_key
from .errors import BackgroundHookError, PruneHookError
from .messages import fingerprint, id_of

if TYPE_CHECKING:
    from .result import ReducerResult

logger = logging.getLogger(__name__)

Hook = Callable[[list[Any], Any], Any]
"""``hook(messages, namespace)``; its return value is ignored. May be a coroutine function."""

_Key = tuple[Hashable, str, str]

#: Seconds a reduce waits for another reduce's hand-off of the same messages (see
#: ``Handoff.wait``).
DEFAULT_HANDOFF_WAIT = 30.0


@dataclass
class PendingBatch:
    """Messages a hook failed to take, kept for a retry.

    Attributes:
        messages: The messages, as they were handed over.
        namespace: The namespace they were handed over with.
        error: The last exception the hook raised for them.
    """

    messages: list[Any]
    namespace: Any
    error: Exception
    keys: list[_Key] = field(default_factory=list, repr=False)
    claim: _Claim = field(default_factory=lambda: _Claim(_Claim.PENDING), repr=False)


@dataclass(frozen=True)
class HandoffStatus:
    """How the hand-off to ``on_prune`` hooks is doing (``reducer.handoff_status()``).

    Attributes:
        delivered: Messages the hooks took since the reducer was built (per hook, summed).
        failures: Hook calls that raised.
        pending_messages: Messages waiting for a retry, over all hooks.
        pending_batches: Batches waiting for a retry.
        last_error: The last exception a hook raised, or None.
    """

    delivered: int
    failures: int
    pending_messages: int
    pending_batches: int
    last_error: Exception | None


@dataclass(frozen=True)
class HookFailure:
    """One hook that failed during a delivery, and the messages it did not take."""

    hook: Hook
    error: Exception
    messages: list[Any]
    namespace: Any
    kept: bool
    """Whether the messages are kept for a retry (False when the hand-off keeps them in
    the list instead, or when ``pending_limit`` was reached)."""
    called: bool = True
    """Whether the hook was called and raised (False: it was left alone, still waiting
    after an earlier failure)."""
    late: bool = False
    """Another reduce was still handing the messages to the hook after ``Handoff.wait``:
    not kept for a retry, the list keeps them (so they are not handed over twice)."""


class _Claim:
    """One hook's hand-off of one batch: the messages' keys point at it while it is under
    way (``IN_FLIGHT``) or kept for a retry (``PENDING``). A reduce that meets a key in
    flight waits for :attr:`signal` and then reads :attr:`state`: ``DELIVERED`` (the hook
    took it), ``PENDING`` (kept for a retry) or ``RELEASED`` (not taken, not kept: the
    list that pruned it keeps it)."""

    __slots__ = ("error", "signal", "state")

    IN_FLIGHT = "in flight"
    DELIVERED = "delivered"
    PENDING = "pending"
    RELEASED = "released"

    def __init__(self, state: str = IN_FLIGHT) -> None:
        self.state = state
        self.error: Exception | None = None
        self.signal = Signal()
        if state != _Claim.IN_FLIGHT:
            self.signal.set()


#: How :func:`message_keys` names an id-less message (by its place in a list).
_PLACE_PREFIX = "~"


class _HookMemory:
    """One hook's hand-off memory: the keys it took (the newest ``dedupe_window``), the
    claims under way or pending, and, per message (id and content, whatever the
    namespace), how many of each there are: a hand-off without a namespace (the LangGraph
    channel's) and one with a namespace (the checkpoint saver's, on the same reducer) are
    the same hand-off of a message, so each finds the other (see :meth:`taken`)."""

    __slots__ = (
        "any_claims",
        "any_delivered",
        "claims",
        "delivered",
        "outage",
        "pending",
        "pending_count",
    )

    def __init__(self, backoff: float) -> None:
        self.delivered: OrderedDict[_Key, None] = OrderedDict()
        self.claims: dict[_Key, _Claim] = {}
        # (id, content) -> how many delivered keys, and the claims under way, of any namespace.
        self.any_delivered: dict[tuple[str, str], int] = {}
        self.any_claims: dict[tuple[str, str], list[_Claim]] = {}
        self.pending: list[PendingBatch] = []
        self.pending_count = 0
        self.outage = Outage(backoff)

    def taken(self, key: _Key) -> bool:
        """Whether the hook took the message of ``key``: under its namespace, or, for a
        message with an id, for a hand-off without a namespace under any namespace, and for
        one with a namespace without one. (An id-less message is named by the list it left,
        which the channel's and the saver's lists never share.)"""
        if key in self.delivered:
            return True
        namespace, message_id, content = key
        if message_id.startswith(_PLACE_PREFIX):
            return False
        if namespace is None:
            return (message_id, content) in self.any_delivered
        return (None, message_id, content) in self.delivered

    def holder(self, key: _Key) -> _Claim | None:
        """The claim under way (or pending) on the message of ``key``, matched as
        :meth:`taken` matches."""
        found = self.claims.get(key)
        if found is not None:
            return found
        namespace, message_id, content = key
        if message_id.startswith(_PLACE_PREFIX):
            return None
        if namespace is None:
            held = self.any_claims.get((message_id, content))
            return held[-1] if held else None
        return self.claims.get((None, message_id, content))

    def deliver(self, key: _Key) -> None:
        """Remember ``key`` as taken (the newest of the window)."""
        if key in self.delivered:
            self.delivered.move_to_end(key)
            return
        self.delivered[key] = None
        pair = (key[1], key[2])
        self.any_delivered[pair] = self.any_delivered.get(pair, 0) + 1

    def forget_oldest(self) -> None:
        key, _ = self.delivered.popitem(last=False)
        pair = (key[1], key[2])
        left = self.any_delivered[pair] - 1
        if left:
            self.any_delivered[pair] = left
        else:
            del self.any_delivered[pair]

    def claim(self, key: _Key, claim: _Claim) -> None:
        self.claims[key] = claim
        self.any_claims.setdefault((key[1], key[2]), []).append(claim)

    def unclaim(self, key: _Key, claim: _Claim) -> None:
        if self.claims.get(key) is claim:
            del self.claims[key]
            pair = (key[1], key[2])
            held = self.any_claims.get(pair)
            if held is not None:
                held[:] = [c for c in held if c is not claim]
                if not held:
                    del self.any_claims[pair]


class _Reserved(NamedTuple):
    """What a delivery found for one hook: the messages it hands over itself (under
    ``claim``), and the messages another delivery holds, with that delivery's claim."""

    fresh: list[Any]
    keys: list[_Key]
    claim: _Claim
    foreign: list[tuple[Any, _Key, _Claim]]


class HookDelivery:
    """Runs the ``on_prune`` hooks of one reducer (see the module docstring).

    Safe to share between threads and event loops.
    """

    def __init__(
        self,
        hooks: Sequence[Hook],
        *,
        dedupe: bool,
        window: int,
        pending_limit: int,
        backoff: float = 0.0,
        wait: float = DEFAULT_HANDOFF_WAIT,
    ) -> None:
        self._hooks = tuple(hooks)
        self._dedupe = dedupe
        self._window = window
        self._pending_limit = pending_limit
        self._wait = wait
        self._memories = [_HookMemory(backoff) for _ in self._hooks]
        self._pending_total = 0
        self._lock = threading.Lock()
        self._delivered = 0
        self._failures = 0
        self._last_error: Exception | None = None

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def deliver(
        self,
        batch: Sequence[Any],
        namespace: Any,
        *,
        keep_failed: bool,
        source: Sequence[Any] | None = None,
    ) -> Effects[list[HookFailure]]:
        """Hand ``batch`` to every hook that has not taken it, after retrying what is
        pending; yields the hook calls (and waits for other deliveries' claims), returns
        the failures.

        Args:
            batch: The messages (possibly empty: then only the pending batches are retried).
            namespace: The namespace to hand them over with.
            keep_failed: Keep what a hook fails to take for a retry (False when the caller
                keeps the messages in its list instead).
            source: The list ``batch`` was pruned from (the reduce's input), which names
                an id-less message (see :func:`message_keys`); ``batch`` itself if None.
        """
        failures: list[HookFailure] = []
        keys = message_keys(batch, namespace, source) if self._dedupe else None
        for hook, memory in zip(self._hooks, self._memories, strict=True):
            # A hook that failed moments ago is not called again until its wait is over.
            down: Exception | None = memory.outage.blocked()
            waiting = down is not None
            for pending in self._take_pending(memory):
                if down is None:
                    outcome = yield Call(hook, (list(pending.messages), pending.namespace))
                    down = outcome.error
                    if down is None:
                        memory.outage.succeeded()
                        self._settle(memory, pending.keys, pending.claim, pending.messages)
                        continue
                    self._failed(memory, down)
                    pending.error = down
                self._keep(memory, pending)
            reserved = self._reserve(memory, batch, keys)
            fresh = reserved.fresh
            if not fresh and down is not None and not waiting:
                # The retry failed: reported (and logged) even when nothing new goes.
                failures.append(HookFailure(hook, down, [], namespace, kept=True))
            if fresh:
                error: Exception | None = None
                if down is None:
                    outcome = yield Call(hook, (fresh, namespace))
                    error = outcome.error
                    if error is None:
                        memory.outage.succeeded()
                        self._settle(memory, reserved.keys, reserved.claim, fresh)
                    else:
                        self._failed(memory, error)
                else:
                    error = down  # the hook is still down: do not call it again now
                if error is not None:
                    kept = keep_failed and self._room(memory, len(fresh))
                    if kept:
                        pending = PendingBatch(fresh, namespace, error, reserved.keys)
                        pending.claim = reserved.claim
                        self._keep(memory, pending)
                    else:
                        self._settle(memory, reserved.keys, reserved.claim, fresh, error=error)
                    failures.append(
                        HookFailure(hook, error, fresh, namespace, kept=kept, called=not waiting)
                    )
            if reserved.foreign:
                # Only now, with this delivery's own claims settled, so two overlapping
                # deliveries never wait for each other.
                why = yield from self._await_claims(reserved.foreign)
                failures.extend(
                    self._foreign_outcome(
                        hook, memory, reserved.foreign, namespace, keep_failed, why
                    )
                )
        return failures

    def waiting(self) -> list[tuple[Hook, Exception, float]]:
        """The hooks left alone after a failure: ``(hook, last error, seconds to wait)``."""
        out: list[tuple[Hook, Exception, float]] = []
        for hook, memory in zip(self._hooks, self._memories, strict=True):
            error = memory.outage.blocked()
            if error is not None:
                out.append((hook, error, memory.outage.retry_in))
        return out

    @property
    def has_pending(self) -> bool:
        """Whether any hand-off waits for a retry (a cheap check for every reduce)."""
        return self._pending_total > 0

    def status(self) -> HandoffStatus:
        """Counters and the pending backlog."""
        with self._lock:
            batches = [b for memory in self._memories for b in memory.pending]
            return HandoffStatus(
                delivered=self._delivered,
                failures=self._failures,
                pending_messages=sum(len(b.messages) for b in batches),
                pending_batches=len(batches),
                last_error=self._last_error,
            )

    def take_pending(self) -> list[tuple[Hook, PendingBatch]]:
        """Remove and return every pending batch, to store them elsewhere."""
        out: list[tuple[Hook, PendingBatch]] = []
        with self._lock:
            for hook, memory in zip(self._hooks, self._memories, strict=True):
                for pending in memory.pending:
                    self._release(memory, pending.keys, pending.claim, _Claim.RELEASED)
                    out.append((hook, pending))
                memory.pending, memory.pending_count = [], 0
            self._pending_total = 0
        return out

    # -- claims on messages another delivery holds ----------------------------------------

    def _await_claims(self, foreign: list[tuple[Any, _Key, _Claim]]) -> Effects[str]:
        """Wait (at most ``Handoff.wait`` seconds in all) for the claims still in flight;
        returns how to say why one still in flight afterwards was not waited for."""
        deadline = time.monotonic() + self._wait
        seen: set[int] = set()
        for _, _, claim in foreign:
            if id(claim) in seen or claim.signal.is_set():
                continue
            seen.add(id(claim))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            outcome = yield Wait(claim.signal, remaining)
            if outcome.error is not None:
                return f": {outcome.error}"  # waiting would freeze the loop that finishes it
        return f" after Handoff.wait={self._wait:g} s"

    def _foreign_outcome(
        self,
        hook: Hook,
        memory: _HookMemory,
        foreign: list[tuple[Any, _Key, _Claim]],
        namespace: Any,
        keep_failed: bool,
        why: str,
    ) -> list[HookFailure]:
        """What the messages another delivery held came to, as this delivery's own
        failures would be: taken (nothing to report), or kept (pending, or in the list);
        ``why`` says why one still in flight was not waited for longer."""
        held: list[Any] = []  # kept for a retry by the other delivery
        released: list[tuple[Any, _Key, _Claim]] = []  # not taken, not kept
        late: list[Any] = []  # still in flight after the wait
        error: Exception | None = None
        for message, key, claim in foreign:
            state = claim.state
            if state == _Claim.DELIVERED:
                continue
            if state == _Claim.IN_FLIGHT:
                late.append(message)
                continue
            error = error or claim.error
            if state == _Claim.PENDING:
                held.append(message)
            else:
                released.append((message, key, claim))
        out: list[HookFailure] = []
        if late:
            timeout = TimeoutError(
                f"another reduce of this conversation was still handing {len(late)} of these "
                f"messages to the hook{why}"
            )
            out.append(HookFailure(hook, timeout, late, namespace, kept=False, late=True))
        if held:
            assert error is not None
            out.append(HookFailure(hook, error, held, namespace, kept=keep_failed))
        if released:
            first = released[0][2].error
            assert first is not None
            kept: list[Any] = []
            if keep_failed:
                kept = self._adopt(memory, released, namespace, first)
            taken = {id(m) for m in kept}
            if kept:
                out.append(HookFailure(hook, first, kept, namespace, kept=True))
            rest = [m for m, _, _ in released if id(m) not in taken]
            if rest:
                out.append(HookFailure(hook, first, rest, namespace, kept=False))
        return out

    def _adopt(
        self,
        memory: _HookMemory,
        released: list[tuple[Any, _Key, _Claim]],
        namespace: Any,
        error: Exception,
    ) -> list[Any]:
        """Keep for a retry, under a claim of this delivery, the messages another one
        failed to hand over and did not keep (it kept them in its list, which may be
        thrown away); returns those kept (a message already handed over since, or
        claimed again by a third delivery, is left out)."""
        claim = _Claim(_Claim.PENDING)
        claim.error = error
        messages: list[Any] = []
        keys: list[_Key] = []
        with self._lock:
            if memory.pending_count + len(released) > self._pending_limit:
                return []
            for message, key, _ in released:
                if memory.taken(key) or memory.holder(key) is not None:
                    continue
                memory.claim(key, claim)
                keys.append(key)
                messages.append(message)
            if messages:
                batch = PendingBatch(messages, namespace, error, keys)
                batch.claim = claim
                memory.pending.append(batch)
                memory.pending_count += len(messages)
                self._pending_total += len(messages)
        return messages

    # -- bookkeeping (under the lock) ---------------------------------------------------

    def _take_pending(self, memory: _HookMemory) -> list[PendingBatch]:
        with self._lock:
            taken, memory.pending = memory.pending, []
            self._pending_total -= memory.pending_count
            memory.pending_count = 0
            for pending in taken:
                # Under way again: a reduce meeting these messages waits for the retry.
                claim = _Claim()
                for key in pending.keys:
                    if memory.claims.get(key) is pending.claim:
                        memory.unclaim(key, pending.claim)
                        memory.claim(key, claim)
                pending.claim = claim
        return taken

    def _keep(self, memory: _HookMemory, pending: PendingBatch) -> None:
        with self._lock:
            memory.pending.append(pending)
            memory.pending_count += len(pending.messages)
            self._pending_total += len(pending.messages)
            pending.claim.state = _Claim.PENDING
            pending.claim.error = pending.error
        pending.claim.signal.set()

    def _room(self, memory: _HookMemory, size: int) -> bool:
        with self._lock:
            return memory.pending_count + size <= self._pending_limit

    def _failed(self, memory: _HookMemory, error: Exception) -> None:
        memory.outage.failed(error)
        with self._lock:
            self._failures += 1
            self._last_error = error

    def _reserve(
        self, memory: _HookMemory, batch: Sequence[Any], keys: list[_Key] | None
    ) -> _Reserved:
        claim = _Claim()
        if keys is None:
            return _Reserved(list(batch), [], claim, [])
        fresh: list[Any] = []
        own: list[_Key] = []
        foreign: list[tuple[Any, _Key, _Claim]] = []
        with self._lock:
            for message, key in zip(batch, keys, strict=True):
                if memory.taken(key):
                    continue
                holder = memory.holder(key)
                if holder is None:
                    memory.claim(key, claim)
                    own.append(key)
                    fresh.append(message)
                elif holder is not claim:
                    foreign.append((message, key, holder))
        return _Reserved(fresh, own, claim, foreign)

    def _settle(
        self,
        memory: _HookMemory,
        keys: list[_Key],
        claim: _Claim,
        messages: list[Any],
        *,
        error: Exception | None = None,
    ) -> None:
        """End a claim: the hook took ``messages`` (``error`` None), or did not and they
        are not kept (the list that pruned them keeps them)."""
        with self._lock:
            if error is None:
                self._delivered += len(messages)
                for key in keys:
                    memory.deliver(key)
                while len(memory.delivered) > self._window:
                    memory.forget_oldest()
            claim.error = error
            self._release(
                memory, keys, claim, _Claim.DELIVERED if error is None else _Claim.RELEASED
            )
        claim.signal.set()

    @staticmethod
    def _release(memory: _HookMemory, keys: list[_Key], claim: _Claim, state: str) -> None:
        for key in keys:
            memory.unclaim(key, claim)
        claim.state = state


def message_keys(
    batch: Sequence[Any], namespace: Any, source: Sequence[Any] | None = None
) -> list[_Key]:
    """The hand-off's key of each message of ``batch``: the namespace, the id and the
    content (:func:`~agentstate_reducer.messages.fingerprint`).

    A message without an id is named by its place instead: a digest of the whole list it
    was pruned from (``source``, the reduce's input; ``batch`` when None) and its position
    there. So reducing the same list again (a replay, a double-submitted request) hands
    nothing over twice, while the same text pruned from any other list is a message of
    its own.
    """
    ns = namespace_key(namespace)
    keys: list[_Key] = []
    place: str | None = None
    where: dict[int, list[int]] = {}
    for index, message in enumerate(batch):
        message_id = id_of(message)
        if message_id is None:
            if place is None:
                listing = batch if source is None else source
                digest = hashlib.sha256()
                for item in listing:
                    digest.update(fingerprint(item).encode())
                place = digest.hexdigest()[:32]
                for position, item in enumerate(listing):
                    where.setdefault(id(item), []).append(position)
            # The batch holds objects of the list, in its order: one object listed twice
            # takes its positions in turn (a message not in the list, its batch index).
            found = where.get(id(message))
            message_id = f"{_PLACE_PREFIX}{place}:{found.pop(0) if found else -1 - index}"
        keys.append((ns, message_id, fingerprint(message)))
    return keys


def hook_error(
    failures: list[HookFailure],
    namespace: Any,
    *,
    reduced: ReducerResult | None,
    unchanged: ReducerResult | None,
) -> PruneHookError:
    """The error for hooks that did not take messages.

    Args:
        failures: The hooks that failed and what they did not take.
        namespace: The namespace of the hand-off.
        reduced: The reduce's result, which a caller may go on with when every failed
            message is kept for a retry; None for a direct ``deliver``.
        unchanged: The reduce's input as a result with nothing pruned, for when the failed
            messages are not kept (``on_prune_error="keep"`` or a full retry store); None
            for a direct ``deliver``.
    """
    names = ", ".join(hook_name(f.hook) for f in failures)
    first = failures[0].error
    count = sum(len(f.messages) for f in failures)
    kept = all(f.kept for f in failures)
    if kept:
        then, result = "they are kept and handed over again on the next hand-off", reduced
    elif unchanged is None:
        then, result = "they could not be kept for a retry (max_pending_handoff)", None
    elif all(not f.kept and f.messages for f in failures) and reduced is None:
        then, result = "nothing was pruned: they stay in the list for the next reduce", unchanged
    elif all(f.kept or f.late for f in failures):
        then = (
            "nothing was pruned: they stay in the list for the next reduce (the other "
            "reduce's hand-off may still succeed, so they are not kept for a retry)"
        )
        result = unchanged
    else:
        then = "they could not all be kept for a retry (max_pending_handoff): nothing was pruned"
        result = unchanged
    error = PruneHookError(
        f"on_prune hook {names} failed on {count} message(s): {type(first).__name__}: "
        f"{first}; {then}",
        pruned=[m for f in failures for m in f.messages],
        namespace=namespace,
        failures=[(f.hook, f.error) for f in failures],
        result=result,
        kept=kept,
    )
    error.__cause__ = first
    return error


def waiting_error(
    waiting: list[tuple[Hook, Exception, float]], namespace: Any, unchanged: ReducerResult
) -> PruneHookError:
    """The error of a reduce that pruned nothing because hooks are still down
    (``on_prune_error="keep"``): whatever it pruned could not be handed over, so it did not
    plan a prune (nor pay for a summary it would have thrown away)."""
    names = ", ".join(hook_name(hook) for hook, _, _ in waiting)
    first = waiting[0][1]
    wait = max(seconds for _, _, seconds in waiting)
    error = PruneHookError(
        f"on_prune hook {names} is down ({type(first).__name__}: {first}) and is tried again "
        f"in {wait:.1f}s; nothing was pruned (or summarised) this time",
        pruned=[],
        namespace=namespace,
        failures=[(hook, exc) for hook, exc, _ in waiting],
        result=unchanged,
        kept=False,
    )
    error.__cause__ = first
    return error


_LIVE_BACKGROUNDS: weakref.WeakSet[Background] = weakref.WeakSet()


@atexit.register
def _drain_at_exit() -> None:
    for background in list(_LIVE_BACKGROUNDS):
        try:
            background.drain(timeout=30)
        except (BackgroundHookError, TimeoutError) as exc:
            logger.error(
                "Background hook %s still had undelivered batches at interpreter exit (%s); "
                "call Background.drain() before shutting down and store what it reports",
                background.name,
                exc,
            )


class Background:
    """Run a slow ``on_prune`` hook off the reduce's path, on a bounded thread pool.

    ``Background(hook)`` is itself a hook: pass it in ``on_prune``. Each call submits the
    batch and returns at once; when ``max_pending`` batches are already waiting it blocks
    until one finishes (back-pressure, never a dropped batch). A batch whose hook raises is
    retried ``retries`` times with a growing delay; if it still fails it is **kept**.
    While batches are kept, the next call resubmits them and refuses its own batch with
    :class:`~agentstate_reducer.BackgroundHookError`, so the reducer keeps those messages
    too (in its list, or for a retry) until the hook works again: nothing is only logged,
    and memory stays bounded. :meth:`drain` waits for everything and raises if batches are
    still kept; :attr:`failed_batches` shows them and :meth:`discard_failed` hands them
    over for storing elsewhere. At interpreter exit pending batches are drained.

    Args:
        hook: The hook to run, ``(pruned_messages, namespace)``; may be a coroutine
            function (run on a private event loop in the worker thread).
        max_workers: Threads running the hook.
        max_pending: Batches submitted but not finished before a call blocks.
        retries: Extra attempts for a failing batch before it is kept.
        retry_delay: Seconds before the first retry (doubled each time).
        workers: 0.5's name of ``max_workers`` (deprecated).

    Raises:
        TypeError: ``hook`` is not callable, or a size, count or delay is not a number.
        ValueError: A size or count is below 1 (``retries`` and ``retry_delay`` below 0).
    """

    def __init__(
        self,
        hook: Hook,
        *,
        max_workers: int = 1,
        max_pending: int = 64,
        retries: int = 2,
        retry_delay: float = 0.05,
        workers: int | None = None,
    ) -> None:
        if not callable(hook):
            raise TypeError(f"Background needs a callable hook, got {hook!r}")
        if workers is not None:
            import warnings

            warnings.warn(
                "Background(workers=...) is deprecated since agentstate-reducer 0.6 and goes "
                "in 0.7; use max_workers=",
                DeprecationWarning,
                stacklevel=2,
            )
            max_workers = workers
        check_int("Background max_workers", max_workers, minimum=1)
        check_int("Background max_pending", max_pending, minimum=1)
        check_int("Background retries", retries, minimum=0)
        check_number("Background retry_delay", retry_delay, minimum=0)
        self.hook = hook
        self.name = hook_name(hook)
        self._retries = retries
        self._retry_delay = retry_delay
        self._slots = threading.BoundedSemaphore(max_pending)
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="agentstate-bg")
        self._running: set[Future[None]] = set()
        self._failed: list[tuple[list[Any], Any, Exception]] = []
        self._lock = threading.Lock()
        _LIVE_BACKGROUNDS.add(self)

    def __repr__(self) -> str:
        return f"Background({self.name})"

    def __call__(self, pruned: list[Any], namespace: Any) -> None:
        """Submit a batch, or refuse it while earlier batches are kept as failed.

        Raises:
            BackgroundHookError: Earlier batches failed; they were resubmitted, and this
                batch was not taken (the reducer keeps it).
        """
        with self._lock:
            failed, self._failed = self._failed, []
        if failed:
            for batch, batch_namespace, _ in failed:
                self._submit(batch, batch_namespace)
            count = sum(len(batch) for batch, _, _ in failed)
            raise BackgroundHookError(
                f"Background hook {self.name} failed on {len(failed)} earlier batch(es) "
                f"({count} message(s)) after {self._retries + 1} attempt(s) each: they are "
                "being retried, and this batch was not taken (the reducer keeps it)",
                failed,
            ) from failed[-1][2]
        self._submit(list(pruned), namespace)

    @property
    def failed_batches(self) -> list[tuple[list[Any], Any, Exception]]:
        """``(messages, namespace, last error)`` of each batch kept as failed."""
        with self._lock:
            return list(self._failed)

    def discard_failed(self) -> list[tuple[list[Any], Any, Exception]]:
        """Remove and return the kept batches (to store them elsewhere)."""
        with self._lock:
            failed, self._failed = self._failed, []
        return failed

    def run_now(self, pruned: list[Any], namespace: Any) -> None:
        """Run the hook on this thread (for replaying batches); raises what it raises."""
        call_sync(self.hook, pruned, namespace)

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every submitted batch (resubmitting kept ones once), then raise if
        any is still kept.

        Raises:
            BackgroundHookError: Batches still fail after their retries; they stay kept
                (see :attr:`failed_batches`).
            TimeoutError: ``timeout`` seconds passed with batches still running.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            failed, self._failed = self._failed, []
        for batch, batch_namespace, _ in failed:
            self._submit(batch, batch_namespace)
        while True:
            with self._lock:
                running = list(self._running)
            if not running:
                break
            for future in running:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                future.exception(timeout=remaining)
        with self._lock:
            failed = list(self._failed)
        if failed:
            count = sum(len(batch) for batch, _, _ in failed)
            raise BackgroundHookError(
                f"Background hook {self.name} still fails on {len(failed)} batch(es) "
                f"({count} message(s)); they stay kept: see .failed_batches, drain again "
                "once the hook works, or take them with discard_failed()",
                failed,
            ) from failed[-1][2]

    def close(self, wait: bool = True) -> None:
        """Drain, then stop the worker threads (kept failures are raised by the drain).

        Args:
            wait: False returns at once: submitted batches still run on the worker
                threads, and failures stay in :attr:`failed_batches` (nothing is raised).
        """
        if not wait:
            self._executor.shutdown(wait=False)
            return
        try:
            self.drain()
        finally:
            self._executor.shutdown(wait=True)
            _LIVE_BACKGROUNDS.discard(self)

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A kept failure raised here chains the body's own exception, if any: both show.
        self.close()

    def _submit(self, batch: list[Any], namespace: Any) -> None:
        self._slots.acquire()
        try:
            future = self._executor.submit(self._run, batch, namespace)
        except RuntimeError:  # the pool is shut down (interpreter exit): run it here
            self._slots.release()
            self._run(batch, namespace)
            return
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self._running.add(future)
        future.add_done_callback(self._finished)

    def _run(self, batch: list[Any], namespace: Any) -> None:
        delay = self._retry_delay
        for attempt in range(self._retries + 1):
            try:
                call_sync(self.hook, batch, namespace)
                return
            except Exception as exc:
                if attempt == self._retries:
                    logger.warning(
                        "Background hook %s failed %d time(s) on %d message(s): %s; the batch "
                        "is kept and retried on the next call",
                        self.name,
                        attempt + 1,
                        len(batch),
                        exc,
                    )
                    with self._lock:
                        self._failed.append((batch, namespace, exc))
                    return
                time.sleep(delay)
                delay *= 2

    def _finished(self, future: Future[None]) -> None:
        with self._lock:
            self._running.discard(future)
        self._slots.release()

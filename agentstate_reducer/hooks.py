"""Handing pruned messages to ``on_prune`` hooks: once per message id, never silently lost.

:class:`HookDelivery` remembers, per hook, the ids it has taken (a bounded memory), so the
overlapping lists a checkpointer reduces several times per run reach each hook once. An id
is remembered only after the hook returns: a hook that raises gets the same messages again
on the next reduce that prunes them. Ids being delivered by one thread are skipped by
another, so sharing a reducer between threads does not deliver twice.

:class:`Background` runs a slow hook on a small thread pool so the reduce does not wait.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ._checks import check_int, check_number
from .errors import BackgroundHookError, PruneHookError
from .messages import id_of

logger = logging.getLogger(__name__)


class _HookMemory:
    __slots__ = ("delivered", "in_flight")

    def __init__(self) -> None:
        self.delivered: OrderedDict[str, None] = OrderedDict()
        self.in_flight: set[str] = set()


class HookDelivery:
    """Runs the ``on_prune`` hooks of one reducer with per-hook, thread-safe dedupe."""

    def __init__(
        self, hooks: Sequence[Callable[[list[Any], Any], Any]], *, dedupe: bool, window: int
    ):
        self._hooks = tuple(hooks)
        self._dedupe = dedupe
        self._window = window
        self._memories = [_HookMemory() for _ in self._hooks]
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def deliver(self, pruned: Sequence[Any], namespace: Any) -> None:
        """Hand ``pruned`` to every hook that has not taken them yet.

        Raises:
            PruneHookError: At least one hook raised; every hook was still tried.
        """
        failures: list[tuple[Any, BaseException]] = []
        for hook, memory in zip(self._hooks, self._memories, strict=True):
            batch, reserved = self._reserve(memory, pruned)
            if not batch:
                continue
            try:
                hook(batch, namespace)
            except Exception as exc:
                self._release(memory, reserved, delivered=False)
                failures.append((hook, exc))
            else:
                self._release(memory, reserved, delivered=True)
        if failures:
            names = ", ".join(_hook_name(hook) for hook, _ in failures)
            first = failures[0][1]
            raise PruneHookError(
                f"on_prune hook {names} failed on {len(pruned)} pruned message(s): "
                f"{type(first).__name__}: {first}. The messages were not marked as "
                "delivered; they will be handed over again on the next reduce that prunes them",
                pruned=pruned,
                namespace=namespace,
                failures=failures,
            ) from first

    def _reserve(self, memory: _HookMemory, pruned: Sequence[Any]) -> tuple[list[Any], list[str]]:
        if not self._dedupe:
            return list(pruned), []
        batch: list[Any] = []
        reserved: list[str] = []
        with self._lock:
            for message in pruned:
                message_id = id_of(message)
                if message_id is None:
                    batch.append(message)
                elif message_id not in memory.delivered and message_id not in memory.in_flight:
                    memory.in_flight.add(message_id)
                    reserved.append(message_id)
                    batch.append(message)
        return batch, reserved

    def _release(self, memory: _HookMemory, reserved: list[str], *, delivered: bool) -> None:
        if not reserved:
            return
        with self._lock:
            for message_id in reserved:
                memory.in_flight.discard(message_id)
                if delivered:
                    memory.delivered[message_id] = None
            while len(memory.delivered) > self._window:
                memory.delivered.popitem(last=False)


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__qualname__", None) or repr(hook)


_LIVE_BACKGROUNDS: weakref.WeakSet[Background] = weakref.WeakSet()


@atexit.register
def _drain_at_exit() -> None:
    for background in list(_LIVE_BACKGROUNDS):
        try:
            background.drain()
        except BackgroundHookError as exc:
            logger.error(
                "Background hook %s still had %d failed batch(es) at interpreter exit; call "
                "Background.drain() before shutting down to handle them",
                background.name,
                len(exc.batches),
            )


class Background:
    """Run a slow ``on_prune`` hook off the reduce's path, on a bounded thread pool.

    ``Background(hook)`` is itself a hook: pass it in ``on_prune``. Each call submits the
    batch and returns at once; when ``max_pending`` batches are already waiting it blocks
    until one finishes (back-pressure, never a dropped batch). A batch whose hook raises is
    retried ``retries`` times; if it still fails it is kept, and the next call (that is, the
    next reduce that prunes) or :meth:`drain` raises
    :class:`~agentstate_reducer.BackgroundHookError` carrying it, so the caller learns of
    it. Pending batches are drained at interpreter exit.

    Args:
        hook: The hook to run, ``(pruned_messages, namespace)``.
        max_workers: Threads running the hook.
        max_pending: Batches submitted but not finished before a call blocks.
        retries: Extra attempts for a failing batch.
        retry_delay: Seconds between attempts (doubled each time).

    Raises:
        TypeError: ``hook`` is not callable, or a size, count or delay is not a number.
        ValueError: A size or count is below 1 (``retries`` and ``retry_delay`` below 0).
    """

    def __init__(
        self,
        hook: Callable[[list[Any], Any], Any],
        *,
        max_workers: int = 1,
        max_pending: int = 64,
        retries: int = 2,
        retry_delay: float = 0.05,
    ) -> None:
        if not callable(hook):
            raise TypeError(f"Background needs a callable hook, got {hook!r}")
        check_int("Background max_workers", max_workers, minimum=1)
        check_int("Background max_pending", max_pending, minimum=1)
        check_int("Background retries", retries, minimum=0)
        check_number("Background retry_delay", retry_delay, minimum=0)
        self.hook = hook
        self.name = _hook_name(hook)
        self._retries = retries
        self._retry_delay = retry_delay
        self._slots = threading.BoundedSemaphore(max_pending)
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="agentstate-bg")
        self._pending: set[Future[None]] = set()
        self._failed: list[tuple[list[Any], Any, BaseException]] = []
        self._lock = threading.Lock()
        _LIVE_BACKGROUNDS.add(self)

    def __repr__(self) -> str:
        return f"Background({self.name})"

    def __call__(self, pruned: list[Any], namespace: Any) -> None:
        self._raise_failures()
        self._slots.acquire()
        batch = list(pruned)
        try:
            future = self._executor.submit(self._run, batch, namespace)
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._finished)

    def run_now(self, pruned: list[Any], namespace: Any) -> None:
        """Run the hook on this thread (for replaying failed batches); raises what it raises."""
        self.hook(pruned, namespace)

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every submitted batch, then raise if any failed.

        Raises:
            BackgroundHookError: Batches failed after their retries; they are attached.
            TimeoutError: ``timeout`` seconds passed with batches still running.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._pending)
            if not pending:
                break
            for future in pending:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                future.exception(timeout=remaining)
        self._raise_failures()

    def close(self) -> None:
        """Drain, then stop the worker threads."""
        try:
            self.drain()
        finally:
            self._executor.shutdown(wait=True)
            _LIVE_BACKGROUNDS.discard(self)

    def _run(self, batch: list[Any], namespace: Any) -> None:
        delay = self._retry_delay
        for attempt in range(self._retries + 1):
            try:
                self.hook(batch, namespace)
                return
            except Exception as exc:
                if attempt == self._retries:
                    logger.warning(
                        "Background hook %s failed %d time(s) on %d message(s): %s; the batch "
                        "is kept and reported to the next caller",
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
            self._pending.discard(future)
        self._slots.release()

    def _raise_failures(self) -> None:
        with self._lock:
            if not self._failed:
                return
            failed, self._failed = self._failed, []
        count = sum(len(batch) for batch, _, _ in failed)
        raise BackgroundHookError(
            f"Background hook {self.name} failed on {len(failed)} earlier batch(es) "
            f"({count} message(s)) after {self._retries + 1} attempt(s) each; the batches are "
            "attached as .batches: replay them (Background.run_now) or store them elsewhere",
            failed,
        ) from failed[0][2]

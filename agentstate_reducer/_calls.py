"""Calling user code (summarizers, hooks) from sync and async reduces.

A reduce is written once as a generator that yields :class:`Call` effects and receives an
:class:`Outcome` for each; :func:`drive` runs it synchronously and :func:`adrive` on an
event loop. So the same reduce serves ``reduce`` and ``areduce``, and only these two
drivers know how user code is called:

* a plain function is called directly by :func:`drive`, and in a worker thread by
  :func:`adrive` (``asyncio.to_thread``: it may block on I/O);
* a coroutine function is awaited by :func:`adrive`; :func:`drive` runs it to completion on
  a private event loop in a worker thread (so it works inside and outside a running loop);
* an object with both forms (a callable with an ``acall`` coroutine method, such as the LLM
  summarizer) is called by :func:`drive` and its ``acall`` awaited by :func:`adrive`.

A reduce may also yield :class:`Wait`: wait, at most ``timeout`` seconds, for a
:class:`Signal` another reduce sets (the hand-off's claims on messages in flight).
:func:`drive` blocks its thread on it; :func:`adrive` awaits it, so the event loop keeps
running other tasks meanwhile (the reduce that sets it may run on the same loop). A
:func:`drive` on the thread of the loop whose task must set it does not block (that would
stop the loop): the outcome carries a :class:`LoopBlockedError` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class Call:
    """Call ``fn(*args)``; the reduce receives its :class:`Outcome`."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Outcome:
    """What a call returned, or the exception it raised."""

    value: Any = None
    error: Exception | None = None


class LoopBlockedError(RuntimeError):
    """A sync reduce on the thread of a running event loop met work a task of that same
    loop is doing (a hand-off, a summary): blocking the thread to wait for it would stop
    the loop that has to finish it, so the reduce does not wait."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Signal:
    """A one-shot flag set by one thread or task and waited for by others: threads block
    on it, event loops await it without blocking. Safe to share between threads and
    event loops. It remembers the event loop running where it was made, so that a thread
    about to block on it can tell it would stop the loop that has to set it."""

    __slots__ = ("_event", "_lock", "_loop", "_waiters")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._loop = _running_loop()

    def needs_this_thread(self) -> bool:
        """Whether it is unset and was made on the event loop running in this thread:
        blocking this thread on it would stop that loop until the wait runs out."""
        return self._loop is not None and not self._event.is_set() and self._loop is _running_loop()

    def set(self) -> None:
        """Set the flag and wake every waiter (threads and event loops)."""
        with self._lock:
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            # A closed loop raises: nobody is waiting there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future)

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Block this thread until the flag is set; False after ``timeout`` seconds."""
        return self._event.wait(timeout)

    async def wait_async(self, timeout: float) -> bool:
        """Await the flag on the running loop; False after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._event.is_set():
                return True
            self._waiters.append((loop, future))
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            return self._event.is_set()
        finally:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
        return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass(frozen=True)
class Wait:
    """Wait for ``signal``, at most ``timeout`` seconds; the reduce receives an
    :class:`Outcome` whose value says whether it was set."""

    signal: Signal
    timeout: float


Effect = Call | Wait
"""What a reduce yields to its driver."""

Effects = Generator[Effect, Outcome, _T]
"""A reduce (or part of one) written once for both drivers."""


def is_async_only(fn: Any) -> bool:
    """Whether ``fn`` can only be awaited (a coroutine function, or an object whose
    ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - the method, not callability
    )


def hook_name(hook: Any) -> str:
    """A readable name for a hook (or any user callable), for messages."""
    return getattr(hook, "__qualname__", None) or repr(hook)


def _async_form(fn: Any) -> Callable[..., Coroutine[Any, Any, Any]] | None:
    form: Callable[..., Coroutine[Any, Any, Any]] | None = None
    if is_async_only(fn):
        form = fn
    elif inspect.iscoroutinefunction(acall := getattr(fn, "acall", None)):
        form = acall
    return form


def _run_coroutine(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to completion on a private event loop in a worker thread."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentstate-async") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def call_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` from sync code, running it to completion if it is async."""
    if is_async_only(fn):
        return _run_coroutine(fn(*args))
    value = fn(*args)
    if inspect.iscoroutine(value):
        return _run_coroutine(value)
    return value


async def call_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` from async code without blocking the event loop."""
    form = _async_form(fn)
    if form is not None:
        return await form(*args)
    value = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(value):
        return await value
    return value


_LOOP_BLOCKED = (
    "reduce() was called on the thread of a running event loop while an areduce() task of "
    "that loop was working on the same messages; waiting would freeze the loop that has to "
    "finish it, so this reduce did not wait: call areduce() from async code"
)


def drive(effects: Effects[_T]) -> _T:
    """Run a reduce synchronously. A :class:`Wait` for a signal only this thread's running
    event loop can set is not waited for: the reduce receives a
    :class:`LoopBlockedError` as the outcome's error (and ``value=False``)."""
    try:
        effect = next(effects)
        while True:
            if isinstance(effect, Wait):
                if effect.signal.needs_this_thread():
                    outcome = Outcome(value=False, error=LoopBlockedError(_LOOP_BLOCKED))
                else:
                    outcome = Outcome(value=effect.signal.wait(effect.timeout))
            else:
                try:
                    outcome = Outcome(value=call_sync(effect.fn, *effect.args))
                except Exception as exc:
                    outcome = Outcome(error=exc)
            effect = effects.send(outcome)
    except StopIteration as stop:
        result: _T = stop.value
        return result


async def adrive(effects: Effects[_T]) -> _T:
    """Run a reduce on the running event loop, awaiting (or off-loading) each call."""
    try:
        effect = next(effects)
        while True:
            if isinstance(effect, Wait):
                outcome = Outcome(value=await effect.signal.wait_async(effect.timeout))
            else:
                try:
                    outcome = Outcome(value=await call_async(effect.fn, *effect.args))
                except Exception as exc:
                    outcome = Outcome(error=exc)
            effect = effects.send(outcome)
    except StopIteration as stop:
        result: _T = stop.value
        return result


class Outage:
    """When a piece of user code (a hook, a summarizer) last failed, and when to try it
    again: after a failure it is not called for ``backoff`` seconds, doubled on each
    further failure up to ``cap``; a success resets it. So a store or model that is down
    costs one failing call per wait, not one per reduce (each of which may wait for a
    timeout). ``backoff=0`` calls it every time. Safe to share between threads.
    """

    def __init__(self, backoff: float, cap: float = 60.0) -> None:
        self._backoff = backoff
        self._cap = max(cap, backoff)
        self._delay = 0.0
        self._retry_at = 0.0
        self._error: Exception | None = None
        self._lock = threading.Lock()

    def blocked(self) -> Exception | None:
        """The last error while waiting to try again; None when a call may go ahead."""
        with self._lock:
            if self._error is not None and time.monotonic() < self._retry_at:
                return self._error
            return None

    def failed(self, error: Exception) -> None:
        with self._lock:
            self._error = error
            if self._backoff > 0:
                self._delay = min(self._cap, self._delay * 2 if self._delay else self._backoff)
                self._retry_at = time.monotonic() + self._delay

    def succeeded(self) -> None:
        with self._lock:
            self._error, self._delay, self._retry_at = None, 0.0, 0.0

    @property
    def retry_in(self) -> float:
        """Seconds until the next call may go ahead (0 when it may now)."""
        with self._lock:
            return max(0.0, self._retry_at - time.monotonic()) if self._error else 0.0

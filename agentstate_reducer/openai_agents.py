"""OpenAI Agents SDK support (extra ``[openai-agents]``): a bounded session and a model-input
filter.

The Agents SDK keeps a conversation in a ``Session`` (``SQLiteSession``, the SQLAlchemy,
Redis or any other session): every run reads the items stored so far, then stores the new
input and each model turn's items (Responses API input items: messages, ``reasoning``,
``function_call`` and ``function_call_output``...). Two places take a reducer:

* :class:`ReducingSession` wraps the session you use and bounds what it **stores**, as
  ``ReducingCheckpointSaver`` does for LangGraph: after each ``add_items`` it reduces the
  stored items (the Responses format's rules: a call leaves with its output, a reasoning item
  with the call or message after it, parallel calls as one turn, the newest question and what
  follows stay) and writes back what survives; what left reaches the ``on_prune`` hooks once::

      session = ReducingSession(SQLiteSession("chat-7", "chats.db"), reducer)
      Runner.run_sync(agent, "question", session=session)

* :func:`model_input_filter` is a ``RunConfig(call_model_input_filter=...)`` that bounds only
  what the model is sent before each model call (``MessageReducer.aview``: nothing is stored,
  summarised or handed over); the items of a long run with many tool calls grow within the run,
  which the session sees only between runs::

      Runner.run_sync(agent, "question", run_config=RunConfig(
          call_model_input_filter=model_input_filter(reducer)))

Failures: new items are stored in the inner session before anything is reduced, so a reducer,
hook or summarizer error never costs them. A hook or summarizer that fails keeps every stored
item (``on_prune_error="keep"``): the session grows past the bound while it is down, and the
next ``add_items`` prunes and hands everything over once it is back. The reducer logs the
failure and ``reducer.handoff_status()`` shows it.

Writing back is the inner session's ``clear_session`` then ``add_items`` (the ``Session``
protocol has no other way to remove an old item); writes to one session id in this process
(two runs at once, several ``ReducingSession`` objects) take turns, so none is lost between
the two. When the inner session raises during the write-back, what it held is stored again
before the error reaches the caller (the items the reduce pruned reached the hooks already
and reach them again when pruned again: at least once).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ._extras import missing_extra
from .reducer import MessageReducer, check_reducer

try:
    from agents.items import TResponseInputItem
    from agents.run import CallModelData, ModelInputData
except ImportError as exc:
    raise missing_extra("agentstate_reducer.openai_agents", "openai-agents", exc) from exc

if TYPE_CHECKING:
    from agents.memory import Session

__all__ = ["ModelInputFilter", "ReducingSession", "model_input_filter"]

ModelInputFilter = Callable[[CallModelData[Any]], Awaitable[ModelInputData]]
"""What :func:`model_input_filter` returns: an async ``call_model_input_filter``."""

_METHODS = ("get_items", "add_items", "pop_item", "clear_session")

# One lock per (session class, session id) in this process. A threading lock, so runs on
# different event loops (``Runner.run_sync`` in threads) take turns too; it is taken by
# polling so that the event loop holding the waiting run keeps running.
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_POLL_SECONDS = 0.002


def _lock_for(inner: Any) -> threading.Lock:
    key = (f"{type(inner).__module__}.{type(inner).__qualname__}", str(inner.session_id))
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


class _Turn:
    """``async with _Turn(lock)``: hold ``lock`` without blocking the event loop."""

    __slots__ = ("_lock",)

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    async def __aenter__(self) -> None:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(_POLL_SECONDS)

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()


class ReducingSession:
    """A ``Session`` that stores what ``inner`` stores, bounded by ``reducer``.

    Reads (``get_items``, with or without ``limit``) are the inner session's. Each
    ``add_items`` first stores the new items in ``inner``, then reduces everything stored and,
    when something left (or a step rewrote an item, or a summary block changed), writes the
    survivors back (``inner.clear_session()`` then ``inner.add_items(surviving)``). What left
    reaches the reducer's ``on_prune`` hooks once, with ``namespace`` (by default the
    session id), before the write.

    The ``Session`` protocol is async only; ``Runner.run_sync`` drives it on its own loop. Blocking
    hooks and summarizers run in worker threads (``MessageReducer.areduce``).

    Args:
        inner: Any session: an object with a ``session_id`` and the async ``get_items``,
            ``add_items``, ``pop_item`` and ``clear_session`` of the SDK's ``Session``
            protocol.
        reducer: The reducer; its config says when and how to prune, summarise and hand over.
        namespace: Passed to the hooks and keys the reducer's memories (summaries,
            hand-offs); by default ``inner.session_id``.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``, or ``inner`` lacks a method of
            the ``Session`` protocol or its ``session_id``.

    Example:
        >>> from agents import SQLiteSession
        >>> from agentstate_reducer import MessageReducer
        >>> session = ReducingSession(SQLiteSession("chat-7"), MessageReducer(10, 40))
        >>> session.session_id
        'chat-7'
    """

    def __init__(self, inner: Session, reducer: MessageReducer, *, namespace: Any = None) -> None:
        check_reducer(reducer)
        missing = [name for name in _METHODS if not callable(getattr(inner, name, None))]
        if not hasattr(inner, "session_id"):
            missing.append("session_id")
        if missing:
            raise TypeError(
                f"ReducingSession: inner must be an Agents SDK Session (SQLiteSession, "
                f"SQLAlchemySession, ...); {inner!r} lacks {', '.join(missing)}"
            )
        self.inner = inner
        """The wrapped session."""
        self.reducer = reducer
        """The reducer bounding what ``inner`` stores."""
        self.session_id: str = inner.session_id
        """The inner session's id."""
        self.session_settings: Any = getattr(inner, "session_settings", None)
        """The inner session's ``session_settings`` (None where the SDK has none): how many
        items a run reads."""
        self.namespace = inner.session_id if namespace is None else namespace
        """What the hooks are given."""
        self._lock = _lock_for(inner)

    def __repr__(self) -> str:
        return f"ReducingSession({self.inner!r}, {self.reducer!r})"

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The stored items, oldest first (the newest ``limit`` when given)."""
        return await self.inner.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items``, then bound what is stored (see the class docstring).

        Raises:
            TypeError: A stored item is not a Responses API input item (the error names its
                position); the items were stored all the same.
            Exception: What the inner session raises.
        """
        async with _Turn(self._lock):
            await self.inner.add_items(items)
            stored = await self.inner.get_items()
            result = await self.reducer.areduce(
                stored, namespace=self.namespace, on_prune_error="keep"
            )
            if result.hook_error is not None or result.summary_error is not None:
                return  # everything stays stored; a later add hands it over
            kept = result.surviving
            if len(kept) == len(stored) and all(a is b for a, b in zip(kept, stored, strict=True)):
                return
            # A failing clear changes nothing (every item stays stored); a failing add after
            # it would leave the session empty, so what it held goes back first. Either way
            # what this reduce pruned already reached the hooks, and reaches them again when
            # a later add prunes it (at least once), never less.
            await self.inner.clear_session()
            try:
                await self.inner.add_items(list(kept))
            except BaseException as exc:
                await self._put_back(stored, exc)
                raise

    async def _put_back(self, stored: list[TResponseInputItem], cause: BaseException) -> None:
        """Store ``stored`` again after a failed write-back (shielded from cancellation:
        the session is empty until it is done)."""
        try:
            await asyncio.shield(self.inner.add_items(list(stored)))
        except Exception as again:
            raise RuntimeError(
                f"ReducingSession could not write back session {self.session_id!r} "
                f"({cause!r}), nor store again the {len(stored)} items it held ({again!r}): "
                "the inner session is empty; what the reduce pruned reached the on_prune "
                "hooks, the rest is lost from the session"
            ) from cause

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest stored item (None when there is none)."""
        async with _Turn(self._lock):
            return await self.inner.pop_item()

    async def clear_session(self) -> None:
        """Remove every stored item (nothing is handed over: the caller asked for it)."""
        async with _Turn(self._lock):
            await self.inner.clear_session()


def model_input_filter(reducer: MessageReducer, *, namespace: Any = None) -> ModelInputFilter:
    """A ``RunConfig(call_model_input_filter=...)`` that bounds what the model is sent.

    Before each model call the SDK hands it the model's input (the session's history, the new
    input and the run's items so far); it returns the input ``reducer.aview`` keeps: pairs
    whole, reasoning with its call, the newest question and what follows. Nothing is stored,
    summarised or handed to the hooks (``Summarize`` drops as ``DropOldest`` does): what the
    session stores is the session's business (see :class:`ReducingSession`).

    Args:
        reducer: The reducer whose policy and limits make the view.
        namespace: Given to the policy's steps (``context.namespace``); a value, or a callable
            of the SDK's ``CallModelData``.

    Returns:
        The coroutine function for ``call_model_input_filter``.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``.

    Example:
        >>> from agents import RunConfig
        >>> from agentstate_reducer import MessageReducer
        >>> config = RunConfig(call_model_input_filter=model_input_filter(MessageReducer(4, 8)))
    """
    check_reducer(reducer)
    name_of: Callable[[CallModelData[Any]], Any] | None = namespace if callable(namespace) else None

    async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        """Bound ``data.model_data.input`` (see :func:`model_input_filter`)."""
        where = name_of(data) if name_of is not None else namespace
        shown = await reducer.aview(data.model_data.input, namespace=where, on_prune_error="keep")
        return ModelInputData(
            input=list(shown.surviving), instructions=data.model_data.instructions
        )

    return call_model_input_filter


if TYPE_CHECKING:

    def _is_a_session(session: ReducingSession) -> Session:
        """mypy checks here that a ReducingSession is what ``Runner.run(session=)`` takes."""
        return session

"""``TokenCounter``: a counter with a bounded per-message cache."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..messages import CHAT, MessageView, call_parts_of, content_of, parts_of, view_of
from ..messages import chat as _chat
from ..messages.plain import plain_parts
from .counters import CHEAP_COUNTER, resolve_token_counter
from .estimate import estimate_tokens, parts_tokens

_CACHE_LIMIT = 200_000


class TokenCounter:
    """A counter with a bounded per-message cache; safe to share between threads.

    A message is cached under its id, role, text content and tool calls (ids, names and
    arguments), so an edited message (same id, new content or new tool-call arguments) is
    counted again. Messages without an id or with non-text content are counted every time.

    The default estimate is cached by what it counts instead: a message's
    :func:`~agentstate_reducer.messages.parts_of` (its texts, calls and images), which it
    reads anyway. Invariant: the estimate is a function of those parts alone
    (:func:`~agentstate_reducer.tokens.estimate.parts_tokens`), so a cached count equals a
    fresh ``estimate_tokens(message)`` for every message, with an id or not, edited or not;
    ``tests/test_tokens.py`` checks it over every format. The parts of a LangChain message or
    a Chat dict with text content come from
    :func:`~agentstate_reducer.messages.plain.plain_parts`, which also stands for reading
    its view (it reads only messages whose view reads without raising); anything else is
    read as before, its view first (which refuses what is not a message).
    """

    def __init__(self, counter: Any = None) -> None:
        # The default, resolved without the checks a counter given by the caller needs.
        self._count = estimate_tokens if counter is None else resolve_token_counter(counter)
        self._by_parts = self._count is estimate_tokens
        # A counter cheaper than its cache key (the built-in "approximate") is not cached:
        # its count is a function of the message alone, so calling it is the cached value.
        self._uncached = bool(getattr(self._count, CHEAP_COUNTER, False))
        self._cache: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()

    @property
    def direct(self) -> Callable[[Any], int] | None:
        """The counter itself, when calling it is all this object would do: a built-in
        counter cheaper than its cache key, which returns an int >= 0 for every message
        (``"approximate"``). A caller that has read the messages already (so knows they are
        messages) may map it over them. None otherwise."""
        return self._count if self._uncached else None

    def __call__(
        self, message: Any, where: str = "message", view: MessageView | None = None
    ) -> int:
        """Tokens of one message.

        Args:
            message: The message.
            where: Its position, for error messages.
            view: Its view, when the caller has one already (saves reading it again).

        Raises:
            TypeError: The counter returned something other than a non-negative int.
        """
        if self._uncached:
            if view is None:
                view_of(message, where)  # refuses what is not a message, naming where
            value = self._count(message)
            if type(value) is not int or value < 0:
                raise TypeError(
                    f"token_counter returned {value!r} for {where}; it must return an int >= 0"
                )
            return value
        key: tuple[Any, ...] | None = None
        if self._by_parts:
            parts = plain_parts(message)
            if parts is None:
                if view is None:
                    view_of(message, where)  # refuses what is not a message, naming where
                parts = parts_of(message)
            texts, made, images = parts
            key = (*texts, "", *made, images)  # "" ends the texts: calls are tuples
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            value = parts_tokens(parts)
            self._store(key, value)
            return value
        if view is None:
            view = view_of(message, where)
        if view.id is not None:
            # A message of the Chat family (the view says so) is read directly.
            chat_family = view.formats & CHAT
            content = _chat.content(message) if chat_family else content_of(message)
            if type(content) is str:
                calls: tuple[Any, ...] = ()
                if view.call_ids:
                    calls = _chat_calls(message) if chat_family else ()
                    if not calls:
                        calls = tuple(call_parts_of(message))
                key = (view.id, view.role, content, view.call_ids, calls)
                cached = self._cache.get(key)
                if cached is not None:
                    return cached
        value = self._count(message)
        if type(value) is not int or value < 0:
            raise TypeError(
                f"token_counter returned {value!r} for {where}; it must return an int >= 0"
            )
        if key is not None:
            self._store(key, value)
        return value

    def _store(self, key: tuple[Any, ...], value: int) -> None:
        cache = self._cache
        if len(cache) >= _CACHE_LIMIT:
            with self._lock:
                cache.clear()
        cache[key] = value  # a single dict store needs no lock


def _chat_calls(message: Any) -> tuple[Any, ...]:
    """The calls of a Chat-family message as the cache key holds them: the ``repr`` of its
    tool calls and legacy function call, when each is a plain dict (a C-level walk, where
    :func:`~agentstate_reducer.messages.call_parts_of` writes every call's arguments as
    JSON); ``()`` otherwise (then the key holds ``call_parts_of``).

    Invariant: two messages whose ``call_parts_of`` differ get different keys: a dict's
    ``repr`` holds every key and value it has, so every name and argument the parts are
    read from (a value JSON cannot encode is written by its ``str`` there, and its
    ``repr`` here); ``tests/test_hot_path.py`` checks it on edited calls in every format.
    """
    calls = _chat.tool_calls(message)
    legacy = _chat.function_call(message)
    if not all(type(call) is dict for call in calls) or (
        legacy is not None and type(legacy) is not dict
    ):
        return ()
    try:
        return ("dicts", repr(calls), repr(legacy))
    except Exception:  # a value whose repr raises: read the parts instead
        return ()

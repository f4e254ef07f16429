"""``TokenCounter``: a counter with a bounded per-message cache."""

from __future__ import annotations

import threading
from typing import Any

from ..messages import CHAT, MessageView, call_parts_of, content_of, parts_of, view_of
from ..messages import chat as _chat
from .counters import resolve_token_counter
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
    ``tests/test_tokens.py`` checks it over every format.
    """

    def __init__(self, counter: Any = None) -> None:
        self._count = resolve_token_counter(counter)
        self._by_parts = self._count is estimate_tokens
        self._cache: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()

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
        if view is None:
            view = view_of(message, where)
        key: tuple[Any, ...] | None = None
        if self._by_parts:
            texts, made, images = parts = parts_of(message)
            key = (*texts, "", *made, images)  # "" ends the texts: calls are tuples
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            value = parts_tokens(parts)
            self._store(key, value)
            return value
        if view.id is not None:
            # A message of the Chat family (the view says so) is read directly.
            content = _chat.content(message) if view.formats & CHAT else content_of(message)
            if type(content) is str:
                calls = tuple(call_parts_of(message)) if view.call_ids else ()
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

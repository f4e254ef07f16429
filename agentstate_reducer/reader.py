"""``Reader``: how one reducer reads a list: a view of each message and, in token mode,
its token count by the reducer's counter (a cached
:class:`~agentstate_reducer.tokens.TokenCounter`).

The reducer plans with it and gives it to each reduce's step context, so the context reads
messages exactly as the plan did without reaching into the reducer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .messages import MessageView, view_of
from .messages.reader import read_views
from .tokens import TokenCounter

if TYPE_CHECKING:
    from .planner import PlanState


class Reader:
    """Views and token counts of messages, for one reducer.

    Attributes:
        counter: The reducer's token counter; None in count mode (then nothing is counted
            and every count is 0).
    """

    def __init__(self, counter: TokenCounter | None) -> None:
        self.counter = counter

    def count(self, message: Any) -> int:
        """Tokens of one message (0 in count mode).

        Raises:
            TypeError: ``message`` is not a message, or the counter misbehaves.
        """
        counter = self.counter
        return 0 if counter is None else counter(message, "message", view_of(message, "message"))

    def extend(self, state: PlanState, messages: list[Any], where: Callable[[int], str]) -> None:
        """Read ``messages`` and append them to ``state``: LangChain's own messages in their
        plain shape in one pass (:meth:`~agentstate_reducer.planner.PlanState.extend_plain`),
        the rest by :meth:`read` and ``extend``.

        Raises:
            TypeError: An entry is not a message, or is of another format than the
                list's; the error names it by ``where(index)``.
        """
        taken = state.extend_plain(messages)
        if taken == len(messages):  # the common turn: every message read in the one pass
            if self.counter is not None:
                taken_views = state.views[len(state.views) - taken :]
                state.add_tokens(self._tokens(messages, taken_views, where))
            return
        if not taken:
            views, tokens = self.read(messages, where)
            state.extend(views, tokens, where)
            return
        rest = messages[taken:]

        def name(index: int) -> str:  # rest[index] is messages[taken + index]
            return where(taken + index)

        # In read's order: every message read (a non-message refused) before any is counted.
        views = self._views(rest, name)
        tokens = None
        if self.counter is not None:
            taken_views = state.views[len(state.views) - taken :]
            state.add_tokens(self._tokens(messages[:taken], taken_views, where))
            tokens = self._tokens(rest, views, name)
        state.extend(views, tokens, name)

    def read(
        self, messages: list[Any], where: Callable[[int], str]
    ) -> tuple[list[MessageView], list[int] | None]:
        """A view of each message and, in token mode, its tokens (None in count mode).

        Raises:
            TypeError: An entry is not a message; the error names it by ``where(index)``.
        """
        views = self._views(messages, where)
        if self.counter is None:
            return views, None
        return views, self._tokens(messages, views, where)

    def _views(self, messages: list[Any], where: Callable[[int], str]) -> list[MessageView]:
        """The views of ``messages``.

        Raises:
            TypeError: An entry is not a message; the error names it by ``where(index)``.
        """
        try:
            return read_views(messages)
        except TypeError:
            # Read again, naming positions, to say which entry is not a message.
            return [view_of(message, where(i)) for i, message in enumerate(messages)]

    def _tokens(
        self, messages: list[Any], views: list[MessageView], where: Callable[[int], str]
    ) -> list[int]:
        """The token counts of ``messages`` (each a message, ``views`` their views)."""
        count = self.counter
        assert count is not None  # token mode
        direct = count.direct
        if direct is not None:  # every entry is a message (each has a view)
            try:
                return list(map(direct, messages))
            except TypeError:  # a message the counter cannot read: say which one
                for index, message in enumerate(messages):
                    try:
                        direct(message)
                    except TypeError as exc:
                        raise TypeError(f"{where(index)}: {exc}") from exc
                raise
        try:
            return [count(message, "", view) for message, view in zip(messages, views, strict=True)]
        except TypeError:
            return [count(m, where(i), views[i]) for i, m in enumerate(messages)]

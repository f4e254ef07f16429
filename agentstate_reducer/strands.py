"""Strands Agents support (extra ``[strands]``): a ``ConversationManager`` that reduces.

A Strands ``Agent`` keeps its history in ``agent.messages`` (Bedrock Converse messages:
``{"role": "user" | "assistant", "content": [{"text": ...}, {"toolUse": ...}, ...]}``) and
hands it to its conversation manager, which changes the list in place:
``apply_management(agent)`` after every invocation, ``reduce_context(agent, e)`` when the
model reported a context-window overflow (Strands then retries the call), and, through the
hooks the manager registers, before model calls. :class:`ReducingConversationManager` does
all three with a :class:`~agentstate_reducer.MessageReducer`, read by the Bedrock format
(:mod:`agentstate_reducer.messages.bedrock`): an assistant message's ``toolUse`` blocks leave
with the user message holding their ``toolResult`` blocks (parallel calls too), reasoning
stays with its turn, roles keep alternating and the list starts with a user message. What
leaves reaches the ``on_prune`` hooks once; with ``inject_summary=True`` the running summary
is a message of the list.

Before a model call the reduce is awaited on the agent's event loop (coroutine hooks and
summarizers awaited, blocking ones in worker threads); ``apply_management`` and
``reduce_context`` are synchronous in Strands, so there hooks and summarizers run to
completion in the caller's thread (coroutines on a private event loop in a worker thread).
Wrap a slow hook in :class:`~agentstate_reducer.Background`.

Session persistence. Strands' session managers (``FileSessionManager``, ``S3SessionManager``,
any ``RepositorySessionManager``) store every message ever added, in order, and restore an
agent as ``restore_from_session(state)`` (messages to put first) followed by the stored
messages from index ``removed_message_count`` on. So the manager keeps, in its state, the
messages of ``agent.messages`` that come before the unchanged tail of that log (the first
message, kept while ``preserve_first`` is True, the summary block, and any message a step
rewrote), and ``removed_message_count`` is where that tail starts in the log. A restored
agent has the bounded history it had.

Errors, from the list's point of view:

* a hook or summarizer that fails while managing (after an invocation, before a model call)
  moves nothing: the list keeps every message and a later reduce, once the hook is back,
  hands them over (``reducer.handoff_status()`` shows the failure);
* on a context-window overflow the list must shrink: a failing hook's messages leave anyway
  and the reducer keeps them for its next reduce (``on_prune_error="raise"``); when nothing
  can leave (the list is down to what the policy keeps, or the summarizer fails) Strands'
  own ``ContextWindowOverflowException`` is raised, chained to the cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._extras import missing_extra
from .errors import PruneHookError, ReducerError
from .reducer import MessageReducer, check_reducer

try:
    from strands.agent.conversation_manager import ConversationManager
    from strands.hooks import BeforeModelCallEvent, HookRegistry
    from strands.types.exceptions import ContextWindowOverflowException
except ImportError as exc:
    raise missing_extra("agentstate_reducer.strands", "strands", exc) from exc

if TYPE_CHECKING:
    from strands.agent.agent import Agent

__all__ = ["ReducingConversationManager"]

logger = logging.getLogger(__name__)

_PREPEND = "prepend"
"""The state key of the messages that come before the log's tail."""


class ReducingConversationManager(ConversationManager):
    """A Strands ``ConversationManager`` that keeps ``agent.messages`` bounded with
    ``reducer`` (see the module docstring for what is kept where).

    Args:
        reducer: The reducer; its config says when and how to prune, summarise and hand
            over. Its ``format`` must be None or ``"bedrock"`` (Strands' messages are
            Bedrock Converse messages; the manager reads them as such).
        namespace: Passed to the hooks and keying the reducer's memories; a value, or a
            callable of the ``Agent``. By default ``(session_id, agent_id)`` when the agent
            has a session manager, else its ``agent_id``.
        per_turn: Reduce before model calls too, not only after each invocation: True
            (the default) before every call, an int ``n`` before every ``n``-th, False
            never. Without it a long chain of tool calls within one invocation grows the
            list past the bound until the invocation ends.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``, or ``per_turn`` is not a bool
            or an int.
        ValueError: ``per_turn`` is an int below 1, or the reducer's ``format`` names
            another format.

    Example:
        >>> from agentstate_reducer import MessageReducer
        >>> manager = ReducingConversationManager(MessageReducer(min_messages=6, max_messages=12))
        >>> manager.get_state()["removed_message_count"], manager.get_state()["prepend"]
        (0, [])

        Then ``Agent(model=..., conversation_manager=manager)``.
    """

    def __init__(
        self,
        reducer: MessageReducer,
        *,
        namespace: Any = None,
        per_turn: bool | int = True,
    ) -> None:
        check_reducer(reducer)
        if not isinstance(per_turn, int):
            raise TypeError(f"per_turn must be True, False or an int, got {per_turn!r}")
        if not isinstance(per_turn, bool) and per_turn < 1:
            raise ValueError(
                f"per_turn must be at least 1 (every n-th model call), got {per_turn!r}"
            )
        chosen = reducer.config.format
        if chosen not in (None, "bedrock"):
            raise ValueError(
                f"ReducingConversationManager: the reducer's format={chosen!r}, but Strands "
                "holds Bedrock Converse messages; use format=None or format='bedrock'"
            )
        super().__init__()
        self.reducer = reducer
        """The reducer given (its hand-off and summary memories serve this manager)."""
        self._reducer = reducer if chosen == "bedrock" else reducer.with_config(format="bedrock")
        self._namespace = namespace
        self._name_of: Callable[[Any], Any] | None = namespace if callable(namespace) else None
        self.per_turn = per_turn
        self._model_calls = 0
        self._prepend: list[Any] = []

    # -- Strands' interface --------------------------------------------------------------

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Register the before-model-call reduce (``per_turn``) with the base class's hooks."""
        super().register_hooks(registry, **kwargs)
        registry.add_callback(BeforeModelCallEvent, self._before_model_call)

    def apply_management(self, agent: Agent, **kwargs: Any) -> None:
        """Reduce ``agent.messages`` in place when they are over the reducer's bound.

        A hook or summarizer that fails leaves the list whole (it is retried on a later
        reduce); this never raises for it.

        Raises:
            TypeError: A message of ``agent.messages`` is not a Bedrock Converse message
                (the error names its index).
        """
        self._reduce(agent)

    def reduce_context(self, agent: Agent, e: Exception | None = None, **kwargs: Any) -> None:
        """Shrink ``agent.messages`` in place: with ``e`` (a context-window overflow) to at
        most half of what it holds beyond what the policy always keeps, by the reducer's
        rules; without ``e`` as :meth:`apply_management`.

        Raises:
            ContextWindowOverflowException: ``e`` is set and nothing could leave (the list
                is down to what the reducer keeps, or the summarizer failed); chained to
                ``e`` or to the summarizer's error.
        """
        if e is None:
            self._reduce(agent)
        else:
            self._shrink(agent, e)

    def get_state(self) -> dict[str, Any]:
        """The state Strands' session managers save: the base class's (with
        ``removed_message_count``, where the kept tail starts in the session's log) and the
        messages that come before that tail."""
        state = super().get_state()
        state[_PREPEND] = list(self._prepend)
        return state

    def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
        """Take the state back from a session; returns the messages that come before the
        log's tail (Strands puts them first in ``agent.messages``).

        Raises:
            ValueError: ``state`` is not this class's state (Strands' own check).
        """
        super().restore_from_session(state)
        stored = state.get(_PREPEND) or []
        if not isinstance(stored, list):
            raise ValueError(
                f"ReducingConversationManager state: {_PREPEND!r} must be a list of "
                f"messages, got {type(stored).__name__}"
            )
        self._prepend = list(stored)
        return list(self._prepend) or None

    # -- reducing --------------------------------------------------------------------------

    async def _before_model_call(self, event: BeforeModelCallEvent) -> None:
        # A coroutine (Strands awaits its hooks on the agent's event loop), so hooks and
        # summarizers are awaited or run in worker threads, never blocking that loop.
        if self.per_turn is False:
            return
        self._model_calls += 1
        if self.per_turn is True or self._model_calls % self.per_turn == 0:
            agent = event.agent
            before = list(agent.messages)
            result = await self._reducer.areduce(
                before, namespace=self._where(agent), on_prune_error="keep"
            )
            self._apply(agent, before, result.surviving)

    def _where(self, agent: Any) -> Any:
        if self._name_of is not None:
            return self._name_of(agent)
        if self._namespace is not None:
            return self._namespace
        session = getattr(getattr(agent, "_session_manager", None), "session_id", None)
        agent_id = getattr(agent, "agent_id", None)
        return (session, agent_id) if session is not None else agent_id

    def _reduce(self, agent: Any) -> None:
        before = list(agent.messages)
        result = self._reducer.reduce(before, namespace=self._where(agent), on_prune_error="keep")
        self._apply(agent, before, result.surviving)

    def _shrink(self, agent: Any, error: Exception) -> None:
        before = list(agent.messages)
        tighter = self._tighter(before)
        if tighter is None:
            raise ContextWindowOverflowException(
                f"ReducingConversationManager: the context window overflowed with "
                f"{len(before)} message(s) and none can leave"
            ) from error
        try:
            result = tighter.reduce(before, namespace=self._where(agent), on_prune_error="raise")
        except PruneHookError as failed:
            if failed.result is None or not failed.kept:
                raise ContextWindowOverflowException(
                    "ReducingConversationManager: the context window overflowed and the "
                    f"on_prune hooks failed with the reducer's retry store full: {failed}"
                ) from failed
            logger.warning(
                "context window overflow: %d message(s) left the list while an on_prune hook "
                "failed; the reducer keeps them and hands them over on its next reduce",
                len(failed.pruned),
            )
            result = failed.result
        except ReducerError as failed:  # the summarizer or a step's user code
            raise ContextWindowOverflowException(
                f"ReducingConversationManager: the context window overflowed and the list "
                f"could not be reduced: {failed}"
            ) from failed
        surviving = list(result.surviving)
        if not result.pruned and not result.rewritten:
            raise ContextWindowOverflowException(
                f"ReducingConversationManager: the context window overflowed with "
                f"{len(before)} message(s) and none can leave (the policy keeps them: the "
                "first message, the newest turn, keep_groups)"
            ) from error
        self._apply(agent, before, surviving)

    def _tighter(self, messages: Sequence[Any]) -> MessageReducer | None:
        """A reducer sharing this one's memories whose bound is half of ``messages``."""
        if len(messages) < 2:
            return None
        config = self._reducer.config
        if config.max_tokens is not None:
            total = sum(self._reducer.count_tokens(m) for m in messages)
            if total < 2:
                return None
            return self._reducer.with_config(
                max_tokens=total // 2, target_tokens=None, reply_reserve=0
            )
        half = len(messages) // 2
        return self._reducer.with_config(
            max_messages=len(messages) - 1, min_messages=min(config.min_messages, half)
        )

    def _apply(self, agent: Any, before: list[Any], surviving: Sequence[Any]) -> None:
        """Put ``surviving`` into ``agent.messages`` and move the log's offset: the longest
        run of messages at the end of ``surviving`` that are the same objects, in the same
        order, as the end of the log's tail in ``before`` is the new tail; what comes
        before it is the new prepend."""
        if len(surviving) == len(before) and all(
            a is b for a, b in zip(surviving, before, strict=True)
        ):
            return
        lead = _leading(before, self._prepend)
        tail = before[lead:]
        kept = 0
        while (
            kept < min(len(surviving), len(tail))
            and surviving[len(surviving) - 1 - kept] is tail[len(tail) - 1 - kept]
        ):
            kept += 1
        self.removed_message_count += len(tail) - kept
        self._prepend = list(surviving[: len(surviving) - kept])
        agent.messages[:] = list(surviving)


def _leading(messages: Sequence[Any], prepend: Sequence[Any]) -> int:
    """How many of ``messages``' first messages are ``prepend``'s (the same objects, or
    equal ones: a snapshot restores copies)."""
    count = 0
    for message, ours in zip(messages, prepend, strict=False):
        if message is not ours and message != ours:
            break
        count += 1
    return count

"""``MessageReducer``: plan which messages go, apply the plan, hand the pruned ones over."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .config import ReducerConfig
from .errors import PruneHookError, SummaryError
from .hooks import HookDelivery
from .messages import MessageView, view_of
from .planner import PlanLimits, PlanState, plan_prune
from .result import ReducerResult
from .summary import default_summary_builder
from .tokens import TokenCounter

logger = logging.getLogger(__name__)


class MessageReducer:
    """Keeps a message list bounded without breaking it.

    Works on plain dicts (OpenAI or LangChain shape, or LangChain's serialised form),
    LangChain messages and duck-typed objects, and returns them as given. One reducer may
    be shared between threads.

    Args:
        min_messages: Messages to keep once pruning starts.
        max_messages: Prune when the list is longer than this; None (the default) never
            prunes.
        config: A full :class:`ReducerConfig`; when given, ``min_messages`` and
            ``max_messages`` are ignored.

    Raises:
        TypeError: ``config`` is not a ReducerConfig, or an argument has the wrong type.
        ValueError: The limits contradict each other (see :class:`ReducerConfig`).

    Example:
        >>> reducer = MessageReducer(min_messages=2, max_messages=3)
        >>> history = [{"role": "system", "content": "Be brief."}]
        >>> history += [{"role": "user", "content": f"question {n}"} for n in range(3)]
        >>> [m["content"] for m in reducer.reduce(existing=history).surviving]
        ['Be brief.', 'question 1', 'question 2']
    """

    def __init__(
        self,
        min_messages: int = 0,
        max_messages: int | None = None,
        *,
        config: ReducerConfig | None = None,
    ) -> None:
        if config is None:
            config = ReducerConfig(min_messages=min_messages, max_messages=max_messages)
        elif not isinstance(config, ReducerConfig):
            raise TypeError(f"config must be a ReducerConfig, got {type(config).__name__}")
        self._config = config
        self._limits = PlanLimits(
            preserve_first=config.preserve_first,
            cascade=config.cascade_tool_messages,
            min_messages=config.min_messages,
            max_messages=config.max_messages,
            max_tokens=config.max_tokens,
            target_tokens=config.target_tokens,
        )
        self._count_tokens = TokenCounter(config.token_counter) if config.token_mode else None
        # The plan state of the last list this reducer returned, so that a chat growing by
        # a turn costs work for that turn only. Guarded by a lock that is only tried: a
        # thread finding it taken plans from scratch.
        self._session: _Session | None = None
        self._session_lock = threading.Lock()
        self._delivery = HookDelivery(
            config.on_prune, dedupe=config.dedupe_on_prune, window=config.dedupe_window
        )

    @property
    def config(self) -> ReducerConfig:
        """The configuration (immutable)."""
        return self._config

    @property
    def min_messages(self) -> int:
        """Messages kept once count mode prunes."""
        return self._config.min_messages

    @property
    def max_messages(self) -> int | None:
        """The count above which count mode prunes."""
        return self._config.max_messages

    def __repr__(self) -> str:
        c = self._config
        if c.token_mode:
            window = f"max_tokens={c.max_tokens}, target_tokens={c.effective_target_tokens}"
        else:
            window = f"min_messages={c.min_messages}, max_messages={c.max_messages}"
        return (
            f"MessageReducer({window}, preserve_first={c.preserve_first}, "
            f"cascade_tool_messages={c.cascade_tool_messages})"
        )

    def count_tokens(self, message: Any) -> int:
        """Tokens of one message by this reducer's counter (cached).

        Raises:
            TypeError: ``message`` is not a message, or the counter misbehaves.
        """
        counter = self._count_tokens or TokenCounter(self._config.token_counter)
        return counter(message, "message", view_of(message, "message"))

    def plan(self, messages: Sequence[Any]) -> ReducerResult:
        """Split ``messages`` into surviving and pruned, with no summary and no hooks.

        Pure: nothing is called but the token counter.

        Raises:
            TypeError: ``messages`` is not a list of messages; the error names the index.
        """
        combined = _as_list(messages, "messages")
        pruned_at = self._plan(combined, lambda i: f"messages[{i}]")
        return _split(combined, pruned_at)

    def reduce(
        self,
        existing: Sequence[Any] | None = None,
        new: Sequence[Any] | None = None,
        namespace: Any = None,
    ) -> ReducerResult:
        """Append ``new`` to ``existing`` and prune the result if it is over the limit.

        Args:
            existing: The current messages.
            new: Messages to append.
            namespace: Passed unchanged to every ``on_prune`` hook (for example a
                long-term memory namespace).

        Returns:
            The surviving and pruned messages (``surviving + pruned`` holds every input
            message once, in input order within each), and the summary if one was made.

        Raises:
            TypeError: An argument is not a list of messages (the error names the
                position, such as ``new[2]``), or a counter or hook returns the wrong type.
            SummaryError: ``summarize_fn`` raised; nothing was pruned.
            PruneHookError: An ``on_prune`` hook raised (with the default
                ``on_prune_error="raise"``); the messages stay undelivered for a retry.
        """
        old = _as_list(existing, "existing")
        added = _as_list(new, "new")
        combined = old + added
        split_at = len(old)

        def where(i: int) -> str:
            return f"existing[{i}]" if i < split_at else f"new[{i - split_at}]"

        owned = self._session_lock.acquire(blocking=False)
        try:
            return self._reduce(combined, where, namespace, remember=owned)
        finally:
            if owned:
                self._session_lock.release()

    def _reduce(
        self, combined: list[Any], where: Callable[[int], str], namespace: Any, *, remember: bool
    ) -> ReducerResult:
        state, known = self._resume(combined) if remember else (PlanState(self._limits), 0)
        views, tokens = self._read(combined[known:], lambda i: where(known + i))
        state.extend(views, tokens)
        if remember:
            self._session = _Session(state, list(combined))
        end = state.window_end()
        if end is None:
            return ReducerResult(surviving=combined, pruned=[])
        pruned_at = state.pruned_positions(end)
        kept = state.kept_in_window(end)
        result = ReducerResult(
            surviving=combined[: state.start] + [combined[p] for p in kept] + combined[end:],
            pruned=[combined[p] for p in pruned_at],
        )
        config = self._config
        if config.summarize_fn is not None:
            builder = self._summary_builder(combined) if config.inject_summary else None
            result.summary = self._summarize(result.pruned)
            if builder is not None and result.summary is not None:
                block = builder(result.summary, len(result.pruned))
                if not isinstance(block, list):
                    raise TypeError(
                        f"summary_message_factory must return a list of messages, got {block!r}"
                    )
                at = pruned_at[0]
                result.surviving[at:at] = block
                result.summary_messages = block
        if self._delivery:
            try:
                self._delivery.deliver(result.pruned, namespace)
            except PruneHookError as exc:
                exc.result = result
                if config.on_prune_error == "raise":
                    raise
                logger.warning("%s; keeping every message this time", exc)
                return ReducerResult(surviving=combined, pruned=[], hook_error=exc)
        if remember:
            if result.summary_messages:
                # The injected block has no place in the plan state: rebuild next time.
                self._session = None
            else:
                state.prune(end)
                self._session = _Session(state, list(result.surviving))
        logger.debug(
            "reduced %d messages to %d (pruned %d)",
            len(combined),
            len(result.surviving),
            len(result.pruned),
        )
        return result

    def deliver(self, pruned: Sequence[Any], namespace: Any = None) -> None:
        """Hand ``pruned`` to the ``on_prune`` hooks, with this reducer's dedupe memory.

        Raises:
            PruneHookError: A hook raised; its messages stay undelivered for a retry.
        """
        self._delivery.deliver(list(pruned), namespace)

    def as_langgraph_reducer(self, **options: Any) -> Callable[[Any, Any], list[Any]]:
        """A ``(existing, new) -> list`` function for ``Annotated[list, ...]`` LangGraph state.

        It merges each update exactly as LangGraph's ``add_messages`` does, then bounds
        the list with this reducer. Needs the ``langgraph`` extra.

        Args:
            **options: Passed to
                :func:`agentstate_reducer.langgraph.state.langgraph_reducer`.

        Raises:
            ImportError: langchain-core is not installed.
        """
        try:
            from .langgraph.state import langgraph_reducer
        except ImportError as exc:
            raise ImportError(
                "as_langgraph_reducer() needs LangGraph: "
                'pip install "agentstate-reducer[langgraph]"'
            ) from exc
        return langgraph_reducer(self, **options)

    def _plan(self, messages: list[Any], where: Callable[[int], str]) -> list[int]:
        views, tokens = self._read(messages, where)
        return plan_prune(views, self._limits, tokens)

    def _read(
        self, messages: list[Any], where: Callable[[int], str]
    ) -> tuple[list[MessageView], list[int] | None]:
        views = [view_of(message, where(i)) for i, message in enumerate(messages)]
        count = self._count_tokens
        if count is None:
            return views, None
        return views, [count(message, where(i), views[i]) for i, message in enumerate(messages)]

    def _resume(self, combined: list[Any]) -> tuple[PlanState, int]:
        """The remembered plan state if ``combined`` extends the list it describes."""
        session = self._session
        if session is not None:
            known = len(session.messages)
            try:
                same = len(combined) >= known and combined[:known] == session.messages
            except Exception:  # a message type whose == raises: just start afresh
                same = False
            if same:
                return session.state, known
        return PlanState(self._limits), 0

    def _summary_builder(self, messages: list[Any]) -> Callable[[str, int], list[Any]]:
        factory = self._config.summary_message_factory
        if factory is not None:
            return factory
        return default_summary_builder(messages)

    def _summarize(self, pruned: list[Any]) -> str | None:
        summarize = self._config.summarize_fn
        assert summarize is not None
        try:
            summary = summarize(pruned)
        except Exception as exc:
            raise SummaryError(
                f"summarize_fn failed on {len(pruned)} pruned message(s): "
                f"{type(exc).__name__}: {exc}; nothing was pruned",
                pruned,
            ) from exc
        if summary is not None and not isinstance(summary, str):
            raise TypeError(f"summarize_fn must return a str or None, got {summary!r}")
        return summary


class _Session(NamedTuple):
    state: PlanState
    messages: list[Any]


def _as_list(messages: Sequence[Any] | None, name: str) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        hint = " (wrap a single message in a list)" if isinstance(messages, Mapping) else ""
        raise TypeError(f"{name} must be a list of messages, got {type(messages).__name__}{hint}")
    return list(messages)


def _split(messages: list[Any], pruned_at: list[int]) -> ReducerResult:
    gone = set(pruned_at)
    return ReducerResult(
        surviving=[m for i, m in enumerate(messages) if i not in gone],
        pruned=[messages[i] for i in pruned_at],
    )

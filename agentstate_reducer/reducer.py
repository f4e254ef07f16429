"""``MessageReducer``: plan which messages go, apply the plan, hand the pruned ones over."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .config import ReducerConfig
from .errors import PruneHookError, SummaryError
from .hooks import HookDelivery
from .messages import MessageView, id_of, read_view, view_of
from .planner import PlanLimits, PlanState, plan_prune
from .policy import ReductionStep, StepReport, default_policy
from .result import ReducerResult
from .summary import default_summary_builder
from .tokens import TokenCounter
from .validate import find_problems

logger = logging.getLogger(__name__)

# Summaries remembered per set of pruned message ids (see ``_summarize``).
_SUMMARY_MEMORY = 32


class MessageReducer:
    """Keeps a message list bounded without breaking it.

    Works on plain dicts (OpenAI or LangChain shape, or LangChain's serialised form),
    LangChain messages and duck-typed objects, and returns them as given (steps that
    rewrite content, such as ``ClearToolOutputs``, return rewritten copies). One reducer
    may be shared between threads.

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
        self._limits = PlanLimits.from_config(config)
        self._policy: tuple[ReductionStep, ...] = (
            tuple(config.policy)
            if config.policy is not None
            else default_policy(config.summarize_fn is not None)
        )
        self._count_tokens = TokenCounter(config.token_counter) if config.token_mode else None
        self._delivery = HookDelivery(
            config.on_prune, dedupe=config.dedupe_on_prune, window=config.dedupe_window
        )
        # The plan state of the last list this reducer returned, so that a chat growing by
        # a turn costs work for that turn only. Guarded by a lock that is only tried: a
        # thread finding it taken plans from scratch.
        self._session: _Session | None = None
        self._session_lock = threading.Lock()
        self._summaries: dict[tuple[str | None, ...], str | None] = {}
        self._summary_lock = threading.Lock()

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

    @property
    def limits(self) -> PlanLimits:
        """The limits the plan enforces (the history budget, after the reply reserve)."""
        return self._limits

    @property
    def steps(self) -> tuple[ReductionStep, ...]:
        """The policy's steps, in the order they run."""
        return self._policy

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
        """Split ``messages`` into surviving and pruned as the plain plan would, with no
        policy steps, no summary and no hooks.

        Pure: nothing is called but the token counter.

        Raises:
            TypeError: ``messages`` is not a list of messages; the error names the index.
        """
        combined = _as_list(messages, "messages")
        views, tokens = self._read(combined, lambda i: f"messages[{i}]")
        pruned_at = plan_prune(views, self._limits, tokens)
        gone = set(pruned_at)
        return ReducerResult(
            surviving=[m for i, m in enumerate(combined) if i not in gone],
            pruned=[combined[i] for i in pruned_at],
        )

    def validate(self, messages: Sequence[Any]) -> ReducerResult:
        """Audit ``messages`` without changing anything.

        Returns:
            A result whose ``surviving`` is every message, ``pruned`` is empty and
            ``problems`` lists the budget overrun and provider-validity problems found
            (orphan tool results, dangling tool calls, a first message that is not a
            user message).

        Raises:
            TypeError: ``messages`` is not a list of messages; the error names the index.
        """
        combined = _as_list(messages, "messages")
        views, tokens = self._read(combined, lambda i: f"messages[{i}]")
        total = sum(tokens) if tokens is not None else None
        return ReducerResult(
            surviving=combined,
            pruned=[],
            problems=find_problems(
                views,
                total_tokens=total,
                max_tokens=self._config.history_max_tokens,
                max_messages=self._config.max_messages,
            ),
            tokens_before=total or 0,
            tokens_after=total or 0,
        )

    def reduce(
        self,
        existing: Sequence[Any] | None = None,
        new: Sequence[Any] | None = None,
        namespace: Any = None,
    ) -> ReducerResult:
        """Append ``new`` to ``existing`` and, if the result is over the limit, run the
        policy's steps until it fits.

        In ``mode="validate"`` nothing changes: the result reports the problems found, as
        :meth:`validate` does.

        Args:
            existing: The current messages.
            new: Messages to append.
            namespace: Passed unchanged to every ``on_prune`` hook (for example a
                long-term memory namespace).

        Returns:
            The surviving and pruned messages (``surviving + pruned`` holds every input
            message once, in input order within each, unless a step rewrote or added
            messages), the summary if one was made, and a report per step that ran.

        Raises:
            TypeError: An argument is not a list of messages (the error names the
                position, such as ``new[2]``), or a counter or hook returns the wrong type.
            SummaryError: ``summarize_fn`` raised; nothing was pruned.
            PruneHookError: An ``on_prune`` hook raised (with the default
                ``on_prune_error="raise"``); the messages stay undelivered for a retry.
        """
        combined, where = _combine(existing, new)
        if self._config.mode == "validate":
            return self.validate(combined)
        return self._locked_reduce(combined, where, namespace, self._policy)

    def apply_step(
        self, step_id: str, messages: Sequence[Any], namespace: Any = None
    ) -> ReducerResult:
        """Run exactly one step of the policy on ``messages``, if they are over the limit.

        Args:
            step_id: The ``id`` of a step of this reducer's policy.
            messages: The messages.
            namespace: Passed to the ``on_prune`` hooks.

        Raises:
            KeyError: No step of the policy has that id (the error lists the ids).
            SummaryError: As for :meth:`reduce`.
            PruneHookError: As for :meth:`reduce`.
        """
        step = next((s for s in self._policy if s.id == step_id), None)
        if step is None:
            known = ", ".join(repr(s.id) for s in self._policy)
            raise KeyError(f"no reduction step {step_id!r} in this reducer's policy ({known})")
        combined, where = _combine(messages, None)
        return self._locked_reduce(combined, where, namespace, (step,))

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
            ImportError: The ``[langgraph]`` extra is not installed (the error names the
                missing package).
        """
        # Imported here: the core itself never depends on the LangGraph edge. Importing it
        # without the extra raises an ImportError naming the package to install.
        from .langgraph.merge import langgraph_reducer

        return langgraph_reducer(self, **options)

    def _locked_reduce(
        self,
        combined: list[Any],
        where: Callable[[int], str],
        namespace: Any,
        steps: Sequence[ReductionStep],
    ) -> ReducerResult:
        owned = self._session_lock.acquire(blocking=False)
        try:
            return self._reduce(combined, where, namespace, steps, remember=owned)
        finally:
            if owned:
                self._session_lock.release()

    def _reduce(
        self,
        combined: list[Any],
        where: Callable[[int], str],
        namespace: Any,
        steps: Sequence[ReductionStep],
        *,
        remember: bool,
    ) -> ReducerResult:
        state, known = self._resume(combined) if remember else (PlanState(self._limits), 0)
        views, tokens = self._read(combined[known:], lambda i: where(known + i))
        state.extend(views, tokens)
        if not state.over_limit():
            if remember:
                self._session = _Session(state, list(combined))
            return ReducerResult(
                surviving=combined, pruned=[], tokens_before=state.total, tokens_after=state.total
            )
        if remember:
            self._session = None  # until the steps below succeed
        # If a step or hook raises, the session stays empty: the state went part of the
        # way, and the caller's list is planned afresh next time.
        work = _Work(self, combined, state)
        work.run(steps)
        result = work.result()
        if self._delivery and result.pruned:
            self._hand_over(result, namespace, work.original)
        if result.hook_error is not None:
            return result
        if remember:
            self._session = _Session(work.state, list(result.surviving))
        logger.debug(
            "reduced %d messages to %d (pruned %d)",
            len(combined),
            len(result.surviving),
            len(result.pruned),
        )
        return result

    def _hand_over(self, result: ReducerResult, namespace: Any, original: list[Any]) -> None:
        try:
            self._delivery.deliver(result.pruned, namespace)
        except PruneHookError as exc:
            exc.result = result
            if self._config.on_prune_error == "raise":
                raise
            logger.warning("%s; keeping every message this time", exc)
            result.surviving = original
            result.pruned = []
            result.summary = None
            result.summary_messages = []
            result.hook_error = exc

    def _read(
        self, messages: list[Any], where: Callable[[int], str]
    ) -> tuple[list[MessageView], list[int] | None]:
        try:
            views = [read_view(message) for message in messages]
        except TypeError:
            # Read again, naming positions, to say which entry is not a message.
            views = [view_of(message, where(i)) for i, message in enumerate(messages)]
        count = self._count_tokens
        if count is None:
            return views, None
        try:
            tokens = [
                count(message, "", view) for message, view in zip(messages, views, strict=True)
            ]
        except TypeError:
            tokens = [count(m, where(i), views[i]) for i, m in enumerate(messages)]
        return views, tokens

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
        if summarize is None:
            return None
        # LangGraph replays channel writes (get_state, resuming after an interrupt), which
        # reduces the same list again: reuse the summary of the same pruned messages.
        ids = tuple(id_of(m) for m in pruned)
        key = ids if all(ids) else None
        if key is not None:
            with self._summary_lock:
                if key in self._summaries:
                    return self._summaries[key]
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
        if key is not None:
            with self._summary_lock:
                self._summaries[key] = summary
                while len(self._summaries) > _SUMMARY_MEMORY:
                    self._summaries.pop(next(iter(self._summaries)))
        return summary


class _Work:
    """One reduce in progress: the list being changed and its plan state, for the steps."""

    def __init__(self, reducer: MessageReducer, messages: list[Any], state: PlanState) -> None:
        self._reducer = reducer
        self.original = messages
        self.messages = list(messages)  # steps may rewrite entries in place
        self.state = state
        limits = reducer._limits
        target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
        self.target = target or 0
        self.pruned: list[Any] = []
        self.summary: str | None = None
        self.summary_messages: list[Any] = []
        self.reports: list[StepReport] = []
        self.tokens_before = state.total

    def run(self, steps: Sequence[ReductionStep]) -> None:
        for step in steps:
            if self.state.fits():
                break
            tokens, length = self.state.total, len(self.messages)
            touched = step.apply(self)
            self.reports.append(
                StepReport(
                    step=step.id,
                    touched=touched,
                    tokens_before=tokens,
                    tokens_after=self.state.total,
                    messages_before=length,
                    messages_after=len(self.messages),
                )
            )

    def count(self, message: Any) -> int:
        counter = self._reducer._count_tokens
        return 0 if counter is None else counter(message, "message", view_of(message, "message"))

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten message (same role and tool links) at ``position``."""
        view = view_of(message, f"messages[{position}]")
        self.state.replace(position, view, self.count(message))
        self.messages[position] = message

    def drop(self, *, summarize: bool) -> list[Any]:
        """Prune towards the target; with ``summarize``, summarise (and inject) too."""
        state = self.state
        end = state.end_for_target()
        if end is None:
            return []
        pruned_at = state.pruned_positions(end)
        if not pruned_at:
            return []
        kept = state.kept_in_window(end)
        messages = self.messages
        pruned = [messages[p] for p in pruned_at]
        block: list[Any] = []
        if summarize:
            reducer = self._reducer
            inject = reducer._config.inject_summary
            builder = reducer._summary_builder(messages) if inject else None
            summary = reducer._summarize(pruned)
            if summary is not None:
                self.summary = summary
                if builder is not None:
                    block = builder(summary, len(pruned))
                    if not isinstance(block, list):
                        raise TypeError(
                            f"summary_message_factory must return a list of messages, got {block!r}"
                        )
        start = state.start
        head = messages[:start] + [messages[p] for p in kept]
        self.messages = head + block + messages[end:]
        if block:
            # The injected block has no place in the incremental state: rebuild it.
            rebuilt = PlanState(self._reducer._limits)
            views, tokens = self._reducer._read(self.messages, lambda i: f"messages[{i}]")
            rebuilt.extend(views, tokens)
            self.state = rebuilt
            self.summary_messages = block
        else:
            state.prune(end)
        self.pruned.extend(pruned)
        return pruned

    def result(self) -> ReducerResult:
        return ReducerResult(
            surviving=self.messages,
            pruned=self.pruned,
            summary=self.summary,
            summary_messages=self.summary_messages,
            steps=self.reports,
            tokens_before=self.tokens_before,
            tokens_after=self.state.total,
        )


class _Session(NamedTuple):
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


def _combine(
    existing: Sequence[Any] | None, new: Sequence[Any] | None
) -> tuple[list[Any], Callable[[int], str]]:
    old = _as_list(existing, "existing")
    added = _as_list(new, "new")
    split_at = len(old)

    def where(i: int) -> str:
        return f"existing[{i}]" if i < split_at else f"new[{i - split_at}]"

    return old + added, where


def _as_list(messages: Sequence[Any] | None, name: str) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        hint = " (wrap a single message in a list)" if isinstance(messages, dict) else ""
        raise TypeError(f"{name} must be a list of messages, got {type(messages).__name__}{hint}")
    return list(messages)

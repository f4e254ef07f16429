"""``MessageReducer``: plan which messages go, run the policy, hand what left over.

A reduce is written once, as a generator of calls to user code (``summarize_fn``, the
``on_prune`` hooks; see :mod:`agentstate_reducer._calls`): ``reduce`` runs it
synchronously, ``areduce`` on the event loop, awaiting coroutine hooks and summarizers and
running blocking ones in worker threads.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace as _replace_fields
from typing import Any, Literal

from ._calls import Effects, adrive, drive, hook_name
from ._checks import check_choice
from ._memory import namespace_key
from .calibration import ShownMemory, calibrate, calibration_of
from .config import HANDOFF_KEYWORDS, ReducerConfig
from .context import ReduceContext
from .errors import PruneHookError, SummaryError
from .hooks import (
    HandoffStatus,
    HookDelivery,
    HookFailure,
    PendingBatch,
    hook_error,
    waiting_error,
)
from .messages import view_of
from .planner import PlanLimits, PlanState
from .reader import Reader
from .result import ReducerResult
from .rewrites import Rewrites
from .session import PlanCache
from .steps.contract import ReductionStep, StepReport
from .steps.drop import DropOldest
from .steps.policy import default_policy
from .summary import RunningSummary, SummaryMemory
from .tokens import TokenCounter
from .tokens.usage import Calibration
from .validate import find_problems

logger = logging.getLogger(__name__)

OnPruneError = Literal["raise", "keep"]


class MessageReducer:
    """Keeps a message list bounded without breaking it.

    Works on plain dicts (OpenAI or LangChain shape, or LangChain's serialised form),
    LangChain messages and duck-typed objects, and returns them as given (steps that
    rewrite content, such as ``ClearToolOutputs``, return rewritten copies). One reducer
    may be shared between threads, event loops and conversations: its memories (hand-off,
    summaries) are keyed by namespace and content, never by message ids alone.

    Built without ``config``, it never prunes (``max_messages=None``, the seed's default
    for ``MessageReducer``); ``ReducerConfig()`` prunes above 20 (the seed's default for
    the config).

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
        self._reader = Reader(TokenCounter(config.token_counter) if config.token_mode else None)
        handoff = config.handoff
        self._delivery = HookDelivery(
            config.on_prune,
            dedupe=handoff.dedupe,
            window=handoff.dedupe_window,
            pending_limit=handoff.max_pending,
            backoff=handoff.retry_backoff,
            wait=handoff.wait,
        )
        # The plan state of the last list this reducer returned, so that a chat growing by
        # a turn costs work for that turn only (see PlanCache).
        self._plans = PlanCache(self._limits)
        self.rewrites = Rewrites()
        """The messages steps wrote in place of others (their originals were handed over)."""
        self.summaries = RunningSummary(config, self._limits, self._reader.count, SummaryMemory())
        """The running summary: how this reducer makes, remembers and places it."""
        # What models were shown, by this reducer's count (calibration; see ShownMemory).
        self._shown = ShownMemory()
        self._adds_to_view = any(step.view_only for step in self._policy)
        self._validating = config.mode == "validate"
        # Count mode, reducing: a list of at most this many messages is kept whole, and
        # _fit_quickly returns it (0: not a reducer of that kind).
        self._fit_limit = (
            0
            if config.token_mode or self._validating or config.calibrate
            else (self._limits.max_messages or sys.maxsize)
        )
        # The default policy without a summary, hooks or calibration: a prune is the plan's
        # window and nothing else, done by _drop_oldest without a step context.
        only = self._policy[0] if len(self._policy) == 1 else None
        self._plain_drop: str | None = (
            only.id
            if type(only) is DropOldest and not self._delivery and not config.calibrate
            else None
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

    @property
    def limits(self) -> PlanLimits:
        """The limits the plan enforces (the history budget, after the reply reserve)."""
        return self._limits

    @property
    def steps(self) -> tuple[ReductionStep, ...]:
        """The policy's steps, in the order they run."""
        return self._policy

    @property
    def adds_to_view(self) -> bool:
        """Whether the policy has a view-only step (``Recall``): then what a model is shown
        should come from :meth:`view`, even of a list a persistent reduce just bounded."""
        return self._adds_to_view

    def __repr__(self) -> str:
        c = self._config
        if c.token_mode:
            window = f"max_tokens={c.max_tokens}, target_tokens={c.effective_target_tokens}"
        else:
            window = f"min_messages={c.min_messages}, max_messages={c.max_messages}"
        return (
            f"MessageReducer({window}, preserve_first={c.preserve_first!r}, "
            f"cascade_tool_messages={c.cascade_tool_messages})"
        )

    def with_config(self, **changes: Any) -> MessageReducer:
        """A reducer with some config fields changed that shares this one's memories.

        Messages handed over through either are not handed over again by the other (their
        claims are shared too), and summaries made by either are reused by both (one at a
        time per conversation, across both). Used by the agent integrations, for
        example to keep only a system prompt at index 0.

        Args:
            **changes: ``ReducerConfig`` fields to change; ``on_prune`` and ``handoff``
                (or any of the keywords :class:`~agentstate_reducer.Handoff` replaced)
                cannot change, since the hand-off memory is shared.

        Raises:
            ValueError: ``on_prune`` or ``handoff`` is changed, or the changed config is
                invalid.
            TypeError: A field has the wrong type, or is not a ReducerConfig field.
        """
        for name in ("on_prune", "handoff", *HANDOFF_KEYWORDS):
            if name in changes and changes[name] != getattr(self._config, name):
                raise ValueError(
                    f"with_config cannot change {name}: the derived reducer shares this "
                    "one's hand-off memory; build a new MessageReducer instead"
                )
        derived = MessageReducer(config=_replace_fields(self._config, **changes))
        derived._delivery = self._delivery
        derived.rewrites = self.rewrites
        derived.summaries.share(self.summaries)
        derived._shown = self._shown
        # A derived reducer that counts with the same counter shares its cache; one in
        # count mode counts nothing, as any count-mode reducer (its tokens are 0).
        if (
            derived._reader.counter is not None
            and derived._config.token_counter is self._config.token_counter
        ):
            derived._reader.counter = self._reader.counter or derived._reader.counter
        return derived

    def count_tokens(self, message: Any) -> int:
        """Tokens of one message by this reducer's counter (cached).

        Raises:
            TypeError: ``message`` is not a message, or the counter misbehaves.
        """
        counter = self._reader.counter or TokenCounter(self._config.token_counter)
        return counter(message, "message", view_of(message, "message"))

    def plan(self, messages: Sequence[Any]) -> ReducerResult:
        """Split ``messages`` into surviving and pruned as the plain plan would, with no
        policy steps, no summary and no hooks.

        Pure: nothing is called but the token counter.

        Raises:
            TypeError: ``messages`` is not a list of messages; the error names the index.
        """
        combined = _as_list(messages, "messages")
        state = self._read(combined, None, remember=False)
        end = state.window_end()
        pruned_at = [] if end is None else state.pruned_positions(end)
        gone = set(pruned_at)
        return ReducerResult(
            surviving=[m for i, m in enumerate(combined) if i not in gone],
            pruned=[combined[i] for i in pruned_at],
            calibration=self._calibration(state),
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
        state = self._read(combined, None, remember=False)  # a mix of formats raises here
        total = state.total if self._config.token_mode else None
        return ReducerResult(
            surviving=combined,
            pruned=[],
            problems=find_problems(
                state.views,
                total_tokens=total,
                max_tokens=self._config.history_max_tokens,
                max_messages=self._config.max_messages,
                format=state.format,
            ),
            tokens_before=total or 0,
            tokens_after=total or 0,
            calibration=self._calibration(state),
        )

    def reduce(
        self,
        existing: Sequence[Any] | None = None,
        new: Sequence[Any] | None = None,
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """Append ``new`` to ``existing`` and, if the result is over the limit, run the
        policy's steps until it fits, then hand what left the list to the hooks.

        In ``mode="validate"`` nothing changes: the result reports the problems found, as
        :meth:`validate` does. Async hooks and summarizers are run to completion on a
        private event loop; in async code use :meth:`areduce`.

        Args:
            existing: The current messages.
            new: Messages to append.
            namespace: Passed unchanged to every ``on_prune`` hook (for example a
                long-term memory namespace); also keys the summary and hand-off memories.
            on_prune_error: Overrides ``config.handoff.on_error`` for this call.

        Returns:
            The surviving and pruned messages (``surviving + pruned`` holds every input
            message once, in input order within each, except that a step may have rewritten
            messages, a new summary block replaces the one it folded, which is in
            ``folded_summaries``), the summary if one was made, and a report per step.

        Raises:
            TypeError: An argument is not a list of messages (the error names the
                position, such as ``new[2]``), or a counter, summarizer or hook returns the
                wrong type.
            SummaryError: ``summarize_fn`` raised (with ``on_prune_error="raise"``);
                nothing was pruned.
            StepError: User code a step called (a compressor, an embeddings model) raised
                (with ``on_prune_error="raise"``); nothing was pruned. With ``"keep"``
                the step is skipped and its report carries the error.
            PruneHookError: An ``on_prune`` hook raised (with ``on_prune_error="raise"``);
                the messages it did not take are kept for a retry (see the error).
        """
        kept = self._fit_quickly(existing, new, on_prune_error)
        if kept is not None:
            return kept
        combined, where = _combine(existing, new)
        if self._validating:
            return self.validate(combined)
        if on_prune_error is not None:
            self._on_error(on_prune_error)  # a bad override is refused even when nothing goes
        state = self._begin(combined, where, namespace)
        if not state.over_limit() and not self._delivery.has_pending:
            return self._fits(combined, state)
        if self._plain_drop is not None:
            return self._drop_oldest(combined, state, self._plain_drop)
        return drive(self._reduce(combined, where, namespace, self._policy, on_prune_error, state))

    async def areduce(
        self,
        existing: Sequence[Any] | None = None,
        new: Sequence[Any] | None = None,
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """:meth:`reduce` for async code: coroutine hooks and summarizers are awaited (the
        LLM summarizer's ``acall`` too), blocking ones run in worker threads, so the event
        loop is never blocked. Same arguments, result and errors.

        Raises:
            TypeError: As for :meth:`reduce`.
            SummaryError: As for :meth:`reduce`.
            PruneHookError: As for :meth:`reduce`.
        """
        kept = self._fit_quickly(existing, new, on_prune_error)
        if kept is not None:
            return kept
        combined, where = _combine(existing, new)
        if self._validating:
            return self.validate(combined)
        if on_prune_error is not None:
            self._on_error(on_prune_error)  # a bad override is refused even when nothing goes
        state = self._begin(combined, where, namespace)
        if not state.over_limit() and not self._delivery.has_pending:
            return self._fits(combined, state)
        if self._plain_drop is not None:
            return self._drop_oldest(combined, state, self._plain_drop)
        return await adrive(
            self._reduce(combined, where, namespace, self._policy, on_prune_error, state)
        )

    def view(
        self,
        messages: Sequence[Any],
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """The list a model should see, leaving the stored list alone.

        The policy runs as in :meth:`reduce`, on a copy: rewriting steps (clearing,
        compressing, truncating) and pruning steps change what the model is given, but
        nothing is summarised (``Summarize`` drops as ``DropOldest`` does) and nothing is
        handed to the ``on_prune`` hooks, since nothing leaves the stored list. This is
        what the agent integrations' ``mode="view"`` calls before each model call.

        Args:
            messages: The stored messages.
            namespace: Passed to steps (``context.namespace``).
            on_prune_error: Overrides ``config.handoff.on_error``: with ``"keep"`` a step
                whose call fails (a compressor) is skipped; with ``"raise"`` its
                ``StepError`` is raised.

        Returns:
            A result whose ``surviving`` is the model's input; ``pruned`` and
            ``rewritten`` say what it leaves out or sees rewritten.

        Raises:
            TypeError: ``messages`` is not a list of messages; the error names the index.
            StepError: With ``on_prune_error="raise"``, user code a step called failed.
        """
        combined = _as_list(messages, "messages")
        return drive(self._view(combined, namespace, self._on_error(on_prune_error)))

    async def aview(
        self,
        messages: Sequence[Any],
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """Async :meth:`view`: coroutine compressors and scorers are awaited.

        Raises:
            TypeError: As for :meth:`view`.
            StepError: As for :meth:`view`.
        """
        combined = _as_list(messages, "messages")
        return await adrive(self._view(combined, namespace, self._on_error(on_prune_error)))

    def apply_step(
        self,
        step_id: str,
        messages: Sequence[Any],
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """Run exactly one step of the policy on ``messages``, if they are over the limit.

        Args:
            step_id: The ``id`` of a step of this reducer's policy.
            messages: The messages.
            namespace: Passed to the ``on_prune`` hooks.
            on_prune_error: Overrides ``config.handoff.on_error`` for this call.

        Raises:
            KeyError: No step of the policy has that id (the error lists the ids).
            SummaryError: As for :meth:`reduce`.
            PruneHookError: As for :meth:`reduce`.
        """
        step = self._step(step_id)
        combined, where = _combine(messages, None)
        return drive(self._reduce(combined, where, namespace, (step,), on_prune_error))

    async def aapply_step(
        self,
        step_id: str,
        messages: Sequence[Any],
        namespace: Any = None,
        *,
        on_prune_error: OnPruneError | None = None,
    ) -> ReducerResult:
        """Async :meth:`apply_step`.

        Raises:
            KeyError: No step of the policy has that id.
            SummaryError: As for :meth:`reduce`.
            PruneHookError: As for :meth:`reduce`.
        """
        step = self._step(step_id)
        combined, where = _combine(messages, None)
        return await adrive(self._reduce(combined, where, namespace, (step,), on_prune_error))

    def deliver(self, pruned: Sequence[Any], namespace: Any = None) -> None:
        """Hand ``pruned`` to the ``on_prune`` hooks, with this reducer's hand-off memory
        (each message once per hook; what is pending is retried first).

        Raises:
            PruneHookError: A hook raised; what it did not take is kept for a retry.
        """
        drive(self._deliver(list(pruned), namespace))

    async def adeliver(self, pruned: Sequence[Any], namespace: Any = None) -> None:
        """Async :meth:`deliver`.

        Raises:
            PruneHookError: A hook raised; what it did not take is kept for a retry.
        """
        await adrive(self._deliver(list(pruned), namespace))

    def retry_handoffs(self) -> None:
        """Retry every hand-off that is waiting (see :meth:`handoff_status`) now.

        Raises:
            PruneHookError: A hook still fails; its messages stay pending.
        """
        drive(self._deliver([], None))

    async def aretry_handoffs(self) -> None:
        """Async :meth:`retry_handoffs`.

        Raises:
            PruneHookError: A hook still fails; its messages stay pending.
        """
        await adrive(self._deliver([], None))

    def handoff_status(self) -> HandoffStatus:
        """How the hand-off is doing: messages delivered, failed calls, what is pending."""
        return self._delivery.status()

    def take_pending_handoffs(self) -> list[tuple[Callable[[list[Any], Any], Any], PendingBatch]]:
        """Remove and return every pending hand-off as ``(hook, batch)``, to store elsewhere
        (for example before shutting down while the memory store is still down)."""
        return self._delivery.take_pending()

    def as_langgraph_reducer(self, **options: Any) -> Callable[[Any, Any], list[Any]]:
        """A ``(existing, new) -> list`` function for ``Annotated[list, ...]`` LangGraph state.

        It merges each update exactly as LangGraph's ``add_messages`` does, then bounds
        the list with this reducer. It is also a LangGraph channel, so in a graph all the
        writes of a super-step are merged first and the list is bounded once (see
        :class:`~agentstate_reducer.langgraph.merge.BoundedMessagesChannel`). Needs the
        ``langgraph`` extra.

        Args:
            **options: Passed to
                :func:`agentstate_reducer.langgraph.langgraph_reducer` (``merge``, ``format``).

        Raises:
            ImportError: The ``[langgraph]`` extra is not installed (the error names the
                missing package).
        """
        # Imported here: the core itself never depends on the LangGraph edge. Importing it
        # without the extra raises an ImportError naming the package to install.
        from .langgraph.merge import langgraph_reducer

        return langgraph_reducer(self, **options)

    # -- one reduce, for both drivers --------------------------------------------------

    def _reduce(
        self,
        combined: list[Any],
        where: Callable[[int], str],
        namespace: Any,
        steps: Sequence[ReductionStep],
        on_prune_error: OnPruneError | None,
        state: PlanState | None = None,
    ) -> Effects[ReducerResult]:
        mode = self._on_error(on_prune_error)
        conversation = namespace_key(namespace)
        if state is None:
            state = self._begin(combined, where, namespace)
        calibration = self._calibration(state)
        if not state.over_limit():
            result = self._fits(combined, state)
            if self._delivery.has_pending:
                yield from self._retry_pending()
            return result
        if mode == "keep" and self._delivery and (waiting := self._delivery.waiting()):
            # The prune could not be handed over (a hook is still down), so this reduce would
            # keep every message anyway: do not plan it, nor pay for a summary of it.
            unchanged = self._unchanged(combined, state, calibration=calibration)
            unchanged.hook_error = waiting_error(waiting, namespace, unchanged)
            logger.debug("%s", unchanged.hook_error)
            return unchanged
        context = self._context(combined, state, namespace, view=False, keep_going=mode == "keep")
        try:
            yield from context.run(steps)
        except SummaryError as exc:
            if mode == "raise":
                raise
            level = logging.DEBUG if exc.waiting else logging.WARNING
            logger.log(level, "%s; keeping every message this time", exc)
            return self._unchanged(combined, state, summary_error=exc, calibration=calibration)
        result = context.result()
        result.calibration = calibration
        # Without hooks nothing is handed over: the batch is not even gathered.
        batch = (
            context.handoff(lambda message: self._is_rewrite(message, conversation))
            if self._delivery
            else []
        )
        if batch:
            failures = yield from self._delivery.deliver(
                batch, namespace, keep_failed=mode == "raise", source=combined
            )
            self._log_retry_failures(failures)
            lost = [f for f in failures if f.messages]
            if lost:
                unchanged = self._unchanged(combined, None, calibration=calibration)
                error = hook_error(
                    lost,
                    namespace,
                    reduced=result if mode == "raise" else None,
                    unchanged=unchanged,
                )
                unchanged.hook_error = error
                if mode == "raise":
                    raise error
                # Once per failing call; while a hook is left alone after a failure, quieter.
                level = logging.WARNING if any(f.called for f in lost) else logging.DEBUG
                logger.log(level, "%s; keeping every message this time", error)
                return unchanged
        elif self._delivery.has_pending:
            yield from self._retry_pending()
        self._plans.remember(context.state, result.surviving)
        logger.debug(
            "reduced %d messages to %d (pruned %d)",
            len(combined),
            len(result.surviving),
            len(result.pruned),
        )
        return result

    def _begin(self, combined: list[Any], where: Callable[[int], str], namespace: Any) -> PlanState:
        """The plan state of ``combined``: the remembered one extended by what is new (see
        :class:`~agentstate_reducer.session.PlanCache`), or a fresh one; calibrated when the
        config says so. Reads only the messages the remembered state does not describe."""
        state, known = self._plans.resume(combined)
        if known < len(combined):
            self._reader.extend(state, combined[known:], lambda i: where(known + i))
        if self._config.calibrate:
            calibrate(state, combined, known, self._shown, namespace_key(namespace))
        return state

    def _fit_quickly(
        self, existing: Any, new: Any, on_prune_error: OnPruneError | None = None
    ) -> ReducerResult | None:
        """The reduce of a count-mode reducer (see ``_fit_limit``) whose list stays within
        ``max_messages``, or is over it with the plain policy (``_drop_oldest``), with
        nothing waiting for a hand-off; None when it is not one (or an argument is not a
        plain list), and ``reduce`` goes on as for any list.

        Why: most turns of a conversation prune nothing, and what they cost is reading the
        new messages; this path does that and nothing else (no position named unless a message
        is refused, no step machinery).

        Invariant: the result, and the session remembered, are what the general path
        (``_begin``, then ``_fits`` or the policy's steps) gives for the same list;
        ``tests/test_hot_path.py`` compares the two on drawn conversations, turn by turn.
        A valid ``on_prune_error`` (the state channel passes one on every write) changes
        nothing here: nothing is handed over on this path.
        """
        if not self._fit_limit or (
            on_prune_error is not None and on_prune_error != "keep" and on_prune_error != "raise"
        ):
            return None
        if new is None:
            new = []
        elif type(new) is not list:
            return None
        if type(existing) is not list:
            return None
        split = len(existing)
        over = split + len(new) > self._fit_limit
        drop = self._plain_drop
        # The plain policy has no hooks, so nothing of it waits for a hand-off.
        if drop is None and (over or self._delivery.has_pending):
            return None
        state, known = self._plans.resume(existing)
        combined = existing + new
        if known < len(combined):
            unread = new if known == split else combined[known:]
            # Count mode: what the one pass takes is read (Reader.extend would count no
            # tokens); the rest, if any, is read the general way, with positions named.
            taken = state.extend_plain(unread)
            if taken < len(unread):
                at = known + taken
                self._reader.extend(state, unread[taken:], lambda i: _position(split, at + i))
        if over and drop is not None:
            return self._drop_oldest(combined, state, drop)
        self._plans.remember(state, combined)
        return _plain_result(combined, [], [], state.total, state.total, None)

    def _fits(self, combined: list[Any], state: PlanState) -> ReducerResult:
        """The result of a reduce whose list is within the limit: ``combined`` unchanged,
        and ``state`` remembered for the next reduce."""
        self._plans.remember(state, combined)
        return _plain_result(combined, [], [], state.total, state.total, self._calibration(state))

    def _drop_oldest(self, combined: list[Any], state: PlanState, step_id: str) -> ReducerResult:
        """A reduce over the limit with the plain policy (one ``DropOldest``, no hooks, no
        summary, no calibration): the plan's window leaves, and nothing else happens.

        Invariant: the result (every field, the step report included) and the state
        remembered for the next reduce equal what the general path (a
        :class:`~agentstate_reducer.context.ReduceContext` running the policy) gives;
        ``tests/test_hot_path.py`` compares the two on drawn conversations and configs.
        """
        before, length = state.total, len(combined)
        cut = state.plain_cut()
        if cut is not None:
            end, gone, kept_at = cut
        else:
            found = state.end_for_target(0)
            end = found if found is not None else 0
            gone, kept_at = state.split_window(end) if found is not None else ([], [])
        if gone:
            start = state.start
            if kept_at:
                surviving = combined[:start]
                surviving += [combined[p] for p in kept_at]
                surviving += combined[end:]
                pruned = [combined[p] for p in gone]
            else:  # the whole window goes: gone is start..end-1
                surviving = combined[:start] + combined[end:]
                pruned = combined[start:end]
            state.prune(end, gone, kept_at)
        else:
            surviving, pruned = list(combined), []
        after = state.total
        # StepReport(step, touched, tokens_before, tokens_after, messages_before,
        # messages_after): positional, as _plain_result (keywords cost a third more here).
        report = StepReport(step_id, list(pruned), before, after, length, len(surviving))
        self._plans.remember(state, surviving)
        logger.debug("reduced %d messages to %d (pruned %d)", length, len(surviving), len(pruned))
        return _plain_result(surviving, pruned, [report], before, after, None)

    def _view(
        self, combined: list[Any], namespace: Any, mode: OnPruneError
    ) -> Effects[ReducerResult]:
        state = self._read(combined, namespace)
        calibration = self._calibration(state)
        if not state.over_limit() and not self._adds_to_view:
            result = ReducerResult(
                surviving=combined,
                pruned=[],
                tokens_before=state.total,
                tokens_after=state.total,
                calibration=calibration,
            )
            self._record_view(namespace, combined, state)
            return result
        context = self._context(combined, state, namespace, view=True, keep_going=mode == "keep")
        yield from context.run(self._policy)
        result = context.result()
        result.calibration = calibration
        self._record_view(namespace, result.surviving, context.state)
        return result

    def _read(self, combined: list[Any], namespace: Any, *, remember: bool = True) -> PlanState:
        """A fresh plan state of ``combined``, calibrated when the config says so."""
        state = PlanState(self._limits)
        self._reader.extend(state, combined, lambda i: f"messages[{i}]")  # a mix raises here
        if self._config.calibrate:
            conversation = namespace_key(namespace)
            calibrate(state, combined, 0, self._shown, conversation, remember=remember)
        return state

    def _calibration(self, state: PlanState) -> Calibration | None:
        return calibration_of(state) if self._config.calibrate else None

    def _record_view(self, namespace: Any, shown: list[Any], state: PlanState) -> None:
        """Remember this reducer's count of the view a model is about to be shown, so the
        report of its answer is counted against it (see ShownMemory)."""
        if self._config.calibrate:
            raw = state.raw if state.raw is not None else state.tokens
            self._shown.record_view(namespace_key(namespace), shown, sum(raw))

    def _deliver(self, pruned: list[Any], namespace: Any) -> Effects[None]:
        failures = yield from self._delivery.deliver(pruned, namespace, keep_failed=True)
        self._log_retry_failures(failures)
        if failures:
            raise hook_error(failures, namespace, reduced=None, unchanged=None)

    def _retry_pending(self) -> Effects[None]:
        """Retry what waits (a reduce with nothing to hand over still does), quietly: a
        hook still down is only logged, its messages stay pending."""
        failures = yield from self._delivery.deliver([], None, keep_failed=True)
        self._log_retry_failures(failures)

    def _context(
        self, combined: list[Any], state: PlanState, namespace: Any, *, view: bool, keep_going: bool
    ) -> ReduceContext:
        """The step context of one reduce, holding the parts of this reducer it uses."""
        return ReduceContext(
            original=combined,
            state=state,
            namespace=namespace,
            limits=self._limits,
            reader=self._reader,
            summaries=self.summaries,
            rewrites=self.rewrites,
            inject_summary=self._config.inject_summary,
            view=view,
            keep_going=keep_going,
        )

    def _is_rewrite(self, message: Any, conversation: Any = None) -> bool:
        if any(step.rewrote(message) for step in self._policy):
            return True
        return self.rewrites.holds(message, conversation)

    def _unchanged(
        self,
        combined: list[Any],
        state: PlanState | None,
        *,
        hook_error: PruneHookError | None = None,
        summary_error: SummaryError | None = None,
        calibration: Calibration | None = None,
    ) -> ReducerResult:
        total = state.total if state is not None else 0
        return ReducerResult(
            surviving=combined,
            pruned=[],
            hook_error=hook_error,
            summary_error=summary_error,
            tokens_before=total,
            tokens_after=total,
            calibration=calibration,
        )

    def _on_error(self, override: OnPruneError | None) -> OnPruneError:
        if override is None:
            return self._config.handoff.on_error
        if override == "keep" or override == "raise":  # the channel passes one every write
            return override
        check_choice("on_prune_error", override, ("raise", "keep"))
        return override

    def _log_retry_failures(self, failures: list[HookFailure]) -> None:
        for failure in failures:
            if not failure.messages:
                logger.warning(
                    "on_prune hook %s still fails on the hand-offs waiting for a retry "
                    "(%s: %s); they stay pending",
                    hook_name(failure.hook),
                    type(failure.error).__name__,
                    failure.error,
                )

    def _step(self, step_id: str) -> ReductionStep:
        step = next((s for s in self._policy if s.id == step_id), None)
        if step is None:
            known = ", ".join(repr(s.id) for s in self._policy)
            raise KeyError(f"no reduction step {step_id!r} in this reducer's policy ({known})")
        return step


def check_reducer(value: Any, name: str = "reducer") -> MessageReducer:
    """Return ``value`` if it is a :class:`MessageReducer` (the integrations' entry check).

    Raises:
        TypeError: It is not (a ``ReducerConfig`` is named: wrap it in ``MessageReducer``).
    """
    if not isinstance(value, MessageReducer):
        hint = " (wrap it: MessageReducer(config=...))" if isinstance(value, ReducerConfig) else ""
        raise TypeError(f"{name} must be an agentstate_reducer.MessageReducer, got {value!r}{hint}")
    return value


def _plain_result(
    surviving: list[Any],
    pruned: list[Any],
    steps: list[StepReport],
    tokens_before: int,
    tokens_after: int,
    calibration: Calibration | None,
) -> ReducerResult:
    """``ReducerResult(surviving=..., pruned=..., steps=..., tokens_before=...,
    tokens_after=..., calibration=...)`` (no summary, rewrite, error or problem) for the hot
    paths: made without ``__init__`` (whose frame and default checks cost more than the
    fields), each field set in the class's order. ``tests/test_hot_path.py`` compares
    every field with the policy path's result."""
    result: ReducerResult = _blank(ReducerResult)
    result.surviving = surviving
    result.pruned = pruned
    result.summary = None
    result.summary_messages = []
    result.folded_summaries = []
    result.rewritten = []
    result.hook_error = None
    result.summary_error = None
    result.steps = steps
    result.tokens_before = tokens_before
    result.tokens_after = tokens_after
    result.problems = []
    result.calibration = calibration
    return result


#: ``object.__new__``: an instance without ``__init__`` (see _plain_result).
_blank = object.__new__


def _combine(
    existing: Sequence[Any] | None, new: Sequence[Any] | None
) -> tuple[list[Any], Callable[[int], str]]:
    # A list is not copied: the sum below is a new list already.
    old = existing if type(existing) is list else _as_list(existing, "existing")
    added = new if type(new) is list else _as_list(new, "new")
    split_at = len(old)

    def where(i: int) -> str:
        return _position(split_at, i)

    return old + added, where


def _position(split: int, i: int) -> str:
    """How an error names position ``i`` of ``existing + new`` (``existing`` holding
    ``split`` messages)."""
    return f"existing[{i}]" if i < split else f"new[{i - split}]"


def _as_list(messages: Sequence[Any] | None, name: str) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        hint = " (wrap a single message in a list)" if isinstance(messages, dict) else ""
        raise TypeError(f"{name} must be a list of messages, got {type(messages).__name__}{hint}")
    return list(messages)

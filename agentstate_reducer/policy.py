"""Reduction steps, applied in order until the list fits its budget.

A policy is a list of steps, for example::

    ReducerConfig(
        max_tokens=8_000,
        policy=[ClearToolOutputs(keep_last=3), DropOldest()],
    )

Once a list is over its limit, the reducer runs the steps in order and stops as soon as
the list fits its target. Each step reports what it touched and the tokens before and
after (``ReducerResult.steps``). Without a policy the reducer drops the oldest messages (and
summarises them when ``summarize_fn`` is set), which is ``[DropOldest()]`` or
``[Summarize()]``.

Steps:

* :class:`ClearToolOutputs`: replace the content of tool results older than the newest
  ``keep_last`` with a short placeholder; the call and its result stay, so the
  conversation stays valid. A result already showing the placeholder is not touched again.
* :class:`DropOldest`: prune the oldest messages (or whole user turns, with
  ``start_on_human``) as far as the target needs.
* :class:`Summarize`: the same, then ``summarize_fn`` summarises what went together with
  the summary already in the list (a running summary), and ``inject_summary`` puts the new
  summary where the pruned block was; the room it takes counts towards the bound.
* :class:`TruncateLargest` (opt-in): cut the text of the single largest message so the
  list fits, leaving a visible marker.

Text that leaves the list by any step reaches the ``on_prune`` hooks as it was: the
original of a cleared or truncated message is handed over when the step rewrites it, and
``result.pruned`` holds originals.

Writing a step: subclass :class:`ReductionStep` and implement ``apply(context)`` against the
:class:`StepContext` protocol (the list, its plan state, ``replace`` and ``drop``); return
the messages touched. A step that rewrites messages should also say which messages are its
own rewrites (``rewrote``), so they are not handed over again when they are pruned later.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ._checks import check_int, check_name
from .messages import TOOL, content_of, with_content

if TYPE_CHECKING:
    from .planner import PlanState

DEFAULT_PLACEHOLDER = "[tool output cleared to save context]"
DEFAULT_MARKER = "\n[... truncated: about {removed} tokens removed to fit the context window ...]"


@dataclass
class StepReport:
    """What one step did.

    Attributes:
        step: The step's id.
        touched: The messages the step pruned, or the new versions of those it rewrote.
        tokens_before: The list's token count before the step (0 in count mode).
        tokens_after: The list's token count after the step (0 in count mode).
        messages_before: The list's length before the step.
        messages_after: The list's length after the step.
    """

    step: str
    touched: list[Any] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0


class StepContext(Protocol):
    """What a step works on: one reduce in progress.

    Attributes:
        messages: The list as it stands (read it; change it only through ``replace`` and
            ``drop``).
        state: Its plan state: ``state.views`` (role, id, tool links, summary flag per
            position), ``state.tokens`` (token mode), ``state.total``, ``state.fits()``.
        target: The token count the policy aims for (0 in count mode).
    """

    messages: list[Any]
    state: PlanState
    target: int

    def count(self, message: Any) -> int:
        """Tokens of one message by the reducer's counter (0 in count mode)."""
        ...

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten message (same role and tool links) at ``position``; its
        original is handed to the hooks."""
        ...

    def drop(self, *, summarize: bool) -> list[Any]:
        """Prune towards the target (summarising what goes, with ``summarize``) and
        return the pruned messages."""
        ...


class ReductionStep:
    """Base class of the steps a policy is made of.

    Attributes:
        id: The step's name in a policy (unique there); used by ``reducer.apply_step``.
        needs_tokens: The step works on tokens, so it needs token mode.
    """

    id: str = ""
    needs_tokens: bool = False
    summarizes: bool = False

    def apply(self, context: StepContext) -> list[Any]:  # pragma: no cover - overridden
        """Change the list through ``context`` and return the messages touched."""
        raise NotImplementedError

    def rewrote(self, message: Any) -> bool:
        """Whether ``message`` is this step's own rewrite (its original already reached
        the hooks); False for steps that rewrite nothing."""
        return False


@dataclass(frozen=True)
class ClearToolOutputs(ReductionStep):
    """Replace old tool outputs with a placeholder, keeping every call and result.

    Attributes:
        keep_last: Tool results kept as they are, counted from the newest.
        placeholder: The text that replaces a cleared output.
        id: The step's name.
    """

    keep_last: int = 3
    placeholder: str = DEFAULT_PLACEHOLDER
    id: str = "clear_tool_outputs"
    needs_tokens: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        check_int("ClearToolOutputs.keep_last", self.keep_last, minimum=0)
        check_name("ClearToolOutputs.placeholder", self.placeholder)

    def apply(self, context: StepContext) -> list[Any]:
        messages = context.messages
        state = context.state
        tool_positions = [p for p, view in enumerate(state.views) if view.role == TOOL]
        older = tool_positions[: max(0, len(tool_positions) - self.keep_last)]
        touched: list[Any] = []
        for position in older:
            message = messages[position]
            content = content_of(message)
            if content == self.placeholder or not content:
                continue
            cleared = with_content(message, self.placeholder)
            context.replace(position, cleared)
            touched.append(cleared)
        return touched

    def rewrote(self, message: Any) -> bool:
        return bool(content_of(message) == self.placeholder)


@dataclass(frozen=True)
class DropOldest(ReductionStep):
    """Prune the oldest prunable messages (whole turns with ``start_on_human``).

    Attributes:
        id: The step's name.
    """

    id: str = "drop_oldest"
    summarizes: bool = field(default=False, init=False, repr=False)

    def apply(self, context: StepContext) -> list[Any]:
        return list(context.drop(summarize=self.summarizes))


@dataclass(frozen=True)
class Summarize(DropOldest):
    """Prune as :class:`DropOldest` does, then summarise what went with ``summarize_fn``.

    The summary block already in the list is folded in: ``summarize_fn`` receives it first
    (marked, see :func:`~agentstate_reducer.messages.is_summary`), then the pruned
    messages, and the new block replaces it. The block counts towards the bound: in count
    mode it is one of the ``min_messages`` kept, in token mode room is left for it
    (``summary_max_tokens``).

    Attributes:
        id: The step's name.
    """

    id: str = "summarize"
    summarizes: bool = field(default=True, init=False, repr=False)


@dataclass(frozen=True)
class TruncateLargest(ReductionStep):
    """Cut the text of the largest message so the list fits, with a visible marker.

    Only string content is cut (a message whose content is a list of blocks is left as
    is), and never a summary block. Opt-in: it changes what a message says; the original
    reaches the ``on_prune`` hooks.

    Attributes:
        marker: Appended to the cut text; ``{removed}`` is replaced by the tokens removed.
        id: The step's name.
    """

    marker: str = DEFAULT_MARKER
    id: str = "truncate_largest"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    _marker_at_end: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name("TruncateLargest.marker", self.marker)
        head, _, tail = self.marker.partition("{removed}")
        pattern = re.escape(head) + (r"\d+" + re.escape(tail) if "{removed}" in self.marker else "")
        object.__setattr__(self, "_marker_at_end", re.compile(pattern + r"\Z"))

    def apply(self, context: StepContext) -> list[Any]:
        state = context.state
        if state.fits():
            return []
        candidates = [
            (tokens, position)
            for position, tokens in enumerate(state.tokens)
            if isinstance(content_of(context.messages[position]), str)
            and not state.views[position].summary
        ]
        if not candidates:
            return []
        tokens, position = max(candidates)
        excess = state.total - context.target
        message = context.messages[position]
        text: str = content_of(message)
        cut = _truncate(
            text, tokens - excess, lambda t: context.count(with_content(message, t)), self.marker
        )
        if cut is None:
            return []
        shorter = with_content(message, cut)
        context.replace(position, shorter)
        return [shorter]

    def rewrote(self, message: Any) -> bool:
        content = content_of(message)
        return isinstance(content, str) and self._marker_at_end.search(content) is not None


def _truncate(text: str, budget: int, count: Callable[[str], int], marker: str) -> str | None:
    """The longest head of ``text`` that, with the marker, counts at most ``budget``."""
    full = count(text)

    def candidate(length: int) -> str:
        return text[:length] + marker.format(removed=max(0, full - count(text[:length])))

    if count(candidate(0)) > budget:
        return None
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(candidate(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return candidate(low)


def check_policy(policy: Sequence[Any] | None, *, token_mode: bool, can_summarize: bool) -> None:
    """Raise if ``policy`` cannot run with the rest of the configuration.

    Raises:
        TypeError: An entry is not a ReductionStep.
        ValueError: The policy is empty, ids repeat, a token step runs in count mode,
            ``Summarize`` has no ``summarize_fn``, or a ``summarize_fn`` is set that no step
            would call.
    """
    if policy is None:
        return
    if isinstance(policy, (str, bytes)) or not isinstance(policy, Sequence):
        raise TypeError(f"policy must be a list of reduction steps, got {policy!r}")
    if not policy:
        raise ValueError(
            "policy is empty: no step would ever prune, so the list would grow unbounded; "
            "leave policy=None for the default ([DropOldest()] or [Summarize()])"
        )
    seen: set[str] = set()
    for index, step in enumerate(policy):
        if not isinstance(step, ReductionStep):
            raise TypeError(
                f"policy[{index}] is not a reduction step: {step!r}; use ClearToolOutputs, "
                "DropOldest, Summarize or TruncateLargest"
            )
        if step.id in seen:
            raise ValueError(
                f"policy[{index}]: step id {step.id!r} is used twice; give each step its own id"
            )
        seen.add(step.id)
        if step.needs_tokens and not token_mode:
            raise ValueError(f"policy[{index}] ({step.id}) works on tokens: set max_tokens")
        if step.summarizes and not can_summarize:
            raise ValueError(f"policy[{index}] ({step.id}) needs summarize_fn")
    if can_summarize and not any(step.summarizes for step in policy):
        raise ValueError(
            "summarize_fn is set but no step of the policy summarises, so it would never be "
            "called: add Summarize() to the policy (in place of DropOldest()), or drop "
            "summarize_fn"
        )


def default_policy(can_summarize: bool) -> tuple[ReductionStep, ...]:
    """The policy used when none is given."""
    return (Summarize(),) if can_summarize else (DropOldest(),)

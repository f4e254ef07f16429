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
* :class:`Summarize`: the same, then ``summarize_fn`` summarises what went (and
  ``inject_summary`` puts the summary in the list).
* :class:`TruncateLargest` (opt-in): cut the text of the single largest message so the
  list fits, leaving a visible marker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._checks import check_int, check_name
from .messages import TOOL, content_of, with_content

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


class ReductionStep:
    """Base class of the steps a policy is made of.

    Attributes:
        id: The step's name in a policy (unique there); used by ``reducer.apply_step``.
    """

    id: str = ""
    needs_tokens: bool = False

    def apply(self, work: Any) -> list[Any]:  # pragma: no cover - every step overrides it
        """Change ``work`` and return the messages touched."""
        raise NotImplementedError


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

    def apply(self, work: Any) -> list[Any]:
        messages: list[Any] = work.messages
        state = work.state
        tool_positions = [p for p, view in enumerate(state.views) if view.role == TOOL]
        older = tool_positions[: max(0, len(tool_positions) - self.keep_last)]
        touched: list[Any] = []
        for position in older:
            message = messages[position]
            content = content_of(message)
            if content == self.placeholder or not content:
                continue
            cleared = with_content(message, self.placeholder)
            work.replace(position, cleared)
            touched.append(cleared)
        return touched


@dataclass(frozen=True)
class DropOldest(ReductionStep):
    """Prune the oldest prunable messages (whole turns with ``start_on_human``).

    Attributes:
        id: The step's name.
    """

    id: str = "drop_oldest"
    summarizes: bool = field(default=False, init=False, repr=False)

    def apply(self, work: Any) -> list[Any]:
        return list(work.drop(summarize=self.summarizes))


@dataclass(frozen=True)
class Summarize(DropOldest):
    """Prune as :class:`DropOldest` does, then summarise what went with ``summarize_fn``.

    Attributes:
        id: The step's name.
    """

    id: str = "summarize"
    summarizes: bool = field(default=True, init=False, repr=False)


@dataclass(frozen=True)
class TruncateLargest(ReductionStep):
    """Cut the text of the largest message so the list fits, with a visible marker.

    Only text content is cut (a string, or the last text block of a list). Opt-in:
    it changes what a message says.

    Attributes:
        marker: Appended to the cut text; ``{removed}`` is replaced by the tokens removed.
        id: The step's name.
    """

    marker: str = DEFAULT_MARKER
    id: str = "truncate_largest"
    needs_tokens: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        check_name("TruncateLargest.marker", self.marker)

    def apply(self, work: Any) -> list[Any]:
        state = work.state
        if state.fits():
            return []
        candidates = [
            (tokens, position)
            for position, tokens in enumerate(state.tokens)
            if isinstance(content_of(work.messages[position]), str)
        ]
        if not candidates:
            return []
        tokens, position = max(candidates)
        excess = state.total - work.target
        message = work.messages[position]
        text: str = content_of(message)
        cut = _truncate(
            text, tokens - excess, lambda t: work.count(with_content(message, t)), self.marker
        )
        if cut is None:
            return []
        shorter = with_content(message, cut)
        work.replace(position, shorter)
        return [shorter]


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
        ValueError: Ids repeat, a token step runs in count mode, or ``Summarize`` has no
            ``summarize_fn``.
    """
    if policy is None:
        return
    if isinstance(policy, (str, bytes)) or not isinstance(policy, Sequence):
        raise TypeError(f"policy must be a list of reduction steps, got {policy!r}")
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
        if isinstance(step, Summarize) and not can_summarize:
            raise ValueError(f"policy[{index}] ({step.id}) needs summarize_fn")


def default_policy(can_summarize: bool) -> tuple[ReductionStep, ...]:
    """The policy used when none is given."""
    return (Summarize(),) if can_summarize else (DropOldest(),)

"""``TruncateLargest``: cut the text of the largest message so the list fits, leaving a
visible marker."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_name
from ..messages import SYSTEM, Slot, content_of, slots_of, with_slots
from .contract import ReductionStep, StepContext

DEFAULT_MARKER = "\n[... truncated: about {removed} tokens removed to fit the context window ...]"


#: Roles whose text :class:`TruncateLargest` never cuts: instructions.
_INSTRUCTIONS = (SYSTEM, "developer")


@dataclass(frozen=True)
class TruncateLargest(ReductionStep):
    """Cut the text of the largest message so the list fits, with a visible marker.

    The message's text is cut from its end: its last text (a string content, the last text
    block of a list content, or the tool result it holds, in the message's own format;
    other blocks, such as images and calls, stay). A message holding several tool results
    (parallel calls answered in one Anthropic, Bedrock or Gemini user message) has its
    longest result cut, wherever it is among them, as Chat, one message per result, cuts
    the largest result message. Never cut: system and developer
    messages (their last rules are what a cut would lose), the newest human message (the
    question), summary blocks. Opt-in: it changes what a message says; the original
    reaches the ``on_prune`` hooks. One message, all or nothing: when cutting the largest
    one's text cannot make the list fit (the rest alone is over the target, or the text is
    in an earlier text block), nothing is cut and the next step goes on.

    Attributes:
        marker: Appended to the cut text; ``{removed}`` is replaced by the tokens removed.
        id: The step's name.
    """

    marker: str = DEFAULT_MARKER
    id: str = "truncate_largest"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)
    _marker_at_end: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name("TruncateLargest.marker", self.marker)
        try:
            self.marker.format(removed=0)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"TruncateLargest.marker {self.marker!r} is not a format string with only "
                f"{{removed}} in it ({type(exc).__name__}: {exc}); write literal braces "
                "as {{ and }}"
            ) from None
        head, _, tail = self.marker.partition("{removed}")
        pattern = re.escape(head) + (r"\d+" + re.escape(tail) if "{removed}" in self.marker else "")
        object.__setattr__(self, "_marker_at_end", re.compile(pattern + r"\Z"))

    def apply(self, context: StepContext) -> list[Any]:
        if context.fits() or context.target is None:
            return []
        question = context.newest_human()
        candidates = [
            (tokens, position)
            for position, tokens in enumerate(context.tokens)
            if position != question
            and context.role(position) not in _INSTRUCTIONS
            and not context.is_summary(position)
            and _last_text(context.messages[position]) is not None
        ]
        if not candidates:
            return []
        tokens, position = max(candidates)
        excess = context.total - context.target
        message = context.messages[position]
        slot = _last_text(message)
        assert slot is not None  # a candidate has one
        text = slot.text

        def rebuilt(cut: str) -> Any:
            return with_slots(message, {slot.path: cut})

        cut = _truncate(text, tokens - excess, lambda t: context.count(rebuilt(t)), self.marker)
        if cut is None:
            return []
        shorter = rebuilt(cut)
        context.replace(position, shorter)
        return [shorter]

    def rewrote(self, message: Any) -> bool:
        content = content_of(message)
        if isinstance(content, str):
            return self._marker_at_end.search(content) is not None
        return any(
            slot.kind in ("text", "result") and self._marker_at_end.search(slot.text)
            for slot in slots_of(message)
        )


def _last_text(message: Any) -> Slot | None:
    """The text a cut shortens (see :func:`~agentstate_reducer.messages.slots_of`): the
    longest of the tool results when the message holds several, else its last non-empty
    text or tool result; None when it has none to cut."""
    found = slots_of(message)
    results = [slot for slot in found if slot.kind == "result" and slot.text]
    if len(results) > 1:
        return max(results, key=lambda slot: len(slot.text))
    for index in range(len(found) - 1, -1, -1):
        if found[index].kind in ("text", "result") and found[index].text:
            return found[index]
    return None


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

"""``ClearToolOutputs``: replace old tool outputs with a placeholder, keeping every call
and result, so the conversation stays valid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._checks import check_int, check_name
from ..messages import FUNCTION, HUMAN, TOOL, Slot, content_of, slots_of, with_slots
from .contract import ReductionStep, StepContext

DEFAULT_PLACEHOLDER = "[tool output cleared to save context]"


#: The roles of tool output: tool results, and legacy function results.
_RESULTS = (TOOL, FUNCTION)


@dataclass(frozen=True)
class ClearToolOutputs(ReductionStep):
    """Replace old tool outputs with a placeholder, keeping every call and result.

    Tool results and legacy function results (``role: "function"``) are both tool output,
    and so is every result a message holds in formats whose user messages hold them
    (Anthropic ``tool_result`` blocks, Bedrock ``toolResult``, Gemini function responses):
    each is cleared in the message's own shape, ``keep_last`` counting results, not
    messages.

    An output that counts no more tokens than the placeholder is left as it is (clearing
    it would only lose its text).

    Attributes:
        keep_last: Tool results kept as they are, counted from the newest.
        placeholder: The text that replaces a cleared output.
        id: The step's name.
    """

    keep_last: int = 3
    placeholder: str = DEFAULT_PLACEHOLDER
    id: str = "clear_tool_outputs"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        check_int("ClearToolOutputs.keep_last", self.keep_last, minimum=0)
        check_name("ClearToolOutputs.placeholder", self.placeholder)

    def apply(self, context: StepContext) -> list[Any]:
        # Every result a message holds counts (an Anthropic, Bedrock or Gemini user message
        # holds the results of all calls of a turn; Chat one per message).
        results: list[tuple[int, Slot]] = []
        for position in range(len(context.messages)):
            role = context.role(position)
            if role in _RESULTS or role == HUMAN:
                found = [s for s in slots_of(context.messages[position]) if s.kind == "result"]
                results += [(position, slot) for slot in found]
        older = results[: max(0, len(results) - self.keep_last)]
        clear: dict[int, dict[tuple[Any, ...], str | None]] = {}
        for position, slot in older:
            if slot.text and slot.text != self.placeholder:
                clear.setdefault(position, {})[slot.path] = self.placeholder
        touched: list[Any] = []
        for position, changes in clear.items():
            message = context.messages[position]
            cleared = with_slots(message, changes)
            if context.count(cleared) >= context.tokens[position]:
                continue  # an output no longer than the placeholder: clearing saves nothing
            context.replace(position, cleared)
            touched.append(cleared)
        return touched

    def rewrote(self, message: Any) -> bool:
        content = content_of(message)
        if isinstance(content, str) or content is None:
            return content == self.placeholder
        return any(s.kind == "result" and s.text == self.placeholder for s in slots_of(message))

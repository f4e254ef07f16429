"""``ClearToolOutputs``: replace old tool outputs with a placeholder, keeping every call
and result, so the conversation stays valid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._checks import check_int, check_name
from ..messages import FUNCTION, TOOL, content_of, with_content
from .contract import ReductionStep, StepContext

DEFAULT_PLACEHOLDER = "[tool output cleared to save context]"


#: The roles of tool output: tool results, and legacy function results.
_RESULTS = (TOOL, FUNCTION)


@dataclass(frozen=True)
class ClearToolOutputs(ReductionStep):
    """Replace old tool outputs with a placeholder, keeping every call and result.

    Tool results and legacy function results (``role: "function"``) are both tool output.

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
        results = [p for p in range(len(context.messages)) if context.role(p) in _RESULTS]
        older = results[: max(0, len(results) - self.keep_last)]
        touched: list[Any] = []
        for position in older:
            message = context.messages[position]
            content = content_of(message)
            if content == self.placeholder or not content:
                continue
            cleared = with_content(message, self.placeholder)
            if context.count(cleared) >= context.tokens[position]:
                continue  # an output no longer than the placeholder: clearing saves nothing
            context.replace(position, cleared)
            touched.append(cleared)
        return touched

    def rewrote(self, message: Any) -> bool:
        return bool(content_of(message) == self.placeholder)

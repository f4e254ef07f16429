"""``DropOldest``: prune the oldest prunable messages as far as the target needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .contract import ReductionStep, StepContext


@dataclass(frozen=True)
class DropOldest(ReductionStep):
    """Prune the oldest prunable messages (whole turns with ``start_on_human``).

    Attributes:
        id: The step's name.
    """

    id: str = "drop_oldest"
    summarizes: bool = field(default=False, init=False, repr=False)

    def apply(self, context: StepContext) -> list[Any]:
        return context.drop_oldest(summarize=self.summarizes)

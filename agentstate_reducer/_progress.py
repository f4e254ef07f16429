"""A dependency-free progress bar for the demo, drawn on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """A one-line progress bar.

    On a terminal the line is redrawn in place (at most ten times a second). Elsewhere (a
    pipe, a log file, a test capturing stderr) nothing is drawn while it runs and
    :meth:`close` writes a single summary line, so logs stay readable.

    Args:
        total: The number of steps.
        label: Shown before the bar.
        stream: Where to draw; stderr by default.
        width: Characters in the bar itself.
    """

    def __init__(
        self, total: int, label: str, *, stream: TextIO | None = None, width: int = 30
    ) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0
        isatty = getattr(self.stream, "isatty", None)
        self._live = bool(isatty is not None and isatty())

    def update(self, steps: int = 1) -> None:
        """Advance by ``steps`` and redraw when on a terminal."""
        self.done = min(self.done + steps, self.total)
        now = time.perf_counter()
        if self._live and (now - self._last_draw >= 0.1 or self.done == self.total):
            self._last_draw = now
            self._draw(now)

    def close(self) -> None:
        """Finish the line: the final bar on a terminal, a summary line elsewhere."""
        now = time.perf_counter()
        if self._live:
            self._draw(now)
            self.stream.write("\n")
        else:
            elapsed = now - self._start
            self.stream.write(f"{self.label}: {self.done}/{self.total} in {elapsed:.1f}s\n")
        self.stream.flush()

    def _draw(self, now: float) -> None:
        filled = self.width * self.done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = now - self._start
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done}/{self.total} "
            f"{elapsed:5.1f}s elapsed, {eta:5.1f}s left "
        )
        self.stream.flush()

"""The demo's measurements and how they are shown: samples, the table, the CSV, the plot.

Nothing here imports LangGraph; matplotlib is imported only to draw the plot, and its
absence is reported (the plot is skipped) rather than raised.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .backends import SaverSpec

__all__ = [
    "RecallOutcome",
    "RunResult",
    "TurnSample",
    "format_report",
    "plot",
    "recall_line",
    "retention_line",
    "sample_turns",
    "summary_line",
    "write_csv",
]


@dataclass(frozen=True)
class TurnSample:
    """What the database held after one turn.

    Attributes:
        turn: The turn number, from 1.
        messages: Messages in the thread's newest checkpoint.
        stored_bytes: The thread's size in the database (see ``SaverSpec.measured``).
        seconds: Wall time of the turn's ``invoke`` (not of the measurement).
    """

    turn: int
    messages: int
    stored_bytes: int
    seconds: float


@dataclass(frozen=True)
class RecallOutcome:
    """How a run answered the question for the fact told at turn 5 (``--recall``).

    Attributes:
        turn: The turn that asked.
        answer: What the model answered.
        in_state: Whether the stored list still held the fact when it was asked (else only
            a memory block could have brought it back).
    """

    turn: int
    answer: str
    in_state: bool


@dataclass
class RunResult:
    """One run of the conversation.

    Attributes:
        label: ``"bare"``, ``"bounded"`` or ``"retained"`` (bounded, with
            ``keep_checkpoints``).
        samples: One sample per turn, in order.
        recall: With ``--recall``, how the run answered the question for the fact.
    """

    label: str
    samples: list[TurnSample] = field(default_factory=list)
    recall: RecallOutcome | None = None

    @property
    def last(self) -> TurnSample:
        """The sample of the last turn."""
        return self.samples[-1]

    def per_turn_bytes(self) -> list[int]:
        """Bytes the database grew by in each turn."""
        previous = 0
        grown = []
        for sample in self.samples:
            grown.append(sample.stored_bytes - previous)
            previous = sample.stored_bytes
        return grown


def sample_turns(turns: int) -> list[int]:
    """The turns shown in the table: every 10% of the run, and the last."""
    if turns <= 10:
        return list(range(1, turns + 1))
    picked = {max(1, math.ceil(turns * k / 10)) for k in range(1, 11)}
    picked.add(turns)
    return sorted(picked)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover - the loop always returns


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _growth(n: int) -> str:
    if n > 0:
        return f"grew by {_size(n)}"
    return f"shrank by {_size(-n)}" if n < 0 else "did not grow"


def _compared(bare: float, bounded: float, less: str, more: str, same: str) -> str | None:
    """``"6.2x less"``, ``"1.3x more"`` or ``same`` (when the ratio rounds to 1.0x): how the
    bounded run compares with the bare one; None unless both are positive."""
    if bare <= 0 or bounded <= 0:
        return None
    if f"{bare / bounded:.1f}" == "1.0" or f"{bounded / bare:.1f}" == "1.0":
        return same
    if bare > bounded:
        return f"{bare / bounded:.1f}x {less}"
    return f"{bounded / bare:.1f}x {more}"


def summary_line(bare: RunResult, bounded: RunResult) -> str:
    """The closing sentence: what each run stores after the last turn and how they compare.

    Each comparison reads right whichever run is ahead ("2.0x less stored", "1.3x more
    stored", "about the same stored"), and the counts agree with their nouns ("After 1
    turn", "the last turn").
    """
    turns = len(bare.samples)
    tail = max(1, turns // 10)
    bare_ms = sum(s.seconds for s in bare.samples[-tail:]) / tail * 1000
    bounded_ms = sum(s.seconds for s in bounded.samples[-tail:]) / tail * 1000
    peak = max(s.messages for s in bounded.samples)
    bare_bytes, bounded_bytes = bare.last.stored_bytes, bounded.last.stored_bytes
    stored = _compared(bare_bytes, bounded_bytes, "less", "more", "about the same") or (
        "nothing to compare"
    )
    bare_wrote, bounded_wrote = bare.per_turn_bytes()[-1], bounded.per_turn_bytes()[-1]
    wrote = _compared(bare_wrote, bounded_wrote, "fewer bytes", "more bytes", "about as many bytes")
    if wrote is None:  # a thread did not grow in the last turn (a prune freed rows)
        wrote_part = (
            f"in the last turn the bare thread {_growth(bare_wrote)} and the bounded one "
            f"{_growth(bounded_wrote)}"
        )
    else:
        wrote_part = f"the last turn wrote {wrote}"
    speed = _compared(bare_ms, bounded_ms, "faster", "slower", "about as fast") or (
        "not timed apart"
    )
    last = "the last turn" if tail == 1 else f"the last {tail} turns"
    return (
        f"After {_plural(turns, 'turn')}: bare stores {_size(bare_bytes)} for "
        f"{_plural(bare.last.messages, 'message')}, bounded {_size(bounded_bytes)} for "
        f"{bounded.last.messages} (at most {peak} after any turn): "
        f"{stored} stored, {wrote_part}, {last} {speed} "
        f"({bare_ms:.1f} vs {bounded_ms:.1f} ms/turn)."
    )


def retention_line(bare: RunResult, retained: RunResult, keep: int) -> str:
    """The sentence on the run bounded with ``keep_checkpoints``: its size after the last
    turn, the most it held after any turn of the second half (flat when that is no more
    than after the first half), and how it compares with the bare run."""
    turns = len(retained.samples)
    sizes = [s.stored_bytes for s in retained.samples]
    half = max(1, turns // 2)
    first, second = max(sizes[:half]), max(sizes[half:] or sizes)
    shape = "flat" if second <= first * 1.1 else f"still growing: {_size(first)} -> {_size(second)}"
    stored = _compared(
        bare.last.stored_bytes, retained.last.stored_bytes, "less", "more", ("about the same")
    )
    return (
        f"With keep_checkpoints={keep} the thread stores {_size(retained.last.stored_bytes)} "
        f"after {_plural(turns, 'turn')}, at most {_size(second)} after any turn of the "
        f"second half against {_size(first)} in the first ({shape}): "
        f"{stored or 'nothing to compare'} stored than bare."
    )


def recall_line(result: RunResult) -> str | None:
    """What a run answered when asked for the fact told at turn 5 (``--recall``)."""
    outcome = result.recall
    if outcome is None:
        return None
    where = (
        "the stored list still held the fact"
        if outcome.in_state
        else "the fact had left the stored list long before"
    )
    return f"{result.label} at turn {outcome.turn} ({where}): {outcome.answer!r}"


_NAMES = {
    "bare": "bare saver",
    "bounded": "ReducingCheckpointSaver",
    "retained": "ReducingCheckpointSaver + keep_checkpoints",
}
_COLOURS = {"bare": "tab:red", "bounded": "tab:blue", "retained": "tab:green"}


def format_report(
    bare: RunResult,
    bounded: RunResult,
    spec: SaverSpec,
    bound: str,
    out: TextIO,
    *,
    retained: RunResult | None = None,
    keep: int | None = None,
) -> None:
    """Write the table of sample turns and the closing lines to ``out``.

    Args:
        bare: The run on the bare saver.
        bounded: The run through ReducingCheckpointSaver.
        spec: The storage backend, named in the header.
        bound: The reducer's bound, in words.
        out: Where to write.
        retained: The run through ReducingCheckpointSaver with ``keep_checkpoints``.
        keep: Its ``keep_checkpoints``.
    """
    turns = len(bare.samples)
    also = f" and with keep_checkpoints={keep} (retained)" if retained is not None else ""
    out.write(
        f"\n{turns} turns of a tool-calling LangGraph agent on {spec.title}: bare saver vs "
        f"ReducingCheckpointSaver ({bound}){also}\n"
        f"messages = in the thread's newest checkpoint; stored = {spec.measured}, after the "
        "turn; ms/turn = graph.invoke wall time\n\n"
    )
    third = retained is not None
    header = (
        f"{'turn':>6}  {'messages bare':>13} {'bounded':>8}  {'stored bare':>12} "
        f"{'bounded':>11}" + (f" {'retained':>11}" if third else "") + "  "
        f"{'ms/turn bare':>12} {'bounded':>8}" + (f" {'retained':>8}" if third else "")
    )
    out.write(header + "\n" + "-" * len(header) + "\n")
    for turn in sample_turns(turns):
        a, b = bare.samples[turn - 1], bounded.samples[turn - 1]
        c = retained.samples[turn - 1] if retained is not None else None
        out.write(
            f"{turn:>6}  {a.messages:>13} {b.messages:>8}  {_size(a.stored_bytes):>12} "
            f"{_size(b.stored_bytes):>11}"
            + (f" {_size(c.stored_bytes):>11}" if c is not None else "")
            + f"  {a.seconds * 1000:>12.1f} {b.seconds * 1000:>8.1f}"
            + (f" {c.seconds * 1000:>8.1f}" if c is not None else "")
            + "\n"
        )
    out.write("\n" + summary_line(bare, bounded) + "\n")
    if retained is not None and keep is not None:
        out.write(retention_line(bare, retained, keep) + "\n")
    lines = [line for run in (bare, bounded, retained) if run and (line := recall_line(run))]
    if lines:
        out.write("\nAsked at the end for the fact told at turn 5:\n")
        for line in lines:
            out.write(f"  {line}\n")


def write_csv(
    bare: RunResult, bounded: RunResult, path: Path, retained: RunResult | None = None
) -> None:
    """Write every turn of the runs to ``path`` as CSV."""
    runs = [bare, bounded] if retained is None else [bare, bounded, retained]
    labels = [run.label for run in runs]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "turn",
                *(f"messages_{label}" for label in labels),
                *(f"stored_bytes_{label}" for label in labels),
                *(f"ms_{label}" for label in labels),
            ]
        )
        for samples in zip(*(run.samples for run in runs), strict=True):
            writer.writerow(
                [
                    samples[0].turn,
                    *(s.messages for s in samples),
                    *(s.stored_bytes for s in samples),
                    *(f"{s.seconds * 1000:.3f}" for s in samples),
                ]
            )


def plot(
    bare: RunResult,
    bounded: RunResult,
    title: str,
    path: Path,
    retained: RunResult | None = None,
) -> bool:
    """Draw stored bytes per turn to ``path`` (PNG); False when matplotlib is missing.

    Left: bytes the database grew by in each turn (the bare run's line against the
    bounded runs' sawtooth). Right: the thread's total size after each turn: the bare run
    grows with the square of the turns, the bounded one linearly, the one with
    ``keep_checkpoints`` stays flat.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    turns = [s.turn for s in bare.samples]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    runs = [bare, bounded] if retained is None else [bare, bounded, retained]
    for result in runs:
        name, style = _NAMES.get(result.label, result.label), _COLOURS.get(result.label)
        left.plot(turns, [b / 1024 for b in result.per_turn_bytes()], color=style, label=name)
        right.plot(
            turns, [s.stored_bytes / 1024**2 for s in result.samples], color=style, label=name
        )
    left.set(title="Bytes stored per turn", xlabel="turn", ylabel="KiB written in the turn")
    right.set(title="Thread size in the database", xlabel="turn", ylabel="MiB")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True

"""Run every benchmark in bench/ and print one table of ratios.

Each ``bench/*.py`` script (except this one and ``_``-prefixed helpers) runs as a
subprocess of this interpreter, one after the other, its output shown as it comes. Its
last line starting with ``RESULT `` is parsed (the convention is in bench/README.md) and
the ratios of every script are gathered in one table at the end.

Usage::

    python bench/run_all.py                 # every benchmark, full size
    python bench/run_all.py --quick         # smaller runs (passes --quick to each)
    python bench/run_all.py --only reduce_per_turn storage_growth

Exit status: 0 when every script ran and printed its RESULT line, 1 otherwise (and, with
``--strict``, also when a target was missed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Scripts run first, in this order; any other bench/*.py follows alphabetically.
PREFERRED = (
    "hot_path",
    "reduce_per_turn",
    "summary_calls",
    "relevance",
    "calibration",
    "storage_growth",
    "wrapper_overhead",
    "cosmos_bench",
    "cosmos_cost",
    "token_accuracy",
    "formats",
    "frameworks",
)


@dataclass
class Outcome:
    """What one script produced."""

    name: str
    status: str = "ok"  # ok | failed | skipped | no result
    detail: str = ""
    seconds: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)


def discover() -> list[str]:
    """The benchmark scripts present, preferred ones first."""
    present = sorted(
        p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_") and p.stem != "run_all"
    )
    return [n for n in PREFERRED if n in present] + [n for n in present if n not in PREFERRED]


def parse_result(line: str) -> dict[str, Any]:
    """Parse a ``RESULT`` line: ``RESULT {json}`` or ``RESULT key=value key=value ...``.

    In the ``key=value`` form, ``bench`` names the benchmark and every other key is taken
    as a ratio (a number) or, when it is not a number, a note.
    """
    body = line[len("RESULT ") :].strip()
    if body.startswith("{"):
        parsed = json.loads(body)
        if not isinstance(parsed, dict):
            raise ValueError("RESULT JSON must be an object")
        return parsed
    result: dict[str, Any] = {"ratios": {}, "notes": {}}
    for pair in body.split():
        key, _, value = pair.partition("=")
        if key == "bench":
            result["bench"] = value
            continue
        try:
            result["ratios"][key] = float(value)
        except ValueError:
            result["notes"][key] = value
    return result


def supports_quick(name: str) -> bool:
    """Whether ``bench/<name>.py`` mentions a ``--quick`` option (the convention asks for one)."""
    return "--quick" in (HERE / f"{name}.py").read_text(errors="replace")


def run_script(name: str, quick: bool, timeout: float, extra: list[str]) -> Outcome:
    """Run ``bench/<name>.py``, echoing its output, and parse its last RESULT line.

    With ``quick``, ``--quick`` is passed only to scripts that have the option; the others
    run at full size (said in the outcome's detail).
    """
    pass_quick = quick and supports_quick(name)
    command = [
        sys.executable,
        str(HERE / f"{name}.py"),
        *(["--quick"] if pass_quick else []),
        *extra,
    ]
    print(f"\n=== {name}: {' '.join(Path(c).name if i < 2 else c for i, c in enumerate(command))}")
    sys.stdout.flush()
    outcome = Outcome(name)
    if quick and not pass_quick:
        outcome.detail = "no --quick option: ran at full size"
    start = time.perf_counter()
    last_result: str | None = None
    try:
        with subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        ) as proc:
            assert proc.stdout is not None
            deadline = start + timeout
            for line in proc.stdout:
                sys.stdout.write(line)
                if line.startswith("RESULT "):
                    last_result = line.rstrip("\n")
                if time.perf_counter() > deadline:
                    proc.kill()
                    outcome.status, outcome.detail = "failed", f"timed out after {timeout:.0f}s"
                    break
            code = proc.wait()
    except OSError as exc:
        outcome.status, outcome.detail = "failed", str(exc)
        return outcome
    outcome.seconds = time.perf_counter() - start
    if outcome.status == "failed":
        return outcome
    if code != 0:
        outcome.status, outcome.detail = "failed", f"exit status {code}"
    if last_result is None:
        if outcome.status == "ok":
            outcome.status = "no result"
            outcome.detail = "; ".join(filter(None, [outcome.detail, "no RESULT line printed"]))
        return outcome
    try:
        outcome.result = parse_result(last_result)
    except ValueError as exc:
        outcome.status, outcome.detail = "no result", f"unreadable RESULT line: {exc}"
        return outcome
    if outcome.result.get("skipped"):
        outcome.status, outcome.detail = "skipped", str(outcome.result["skipped"])
    return outcome


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.2f}x" if abs(value) < 100 else f"{value:.0f}x"


def summary(outcomes: list[Outcome]) -> tuple[list[str], bool]:
    """The final table's lines, and whether any target was missed."""
    rows: list[tuple[str, str, str, str]] = []
    missed = False
    for outcome in outcomes:
        if outcome.status != "ok" and not outcome.result.get("ratios"):
            rows.append((outcome.name, f"({outcome.status})", "", outcome.detail))
            continue
        targets = outcome.result.get("targets") or {}
        ratios = outcome.result.get("ratios") or {}
        if not ratios:
            rows.append((outcome.name, "(no ratios)", "", ""))
        for label, value in ratios.items():
            target = targets.get(label)
            verdict = ""
            if isinstance(target, dict) and "target" in target:
                met = bool(
                    target.get("met", isinstance(value, (int, float)) and value >= target["target"])
                )
                missed = missed or not met
                verdict = f">= {target['target']}x {'met' if met else 'MISSED'}"
            rows.append((outcome.name, label, _number(value), verdict))
    widths = [
        max(
            len(r[i])
            for r in [("benchmark", "ratio (ours vs peer)", "value", "target / note"), *rows]
        )
        for i in range(4)
    ]
    head = ("benchmark", "ratio (ours vs peer)", "value", "target / note")
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines, missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmark in bench/, one table.")
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts")
    parser.add_argument("--timeout", type=float, default=3600, help="per script, seconds")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    names = discover()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"no such benchmark: {', '.join(unknown)} (present: {', '.join(names)})")
        names = [n for n in names if n in args.only]
    if not names:
        print("no benchmark scripts in bench/")
        return 1
    outcomes = [run_script(name, args.quick, args.timeout, []) for name in names]

    lines, missed = summary(outcomes)
    size = "quick" if args.quick else "full"
    print(f"\n=== summary ({size} runs; ratio > 1 means ours is better: faster or smaller)")
    for line in lines:
        print(line)
    for outcome in outcomes:
        detail = f" ({outcome.detail})" if outcome.detail else ""
        print(f"  {outcome.name}: {outcome.status}{detail}, {outcome.seconds:.0f}s")
    failed = any(o.status in ("failed", "no result") for o in outcomes)
    return 1 if failed or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())

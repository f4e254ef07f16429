"""The message reader's cost per message in every wire format, beside the Chat-dict fast path.

One tool-calling dialogue (user questions, model turns making one or two calls, their
results, answers) is rendered in each format the reader supports (``tests/strategies.py``'s
renderers: Chat dicts, LangChain messages, LangChain messages holding Anthropic blocks,
llama-index, Responses API items, Anthropic, Bedrock, Gemini dicts and google-genai
objects) and read three ways, one message at a time:

* ``view``: ``read_view`` (the planner's light view; Chat dicts and LangChain messages take
  the fast path, the other formats their module's reader);
* ``list``: what a reduce pays to read a list: the views, then ``PlanState.extend``
  (links, and the list's format told from its messages);
* ``count``: ``estimate_tokens`` (what counts, by the format's reader, then the estimate).

Each figure is the best of ``--repeat`` passes. With a baseline (``--baseline-rev``, a git
revision of this repository from before the format layer, by default the last one,
``7c909ec``), the ``view`` cost of Chat dicts and LangChain messages is also measured by that
revision's reader on the same messages, each side in its own interpreter, in alternating
rounds (the best round counts), and the ratios say how the format layer changed the fast
paths (before / after: above 1 is faster now; the target is no more than 10% slower).

    python bench/formats.py                 # 100 turns, best of 7, 3 rounds against 7c909ec
    python bench/formats.py --quick         # 30 turns, best of 5, 2 rounds
    python bench/formats.py --baseline-rev none

The last line is ``RESULT {json}`` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: The last revision before the format layer (what the fast paths are compared with).
BASELINE_REV = "7c909ec"
#: The formats compared with the baseline: the fast paths.
FAST = ("chat", "langchain")

_MEASURE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from formats import _dialogue
from tests.strategies import render_dialogue
from agentstate_reducer.messages import read_view

turns, repeat, formats = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
elements = _dialogue(turns)
out = {}
for fmt in formats:
    messages, _ = render_dialogue(elements, fmt)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for message in messages:
            read_view(message)
        best = min(best, time.perf_counter() - start)
    out[fmt] = best / len(messages) * 1e9
print(json.dumps(out))
"""


def _baseline_package(rev: str) -> Path | None:
    """``agentstate_reducer`` as it was at ``rev``, extracted into a temporary directory
    (None when the revision is not in this repository)."""
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"], capture_output=True
    )
    if known.returncode != 0:
        return None
    target = Path(tempfile.mkdtemp(prefix="formats-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "agentstate_reducer"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _measure_in(path: Path, turns: int, repeat: int, formats: tuple[str, ...]) -> dict[str, float]:
    """ns per message of ``read_view`` with the package found first on ``path``."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), str(turns), str(repeat), ",".join(formats)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (path, HERE, ROOT)))},
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _dialogue(turns: int) -> list[Any]:
    from tests.strategies import Call, Element

    out: list[Any] = []
    for turn in range(turns):
        calls = tuple(
            Call(f"c{turn}-{n}", "lookup", {"city": f"city {turn}", "day": n})
            for n in range(1 + turn % 2)
        )
        out += [
            Element("question", text=f"what is the weather in city {turn}?"),
            Element("reply", calls=calls),
            Element(
                "results",
                results=tuple((c.id, c.name, f"sunny, {20 + turn % 9} C") for c in calls),
            ),
            Element("reply", text=f"It is sunny in city {turn}."),
        ]
    return out


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_formats(turns: int, repeat: int) -> dict[str, dict[str, float]]:
    """Per format: ns per message to view, to read as a list, and to count."""
    from agentstate_reducer.messages import read_view
    from agentstate_reducer.planner import PlanLimits, PlanState
    from agentstate_reducer.tokens import estimate_tokens
    from tests.strategies import WIRE_FORMATS, render_dialogue

    limits = PlanLimits(preserve_first=True, cascade=True, min_messages=0, max_messages=None)
    elements = _dialogue(turns)
    table: dict[str, dict[str, float]] = {}
    for fmt in WIRE_FORMATS:
        messages, _ = render_dialogue(elements, fmt)
        size = len(messages)

        def view(messages: list[Any] = messages) -> None:
            for message in messages:
                read_view(message)

        def read(messages: list[Any] = messages) -> None:
            PlanState(limits).extend([read_view(m) for m in messages])

        def count(messages: list[Any] = messages) -> None:
            for message in messages:
                estimate_tokens(message)

        table[fmt] = {
            "messages": size,
            "view": _best(view, repeat) / size * 1e9,
            "list": _best(read, repeat) / size * 1e9,
            "count": _best(count, max(1, repeat // 2)) / size * 1e9,
        }
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 turns, best of 5, 2 rounds")
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument(
        "--baseline-rev", default=BASELINE_REV, help="a git revision, or 'none' to skip"
    )
    args = parser.parse_args(argv)
    turns = args.turns or (30 if args.quick else 100)
    repeat = args.repeat or (5 if args.quick else 7)
    rounds = args.rounds or (2 if args.quick else 3)

    table = measure_formats(turns, repeat)
    chat = table["chat"]
    print(f"reader cost per message, {turns} turns, best of {repeat} (ns; x = / Chat dicts)")
    print(f"{'format':18} {'messages':>8} {'view':>14} {'list':>14} {'count':>15}")
    for fmt, row in table.items():
        cells = [
            f"{row[key]:8.0f} {row[key] / chat[key]:4.1f}x" for key in ("view", "list", "count")
        ]
        print(f"{fmt:18} {int(row['messages']):8d} {cells[0]:>14} {cells[1]:>14} {cells[2]:>15}")

    result: dict[str, Any] = {"bench": "formats", "ratios": {}, "targets": {}, "table": table}
    baseline = None if args.baseline_rev == "none" else _baseline_package(args.baseline_rev)
    if baseline is None:
        print(f"no baseline ({args.baseline_rev!r}): fast paths not compared")
    else:
        before = dict.fromkeys(FAST, float("inf"))
        after = dict.fromkeys(FAST, float("inf"))
        for _ in range(rounds):
            for fmt, value in _measure_in(baseline, turns, repeat, FAST).items():
                before[fmt] = min(before[fmt], value)
            for fmt, value in _measure_in(ROOT, turns, repeat, FAST).items():
                after[fmt] = min(after[fmt], value)
        print(f"\nfast paths, read_view, ns per message: {args.baseline_rev} against this tree")
        for fmt in FAST:
            ratio = before[fmt] / after[fmt]
            label = f"{fmt} view: before / after"
            result["ratios"][label] = round(ratio, 3)
            result["targets"][label] = {"target": 0.91, "met": ratio >= 0.91}
            print(f"  {fmt:10} before {before[fmt]:6.0f}  after {after[fmt]:6.0f}  ({ratio:.2f}x)")
        result["before"], result["after"] = before, after
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rows 3 and 4 of ``bench/hot_path.py`` in instructions, where time is too noisy to tell.

On a shared machine the time of a ``reduce`` moves by half between runs, for reasons that
are not in the code. The instructions the CPU runs for it do not move: this script counts
them under ``valgrind --tool=cachegrind`` (``--cache-sim=no``) for the same conversation and
the same steps as ``bench/hot_path.py`` (``bench/_chat.py``'s 300-turn tool-calling chat,
``reducer_step``), ours (this checkout) and the published 0.5 (in its own venv,
``bench/_peers.py``), and prints instructions per turn and their ratio. Each figure is the
difference between a process that runs the conversation once and one that runs it
``1 + passes`` times, so start-up and imports cancel out; ``PYTHONHASHSEED=0`` keeps the
dictionaries' layout the same in both.

An instruction is not a nanosecond: a turn of 0.5 runs more instructions per nanosecond
than ours on the machines measured (its prune walks plain lists), so the time ratio is
lower than this one (see docs/guides/benchmarks.md).

Usage::

    python bench/hot_path_instructions.py              # count and tokens, 2 passes
    python bench/hot_path_instructions.py --quick      # count only, 1 pass
    python bench/hot_path_instructions.py --modes count --passes 4

The last line is ``RESULT {json}`` (ratios > 1: ours runs fewer instructions). Needs
``valgrind`` on the PATH; without it the result says the run was skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TURNS = 300


def _run(python: Path, mode: str, passes: int, conversation: Path, name: str) -> int:
    """Instructions of one process running the conversation ``passes`` times."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONHASHSEED"] = "0"
    if name == "ours":
        env["PYTHONPATH"] = str(ROOT)
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
    command += ["--cachegrind-out-file=/dev/null", str(python), str(Path(__file__).resolve())]
    command += ["--worker", str(conversation), "--name", name, "--mode", mode]
    command += ["--passes", str(passes)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=str(HERE), env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the {name} worker failed:\n{proc.stderr[-3000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_turn(python: Path, mode: str, passes: int, conversation: Path, name: str) -> float:
    """Instructions per turn: (1 + passes runs) minus (1 run), over passes * turns."""
    once = _run(python, mode, 0, conversation, name)
    more = _run(python, mode, passes, conversation, name)
    return (more - once) / (passes * TURNS)


def _worker(conversation: Path, name: str, mode: str, passes: int) -> None:
    """``--worker``: one warm-up pass of the conversation, then ``passes`` more."""
    sys.path.insert(0, str(HERE))
    from _chat import reducer_step, to_langchain

    import agentstate_reducer

    where = Path(agentstate_reducer.__file__).resolve()
    if (name == "ours") != (ROOT in where.parents and ".bench-peers" not in where.parts):
        raise SystemExit(f"the {name} worker imported {where}")
    system, turns = to_langchain(json.loads(conversation.read_text()))
    make = reducer_step("ours" if name == "ours" else "published", mode)
    for _ in range(1 + passes):
        step = make()
        kept: list[Any] = [system]
        for new in turns:
            kept = step(kept, new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="count,tokens")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="count only, one pass")
    parser.add_argument("--worker", type=Path)
    parser.add_argument("--name", default="ours")
    parser.add_argument("--mode", default="count")
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.worker, args.name, args.mode, args.passes)
        return 0
    if shutil.which("valgrind") is None:
        skipped = {"bench": "hot_path_instructions", "skipped": "valgrind is not installed"}
        print("valgrind is not installed: this benchmark counts instructions under it")
        print("RESULT " + json.dumps(skipped))
        return 0
    if args.quick:
        args.modes, args.passes = "count", 1
    sys.path.insert(0, str(HERE))
    from _chat import generate
    from _peers import peer_python

    peer = peer_python("reducer05")
    modes = [m for m in args.modes.split(",") if m]
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        conversation = Path(tmp) / "conversation.json"
        conversation.write_text(json.dumps(generate(TURNS)))
        for mode in modes:
            ours = per_turn(Path(sys.executable), mode, args.passes, conversation, "ours")
            theirs = per_turn(peer, mode, args.passes, conversation, "published")
            figures[mode] = {
                "ours": round(ours),
                "published": round(theirs),
                "ratio": round(theirs / ours, 2),
            }
            print(
                f"reduce per turn, {mode}: ours {ours:,.0f} instructions, published 0.5 "
                f"{theirs:,.0f}: {theirs / ours:.2f}x fewer"
            )
    ratios = {
        f"reduce per turn, {mode}: instructions, published 0.5 / ours": figures[mode]["ratio"]
        for mode in modes
    }
    result = {"bench": "hot_path_instructions", "turns": TURNS, "ratios": ratios, **figures}
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

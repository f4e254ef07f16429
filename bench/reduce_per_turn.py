"""Per-turn cost of keeping a growing tool-calling chat bounded, against its peers, in one run.

The question (issues 6 and 7): an agent appends a turn (human question, tool call(s), tool
result(s), answer) and bounds its history before the next model call. What does bounding
cost per turn, and does the result honour the budget and stay valid for a provider?

Three contenders, fed the same generated conversation (a JSON file):

* ``ours``: this checkout, ``MessageReducer(config=ReducerConfig(max_tokens=8000,
  token_counter="approximate"))``, per-message counts cached.
* ``published``: ``agentstate-reducer==0.5.0`` from PyPI, same budget, its
  ``token_counter`` set to LangChain's ``count_tokens_approximately`` on the one message.
  It is also imported as ``agentstate_reducer``, so it runs in a separate venv
  (``bench/_peers.py``) as a subprocess of this script (``--worker``).
* ``trim_messages``: ``langchain_core.messages.trim_messages(strategy="last",
  token_counter=count_tokens_approximately, max_tokens=8000, include_system=True,
  start_on="human")``.

Token mode (budget 8,000, no hysteresis) and count mode (prune above 80 messages down to
40; ``trim_messages`` with ``token_counter=len, max_tokens=80`` for reference). Each
contender runs the whole conversation ``--repeat`` times from scratch (a fresh reducer, so
caches start cold), in rounds that interleave the contenders; the best run is reported.
Only the reduce calls are timed, in CPU time of the process running them
(``time.process_time``), so load from other processes on the machine does not count.
The list kept after every turn is then checked for fidelity, outside the timed section:

* ``max tokens``: the most ``count_tokens_approximately`` counted for a kept list,
* ``over``: turns whose kept list exceeds the budget,
* ``pairs broken``: turns whose kept list has a tool result without its call or a call
  without all its results,
* ``newest lost``: turns whose newest message was not kept.

Usage::

    python bench/reduce_per_turn.py            # 2,000 turns, best of 3
    python bench/reduce_per_turn.py --quick    # 500 turns, best of 2

The last line is ``RESULT {json}`` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BUDGET = 8000
COUNT_MIN, COUNT_MAX = 40, 80

WORDS = [
    "agent",
    "tool",
    "call",
    "result",
    "message",
    "window",
    "budget",
    "token",
    "context",
    "memory",
    "summary",
    "checkpoint",
    "thread",
    "state",
    "graph",
    "node",
    "edge",
    "channel",
    "reducer",
    "history",
    "prune",
    "keep",
    "drop",
    "order",
    "system",
    "user",
    "assistant",
    "answer",
    "question",
    "weather",
    "city",
    "price",
    "stock",
    "search",
    "query",
    "document",
    "page",
    "index",
    "vector",
    "store",
    "cache",
    "latency",
    "request",
    "response",
    "error",
    "retry",
    "timeout",
    "server",
    "client",
    "network",
]


# -- the conversation ----------------------------------------------------------------------


def generate(turns: int, seed: int = 7) -> dict[str, Any]:
    """A deterministic tool-calling conversation: a system prompt and ``turns`` turns.

    Each turn is a human question, an ai message with one tool call (two, in parallel,
    every fifth turn), the tool results, and an answer; about 300 tokens a turn, so an
    8,000-token budget holds roughly the last 25 turns.
    """
    rng = random.Random(seed)

    def text(low: int, high: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

    system = {"type": "system", "id": "sys", "content": "You are a helpful agent. " + text(20, 40)}
    out: list[list[dict[str, Any]]] = []
    for turn in range(turns):
        calls = 2 if turn % 5 == 4 else 1
        tool_calls = [
            {
                "name": rng.choice(("search", "weather", "lookup")),
                "args": {"query": text(3, 10), "limit": rng.randint(1, 10)},
                "id": f"call_{turn}_{c}",
                "type": "tool_call",
            }
            for c in range(calls)
        ]
        messages: list[dict[str, Any]] = [
            {"type": "human", "id": f"h{turn}", "content": text(8, 40)},
            {"type": "ai", "id": f"a{turn}", "content": "", "tool_calls": tool_calls},
        ]
        messages += [
            {
                "type": "tool",
                "id": f"t{turn}_{c}",
                "content": text(60, 260),
                "tool_call_id": call["id"],
                "name": call["name"],
            }
            for c, call in enumerate(tool_calls)
        ]
        messages.append({"type": "ai", "id": f"r{turn}", "content": text(15, 80)})
        out.append(messages)
    return {"system": system, "turns": out}


def to_langchain(data: dict[str, Any]) -> tuple[Any, list[list[Any]]]:
    """The system message and the turns as LangChain message objects."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    kinds = {"human": HumanMessage, "ai": AIMessage, "tool": ToolMessage, "system": SystemMessage}

    def build(d: dict[str, Any]) -> Any:
        fields = {k: v for k, v in d.items() if k != "type"}
        return kinds[d["type"]](**fields)

    return build(data["system"]), [[build(m) for m in turn] for turn in data["turns"]]


# -- fidelity --------------------------------------------------------------------------------


def pairs_broken(messages: list[Any]) -> bool:
    """Whether a tool result lacks its call right before it, or a call lacks a result."""
    open_calls: set[str] = set()
    for message in messages:
        kind = message.type
        if kind == "tool":
            if message.tool_call_id not in open_calls:
                return True
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            return True
        if kind == "ai":
            open_calls = {str(c["id"]) for c in message.tool_calls or ()}
    return bool(open_calls)


class Fidelity:
    """Accumulates the fidelity figures of one run."""

    def __init__(self, budget: int | None, count: Callable[[list[Any]], int]) -> None:
        self.budget = budget
        self.count = count
        self.max_tokens = 0
        self.total_tokens = 0
        self.turns = 0
        self.max_messages = 0
        self.over = 0
        self.broken = 0
        self.newest_lost = 0

    def check(self, kept: list[Any], newest: Any) -> None:
        tokens = self.count(kept)
        self.max_tokens = max(self.max_tokens, tokens)
        self.total_tokens += tokens
        self.turns += 1
        self.max_messages = max(self.max_messages, len(kept))
        limit = self.budget if self.budget is not None else None
        if limit is not None and tokens > limit:
            self.over += 1
        if pairs_broken(kept):
            self.broken += 1
        if not kept or kept[-1] is not newest:
            self.newest_lost += 1

    def as_dict(self) -> dict[str, int]:
        return {
            "max_tokens": self.max_tokens,
            "mean_tokens": round(self.total_tokens / max(self.turns, 1)),
            "max_messages": self.max_messages,
            "over": self.over,
            "pairs_broken": self.broken,
            "newest_lost": self.newest_lost,
        }


# -- the contenders ----------------------------------------------------------------------------

Step = Callable[[list[Any], list[Any]], list[Any]]
"""``(kept, new_turn) -> kept``: one turn of bounding."""


def contender(name: str, mode: str) -> Callable[[], Step]:
    """A factory of fresh ``Step`` functions for contender ``name`` in ``mode``.

    ``ours`` and ``published`` both import ``agentstate_reducer``: which one depends on the
    interpreter running this (the checkout's venv, or the peer venv for ``--worker``).
    """
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages

    if name in ("ours", "published"):
        from agentstate_reducer import MessageReducer, ReducerConfig

        def make() -> Step:
            if mode == "tokens":
                if name == "ours":
                    config = ReducerConfig(max_tokens=BUDGET, token_counter="approximate")
                else:
                    config = ReducerConfig(
                        max_tokens=BUDGET,
                        token_counter=lambda m: count_tokens_approximately([m]),
                    )
            else:
                config = ReducerConfig(min_messages=COUNT_MIN, max_messages=COUNT_MAX)
            reducer = MessageReducer(config=config)

            def step(kept: list[Any], new: list[Any]) -> list[Any]:
                return list(reducer.reduce(kept, new).surviving)

            return step

        return make

    if name == "trim_messages":

        def make_trim() -> Step:
            counter: Any = count_tokens_approximately if mode == "tokens" else len
            limit = BUDGET if mode == "tokens" else COUNT_MAX

            def step(kept: list[Any], new: list[Any]) -> list[Any]:
                return trim_messages(
                    kept + new,
                    strategy="last",
                    token_counter=counter,
                    max_tokens=limit,
                    include_system=True,
                    start_on="human",
                )

            return step

        return make_trim
    raise ValueError(f"unknown contender {name!r}")


def run_once(
    make: Callable[[], Step], system: Any, turns: list[list[Any]], mode: str
) -> dict[str, Any]:
    """One pass over the conversation: the timed reduce calls, then fidelity per turn."""
    from langchain_core.messages.utils import count_tokens_approximately

    step = make()
    fidelity = Fidelity(BUDGET if mode == "tokens" else None, count_tokens_approximately)
    kept: list[Any] = [system]
    history: list[list[Any]] = []
    gc.collect()
    # CPU time of this process: load from other processes on the machine does not count.
    start = time.process_time()
    for new in turns:
        kept = step(kept, new)
        history.append(kept)
    elapsed = time.process_time() - start
    for kept_then, new in zip(history, turns, strict=True):
        fidelity.check(kept_then, new[-1])
    return {"ms_per_turn": elapsed * 1000 / len(turns), **fidelity.as_dict()}


def measure(
    names: list[str], data: dict[str, Any], repeat: int, modes: list[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{mode: {contender: figures}}``, best of ``repeat`` passes (fidelity of the last)."""
    system, turns = to_langchain(data)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for mode in modes:
        results[mode] = {}
        for name in names:
            make = contender(name, mode)
            runs = [run_once(make, system, turns, mode) for _ in range(repeat)]
            best = min(r["ms_per_turn"] for r in runs)
            results[mode][name] = {**runs[-1], "ms_per_turn": best}
    return results


# -- the published peer, in its own venv --------------------------------------------------------


def run_published(conversation: Path, repeat: int, modes: list[str]) -> dict[str, Any]:
    """Run the ``published`` contender in the peer venv; its figures per mode."""
    sys.path.insert(0, str(HERE))
    from _peers import peer_python

    python = peer_python("reducer05")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [
            str(python),
            str(Path(__file__).resolve()),
            "--worker",
            str(conversation),
            "--repeat",
            str(repeat),
            "--modes",
            ",".join(modes),
        ],
        capture_output=True,
        text=True,
        cwd=str(HERE),
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the published-reducer worker failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def worker(conversation: Path, repeat: int, modes: list[str]) -> None:
    """``--worker``: in the peer venv, measure the published reducer and print JSON."""
    from importlib.metadata import version

    import agentstate_reducer

    where = Path(agentstate_reducer.__file__).resolve()
    if ROOT in where.parents and ".bench-peers" not in where.parts:
        raise SystemExit(f"worker imported this checkout ({where}), not the published package")
    data = json.loads(conversation.read_text())
    results = measure(["published"], data, repeat, modes)
    out = {mode: results[mode]["published"] for mode in modes}
    out["version"] = version("agentstate-reducer")  # type: ignore[assignment]
    print(json.dumps(out))


# -- report ------------------------------------------------------------------------------------


def table(mode: str, figures: dict[str, dict[str, Any]]) -> Iterator[str]:
    ours = figures["ours"]["ms_per_turn"]
    yield (
        f"{'':15} {'ms/turn':>9} {'ours is':>9} {'max tokens':>11} {'mean tokens':>12} "
        f"{'max msgs':>9} "
        f"{'over':>5} {'pairs broken':>13} {'newest lost':>12}"
    )
    for name, f in figures.items():
        ratio = "" if name == "ours" else f"{f['ms_per_turn'] / ours:.1f}x"
        yield (
            f"{name:15} {f['ms_per_turn']:>9.4f} {ratio:>9} {f['max_tokens']:>11} "
            f"{f['mean_tokens']:>12} {f['max_messages']:>9} {f['over']:>5} {f['pairs_broken']:>13} "
            f"{f['newest_lost']:>12}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 turns, best of 2")
    parser.add_argument("--modes", default="tokens,count")
    parser.add_argument("--no-peer", action="store_true", help="skip the published reducer")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if args.worker is not None:
        worker(args.worker, args.repeat, modes)
        return 0
    if args.quick:
        args.turns, args.repeat = 500, 2

    import langchain_core

    data = generate(args.turns)
    # Rounds interleave the contenders (published, ours, trim_messages, then again), so a
    # burst of load from other processes hits all of them alike; each keeps its best round.
    results: dict[str, dict[str, dict[str, Any]]] = {}
    published: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        conversation = Path(tmp) / "conversation.json"
        conversation.write_text(json.dumps(data))
        for _ in range(args.repeat):
            round_: dict[str, dict[str, dict[str, Any]]] = {mode: {} for mode in modes}
            if not args.no_peer:
                published = run_published(conversation, 1, modes)
                for mode in modes:
                    round_[mode]["published"] = published[mode]
            ours = measure(["ours", "trim_messages"], data, 1, modes)
            for mode in modes:
                round_[mode].update(ours[mode])
                for name, figures in round_[mode].items():
                    best = results.setdefault(mode, {}).get(name)
                    if best is None or figures["ms_per_turn"] < best["ms_per_turn"]:
                        results[mode][name] = figures
    order = ("ours", "published", "trim_messages")
    for mode in modes:
        results[mode] = {name: results[mode][name] for name in order if name in results[mode]}

    peer = f"agentstate-reducer {published['version']}" if published else "not run"
    print(
        f"Keeping a {args.turns}-turn tool-calling chat bounded, best of {args.repeat} "
        f"(langchain-core {langchain_core.__version__}; published: {peer})\n"
    )
    titles = {
        "tokens": f"tokens: at most {BUDGET} (count_tokens_approximately)",
        "count": f"count: prune above {COUNT_MAX} messages down to {COUNT_MIN} "
        f"(trim_messages: last {COUNT_MAX})",
    }
    for mode in modes:
        print(titles[mode])
        for line in table(mode, results[mode]):
            print("  " + line)
        print()

    ms: dict[str, float] = {}
    ratios: dict[str, float] = {}
    targets: dict[str, dict[str, Any]] = {}
    peer_label = {"published": "published 0.5", "trim_messages": "trim_messages"}
    wanted = {("tokens", "published"): 5.0, ("tokens", "trim_messages"): 10.0}
    for mode in modes:
        figures = results[mode]
        ours = figures["ours"]
        for name, f in figures.items():
            ms[f"{mode}.{name}"] = round(f["ms_per_turn"], 5)
            if name == "ours":
                continue
            label = f"{mode}: ms/turn, {peer_label[name]} / ours"
            ratios[label] = round(f["ms_per_turn"] / ours["ms_per_turn"], 2)
            if (mode, name) in wanted:
                # "same or better fidelity": never more turns over budget, with a broken
                # tool pair or without the newest message than the peer.
                as_good = all(ours[k] <= f[k] for k in ("over", "pairs_broken", "newest_lost"))
                target = wanted[(mode, name)]
                targets[label] = {
                    "target": target,
                    "fidelity_as_good": as_good,
                    "met": ratios[label] >= target and as_good,
                }
    for label, t in targets.items():
        state = "met" if t["met"] else "MISSED"
        why = "" if t["fidelity_as_good"] else " (fidelity worse than the peer's)"
        print(f"target {label} >= {t['target']}x: {ratios[label]}x, {state}{why}")
    if "tokens" in results:
        f = results["tokens"]["ours"]
        print(
            f"ours, tokens: max {f['max_tokens']} tokens kept (budget {BUDGET}), "
            f"{f['over']} turns over, {f['pairs_broken']} with a broken tool pair, "
            f"{f['newest_lost']} with the newest message lost"
        )
    fidelity = {f"{mode}.{name}": results[mode][name] for mode in modes for name in results[mode]}
    print(
        "RESULT "
        + json.dumps(
            {
                "bench": "reduce_per_turn",
                "quick": args.quick,
                "turns": args.turns,
                "ratios": ratios,
                "targets": targets,
                "ms_per_turn": ms,
                "fidelity": fidelity,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

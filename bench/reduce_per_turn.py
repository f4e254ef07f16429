"""Per-turn cost of keeping a growing tool-calling chat bounded, against its peers, in one run.

The question (issues 6 and 7): an agent appends a turn (human question, tool call(s), tool
result(s), answer) and bounds its history before the next model call. What does bounding
cost per turn, and does the result honour the budget and stay valid for a provider?

Three contenders, fed the same generated conversation (``bench/_chat.py``, shared with
``bench/hot_path.py``, as is the fidelity check):

* ``ours``: this checkout, ``MessageReducer(config=ReducerConfig(max_tokens=8000,
  token_counter="approximate"))``, per-message counts cached.
* ``published``: ``agentstate-reducer==0.5.0`` from PyPI, same budget, its
  ``token_counter`` set to LangChain's ``count_tokens_approximately`` on the one message.
  It is also imported as ``agentstate_reducer``, so it runs in a separate venv
  (``bench/_peers.py``) as a subprocess (``bench/_chat.py --worker``).
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
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _chat import (  # noqa: E402
    BUDGET,
    COUNT_MAX,
    COUNT_MIN,
    Step,
    as_faithful,
    best_of,
    generate,
    published_figures,
    reducer_step,
)


def trim_messages_step(mode: str) -> Callable[[], Step]:
    """A factory of ``trim_messages(strategy="last", ...)`` steps: ``max_tokens`` of
    ``count_tokens_approximately`` in token mode, the last :data:`COUNT_MAX` messages
    (``token_counter=len``) in count mode."""
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages

    def make() -> Step:
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

    return make


def measure(
    names: list[str], data: dict[str, Any], repeat: int, modes: list[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{mode: {contender: figures}}``, best of ``repeat`` passes (fidelity of the last)."""
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for mode in modes:
        results[mode] = {}
        for name in names:
            make = trim_messages_step(mode) if name == "trim_messages" else reducer_step(name, mode)
            results[mode][name] = best_of(make, data, repeat, mode)
    return results


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
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
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
                published = published_figures(conversation, 1, modes)
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
                as_good = as_faithful(ours, f)
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

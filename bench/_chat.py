"""The tool-calling chat the per-turn benchmarks feed every contender, and what they share.

* :func:`generate`: a deterministic conversation (a system prompt, then turns of a human
  question, one or two tool calls, their results and an answer), as JSON-able dicts, and
  :func:`to_langchain` to turn it into LangChain message objects;
* :func:`pairs_broken` and :class:`Fidelity`: what a kept list is checked for after every
  turn (budget, tool pairs, the newest message), outside the timed section;
* :func:`reducer_step` and :func:`run_turns`: one contender's pass over the chat with
  ``MessageReducer.reduce``, timed in CPU time of the process running it;
* :func:`published_figures`: the same pass with the published ``agentstate-reducer`` 0.5,
  which also imports as ``agentstate_reducer`` and so runs in its own venv
  (``bench/_peers.py``), as this file's ``--worker`` in a subprocess; :func:`ours_figures`:
  this checkout's pass in the same kind of subprocess.

Used by ``bench/reduce_per_turn.py`` and ``bench/hot_path.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BUDGET = 8000
COUNT_MIN, COUNT_MAX = 40, 80
MODES = ("tokens", "count")

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
        if self.budget is not None and tokens > self.budget:
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


#: Fidelity figures that must be no worse than the peer's for a speed target to count.
FIDELITY_KEYS = ("over", "pairs_broken", "newest_lost")


def as_faithful(ours: dict[str, Any], peer: dict[str, Any]) -> bool:
    """Never more turns over budget, with a broken tool pair or without the newest message."""
    return all(ours[key] <= peer[key] for key in FIDELITY_KEYS)


# -- one pass over the chat --------------------------------------------------------------------

Step = Callable[[list[Any], list[Any]], list[Any]]
"""``(kept, new_turn) -> kept``: one turn of bounding."""


def reducer_step(name: str, mode: str) -> Callable[[], Step]:
    """A factory of fresh ``reduce`` steps: ``name`` is ``"ours"`` or ``"published"``, both
    imported as ``agentstate_reducer`` (which one depends on the interpreter running this:
    the checkout's venv, or the peer venv for ``--worker``). Token mode counts with
    LangChain's ``count_tokens_approximately`` on each message (ours by
    ``token_counter="approximate"``, the same rule), a budget of :data:`BUDGET`; count mode
    prunes above :data:`COUNT_MAX` messages down to :data:`COUNT_MIN`."""
    from langchain_core.messages.utils import count_tokens_approximately

    from agentstate_reducer import MessageReducer, ReducerConfig

    def make() -> Step:
        if mode == "tokens" and name == "ours":
            config = ReducerConfig(max_tokens=BUDGET, token_counter="approximate")
        elif mode == "tokens":
            config = ReducerConfig(
                max_tokens=BUDGET, token_counter=lambda m: count_tokens_approximately([m])
            )
        else:
            config = ReducerConfig(min_messages=COUNT_MIN, max_messages=COUNT_MAX)
        reducer = MessageReducer(config=config)

        def step(kept: list[Any], new: list[Any]) -> list[Any]:
            return list(reducer.reduce(kept, new).surviving)

        return step

    return make


def run_turns(
    make: Callable[[], Step], system: Any, turns: list[list[Any]], mode: str
) -> dict[str, Any]:
    """One pass over the conversation from a fresh step (cold caches): the timed steps,
    in CPU time of this process (load from other processes on the machine does not count),
    then fidelity per turn by ``count_tokens_approximately``."""
    from langchain_core.messages.utils import count_tokens_approximately

    step = make()
    fidelity = Fidelity(BUDGET if mode == "tokens" else None, count_tokens_approximately)
    kept: list[Any] = [system]
    history: list[list[Any]] = []
    gc.collect()
    start = time.process_time()
    for new in turns:
        kept = step(kept, new)
        history.append(kept)
    elapsed = time.process_time() - start
    for kept_then, new in zip(history, turns, strict=True):
        fidelity.check(kept_then, new[-1])
    return {"ms_per_turn": elapsed * 1000 / len(turns), **fidelity.as_dict()}


def split_turns(make: Callable[[], Step], system: Any, turns: list[list[Any]]) -> dict[str, Any]:
    """Where a contender's time goes: one more pass from a fresh step, each step timed on
    its own (``perf_counter_ns``, so each figure carries the timer's fraction of a
    microsecond), split by whether the turn kept every message or pruned. ``fit_us`` and
    ``prune_us``: the mean microseconds of each kind of turn; ``prunes``: how many pruned."""
    step = make()
    kept: list[Any] = [system]
    spent = {False: 0, True: 0}
    seen = {False: 0, True: 0}
    clock = time.perf_counter_ns
    gc.collect()
    for new in turns:
        given = len(kept) + len(new)
        start = clock()
        kept = step(kept, new)
        took = clock() - start
        pruned = len(kept) < given
        spent[pruned] += took
        seen[pruned] += 1
    return {
        "fit_us": spent[False] / max(seen[False], 1) / 1000,
        "prune_us": spent[True] / max(seen[True], 1) / 1000,
        "prunes": seen[True],
    }


def best_of(
    make: Callable[[], Step], data: dict[str, Any], repeat: int, mode: str
) -> dict[str, Any]:
    """:func:`run_turns` ``repeat`` times: the best time, the last run's fidelity; then
    :func:`split_turns` (untimed for the best time)."""
    system, turns = to_langchain(data)
    runs = [run_turns(make, system, turns, mode) for _ in range(repeat)]
    best = {**runs[-1], "ms_per_turn": min(r["ms_per_turn"] for r in runs)}
    return {**best, **split_turns(make, system, turns)}


#: Turns of the untimed pass a worker runs before its timed ones (enough to prune in
#: both modes; see :func:`warm_up`).
WARM_UP_TURNS = 40


def warm_up(make: Callable[[], Step], data: dict[str, Any]) -> None:
    """One untimed pass over the first :data:`WARM_UP_TURNS` turns, from a fresh step on
    messages of their own, so that what a process does once (importing modules on first
    use, a class met for the first time) is not timed: the timed pass then starts from
    another fresh step, its caches cold, on messages the warm-up never saw."""
    head = {"system": data["system"], "turns": data["turns"][:WARM_UP_TURNS]}
    system, turns = to_langchain(head)
    step, kept = make(), [system]
    for new in turns:
        kept = step(kept, new)


# -- each contender in a process of its own -----------------------------------------------------


def published_figures(conversation: Path, repeat: int, modes: list[str]) -> dict[str, Any]:
    """The published reducer's :func:`best_of` per mode (and its ``version``), run as this
    file's ``--worker`` by the peer venv's interpreter on the conversation in ``conversation``
    (a JSON file of :func:`generate`'s output)."""
    sys.path.insert(0, str(HERE))
    from _peers import peer_python

    return _worker_figures(peer_python("reducer05"), "published", conversation, repeat, modes)


def ours_figures(conversation: Path, repeat: int, modes: list[str]) -> dict[str, Any]:
    """:func:`published_figures` for this checkout: the same worker, run by this interpreter
    with the checkout first on its path, so that both contenders are timed alike, each in a
    fresh process, not on a heap that other benchmarks of the same run have used
    (``bench/hot_path.py --ours-in-process`` times ours the other way, to compare)."""
    return _worker_figures(Path(sys.executable), "ours", conversation, repeat, modes)


def _worker_figures(
    python: Path, name: str, conversation: Path, repeat: int, modes: list[str]
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if name == "ours":
        env["PYTHONPATH"] = str(ROOT)
    command = [str(python), str(Path(__file__).resolve()), "--worker", str(conversation)]
    command += ["--name", name, "--repeat", str(repeat), "--modes", ",".join(modes)]
    proc = subprocess.run(
        command, capture_output=True, text=True, cwd=str(HERE), env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the {name} reducer's worker failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _worker(conversation: Path, name: str, repeat: int, modes: list[str]) -> None:
    """``--worker``: measure one contender (``name``: ``published``, in the peer venv, or
    ``ours``, this checkout) and print JSON."""
    from importlib.metadata import version

    import agentstate_reducer

    where = Path(agentstate_reducer.__file__).resolve()
    checkout = ROOT in where.parents and ".bench-peers" not in where.parts
    if checkout != (name == "ours"):
        wanted = "this checkout" if name == "ours" else "the published package"
        raise SystemExit(f"the {name} worker imported {where}, not {wanted}")
    data = json.loads(conversation.read_text())
    out: dict[str, Any] = {}
    for mode in modes:
        warm_up(reducer_step(name, mode), data)
        out[mode] = best_of(reducer_step(name, mode), data, repeat, mode)
    out["version"] = "this checkout" if name == "ours" else version("agentstate-reducer")
    print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="One contender's side, in a process of its own.")
    parser.add_argument("--worker", type=Path, required=True)
    parser.add_argument("--name", choices=("published", "ours"), default="published")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    _worker(args.worker, args.name, args.repeat, [m for m in args.modes.split(",") if m])

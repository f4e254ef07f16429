"""What a chat turn costs on Cosmos DB: bytes sent and received, requests, request units.

Question: per turn of a 200-turn chat (a human message, a model reply of a typical length), how
many bytes does each Cosmos DB saver send and receive, how many requests does it make, and
about how many request units would that cost, unbounded (the whole history is kept in state)
and bounded (the state keeps its last 40 messages), for our ``CosmosDBSaver`` against
``langchain-azure-cosmosdb`` 1.0 and ``langgraph-checkpoint-cosmosdb`` 0.4?

Everything is counted by the loopback server (``tests/cosmos_server/launch.mjs``): request and
response bytes on the data plane (request line, headers and body; TLS framing excluded), the
number of requests, and an **estimate** of request units from Microsoft's published figures
("Optimize reads and writes cost in Azure Cosmos DB": a point read of 1 KB costs 1 RU and of
100 KB 10 RU, a write of 1 KB 5 RU and of 100 KB 50 RU, interpolated; queries 2.5 RU plus a
read of what they return). It is an estimate, not what the service would charge: the service's
charge also depends on indexing, consistency and property counts.

The messages are pseudo-random sentences over a 1,000-word vocabulary (text that compresses
about as English does, not a repeated string). Each saver runs in its own worker process (the
peers in their own venv, ``.bench-peers/cosmos-peers``, as in ``cosmos_bench.py``), one after
another against one server.

Second question: what does each operation cost as a thread grows (30, 300 and 900
checkpoints): reading the latest checkpoint, one graph invoke, ``list(limit=10)``, a
``list`` whose metadata filter the query cannot express (a float, from the run's metadata;
the match is the third turn, nearly the oldest checkpoint; ``limit=1``), and
``delete_thread``? Requests and bytes received, counted by the server around each operation,
per contender (the bounded chat graph, one thread per size).

Targets: unbounded, ours sends at most half the bytes of the best peer, and makes no more
requests per turn; our requests per latest read, per invoke and per ``list(limit=10)`` are the
same at 900 checkpoints as at 30 (flat); the filtered ``list`` reads metadata only, a page of
256 checkpoints per request, so it takes at most ``checkpoints / 256 + 4`` requests.

Run: ``.venv/bin/python bench/cosmos_cost.py`` (``--quick``: 50 turns, operations at 30 and 300
checkpoints only).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from cosmos_bench import (  # noqa: E402
    Stats,
    Worker,
    _load_server_module,
    _peer_requirements,
    _skip,
    contender_saver,
)

DATABASE = "cost"
WINDOW = 40
CONTENDERS = {  # label -> (worker name, runs in the peers' venv)
    "agentstate-cosmosdb (ours)": ("ours", False),
    "ours, compression=None": ("ours-raw", False),
    "langchain-azure-cosmosdb 1.0": ("lac", True),
    "langgraph-checkpoint-cosmosdb 0.4": ("lcc", True),
}
OURS = "agentstate-cosmosdb (ours)"
PEERS = [label for label, (_, peer) in CONTENDERS.items() if peer]
METRICS = ("bytes_sent", "bytes_received", "requests", "ru_estimate")
OPERATIONS = ("latest", "invoke", "list10", "filtered", "delete_thread")
SIZES = (30, 300, 900)


# ------------------------------------------------------------------------------------------
# The workload (runs in both environments: standard library, langgraph, langchain-core only)
# ------------------------------------------------------------------------------------------


def _vocabulary() -> list[str]:
    rng = random.Random(7)
    syllables = ["ka", "lo", "mi", "ter", "an", "os", "vi", "re", "du", "sel", "pra", "ne"]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(1000)]


WORDS = _vocabulary()


def sentence(rng: random.Random, words: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return body[0].upper() + body[1:] + "."


def text(seed: int, sentences: int) -> str:
    rng = random.Random(seed)
    return " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(sentences))


def _window(existing: list[Any], new: list[Any]) -> list[Any]:
    return (list(existing) + list(new))[-WINDOW:]


def _keep_all(existing: list[Any], new: list[Any]) -> list[Any]:
    return list(existing) + list(new)


class Bounded(TypedDict):
    messages: Annotated[list[Any], _window]


class Unbounded(TypedDict):
    messages: Annotated[list[Any], _keep_all]


def build_graph(saver: Any, bounded: bool) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    def reply(state: Any) -> dict[str, Any]:
        turn = len(state["messages"])
        return {"messages": [AIMessage(content=text(10_000 + turn, 8), id=f"ai-{turn}")]}

    builder = StateGraph(Bounded if bounded else Unbounded)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def make_saver(name: str, container: str, ca_file: str) -> Any:
    if not name.startswith("ours"):
        return contender_saver(name, DATABASE, container, ca_file)
    compression = "auto" if name == "ours" else None
    saver = contender_saver(name, DATABASE, container, ca_file, compression=compression)
    saver.setup()
    return saver


def worker(name: str, ca_file: str) -> None:
    """Serve commands (one JSON object per line) for one contender until stdin closes."""
    import warnings

    from langchain_core.messages import HumanMessage

    warnings.filterwarnings("ignore")  # the peers leave TLS to the SDK (no check on 127.0.0.1)
    saver = make_saver(name, f"{name}-{uuid.uuid4().hex[:6]}", ca_file)
    graphs = {b: build_graph(saver, b) for b in (True, False)}
    warm = {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex[:6]}"}}
    graphs[True].invoke({"messages": [HumanMessage(content="warm up")]}, warm)
    print(json.dumps({"ready": True}), flush=True)
    stats = Stats(os.environ["COSMOSDB_ENDPOINT"], ca_file)
    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "operations":
            answer = operations(saver, graphs[True], stats, int(command["size"]))
            print(json.dumps(answer), flush=True)
            continue
        if command["cmd"] != "chat":
            break
        graph = graphs[bool(command["bounded"])]
        config = {"configurable": {"thread_id": f"chat-{uuid.uuid4().hex[:8]}"}}
        for turn in range(int(command["turns"])):
            question = HumanMessage(content=text(turn, 3), id=f"human-{turn}")
            graph.invoke({"messages": [question]}, config)
        state = graph.get_state(config)
        print(json.dumps({"messages": len(state.values["messages"])}), flush=True)


def _counted(stats: Stats, run: Any) -> dict[str, float]:
    """Requests and bytes received of one operation, counted by the server (-1: the saver
    does not offer it)."""
    stats.reset()
    try:
        run()
    except NotImplementedError:
        return {"requests": -1.0, "kb_received": -1.0}
    found = stats.read()
    return {
        "requests": float(found.get("total", 0)),
        "kb_received": found.get("bytes_out", 0) / 1024,
    }


def operations(saver: Any, graph: Any, stats: Stats, size: int) -> dict[str, Any]:
    """Grow a thread to ``size`` checkpoints (3 per turn; each turn's run metadata names it),
    then count what each operation costs."""
    from langchain_core.messages import HumanMessage

    config: dict[str, Any] = {"configurable": {"thread_id": f"ops-{uuid.uuid4().hex[:8]}"}}
    turn = 0
    while 3 * turn < size:
        question = HumanMessage(content=text(turn, 3), id=f"human-{turn}")
        graph.invoke({"messages": [question]}, {**config, "metadata": {"turn": turn + 0.5}})
        turn += 1
    saver.get_tuple(config)  # as a run would have: the head is known
    question = {"messages": [HumanMessage(content=text(turn, 3), id=f"human-{turn}")]}
    found: list[Any] = []
    costs = {
        "latest": _counted(stats, lambda: saver.get_tuple(config)),
        "invoke": _counted(stats, lambda: graph.invoke(question, config)),
        "list10": _counted(stats, lambda: list(saver.list(config, limit=10))),
        "filtered": _counted(
            stats,
            lambda: found.extend(saver.list(config, filter={"turn": 2.5}, limit=1)),
        ),
        "delete_thread": _counted(
            stats, lambda: saver.delete_thread(config["configurable"]["thread_id"])
        ),
    }
    return {"checkpoints": 3 * (turn + 1), "costs": costs, "filter_found": len(found)}


# ------------------------------------------------------------------------------------------
# The driver (this checkout's venv)
# ------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 turns instead of 200")
    parser.add_argument("--turns", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--ca-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.ca_file)
        return
    from _peers import PeerSetupError, peer_python

    turns = args.turns or (50 if args.quick else 200)
    workdir = Path(tempfile.mkdtemp(prefix="cosmos_cost_"))
    try:
        server = _load_server_module().CosmosTestServer(workdir)
        server.start()
    except Exception as exc:  # no node or npm: report and leave
        _skip(f"the Cosmos DB test server did not start: {exc}")
        return
    figures: dict[str, dict[str, dict[str, float]]] = {}
    per_operation: dict[str, dict[str, Any]] = {}
    sizes = SIZES[:2] if args.quick else SIZES
    try:
        try:
            peer_py = peer_python("cosmos-peers", _peer_requirements())
        except PeerSetupError as exc:
            _skip(str(exc))
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(COSMOSDB_ENDPOINT=server.endpoint, COSMOSDB_KEY=server.key)
        for label, (name, is_peer) in CONTENDERS.items():
            python = peer_py if is_peer else Path(sys.executable)
            w = Worker(python, name, env, str(server.ca_file), script=__file__)
            try:
                for bounded in (False, True):
                    server.reset_stats()
                    answer = w.ask(cmd="chat", bounded=bounded, turns=turns)
                    stats = server.stats()
                    expected = min(2 * turns, WINDOW) if bounded else 2 * turns
                    if answer["messages"] != expected:
                        raise RuntimeError(f"{label} kept {answer['messages']} messages")
                    figures.setdefault(label, {})["bounded" if bounded else "unbounded"] = {
                        "bytes_sent": stats.get("bytes_in", 0) / turns,
                        "bytes_received": stats.get("bytes_out", 0) / turns,
                        "requests": stats.get("total", 0) / turns,
                        "ru_estimate": stats.get("ru_estimate", 0) / turns,
                    }
                if name != "ours-raw":
                    for size in sizes:
                        per_operation.setdefault(label, {})[str(size)] = w.ask(
                            cmd="operations", size=size
                        )
            finally:
                w.close()
            print(f"measured {label}", flush=True)
    finally:
        server.stop()
    report(figures, turns, per_operation, list(sizes))


def report(
    figures: dict[str, dict[str, dict[str, float]]],
    turns: int,
    per_operation: dict[str, dict[str, Any]],
    sizes: list[int],
) -> None:
    print()
    print(f"per turn of a {turns}-turn chat (counted by the server; RU is an estimate)")
    header = f"{'':36}" + "".join(f"{m:>16}" for m in METRICS)
    for mode in ("unbounded", "bounded"):
        kept = "whole history in state" if mode == "unbounded" else f"last {WINDOW} messages"
        print(f"{mode} ({kept})")
        print(header)
        for label, rows in figures.items():
            row = rows[mode]
            print(
                f"  {label:34}"
                + f"{row['bytes_sent']:>16,.0f}{row['bytes_received']:>16,.0f}"
                + f"{row['requests']:>16.2f}{row['ru_estimate']:>16.1f}"
            )
    print()
    print("requests (and KB received) per operation, as the thread grows (checkpoints)")
    header = f"{'':50}" + "".join(f"{size:>16}" for size in sizes)
    print(header)
    for op in OPERATIONS:
        for label, rows in per_operation.items():
            cells = ""
            for size in sizes:
                cost = rows[str(size)]["costs"][op]
                cells += f"{cost['requests']:>8.0f} ({cost['kb_received']:>5.0f})"
            print(f"  {op + ', ' + label:48}" + cells)
    ours = figures[OURS]
    ratios: dict[str, float] = {}
    targets: dict[str, dict[str, Any]] = {}
    for mode in ("unbounded", "bounded"):
        for metric in METRICS:
            best = min(figures[p][mode][metric] for p in PEERS)
            label = f"{mode}: best peer {metric.replace('_', ' ')} per turn / ours"
            ratios[label] = round(best / ours[mode][metric], 2) if ours[mode][metric] else 0.0
    sent = "unbounded: best peer bytes sent per turn / ours"
    requests = "unbounded: best peer requests per turn / ours"
    targets[sent] = {"target": 2.0, "met": ratios[sent] >= 2.0}
    targets[requests] = {"target": 1.0, "met": ratios[requests] >= 1.0}
    mine = per_operation.get(OURS, {})
    if mine:
        first, last = str(sizes[0]), str(sizes[-1])
        for op in ("latest", "invoke", "list10"):
            label = f"requests per {op}: ours at {first} / at {last}"
            a = mine[first]["costs"][op]["requests"]
            b = mine[last]["costs"][op]["requests"]
            ratios[label] = round(a / b, 2) if b else 0.0
            targets[label] = {"target": 1.0, "met": b <= a}
        for size in sizes:
            label = f"filtered list at {size}: requests / (checkpoints / 256 + 4)"
            row = mine[str(size)]
            bound = row["checkpoints"] / 256 + 4
            ratios[label] = round(row["costs"]["filtered"]["requests"] / bound, 2)
            targets[label] = {
                "target": 1.0,
                "met": ratios[label] <= 1.0 and row["filter_found"] == 1,
            }
    print()
    for label, value in ratios.items():
        goal = targets.get(label)
        mark = f"  (target {goal['target']}: {'met' if goal['met'] else 'MISSED'})" if goal else ""
        print(f"  {label}: {value}{mark}")
    rounded = {
        label: {mode: {k: round(v, 2) for k, v in row.items()} for mode, row in rows.items()}
        for label, rows in figures.items()
    }
    result = {
        "bench": "cosmos_cost",
        "turns": turns,
        "ratios": ratios,
        "targets": targets,
        "figures": rounded,
        "operations": per_operation,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()

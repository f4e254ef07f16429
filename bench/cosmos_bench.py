"""Cosmos DB savers side by side on the loopback Cosmos server (keep-alive on).

Question: how long does reading a thread's latest checkpoint take as the thread grows (30, 300,
900 checkpoints), how long does one graph invoke take on such a thread, and how many requests
does each cost, for our ``CosmosDBSaver`` against ``langgraph-checkpoint-cosmosdb`` 0.4 and
``langchain-azure-cosmosdb`` 1.0 (``CosmosDBSaverSync``)?

Targets: at 300 checkpoints our latest read takes at most half the best peer's time (best
peer / ours >= 2), and an invoke makes no more requests than the best peer's; our latest read
at 900 takes at most 1.5 times what it takes at 30 (flat).

Every saver runs the same graph (START -> one node -> END, a ``messages`` channel kept to its
last 20 messages, so the state stays the same size while the thread grows) on its own thread,
against one server process. Each contender is a worker process driven over stdin/stdout; the
driver grows every thread to a size, then measures the contenders in interleaved rounds so that
load from other processes hits them alike, and keeps each contender's best round. Requests are
counted by the server (``launch.mjs``). The peers run in their own venv
(``.bench-peers/cosmos-peers``, created by ``bench/_peers.py``), because one of them depends on
the published agentstate-reducer.

Run: ``.venv/bin/python bench/cosmos_bench.py`` (``--quick``: 30 and 300 only, fewer rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
PEER_REQUIREMENTS = [
    "langgraph-checkpoint-cosmosdb==0.4.0",
    "langchain-azure-cosmosdb==1.0.1",
]
OURS = "agentstate-cosmosdb (ours)"
OURS_INLINE = "ours, max_workers=1"
CONTENDERS = {  # label -> (worker name, runs in the peers' venv)
    OURS: ("ours", False),
    OURS_INLINE: ("ours-inline", False),
    "langgraph-checkpoint-cosmosdb 0.4": ("lcc", True),
    "langchain-azure-cosmosdb 1.0": ("lac", True),
}
PEERS = [label for label, (_, peer) in CONTENDERS.items() if peer]
DATABASE = "bench"
LATEST_REPS = 15
INVOKE_REPS = 5


# ------------------------------------------------------------------------------------------
# The workload (runs in both environments: standard library, langgraph and langchain-core only)
# ------------------------------------------------------------------------------------------


def _window(existing: list[Any], new: list[Any]) -> list[Any]:
    return (list(existing) + list(new))[-20:]


class State(TypedDict):
    messages: Annotated[list[Any], _window]


def build_graph(saver: Any) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    def reply(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage(content="an answer of a typical length " * 8)]}

    builder = StateGraph(State)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


class Stats:
    """Reads the request counters of the launcher's control endpoint."""

    def __init__(self, endpoint: str, ca_file: str) -> None:
        self.url = endpoint.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca_file)

    def _call(self, method: str, path: str) -> dict[str, int]:
        data = b"{}" if method == "POST" else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
            result: dict[str, int] = json.loads(resp.read() or b"{}")
            return result

    def reset(self) -> None:
        self._call("POST", "/_agentstate/stats/reset")

    def total(self) -> int:
        return int(self.read().get("total", 0))

    def read(self) -> dict[str, int]:
        """Every counter since the last reset (requests by kind, ``total``, ``bytes_in``,
        ``bytes_out``, ``ru_estimate``)."""
        return self._call("GET", "/_agentstate/stats")


def _median_ms(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


class Workload:
    """One contender's thread, grown and measured on command."""

    def __init__(self, saver: Any, stats: Stats) -> None:
        from langchain_core.messages import HumanMessage

        self.saver = saver
        self.stats = stats
        self.graph = build_graph(saver)
        self.question = {"messages": [HumanMessage(content="a question " * 8)]}
        self.config = {"configurable": {"thread_id": f"bench-{uuid.uuid4().hex[:8]}"}}
        self.checkpoints = 0
        warm = {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex[:8]}"}}
        for _ in range(5):  # connections, caches and imports, on another thread
            self.graph.invoke(self.question, warm)
            saver.get_tuple(warm)

    def invoke(self) -> None:
        self.graph.invoke(self.question, self.config)
        self.checkpoints += 3

    def fill(self, size: int) -> dict[str, Any]:
        while self.checkpoints < size:
            self.invoke()
        return {"checkpoints": self.checkpoints}

    def latest(self, reps: int) -> dict[str, Any]:
        ms = _median_ms(lambda: self.saver.get_tuple(self.config), reps)
        self.stats.reset()
        self.saver.get_tuple(self.config)
        return {"ms": ms, "requests": self.stats.total()}

    def invokes(self, reps: int) -> dict[str, Any]:
        self.stats.reset()
        ms = _median_ms(self.invoke, reps)
        return {"ms": ms, "requests": self.stats.total() / reps, "checkpoints": self.checkpoints}


def contender_saver(name: str, database: str, container: str, ca_file: str, **ours: Any) -> Any:
    """The saver of contender ``name``: ours (``ours`` are its extra arguments) for any name
    starting with ``ours``, else a peer's (which read the endpoint and key from the
    environment, as their READMEs say)."""
    if name.startswith("ours"):
        from agentstate_cosmosdb import CosmosDBSaver

        return CosmosDBSaver(
            database,
            container,
            endpoint=os.environ["COSMOSDB_ENDPOINT"],
            credential=os.environ["COSMOSDB_KEY"],
            connection_verify=ca_file,
            **ours,
        )
    if name == "lcc":
        from langgraph_checkpoint_cosmosdb import CosmosDBSaver as PeerSaver

        return PeerSaver(database, container)
    if name == "lac":
        from langchain_azure_cosmosdb import CosmosDBSaverSync

        return CosmosDBSaverSync(database, container)
    raise ValueError(f"unknown contender {name!r}")


def make_saver(name: str, container: str, ca_file: str) -> Any:
    workers = 1 if name == "ours-inline" else 8
    return contender_saver(name, DATABASE, container, ca_file, max_workers=workers)


def worker(name: str, ca_file: str) -> None:
    """Serve commands (one JSON object per line) for one contender until stdin closes."""
    import warnings

    # The SDK skips TLS verification for 127.0.0.1 on its own; the peers get no CA from us.
    warnings.filterwarnings("ignore")
    stats = Stats(os.environ["COSMOSDB_ENDPOINT"], ca_file)
    workload = Workload(make_saver(name, f"{name}-{uuid.uuid4().hex[:6]}", ca_file), stats)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "fill":
            answer = workload.fill(command["size"])
        elif command["cmd"] == "latest":
            answer = workload.latest(command["reps"])
        elif command["cmd"] == "invoke":
            answer = workload.invokes(command["reps"])
        else:
            break
        print(json.dumps(answer), flush=True)


# ------------------------------------------------------------------------------------------
# The driver (this checkout's venv)
# ------------------------------------------------------------------------------------------


class Worker:
    """A contender's worker process."""

    def __init__(
        self, python: Path, name: str, env: dict[str, str], ca_file: str, script: str = __file__
    ) -> None:
        self.proc = subprocess.Popen(
            [str(python), script, "--worker", name, "--ca-file", ca_file],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.read()

    def read(self) -> dict[str, Any]:
        stdout: IO[str] | None = self.proc.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.proc.args} exited with {self.proc.wait()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **command: Any) -> dict[str, Any]:
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _load_server_module() -> Any:
    import importlib.util

    path = ROOT / "tests" / "cosmos_server" / "server.py"
    spec = importlib.util.spec_from_file_location("agentstate_cosmos_test_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _peer_requirements() -> list[str]:
    from importlib.metadata import version

    pins = [f"{name}=={version(name)}" for name in ("langchain-core", "langgraph", "azure-cosmos")]
    return PEER_REQUIREMENTS + pins


def _skip(reason: str) -> None:
    print("RESULT " + json.dumps({"bench": "cosmos_bench", "skipped": reason[:300]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 and 300 only, fewer rounds")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--ca-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.ca_file)
        return

    sys.path.insert(0, str(ROOT / "bench"))
    from _peers import PeerSetupError, peer_python

    sizes = [30, 300] if args.quick else [30, 300, 900]
    rounds = 2 if args.quick else 4
    workdir = Path(tempfile.mkdtemp(prefix="cosmos_bench_"))
    try:
        server = _load_server_module().CosmosTestServer(workdir)
        server.start()
    except Exception as exc:  # no node or npm: report and leave
        _skip(f"the Cosmos DB test server did not start: {exc}")
        return
    workers: dict[str, Worker] = {}
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
            workers[label] = Worker(python, name, env, str(server.ca_file))
        figures: dict[str, dict[str, dict[str, float]]] = {label: {} for label in CONTENDERS}
        for size in sizes:
            for w in workers.values():
                w.ask(cmd="fill", size=size)
            best: dict[str, dict[str, Any]] = {}
            for _ in range(rounds):
                for label, w in workers.items():
                    latest = w.ask(cmd="latest", reps=LATEST_REPS)
                    invoke = w.ask(cmd="invoke", reps=INVOKE_REPS)
                    row = best.setdefault(label, {"latest_ms": 1e9, "invoke_ms": 1e9})
                    row["latest_ms"] = min(row["latest_ms"], latest["ms"])
                    row["invoke_ms"] = min(row["invoke_ms"], invoke["ms"])
                    row["latest_requests"] = latest["requests"]
                    row["invoke_requests"] = invoke["requests"]
                    row["checkpoints"] = invoke["checkpoints"]
            for label, row in best.items():
                figures[label][str(size)] = {
                    k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()
                }
            print(f"measured at {size} checkpoints", flush=True)
    finally:
        for w in workers.values():
            w.close()
        server.stop()
    report(figures, sizes, rounds)


def report(figures: dict[str, Any], sizes: list[int], rounds: int) -> None:
    print()
    print(
        f"best of {rounds} interleaved rounds; medians of {LATEST_REPS} reads / {INVOKE_REPS} "
        "invokes per round"
    )
    header = f"{'':36}" + "".join(f"{s:>10}" for s in sizes)
    for metric, title in (
        ("latest_ms", "latest-checkpoint read, ms"),
        ("latest_requests", "  requests per latest read"),
        ("invoke_ms", "graph invoke, ms"),
        ("invoke_requests", "  requests per invoke"),
    ):
        print(title)
        print(header)
        for name, rows in figures.items():
            print(f"  {name:34}" + "".join(f"{rows[str(s)][metric]:>10}" for s in sizes))
    ours = figures[OURS]

    def best(metric: str, size: int) -> float:
        return float(min(figures[label][str(size)][metric] for label in PEERS))

    ratios: dict[str, float] = {}
    targets: dict[str, dict[str, Any]] = {}
    for size in sizes:
        label = f"latest read at {size}: best peer ms / ours"
        ratios[label] = round(best("latest_ms", size) / ours[str(size)]["latest_ms"], 2)
    flat = f"latest read flatness: ours at {sizes[0]} / at {sizes[-1]}"
    ratios[flat] = round(ours[str(sizes[0])]["latest_ms"] / ours[str(sizes[-1])]["latest_ms"], 2)
    targets[flat] = {"target": round(1 / 1.5, 2), "met": ratios[flat] >= 1 / 1.5}
    latest = "latest read at 300: best peer ms / ours"
    targets[latest] = {"target": 2.0, "met": ratios[latest] >= 2.0}
    invoke = "invoke at 300: best peer ms / ours"
    ratios[invoke] = round(best("invoke_ms", 300) / ours["300"]["invoke_ms"], 2)
    targets[invoke] = {"target": round(1 / 0.7, 2), "met": ratios[invoke] >= 1 / 0.7}
    requests = "requests per invoke at 300: best peer / ours"
    ratios[requests] = round(best("invoke_requests", 300) / ours["300"]["invoke_requests"], 2)
    targets[requests] = {"target": 1.0, "met": ratios[requests] >= 1.0}
    inline = "invoke at 300: best peer ms / ours with max_workers=1"
    ratios[inline] = round(best("invoke_ms", 300) / figures[OURS_INLINE]["300"]["invoke_ms"], 2)
    print()
    for label, value in ratios.items():
        goal = targets.get(label)
        mark = f"  (target {goal['target']}: {'met' if goal['met'] else 'MISSED'})" if goal else ""
        print(f"  {label}: {value}{mark}")
    result = {"bench": "cosmos_bench", "ratios": ratios, "targets": targets, "figures": figures}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()

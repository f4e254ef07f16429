"""Graphs and worker processes for the two-process Cosmos DB tests (``test_races.py``).

A test starts a worker with :func:`start` (``python -m tests.cosmos._workers <scenario>
<json>``): a second process with its own saver, client and session, exactly as a second app
instance would have. Each scenario prints one JSON line when it is done (or the process dies
on purpose, as a crash would).

Scenarios:

* ``crash``: run the parallel-branch graph; branch ``slow`` kills the process
  (``os._exit``) once branch ``fast`` has finished, as a process dying mid-step would.
* ``chat``: run ``turns`` turns of the chat graph on a thread (retention per the arguments),
  reporting every error by type.
* ``blocked``: run the chat graph; its node waits until a file exists, then the run goes on;
  report how the run ended.
"""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# Graphs shared by the tests and the workers
# --------------------------------------------------------------------------------------------


class BranchState(TypedDict):
    log: Annotated[list[str], operator.add]


def branch_graph(saver: Any, side_effects: Path, crash: bool) -> Any:
    """START -> first -> (fast, slow) in parallel -> END. ``fast`` appends a line to
    ``side_effects`` (its side effect: it must happen once); ``slow`` kills the process
    after ``fast`` is done when ``crash`` is set. Under ``durability="async"`` the writes of
    ``fast`` are stored while the checkpoint after ``first`` may still be on its way."""
    from langgraph.graph import END, START, StateGraph

    def fast(state: BranchState) -> dict[str, Any]:
        with side_effects.open("a") as out:
            out.write("fast\n")
        return {"log": ["fast"]}

    def slow(state: BranchState) -> dict[str, Any]:
        if crash:
            time.sleep(0.8)  # fast is done and its writes are stored; then the process dies
            os._exit(17)
        return {"log": ["slow"]}

    def first(state: BranchState) -> dict[str, Any]:
        return {"log": ["first"]}

    builder = StateGraph(BranchState)
    builder.add_node("first", first)
    builder.add_node("fast", fast)
    builder.add_node("slow", slow)
    builder.add_edge(START, "first")
    builder.add_edge("first", "fast")
    builder.add_edge("first", "slow")
    builder.add_edge("fast", END)
    builder.add_edge("slow", END)
    return builder.compile(checkpointer=saver)


def chat_graph(saver: Any, gate: Path | None = None) -> Any:
    """START -> reply -> END on a messages channel; ``reply`` waits for ``gate`` to exist
    (when given) before answering."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict[str, Any]:
        if gate is not None:
            while not gate.exists():
                time.sleep(0.02)
        return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


# --------------------------------------------------------------------------------------------
# Starting a worker
# --------------------------------------------------------------------------------------------


def start(scenario: str, **args: Any) -> subprocess.Popen[str]:
    """Start a worker process for ``scenario`` (arguments as JSON)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.cosmos._workers", scenario, json.dumps(args)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, dict[str, Any]]:
    """Wait for a worker; its exit status and the JSON it printed last ({} if none)."""
    out, err = proc.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    report: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if not lines and proc.returncode == 0:
        raise AssertionError(f"worker printed nothing; stderr:\n{err[-3000:]}")
    report.setdefault("stderr", err[-3000:])
    return proc.returncode, report


# --------------------------------------------------------------------------------------------
# The worker side
# --------------------------------------------------------------------------------------------


def _saver(args: dict[str, Any]) -> Any:
    from agentstate_cosmosdb import CosmosDBSaver

    return CosmosDBSaver(
        args["database"],
        args["container"],
        endpoint=args["endpoint"],
        credential=args["key"],
        connection_verify=args["ca_file"],
        keep_checkpoints=args.get("keep"),
        retry_total=2,
        retry_backoff_max=1,
    )


def _crash(args: dict[str, Any]) -> None:
    with _saver(args) as saver:
        graph = branch_graph(saver, Path(args["side_effects"]), crash=True)
        config = {"configurable": {"thread_id": args["thread"]}}
        graph.invoke({"log": []}, config, durability=args["durability"])
    print(json.dumps({"crashed": False}))


def _chat(args: dict[str, Any]) -> None:
    from langchain_core.messages import HumanMessage

    errors: list[str] = []
    with _saver(args) as saver:
        graph = chat_graph(saver)
        config = {"configurable": {"thread_id": args["thread"]}}
        for turn in range(int(args["turns"])):
            try:
                graph.invoke({"messages": [HumanMessage(content=f"w{turn}")]}, config)
            except Exception as exc:  # report every failure, keep going
                errors.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps({"errors": errors}))


def _blocked(args: dict[str, Any]) -> None:
    from langchain_core.messages import HumanMessage

    with _saver(args) as saver:
        graph = chat_graph(saver, gate=Path(args["gate"]))
        config = {"configurable": {"thread_id": args["thread"]}}
        Path(args["started"]).write_text("started")
        try:
            graph.invoke(
                {"messages": [HumanMessage(content="blocked")]},
                config,
                durability=args.get("durability", "async"),
            )
        except Exception as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            return
    print(json.dumps({"error": None}))


def main(argv: list[str]) -> None:
    scenario, raw = argv[0], argv[1]
    args = json.loads(raw)
    try:
        {"crash": _crash, "chat": _chat, "blocked": _blocked}[scenario](args)
    except Exception:
        print(json.dumps({"fatal": traceback.format_exc()}))
        raise


if __name__ == "__main__":
    main(sys.argv[1:])

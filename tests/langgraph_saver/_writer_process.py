"""One writer process of ``test_two_processes``: runs turns of the calculator agent on one
PostgreSQL thread through ``ReducingCheckpointSaver``, recording what its hook took.

``python -m tests.langgraph_saver._writer_process CONNINFO THREAD WHO TURNS OUT READY_DIR``:
waits until every writer has written its ``READY_DIR/<who>`` file (so the processes run
their turns at the same time), then writes ``{"delivered": [ids]}`` to ``OUT``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver

from agentstate_reducer.langgraph import ReducingCheckpointSaver
from agentstate_reducer.messages import id_of
from tests.langgraph_saver._graphs import agent_graph, reducer

WRITERS = 2


def main(conninfo: str, thread: str, who: str, turns: int, out: str, ready_dir: str) -> None:
    delivered: list[Any] = []

    def remember(messages: list[Any], namespace: Any) -> None:
        delivered.extend(id_of(m) for m in messages)

    ready = Path(ready_dir)
    with PostgresSaver.from_conn_string(conninfo) as inner:
        saver = ReducingCheckpointSaver(inner, reducer(on_prune=[remember]))
        # Two runs of one thread start from each other's checkpoints, mid-turn at times
        # (a tool call whose result the other run has not stored yet).
        graph = agent_graph(saver, strict=False)
        (ready / who).touch()
        deadline = time.monotonic() + 60
        while len(list(ready.iterdir())) < WRITERS and time.monotonic() < deadline:
            time.sleep(0.01)
        config: Any = {"configurable": {"thread_id": thread}}
        for n in range(turns):
            graph.invoke({"messages": [HumanMessage(f"{who} {n}", id=f"{who}-h{n}")]}, config)
    Path(out).write_text(json.dumps({"delivered": delivered}))


if __name__ == "__main__":
    conninfo, thread, who, turns, out, ready_dir = sys.argv[1:7]
    main(conninfo, thread, who, int(turns), out, ready_dir)

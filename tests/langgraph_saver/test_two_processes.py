"""Two processes, one thread, one PostgreSQL database: what the second writer sees.

Processes share only the saver: each has its own reducer, so its own hand-off memory and
claims. Two runs of one thread at once make LangGraph branch the thread (each run writes
on the checkpoint it started from). What holds, and what this test checks: no message is
lost (for every branch, every message its ancestry held is in its newest checkpoint or
reached some process's hook), and each process hands a message over at most once; the
same message may reach both processes' hooks (at least once across processes), so a hook
shared by several processes should be idempotent (upsert by message id).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from agentstate_reducer.messages import id_of

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
TURNS = 12


def _branches(tuples: list[Any]) -> list[tuple[set[Any], set[Any]]]:
    """``(held, newest)`` for every branch: the ids its ancestry held, and its leaf's."""
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in tuples}
    parents = {t.parent_config["configurable"]["checkpoint_id"] for t in tuples if t.parent_config}
    out = []
    for leaf in tuples:
        if leaf.config["configurable"]["checkpoint_id"] in parents:
            continue
        held: set[Any] = set()
        node = leaf
        while node is not None:
            held |= {id_of(m) for m in node.checkpoint["channel_values"].get("messages", [])}
            parent = node.parent_config
            node = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
        newest = {id_of(m) for m in leaf.checkpoint["channel_values"].get("messages", [])}
        out.append((held, newest))
    return out


def test_two_processes_writing_one_thread_lose_nothing(
    postgres_conninfo: str, tmp_path: Path
) -> None:
    """Two real processes run turns on one thread at the same time, each through its own
    ReducingCheckpointSaver around PostgreSQL: no branch of the thread lost a message, no
    process handed one over twice; duplicates across processes are possible (counted)."""
    with PostgresSaver.from_conn_string(postgres_conninfo) as saver:
        saver.setup()
    ready = tmp_path / "ready"
    ready.mkdir()
    writers = {}
    for who in ("alice-proc", "bob-proc"):
        out = tmp_path / f"{who}.json"
        command = [
            sys.executable,
            "-m",
            "tests.langgraph_saver._writer_process",
            postgres_conninfo,
            "shared-thread",
            who,
            str(TURNS),
            str(out),
            str(ready),
        ]
        writers[who] = (subprocess.Popen(command, cwd=ROOT), out)
    for who, (process, _) in writers.items():
        assert process.wait(timeout=300) == 0, f"writer {who} failed"
    delivered = {who: json.loads(out.read_text())["delivered"] for who, (_, out) in writers.items()}
    for who, ids in delivered.items():
        assert len(ids) == len(set(ids)), f"{who} handed a message over twice"
    taken = set().union(*map(set, delivered.values()))
    with PostgresSaver.from_conn_string(postgres_conninfo) as saver:
        tuples = list(saver.list({"configurable": {"thread_id": "shared-thread"}}))
    branches = _branches(tuples)
    assert len(branches) >= 2, "the two runs never overlapped (no branch)"
    for held, newest in branches:
        lost = held - newest - taken
        assert not lost, f"lost on a branch: {sorted(map(str, lost))}"
    asked = {f"{who}-h{n}" for who in delivered for n in range(TURNS)}
    everywhere = set().union(*(held for held, _ in branches))
    assert asked <= everywhere, "a question never reached storage"

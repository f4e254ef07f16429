"""Bytes one thread stores after 100, 200, 400 and 800 turns: bare saver vs wrapped.

A chat graph (one node answering each human message) runs turn after turn on one thread,
on SQLite and on PostgreSQL, once with the bare saver and once wrapped in
ReducingCheckpointSaver (count mode, 20..40 messages). After each mark the bytes the
thread holds are summed from the saver's own tables:

* SQLite: ``length()`` of every checkpoint, metadata and write of the thread (the
  checkpoint carries its channel values inline);
* PostgreSQL: ``octet_length()`` of the checkpoint and metadata JSON, the channel blobs
  and the writes of the thread, plus the on-disk size of the three tables (with TOAST
  compression and indexes) in a schema of its own.

Bare storage grows with the square of the turns (every checkpoint holds the whole
history); wrapped storage grows in a line (every checkpoint holds at most 40 messages);
wrapped with ``keep_checkpoints=20`` (PostgreSQL) it saw-tooths under a flat ceiling (the
wrapper prunes the thread every 20 puts), so that column shows the peak since the previous
mark.
The ``x`` columns show the growth since the previous mark: about 4 for a square, 2 for a
line, as the turns double.

    python bench/storage_growth.py
    python bench/storage_growth.py --marks 50,100,200 --postgres-url postgresql://...
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import string
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from agentstate_reducer import MessageReducer
from agentstate_reducer.langgraph import ReducingCheckpointSaver

THREAD = "bench"


def sentence(seed: int, words: int = 24) -> str:
    """About 150 characters of varied text (so compression does not hide the size)."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(words))


def chat_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def answer(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(f"answer {n}: {sentence(-n)}")]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=saver)


def run(
    saver: BaseCheckpointSaver[Any],
    marks: list[int],
    measure: Callable[[], tuple[int, int]],
    *,
    peak: bool = False,
) -> list[tuple[int, int, float]]:
    """Turns up to the last mark; (payload bytes, on-disk bytes, seconds) at each mark.

    ``peak``: measure after every turn and report the largest since the previous mark (a
    thread pruned every N puts saw-tooths; its peak is what it really needs).
    """
    graph = chat_graph(saver)
    config = {"configurable": {"thread_id": THREAD}}
    out = []
    high = (0, 0)
    began = time.perf_counter()
    for turn in range(1, marks[-1] + 1):
        graph.invoke({"messages": [HumanMessage(f"question {turn}: {sentence(turn)}")]}, config)
        if peak or turn in marks:
            payload, disk = measure()
            high = (max(high[0], payload), max(high[1], disk))
        if turn in marks:
            out.append((*(high if peak else (payload, disk)), time.perf_counter() - began))
            high = (0, 0)
    return out


KEEP = 20
"""Checkpoints per thread the ``kept`` runs keep (``keep_checkpoints``, PostgreSQL only:
its saver has the ``prune`` the option needs; SQLite's has none)."""


def wrap(saver: BaseCheckpointSaver[Any], keep: int | None = None) -> BaseCheckpointSaver[Any]:
    reducer = MessageReducer(min_messages=20, max_messages=40)
    return ReducingCheckpointSaver(saver, reducer, keep_checkpoints=keep)


SQLITE_BYTES = """
SELECT
  (SELECT COALESCE(SUM(length(checkpoint) + length(metadata)), 0)
     FROM checkpoints WHERE thread_id = ?)
+ (SELECT COALESCE(SUM(length(value)), 0) FROM writes WHERE thread_id = ?)
"""


@contextmanager
def sqlite_saver() -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], tuple[int, int]]]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()

        def measure() -> tuple[int, int]:
            payload = conn.execute(SQLITE_BYTES, (THREAD, THREAD)).fetchone()[0]
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return payload, path.stat().st_size

        try:
            yield saver, measure
        finally:
            conn.close()


POSTGRES_BYTES = """
SELECT
  (SELECT COALESCE(SUM(octet_length(checkpoint::text) + octet_length(metadata::text)), 0)
     FROM checkpoints WHERE thread_id = %(t)s)
+ (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_blobs WHERE thread_id = %(t)s)
+ (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_writes WHERE thread_id = %(t)s)
  AS payload,
  pg_total_relation_size('checkpoints') + pg_total_relation_size('checkpoint_blobs')
+ pg_total_relation_size('checkpoint_writes') AS disk
"""


@contextmanager
def postgres_saver(
    url: str,
) -> Iterator[tuple[BaseCheckpointSaver[Any], Callable[[], tuple[int, int]]]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import conninfo

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        info = conninfo.make_conninfo(url, options=f"-c search_path={schema}")
        with PostgresSaver.from_conn_string(info) as saver:
            saver.setup()

            def measure() -> tuple[int, int]:
                with saver._cursor() as cur:
                    cur.execute(POSTGRES_BYTES, {"t": THREAD})
                    row = cur.fetchone()
                assert row is not None
                return int(row["payload"]), int(row["disk"])

            yield saver, measure
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _mb(n: int) -> str:
    return f"{n / 1e6:,.2f} MB"


def report(
    backend: str,
    marks: list[int],
    bare: list[Any],
    wrapped: list[Any],
    disk: bool,
    kept: list[Any] | None = None,
) -> float:
    """Print the table; return bare / wrapped bytes at the last mark."""
    column = 1 if disk else 0
    what = "on disk" if disk else "payload"
    print(f"\n{backend} ({what} bytes of one thread)")
    header = f"{'turns':>6} {'bare':>12} {'x':>5} {'wrapped':>12} {'x':>5} {'bare/wrapped':>13}"
    print(header + (f" {f'keep {KEEP} peak':>14} {'x':>5}" if kept is not None else ""))
    for i, turns in enumerate(marks):
        b, w = bare[i][column], wrapped[i][column]
        bx = f"{b / bare[i - 1][column]:.1f}" if i else ""
        wx = f"{w / wrapped[i - 1][column]:.1f}" if i else ""
        line = f"{turns:>6} {_mb(b):>12} {bx:>5} {_mb(w):>12} {wx:>5} {b / w:>12.1f}x"
        if kept is not None:
            k = kept[i][column]
            kx = f"{k / kept[i - 1][column]:.1f}" if i else ""
            line += f" {_mb(k):>14} {kx:>5}"
        print(line)
    print(f"  time for {marks[-1]} turns: bare {bare[-1][2]:.1f} s, wrapped {wrapped[-1][2]:.1f} s")
    return float(bare[-1][column] / wrapped[-1][column])


def print_result(ratios: dict[str, float], quick: bool) -> None:
    """The machine-readable last line (see bench/README.md)."""
    rounded = {name: round(value, 2) for name, value in ratios.items()}
    print("RESULT " + json.dumps({"bench": "storage_growth", "quick": quick, "ratios": rounded}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--marks", default="100,200,400,800", help="turn counts to report")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "AGENTSTATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--quick", action="store_true", help="marks 50,100,200 only")
    args = parser.parse_args()
    marks = sorted(int(m) for m in ("50,100,200" if args.quick else args.marks).split(","))
    ratios: dict[str, float] = {}
    print(f"chat graph, 2 messages per turn, wrapped = MessageReducer(20, 40); marks {marks}")

    with sqlite_saver() as (saver, measure):
        bare = run(saver, marks, measure)
    with sqlite_saver() as (saver, measure):
        wrapped = run(wrap(saver), marks, measure)
    ratios[f"SQLite: bare / wrapped bytes at {marks[-1]} turns"] = report(
        "SQLite", marks, bare, wrapped, disk=False
    )

    if args.skip_postgres:
        print_result(ratios, args.quick)
        return
    try:
        with postgres_saver(args.postgres_url) as (saver, measure):
            bare = run(saver, marks, measure)
        with postgres_saver(args.postgres_url) as (saver, measure):
            wrapped = run(wrap(saver), marks, measure)
        with postgres_saver(args.postgres_url) as (saver, measure):
            kept = run(wrap(saver, keep=KEEP), marks, measure, peak=True)
    except Exception as exc:  # a bench without a server still reports SQLite
        print(f"\nPostgreSQL skipped: {type(exc).__name__}: {exc}")
        print_result(ratios, args.quick)
        return
    ratios[f"PostgreSQL: bare / wrapped bytes at {marks[-1]} turns"] = report(
        "PostgreSQL", marks, bare, wrapped, disk=False, kept=kept
    )
    # Flat is 1.0: the most a thread keeping its newest N checkpoints ever stores, late in
    # the chat against early on.
    ratios[f"PostgreSQL keep {KEEP}: peak bytes by {marks[-1]} / by {marks[0]} turns"] = (
        kept[-1][0] / kept[0][0]
    )
    ratios[f"PostgreSQL on disk: bare / wrapped at {marks[-1]} turns"] = report(
        "PostgreSQL", marks, bare, wrapped, disk=True
    )
    print_result(ratios, args.quick)


if __name__ == "__main__":
    main()

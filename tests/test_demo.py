"""The ``agentstate-reducer demo`` command, run as a user runs it: a subprocess.

Every test starts the real command (``python -m agentstate_reducer``, or the console script)
on a real database and reads what it prints and writes; nothing of LangGraph or the savers
is replaced.
"""

from __future__ import annotations

import csv
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import conninfo as pg_conninfo

from agentstate_reducer.demo import (
    CONNECT_TIMEOUT,
    LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    RunResult,
    TurnSample,
    calculate,
    connect_kwargs,
    parse_saver,
    question,
    redact,
    sample_turns,
    summary_line,
)
from tests._postgres import POSTGRES_URL

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 240


def run_demo(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agentstate_reducer demo ARGS``; the Cosmos DB variables come only
    from ``env``."""
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith("COSMOSDB_") and k != "PYTHONPATH"
    }
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "agentstate_reducer", "demo", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd or ROOT,
        env=full_env,
        check=False,
    )


def read_csv(path: Path) -> list[dict[str, int]]:
    with path.open(newline="") as handle:
        return [{k: int(float(v)) for k, v in row.items()} for row in csv.DictReader(handle)]


def table_rows(stdout: str) -> list[list[str]]:
    """The data rows of the printed table: lines of ten numbers, three of them sizes with
    units (turn; messages bare, bounded; stored bare, bounded, retained; ms/turn bare,
    bounded, retained)."""
    rows = []
    for line in stdout.splitlines():
        cells = line.split()
        if len(cells) == 12 and cells[0].isdigit() and cells[1].isdigit():
            rows.append(cells)
    return rows


def assert_valid_png(path: Path) -> None:
    """The file is a PNG whose header chunk is intact (signature, IHDR, CRC, size)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16 : 16 + length]
    (crc,) = struct.unpack(">I", data[16 + length : 20 + length])
    assert zlib.crc32(kind + body) == crc, "IHDR checksum mismatch"
    width, height = struct.unpack(">II", body[:8])
    assert width > 200 and height > 200
    assert data.rstrip(b"\x00")[-8:-4] == b"IEND", "PNG is truncated"


def test_sqlite_demo_prints_the_table_bounds_the_thread_and_writes_the_plot(
    tmp_path: Path,
) -> None:
    """The default backend: a table of the three runs, the bound held at every turn, fewer
    bytes stored at the end, a CSV of every turn and a valid PNG."""
    out = tmp_path / "out"
    proc = run_demo("--turns", "16", "--max-messages", "12", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "turns of a tool-calling LangGraph agent on SQLite" in proc.stdout
    assert "prune above 12 messages down to 6" in proc.stdout
    rows = table_rows(proc.stdout)
    assert [int(r[0]) for r in rows] == sample_turns(16) == [2, 4, 5, 7, 8, 10, 12, 13, 15, 16]
    assert "After 16 turns:" in proc.stdout
    assert "bare:" in proc.stderr and "bounded:" in proc.stderr  # the progress summary lines

    turns = read_csv(out / "demo.csv")
    assert [t["turn"] for t in turns] == list(range(1, 17))
    # 1 system prompt + 4 messages per turn, all kept by the bare saver
    assert [t["messages_bare"] for t in turns] == [1 + 4 * n for n in range(1, 17)]
    assert all(t["messages_bounded"] <= 12 for t in turns)
    assert max(t["messages_bounded"] for t in turns) > 6  # it did fill up between prunes
    last = turns[-1]
    assert last["stored_bytes_bounded"] < last["stored_bytes_bare"]
    assert all(t["stored_bytes_bare"] > 0 for t in turns)
    # the table shows the same numbers as the CSV
    final = rows[-1]
    assert (int(final[1]), int(final[2])) == (last["messages_bare"], last["messages_bounded"])
    assert [t["messages_retained"] for t in turns] == [t["messages_bounded"] for t in turns]
    assert last["stored_bytes_retained"] < last["stored_bytes_bounded"]
    assert "With keep_checkpoints=20 the thread stores" in proc.stdout
    assert_valid_png(out / "demo.png")


def test_keep_checkpoints_keeps_the_threads_size_flat(tmp_path: Path) -> None:
    """The third run (the wrapper with keep_checkpoints, on SQLite, whose saver the demo
    gives a prune) stores no more in the second half of the run than in the first, while
    the wrapper alone keeps growing; the closing line says so."""
    proc = run_demo(
        "--turns", "60", "--keep-checkpoints", "8", "--output", str(tmp_path)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    turns = read_csv(tmp_path / "demo.csv")
    retained = [t["stored_bytes_retained"] for t in turns]
    bounded = [t["stored_bytes_bounded"] for t in turns]
    assert max(retained[30:]) <= max(retained[:30]) * 1.1
    assert bounded[-1] > 2 * bounded[29]
    assert "With keep_checkpoints=8" in proc.stdout and "(flat)" in proc.stdout


def test_recall_answers_at_the_end_a_fact_told_at_turn_5(tmp_path: Path) -> None:
    """``--recall``: the fact told at turn 5 has left the bounded runs' stored lists long
    before it is asked for; StoreMemory kept it and Recall brings it into the model's
    view, so all three runs answer it, and the demo says where the answer came from."""
    proc = run_demo("--turns", "40", "--recall", "--output", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "Asked at the end for the fact told at turn 5:" in proc.stdout
    lines = [line.strip() for line in proc.stdout.splitlines()]
    assert (
        "bare at turn 40 (the stored list still held the fact): 'Your locker code is 4417.'"
        in lines
    )
    for label in ("bounded", "retained"):
        assert (
            f"{label} at turn 40 (the fact had left the stored list long before): "
            "'Your locker code is 4417.'"
        ) in lines
    too_short = run_demo("--turns", "5", "--recall", "--output", str(tmp_path))
    assert too_short.returncode == 1
    assert "--recall tells the agent a fact at turn 5" in too_short.stderr


def test_token_bound_keeps_fewer_messages_than_the_bare_saver(tmp_path: Path) -> None:
    """``--max-tokens`` switches the reducer to a token budget; the stored list stays short."""
    proc = run_demo("--turns", "12", "--max-tokens", "300", "--output", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "prune above 300 tokens down to 150" in proc.stdout
    turns = read_csv(tmp_path / "demo.csv")
    assert turns[-1]["messages_bare"] == 49
    assert max(t["messages_bounded"] for t in turns) < 25


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--turns", "0"], "--turns: must be at least 1"),
        (["--turns", "many"], "--turns: expected a whole number, got 'many'"),
        (["--max-messages", "10", "--max-tokens", "500"], "not allowed with argument"),
        (["--max-messages", "3"], "--max-messages: must be at least 4"),
        (["--max-tokens", "50"], "--max-tokens: must be at least 100"),
        (["--saver", "mysql://localhost/db"], "--saver: expected 'sqlite', 'cosmosdb', a"),
        (["--colour"], "unrecognized arguments: --colour"),
    ],
)
def test_bad_options_exit_2_with_a_usage_error(args: list[str], message: str) -> None:
    """argparse style: usage, one error line naming the option, status 2, no traceback."""
    proc = run_demo(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "usage: agentstate-reducer demo" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "saver",
    [
        pytest.param("postgresql://demo:s3cret@127.0.0.1:1/nowhere", id="userinfo"),
        pytest.param("postgresql://demo@127.0.0.1:1/nowhere?password=s3cret", id="query"),
        pytest.param("postgres://127.0.0.1:1/nowhere?user=demo&password=s3cret", id="query-only"),
        pytest.param("host=127.0.0.1 port=1 user=demo password=s3cret dbname=nowhere", id="kv"),
        pytest.param(
            "host=127.0.0.1 port=1 user=demo password='s3 cret' dbname=nowhere", id="kv-q"
        ),
        pytest.param("postgresql://demo:s3%63ret@127.0.0.1:1/nowhere", id="percent-encoded"),
        pytest.param("postgresql+psycopg://demo:s3cret@127.0.0.1:1/nowhere", id="sqlalchemy"),
        pytest.param("POSTGRES+psycopg2://demo:s3cret@127.0.0.1:1/nowhere", id="sqlalchemy-2"),
        pytest.param(
            "postgresql://demo@127.0.0.1:1/nowhere?sslpassword=s3cret", id="sslpassword-query"
        ),
        pytest.param(
            "host=127.0.0.1 port=1 user=demo sslpassword=s3cret dbname=nowhere", id="sslpassword-kv"
        ),
    ],
)
def test_postgres_password_is_never_printed_wherever_it_is_given(
    saver: str, tmp_path: Path
) -> None:
    """A refused connection is one line naming the server, with the password shown as ***
    whether it was in the URL's userinfo, its query string or a key=value string."""
    proc = run_demo("--turns", "2", "--output", str(tmp_path), "--saver", saver)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("agentstate-reducer demo: error: cannot connect to PostgreSQL at ")
    assert "host=127.0.0.1" in lines[0] and "port=1" in lines[0] and "user=demo" in lines[0]
    assert "password=***" in lines[0]
    for secret in ("s3cret", "s3 cret", "s3%63ret", "cret"):
        assert secret not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("saver", "shown"),
    [
        ("mysql://demo:s3cret@db.example:3306/app", "got a mysql:// URL (not shown"),
        ("demo:s3cret@db.example:5432/app", "got something else (not shown"),
        ("sqlight", "got 'sqlight'"),  # a mistyped word is worth repeating
    ],
)
def test_a_refused_saver_value_is_not_echoed_when_it_may_hold_a_password(
    saver: str, shown: str
) -> None:
    """argparse's usage error for ``--saver`` names the forms it accepts and never repeats
    a value that could carry credentials."""
    proc = run_demo("--saver", saver)
    assert proc.returncode == 2
    assert shown in proc.stderr
    assert "s3cret" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_an_sqlalchemy_url_is_read_as_the_postgresql_url_it_names() -> None:
    spec = parse_saver("postgresql+psycopg://u:pw@h:5/d?sslmode=disable")
    assert (spec.kind, spec.url) == ("postgres", "postgresql://u:pw@h:5/d?sslmode=disable")
    assert parse_saver("postgres+asyncpg://u@h/d").url == "postgres://u@h/d"
    assert "pw" not in repr(spec)


def test_unusable_cosmos_settings_are_one_line_naming_what_to_set(tmp_path: Path) -> None:
    """No traceback, status 1, and the variables to set named."""
    proc = run_demo("--turns", "2", "--output", str(tmp_path), "--saver", "cosmosdb")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "set COSMOSDB_ENDPOINT and COSMOSDB_KEY" in lines[0]


def test_a_connection_string_libpq_cannot_parse_is_not_echoed(tmp_path: Path) -> None:
    """libpq's parse errors quote the string; the demo's message must not."""
    saver = "host=127.0.0.1 password='s3cret user=demo"  # unterminated quote
    proc = run_demo("--turns", "2", "--output", str(tmp_path), "--saver", saver)
    assert proc.returncode == 1
    assert "not a valid PostgreSQL connection string" in proc.stderr
    assert "s3cret" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on loopback that accepts connections and never sends a byte."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)  # held open, never answered

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        server.close()


@pytest.mark.parametrize(
    ("query", "timeout"),
    [("?connect_timeout=2", 2), ("", CONNECT_TIMEOUT)],
    ids=["timeout-in-url", "default-timeout"],
)
def test_a_server_that_never_answers_times_out(
    silent_server: int, query: str, timeout: int, tmp_path: Path
) -> None:
    """Connecting to a server that accepts and stays silent ends, after about the URL's
    ``connect_timeout`` or the demo's default, in one line saying the connection timed out
    (before the fix it hung forever)."""
    url = f"postgresql://demo:s3cret@127.0.0.1:{silent_server}/db{query}"
    env = {k: v for k, v in os.environ.items() if k != "PGCONNECT_TIMEOUT"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "agentstate_reducer", "demo", "--turns", "1", "--saver", url,
         "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=timeout * 3 + 30, cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert "timeout expired" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "s3cret" not in proc.stderr
    assert timeout * 0.9 <= elapsed <= timeout * 3 + 15, elapsed


def test_redact_and_connect_kwargs_read_the_parsed_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``redact`` hides the password libpq would use and keeps every other parameter;
    ``connect_kwargs`` adds a timeout only when neither the string nor the environment
    sets one."""
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    shown = pg_conninfo.conninfo_to_dict(redact("postgresql://u:p%40ss@h:5/d?sslmode=disable"))
    assert shown == {
        "user": "u", "password": "***", "host": "h", "port": "5", "dbname": "d",
        "sslmode": "disable",
    }  # fmt: skip
    assert pg_conninfo.conninfo_to_dict(redact("postgresql://u@h/d")) == {
        "user": "u", "host": "h", "dbname": "d"
    }  # fmt: skip
    monkeypatch.delenv("PGOPTIONS", raising=False)
    ours = f"-c lock_timeout={LOCK_TIMEOUT * 1000} -c statement_timeout={STATEMENT_TIMEOUT * 1000}"
    assert connect_kwargs("postgresql://u@h/d") == {
        "connect_timeout": CONNECT_TIMEOUT, "options": ours
    }  # fmt: skip
    assert connect_kwargs("postgresql://u@h/d?connect_timeout=3") == {"options": ours}
    assert connect_kwargs("host=h connect_timeout=0") == {"options": ours}
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "4")
    assert connect_kwargs("postgresql://u@h/d") == {"options": ours}
    # options already given are kept, and a timeout they set wins over ours
    assert connect_kwargs("postgresql://u@h/d?options=-csearch_path%3Ds") == {
        "options": f"-csearch_path=s {ours}"
    }
    both = "host=h options='-c lock_timeout=1s -c statement_timeout=2s'"
    assert connect_kwargs(both) == {}
    assert connect_kwargs("host=h options='-c lock_timeout=1s'") == {
        "options": f"-c lock_timeout=1s -c statement_timeout={STATEMENT_TIMEOUT * 1000}"
    }
    # PGOPTIONS counts when the string has no options (passing options= would hide it)
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=3s")
    assert connect_kwargs("host=h") == {
        "options": f"-c lock_timeout=3s -c statement_timeout={STATEMENT_TIMEOUT * 1000}"
    }
    assert "s3cret" not in redact("host=h sslpassword=s3cret password=s3cret")
    assert "p@ss" not in repr(parse_saver("postgresql://u:p%40ss@h/d"))
    assert "p@ss" not in repr(parse_saver("host=h password=p@ss"))


def test_output_path_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = run_demo("--turns", "2", "--output", str(blocker / "out"))
    assert proc.returncode == 1
    assert "cannot create the output directory" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("blocked", ["demo.csv", "demo.png"])
def test_an_output_file_that_cannot_be_written_fails_before_the_runs(
    blocked: str, tmp_path: Path
) -> None:
    """A result file that cannot be written is one line naming it, before any turn runs
    (nothing on the progress bar), not a traceback after the runs."""
    (tmp_path / blocked).mkdir()
    proc = run_demo("--turns", "2", "--output", str(tmp_path))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"agentstate-reducer demo: error: cannot write {str(tmp_path / blocked)!r}: it exists "
        "and is not a file"
    ], proc.stderr
    assert not (tmp_path / "demo.csv").is_file()


def test_options_without_the_demo_subcommand_run_the_demo(tmp_path: Path) -> None:
    """``demo`` is the default subcommand, so ``agentstate-reducer --turns 2`` runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentstate_reducer", "--turns", "2", "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "After 2 turns:" in proc.stdout
    assert len(read_csv(tmp_path / "demo.csv")) == 2


def _run(label: str, rows: list[tuple[int, int, float]]) -> RunResult:
    """A run from ``(messages, stored_bytes, seconds)`` per turn."""
    samples = [TurnSample(n, m, b, t) for n, (m, b, t) in enumerate(rows, start=1)]
    return RunResult(label, samples)


def test_the_closing_sentence_reads_right_for_every_outcome() -> None:
    """No "1.0x less", no "1 turns": who is ahead decides the words, counts agree."""
    one = summary_line(_run("bare", [(5, 1000, 0.01)]), _run("bounded", [(5, 1000, 0.01)]))
    assert one.startswith("After 1 turn: bare stores 1000 B for 5 messages, bounded 1000 B")
    assert "about the same stored, the last turn wrote about as many bytes" in one
    assert "the last turn about as fast (10.0 vs 10.0 ms/turn)." in one

    bare = _run("bare", [(5 + 4 * n, 4000 * n * n, 0.04) for n in range(1, 21)])
    bounded = _run("bounded", [(min(5 + 4 * n, 12), 3000 * n, 0.01) for n in range(1, 21)])
    ahead = summary_line(bare, bounded)
    assert "After 20 turns:" in ahead and "(at most 12 after any turn)" in ahead
    assert "26.7x less stored, the last turn wrote 52.0x fewer bytes" in ahead
    assert "the last 2 turns 4.0x faster (40.0 vs 10.0 ms/turn)." in ahead

    behind = summary_line(bounded, bare)  # the other way round, as a slow reducer would be
    assert "26.7x more stored, the last turn wrote 52.0x more bytes" in behind
    assert "the last 2 turns 4.0x slower" in behind

    # a prune that freed rows: the thread shrank in the last turn, no ratio to give
    shrank = _run("bounded", [(9, 5000, 0.01), (5, 3000, 0.01)])
    freed = summary_line(_run("bare", [(5, 4000, 0.01), (9, 9000, 0.01)]), shrank)
    assert (
        "in the last turn the bare thread grew by 4.9 KiB and the bounded one shrank by "
        "2.0 KiB, the last turn about as fast"
    ) in freed
    for sentence in (one, ahead, behind, freed):
        assert "1.0x" not in sentence and " 1 turns" not in sentence


def test_console_script_and_module_share_the_parser() -> None:
    """The installed ``agentstate-reducer`` script is the same command."""
    script = Path(sys.executable).with_name("agentstate-reducer")
    if not script.exists():
        script_path = shutil.which("agentstate-reducer")
        if script_path is None:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail("the agentstate-reducer console script is not installed")
            pytest.skip("the agentstate-reducer console script is not installed in this env")
        script = Path(script_path)
    proc = subprocess.run(
        [str(script), "demo", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0
    for option in (
        "--turns",
        "--saver",
        "--max-messages",
        "--max-tokens",
        "--keep-checkpoints",
        "--recall",
        "--output",
    ):
        assert option in proc.stdout


@pytest.mark.postgres
def test_postgres_demo(postgres_conninfo: str, tmp_path: Path) -> None:
    """The same story on PostgreSQL (blobs table included); the demo's threads are deleted."""
    options = pg_conninfo.conninfo_to_dict(postgres_conninfo)["options"]
    assert isinstance(options, str)
    url = f"{POSTGRES_URL.split('?', 1)[0]}?options={quote(options)}"
    proc = run_demo(
        "--turns", "12", "--max-messages", "12", "--saver", url, "--output", str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert "on PostgreSQL" in proc.stdout and "pg_column_size" in proc.stdout
    turns = read_csv(tmp_path / "demo.csv")
    assert all(t["messages_bounded"] <= 12 for t in turns)
    assert turns[-1]["stored_bytes_bounded"] < turns[-1]["stored_bytes_bare"]
    with psycopg.connect(postgres_conninfo) as conn:
        left = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    assert left == (0,)


@pytest.mark.postgres
def test_a_locked_table_ends_the_demo_with_one_line(postgres_conninfo: str, tmp_path: Path) -> None:
    """Another session holding a lock on the checkpoint table: the demo's lock_timeout ends
    it in about LOCK_TIMEOUT seconds with one line, not a hang and not a traceback."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(postgres_conninfo, autocommit=True) as conn:
        PostgresSaver(conn).setup()  # type: ignore[arg-type]
    options = pg_conninfo.conninfo_to_dict(postgres_conninfo)["options"]
    assert isinstance(options, str)
    url = f"{POSTGRES_URL.split('?', 1)[0]}?options={quote(options)}"
    with psycopg.connect(postgres_conninfo) as holder:
        holder.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")  # until rollback
        start = time.monotonic()
        proc = run_demo("--turns", "2", "--saver", url, "--output", str(tmp_path))
        elapsed = time.monotonic() - start
        holder.rollback()
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    # the progress bar's line for the run it stopped, then the error
    assert len(lines) == 2 and lines[0].strip().startswith("bare: 0/2"), proc.stderr
    assert lines[1].startswith("agentstate-reducer demo: error: PostgreSQL at ")
    assert "canceling statement due to lock timeout" in lines[1]
    assert LOCK_TIMEOUT * 0.9 <= elapsed <= TIMEOUT, elapsed


@pytest.mark.cosmos
def test_cosmos_demo(cosmos_env: dict[str, str], tmp_path: Path) -> None:
    """``--saver cosmosdb`` on the loopback server, TLS verified against its certificate."""
    proc = run_demo(
        "--turns", "10", "--max-messages", "12", "--saver", "cosmosdb", "--output",
        str(tmp_path), env=cosmos_env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "on Cosmos DB" in proc.stdout and "JSON sizes" in proc.stdout
    turns = read_csv(tmp_path / "demo.csv")
    assert all(t["messages_bounded"] <= 12 for t in turns)
    assert turns[-1]["stored_bytes_bounded"] < turns[-1]["stored_bytes_bare"]


def test_calculator_tool_is_arithmetic_only() -> None:
    assert calculate("17 * 23 + 4") == "395"
    assert calculate("-(2 + 3) % 4") == "3"
    assert calculate("1 / 0").startswith("error:")
    assert calculate("__import__('os').getcwd()").startswith("error:")
    assert calculate("True + 1").startswith("error:")


def test_questions_alternate_between_the_two_tools() -> None:
    assert question(1).endswith("what is 12 * 4 + 1?")
    assert "tell me about" in question(2)

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
    calculate,
    connect_kwargs,
    parse_saver,
    question,
    redact,
    sample_turns,
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
    """The data rows of the printed table: lines of seven numbers-with-units."""
    rows = []
    for line in stdout.splitlines():
        cells = line.split()
        if len(cells) == 9 and cells[0].isdigit() and cells[1].isdigit():
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
    """The default backend: a table of both runs, the bound held at every turn, fewer bytes
    stored at the end, a CSV of every turn and a valid PNG."""
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
    assert_valid_png(out / "demo.png")


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
    assert connect_kwargs("postgresql://u@h/d") == {"connect_timeout": CONNECT_TIMEOUT}
    assert connect_kwargs("postgresql://u@h/d?connect_timeout=3") == {}
    assert connect_kwargs("host=h connect_timeout=0") == {}
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "4")
    assert connect_kwargs("postgresql://u@h/d") == {}
    assert "p@ss" not in repr(parse_saver("postgresql://u:p%40ss@h/d"))
    assert "p@ss" not in repr(parse_saver("host=h password=p@ss"))


def test_output_path_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = run_demo("--turns", "2", "--output", str(blocker / "out"))
    assert proc.returncode == 1
    assert "cannot create the output directory" in proc.stderr
    assert "Traceback" not in proc.stderr


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
    for option in ("--turns", "--saver", "--max-messages", "--max-tokens", "--output"):
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

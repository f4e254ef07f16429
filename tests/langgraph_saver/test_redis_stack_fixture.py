"""The Redis Stack fixture: a named server that does not answer or lacks the modules is
refused with the reason (skipped, failed under CI); the session's server has the modules; and
what a test stored under its prefix is gone after it, nothing else. The bundled server starts
when its port is taken before it binds it, and when the OpenSSL stub cache is damaged; the
outage test, which needs the bundled server, fails under CI when it cannot start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import _redis_stack
from tests._redis_stack import Unavailable, delete_prefix, missing_modules

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/langgraph_saver/test_redis.py::test_upstream_redis_list_returns_messages_serialized"
NOWHERE = "redis://127.0.0.1:9/0"  # a port nothing listens on


OUTAGE = "tests/langgraph_saver/test_redis.py::test_a_redis_outage_fails_the_turn_and_loses_nothing"


def _run(
    url: str, ci: str | None, target: str = TARGET, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["AGENTSTATE_REDIS_STACK_URL"] = url
    env.update(extra)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", target, "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_an_unreachable_server_skips_with_the_reason() -> None:
    """Outside CI a named server that does not answer skips, naming the variable."""
    run = _run(NOWHERE, None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout
    assert "does not answer" in run.stdout and "AGENTSTATE_REDIS_STACK_URL" in run.stdout


def test_a_server_without_the_modules_fails_the_run_under_ci() -> None:
    """Under CI=true a named server lacking the modules (the machine's plain Redis on 6379,
    when it has none; else one that does not answer) fails the run instead of skipping."""
    plain = "redis://127.0.0.1:6379/0"
    try:
        lacking = missing_modules(plain) is not None
    except Unavailable:
        lacking = False
    run = _run(plain if lacking else NOWHERE, "true")
    assert run.returncode != 0, run.stdout
    assert "CI=true requires a Redis Stack server" in run.stdout
    if lacking:
        assert "lacks the RediSearch and RedisJSON module(s)" in run.stdout


def test_the_server_has_the_modules_and_a_prefix_is_cleaned_up(redis_stack_url: str) -> None:
    """The session's server has RediSearch and RedisJSON; delete_prefix removes the indexes,
    keys and write registries of one prefix, and nothing of another."""
    import redis
    from langgraph.checkpoint.redis import RedisSaver

    from tests.langgraph_saver._graphs import agent_graph, config, turn

    assert missing_modules(redis_stack_url) is None
    for prefix in ("tcleanup1_", "tcleanup2_"):
        with RedisSaver.from_conn_string(
            redis_stack_url,
            checkpoint_prefix=f"{prefix}checkpoint",
            checkpoint_write_prefix=f"{prefix}checkpoint_write",
        ) as saver:
            saver.setup()
            agent_graph(saver).invoke(turn(0), config(f"{prefix}thread"))
    with redis.Redis.from_url(redis_stack_url) as client:
        try:
            assert list(client.scan_iter(match="tcleanup1_*"))
            assert list(client.scan_iter(match="write_keys_zset:tcleanup1_*"))
            delete_prefix(redis_stack_url, "tcleanup1_")
            assert not list(client.scan_iter(match="tcleanup1_*"))
            assert not list(client.scan_iter(match="write_keys_zset:tcleanup1_*"))
            assert not [i for i in client.execute_command("FT._LIST") if b"tcleanup1_" in i]
            assert list(client.scan_iter(match="tcleanup2_*"))
            assert list(client.scan_iter(match="write_keys_zset:tcleanup2_*"))
        finally:
            delete_prefix(redis_stack_url, "tcleanup2_")


def test_the_outage_test_fails_under_ci_when_the_bundled_server_cannot_start(
    redis_stack_url: str, tmp_path: Path
) -> None:
    """The outage test pauses a server of its own, the bundled one: when that cannot start
    (here: no ``nm`` on PATH to read the OpenSSL symbols it needs), it skips with the reason,
    and under CI=true it fails."""
    no_tools = {"PATH": str(tmp_path)}  # an empty directory: no nm, no C compiler
    skipped = _run(redis_stack_url, None, OUTAGE, **no_tools)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "1 skipped" in skipped.stdout, skipped.stdout
    assert "needs the bundled Redis Stack server" in skipped.stdout
    assert "nm (binutils) is not installed" in skipped.stdout
    failed = _run(redis_stack_url, "true", OUTAGE, **no_tools)
    assert failed.returncode != 0, failed.stdout
    assert "1 failed" in failed.stdout, failed.stdout
    assert "needs the bundled Redis Stack server" in failed.stdout
    assert "CI=true requires a Redis Stack server" in failed.stdout


def test_the_bundled_server_starts_when_its_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port taken between its choice and the server's bind (here: the first port offered
    is already listened on) makes that server exit; the start is tried again on another
    port, and that server answers with the modules."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = int(taken.getsockname()[1])
        offered: list[int] = []
        free_port = _redis_stack._free_port

        def taken_first() -> int:
            offered.append(taken_port if not offered else free_port())
            return offered[-1]

        monkeypatch.setattr(_redis_stack, "_free_port", taken_first)
        try:
            with _redis_stack._bundled_server(tmp_path) as url:
                assert len(offered) == 2 and url.endswith(f":{offered[1]}/0"), (offered, url)
                assert missing_modules(url) is None
        except Unavailable as exc:
            _redis_stack._unavailable(str(exc))
    assert "Address already in use" in (tmp_path / f"redis-{taken_port}.log").read_text()


def test_a_stub_cache_without_its_libraries_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached OpenSSL stub directory that lost a library is not handed to the server (it
    could not load libssl.so.1.1): the stubs are built again and those are used."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        server = _redis_stack._bundled() / "bin" / "redis-server"
        cached = _redis_stack._openssl_stubs(server)
    except Unavailable as exc:
        _redis_stack._unavailable(str(exc))
    assert cached is not None, "the bundled server needs no OpenSSL now: the stubs can go"
    assert cached.parent == tmp_path and cached.name.startswith("agentstate-redis-openssl-")
    (cached / "libssl.so.1.1").unlink()
    stubs = _redis_stack._openssl_stubs(server)
    assert stubs is not None
    assert (stubs / "libssl.so.1.1").is_file() and (stubs / "libcrypto.so.1.1").is_file()

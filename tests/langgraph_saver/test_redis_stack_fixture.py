"""The Redis Stack fixture: a named server that does not answer or lacks the modules is
refused with the reason (skipped, failed under CI); the session's server has the modules; and
what a test stored under its prefix is gone after it, nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._redis_stack import Unavailable, delete_prefix, missing_modules

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/langgraph_saver/test_redis.py::test_upstream_redis_list_returns_messages_serialized"
NOWHERE = "redis://127.0.0.1:9/0"  # a port nothing listens on


def _run(url: str, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["AGENTSTATE_REDIS_STACK_URL"] = url
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", TARGET, "-q", "-rs", "-p", "no:cacheprovider"],
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

"""The PostgreSQL fixture: skipped with a reason when the server is away, failed under CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A port nothing listens on: the connection is refused at once.
NOWHERE = "postgresql://postgres@127.0.0.1:9/test?connect_timeout=2"
TARGET = (
    "tests/langgraph_saver/test_conformance.py::test_conformance_suite_passes_through_the_wrapper"
)


def _run(ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["AGENTSTATE_TEST_POSTGRES_URL"] = NOWHERE
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"{TARGET}[PostgresSaver]",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unreachable_server_skips_with_the_reason() -> None:
    """Outside CI an unreachable server skips, and the reason names the URL variable."""
    run = _run(None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout
    assert "unreachable" in run.stdout and "AGENTSTATE_TEST_POSTGRES_URL" in run.stdout


def test_an_unreachable_server_fails_the_run_under_ci() -> None:
    """Under CI=true an unreachable server fails the run instead of skipping."""
    run = _run("true")
    assert run.returncode != 0
    assert "CI=true requires it" in run.stdout

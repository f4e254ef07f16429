"""``bench/hot_path.py``, run as ``run_all.py`` runs it (a subprocess of this interpreter),
small and without the published reducer's venv: every row it can measure is printed, its
``RESULT`` carries a target per row, and the kept lists were sound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "hot_path.py"


def test_a_small_run_prints_every_row_and_a_target_for_each() -> None:
    """Rows 1, 2 and 5 are measured with their targets, the channel with the default
    estimate beside them for reference (no target); rows 3 and 4 say the peer did not run;
    the channel kept every list within its bound, with tool pairs and the newest message."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(SCRIPT), "--no-peer", "--turns", "60", "--repeat", "1"]
    proc = subprocess.run(
        [*command, "--messages", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    table = "\n".join(line for line in lines if not line.startswith("RESULT "))
    for row in (
        "channel reducer, count 40..80",
        "channel reducer, 8,000 tokens (approximate)",
        "channel reducer, 8,000 tokens, default estimate",
        "reduce per turn, 8,000 tokens",
        "reduce per turn, count 40..80",
        "default estimate, µs per message",
    ):
        assert row in table, row
    assert table.count("published 0.5: not run (--no-peer)") == 2
    result = json.loads(next(line for line in reversed(lines) if line.startswith("RESULT "))[7:])
    assert result["bench"] == "hot_path"
    assert set(result["targets"]) <= set(result["ratios"])
    assert len(result["targets"]) == 4  # rows 1, 2 and the estimate's two (no peer rows)
    assert not any("default estimate" in label for label in result["targets"])
    assert "for reference (no target)" in table
    assert "the estimate against the issue's host" in table
    issue_host = result["estimate"]["issue_host"]
    assert issue_host["tiktoken / ours"] == pytest.approx(
        result["estimate"]["us_tiktoken"] / result["estimate"]["us_ours"]
    )
    for mode in ("count", "tokens", "estimate"):
        figures = result["channel"][mode]
        assert figures["over"] == figures["pairs_broken"] == figures["newest_lost"] == 0
        assert figures["ms_per_turn"] > 0 and figures["floor_ms_per_turn"] > 0
    assert result["channel"]["count"]["max_messages"] <= 80
    for mode in ("count", "tokens"):  # where a reduce's time goes, turns that fit and prune
        split = result["reduce"]["ours"][mode]
        assert split["fit_us"] > 0 and split["prune_us"] > 0
        assert 0 < split["prunes"] < 60
    assert len(result["estimate"]["kinds"]) == 40


def test_the_instruction_count_worker_runs_the_conversation_and_skips_without_valgrind(
    tmp_path: Path,
) -> None:
    """``bench/hot_path_instructions.py``: its worker (what valgrind runs) reduces the
    conversation with this checkout, and without valgrind on the PATH the script says the
    run was skipped in its ``RESULT`` (so ``run_all.py`` lists it as skipped)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _chat import generate
    finally:
        sys.path.remove(str(ROOT / "bench"))
    script = ROOT / "bench" / "hot_path_instructions.py"
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps(generate(30)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    worker = [sys.executable, str(script), "--worker", str(conversation), "--mode", "count"]
    proc = subprocess.run(
        [*worker, "--passes", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    bare = {**env, "PATH": str(Path(sys.executable).parent)}  # python, but no valgrind
    proc = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=ROOT,
        env=bare,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1][len("RESULT ") :])
    assert result == {"bench": "hot_path_instructions", "skipped": "valgrind is not installed"}


def test_the_estimate_is_also_judged_by_the_ratios_its_target_stands_for_on_the_issue_host() -> (
    None
):
    """15 µs a message where tiktoken took 189 and count_tokens_approximately 6.6: an
    estimate as fast relative to both here holds, one slower relative to either does not."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import hot_path
    finally:
        sys.path.remove(str(ROOT / "bench"))
    as_fast = {"us_ours": 20.0, "us_tiktoken": 20.0 * 189 / 15, "us_approx": 20.0 * 6.6 / 15}
    figures = hot_path.estimate_on_the_issue_host(as_fast)
    assert figures["tiktoken / ours"] == pytest.approx(figures["target tiktoken / ours"])
    assert hot_path.issue_host_line(figures).endswith("(held)")
    for slower in ({**as_fast, "us_tiktoken": 200.0}, {**as_fast, "us_approx": 5.0}):
        line = hot_path.issue_host_line(hot_path.estimate_on_the_issue_host(slower))
        assert line.endswith("(not held)"), line

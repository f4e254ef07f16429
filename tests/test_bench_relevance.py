"""``bench/relevance.py``, run as ``run_all.py --quick`` runs it: a subprocess of this
interpreter, its table and ``RESULT`` line read back."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "relevance.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_relevance", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_quick_run_prints_its_table_and_ours_keeps_the_fact_more_often() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    table = "\n".join(line for line in out.splitlines() if not line.startswith("RESULT "))
    for budget in ("2,000", "4,000"):
        assert f"budget {budget} tokens (our default estimate), 50 scenarios" in table
    for label in ("(a) ours: SelectRelevant", "(b) ours: DropOldest", "(c) LangChain trim"):
        assert table.count(label) == 2, label
    assert table.count("fact kept by kind") == 2
    assert table.count("within budget: ") == 2
    result = json.loads(
        next(line for line in reversed(out.splitlines()) if line.startswith("RESULT "))[7:]
    )
    assert result["bench"] == "relevance"
    for figures in result["budgets"].values():
        ours, recency = figures["a"], figures["b"]
        assert ours["fact_kept_pct"] > recency["fact_kept_pct"]
        for key in "abd":  # ours; trim_messages' figures are reported, not asserted
            assert figures[key]["over_budget"] == 0
            assert figures[key]["invalid"] == 0
    assert all(target["met"] for target in result["targets"].values())


def test_questions_never_repeat_the_fact() -> None:
    bench = _load()
    for seed in range(300):
        item = bench.scenario(seed)
        assert item.fact and item.fact != item.question
        assert item.messages[-1] == {"role": "user", "content": item.question}
        assert sum(m.get("content") == item.fact for m in item.messages) == 1
        # The question asks for the value; it never carries it.
        assert item.value in item.fact and item.value not in item.question
        assert 1 <= item.fact_turn <= max(2, item.turns // 3)

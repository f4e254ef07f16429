"""``bench/calibration.py``'s simulation, in this interpreter with the OpenAI counter
(``o200k_base``, offline): calibration brings the reducer's count of the model's input
close to the provider's, and keeps the real input within the budget. (The other vendors'
tokenizers run in a venv the benchmark makes; the tests make none.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "calibration.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_calibration", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_calibration_closes_the_gap_to_the_providers_count() -> None:
    """Uncalibrated, the count misses the system prompt, tool schemas and framing (it
    under-counts by more than a tenth on average and the real input runs over the budget);
    calibrated, the mean error is under 1% and no call goes over by more than 1%."""
    bench = _load()
    count = bench.OpenAICount()
    before, after = bench.Tally(), bench.Tally()
    for seed in range(2):
        chat = bench.make_chat(seed, 30)
        bench.simulate("openai", count, chat, False, before)
        bench.simulate("openai", count, chat, True, after)
    assert before.row()["mean_error"] < -0.1 and before.over > 0
    assert after.row()["mean_abs_error"] < 0.01
    assert after.row()["worst_undercount"] > -0.01

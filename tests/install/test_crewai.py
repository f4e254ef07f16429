"""CrewAI, in a virtualenv of its own (its dependencies clash with ours): the core wheel and
``crewai`` exactly as the CrewAI guide (docs/guides/crewai.md) installs them, then its
snippets and the tests of ``tests/crewai`` run there, with CrewAI's telemetry turned off
and a check that no connection is opened.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.install.conftest import ROOT, Dist, MakeVenv, clean_env, run

TELEMETRY_OFF = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
}


def test_crewai_examples_and_tests_pass_with_the_real_package(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The CrewAI guide's snippets and ``tests/crewai`` pass on the installed wheel."""
    venv = make_venv(
        "crewai", [f"agentstate-reducer @ {dist.core_wheel.as_uri()}", "crewai", "pytest"]
    )
    installed = venv.distributions()
    assert "crewai" in installed and "langgraph" not in installed
    print(f"crewai {installed['crewai']}")

    guide = ROOT / "docs" / "guides" / "crewai.md"
    assert "pip install agentstate-reducer crewai" in guide.read_text(encoding="utf-8")
    proc = run([venv.python, ROOT / "tests" / "readme_snippets.py", guide, "crewai"],
               cwd=tmp_path, env=clean_env(**TELEMETRY_OFF), timeout=900)  # fmt: skip
    assert re.search(r"ran [1-9]\d* snippets of crewai.md", proc.stdout), proc.stdout

    work = tmp_path / "crewai_tests"
    shutil.copytree(ROOT / "tests" / "crewai", work, ignore=shutil.ignore_patterns("__pycache__"))
    (work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -q\n")
    result = subprocess.run(
        [venv.python, "-m", "pytest"], capture_output=True, text=True, timeout=1200,
        cwd=work, env=clean_env(), check=False,
    )  # fmt: skip
    tail = "\n".join(result.stdout.splitlines()[-15:])
    assert result.returncode == 0, f"{tail}\n{result.stderr[-3000:]}"
    assert re.search(r"[1-9]\d* passed", tail) and "failed" not in tail and "skipped" not in tail

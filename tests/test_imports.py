"""The core distribution never imports the Cosmos DB one (which itself requires the core).

Each check runs in a fresh interpreter whose import system refuses ``agentstate_cosmosdb``
(a meta-path finder that raises ``ModuleNotFoundError`` for it, as on an install without
the package), so a stray import anywhere in ``agentstate_reducer`` fails the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK_EXTRAS = {
    "agentstate_reducer.pydantic_ai": ("pydantic-ai", "pydantic_ai"),
    "agentstate_reducer.google_adk": ("google-adk", "google.adk"),
    "agentstate_reducer.openai_agents": ("openai-agents", "agents"),
    "agentstate_reducer.strands": ("strands", "strands"),
}
"""The framework modules, their extras and the import package each extra brings."""

_BLOCKER = """
import importlib.abc, sys

class _NoCosmos(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agentstate_cosmosdb" or name.startswith("agentstate_cosmosdb."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoCosmos())
"""

_IMPORT_ALL = """
import importlib, json, pkgutil, sys
import agentstate_reducer
names = ["agentstate_reducer"] + [
    info.name
    for info in pkgutil.walk_packages(agentstate_reducer.__path__, "agentstate_reducer.")
]
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = repr(exc)
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "agentstate_cosmosdb")
print(json.dumps({"modules": names, "failed": failed, "cosmos_loaded": loaded}))
"""


def _python(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", _BLOCKER + code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
        check=False,
    )


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # its parent package is missing too
        return False


def test_every_core_module_imports_without_the_cosmos_package() -> None:
    """Every module of ``agentstate_reducer`` (demo and LangGraph parts included) imports
    with ``agentstate_cosmosdb`` unavailable, and none of them loads it."""
    proc = _python(_IMPORT_ALL)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "agentstate_reducer.demo.backends" in report["modules"]
    assert "agentstate_reducer.langgraph" in report["modules"]
    # A framework module may fail only where its extra is not installed, and then with the
    # extra's install line (the lowest-version suites run without the framework extras).
    for module, error in report["failed"].items():
        extra, package = FRAMEWORK_EXTRAS.get(module, (None, None))
        assert extra is not None, (module, error)
        assert not _installed(package), (module, error)
        assert f'pip install "agentstate-reducer[{extra}]"' in error, error
    assert report["cosmos_loaded"] == []


def test_the_demo_names_the_cosmos_package_only_when_asked_for_it(tmp_path: Path) -> None:
    """``--saver cosmosdb`` without the package is one line naming ``agentstate-cosmosdb``;
    the SQLite demo runs to the end with the package unavailable."""
    run_cli = (
        "import sys\nfrom agentstate_reducer.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    env_cosmos = {"COSMOSDB_ENDPOINT": "https://127.0.0.1:1/", "COSMOSDB_KEY": "a2V5"}
    proc = _python(run_cli, "demo", "--turns", "1", "--saver", "cosmosdb", "--output",
                   str(tmp_path), env=env_cosmos)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "agentstate-cosmosdb" in lines[0] and "pip install agentstate-cosmosdb" in lines[0]

    proc = _python(run_cli, "demo", "--turns", "3", "--max-messages", "4", "--output",
                   str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "After 3 turns" in proc.stdout

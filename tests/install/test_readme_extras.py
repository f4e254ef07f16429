"""Each snippet of the README and of the guides (``docs/**/*.md``) runs in a clean virtualenv
holding only what its install line says.

The environments come from the pages themselves: every snippet's ``<!-- extra: ... -->``
marker names a line of the README's Install section (plus any package its own section's
``pip install`` line adds). Each environment is built once, gets the built wheels, never the
source tree, and runs the snippets of every page marked for it with
``tests/readme_snippets.py`` (standard library only).
``[langgraph]`` alone is installed at its lowest allowed versions, the others at the
newest, as a fresh ``pip install`` would.
Without the ``[demo]`` extra the demo command must say so in one line.
The Cosmos DB package's README (its PyPI page) runs the same way, in a virtualenv holding
``pip install agentstate-cosmosdb`` alone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.install.conftest import ROOT, Dist, MakeVenv, Venv, clean_env, run
from tests.readme_snippets import Snippet, install_lines, pages, snippets

README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
PAGES = {page: snippets(page.read_text(encoding="utf-8")) for page in pages(ROOT)}
"""The README and every documentation page, with their snippets."""
COSMOS_README = ROOT / "integrations" / "cosmosdb" / "README.md"
RUNNER = ROOT / "tests" / "readme_snippets.py"
# tests/install/test_crewai.py, test_pydantic_ai.py, test_google_adk.py, test_openai_agents.py
# and test_strands.py run these with their frameworks' own set-up (the snippets first, with
# only the extra installed)
OWN_TEST = {"crewai", "pydantic-ai", "google-adk", "openai-agents", "strands"}
LOWEST = {"langgraph"}  # environments installed at their floors


def _environments() -> list[str]:
    seen: list[str] = []
    for found in PAGES.values():
        for snippet in found:
            if snippet.extra not in OWN_TEST and snippet.environment not in seen:
                seen.append(snippet.environment)
    return seen


def _marked(environment: str) -> dict[Path, list[Snippet]]:
    """The pages with snippets marked for ``environment``, and those snippets."""
    chosen = {p: [s for s in found if s.environment == environment] for p, found in PAGES.items()}
    return {page: found for page, found in chosen.items() if found}


def _requirements(environment: str, dist: Dist) -> list[str]:
    """What to install for ``environment``: the README's install line, with the local
    wheels in place of the package names."""
    name, *more = environment.split()
    line = install_lines(TEXT)[name]
    packages = [p.removeprefix("+") for p in more]
    if name == "cosmos":
        # agentstate-cosmosdb from its wheel; its dependency on the core from the core wheel
        return [f"agentstate-cosmosdb @ {dist.cosmos_wheel.as_uri()}",
                f"agentstate-reducer @ {dist.core_wheel.as_uri()}", *packages]  # fmt: skip
    extra = line[len("agentstate-reducer") :]  # "" or "[langgraph]"
    return [f"agentstate-reducer{extra} @ {dist.core_wheel.as_uri()}", *packages]


def _make(environment: str, dist: Dist, make_venv: MakeVenv) -> Venv:
    requirements = _requirements(environment, dist)
    name = environment.split()[0]
    if environment in LOWEST:
        # Only the extra alone: a further package's newest release may need newer versions
        # of what the extra brings (langgraph-checkpoint-sqlite 3.1 needs a newer
        # langgraph-checkpoint than our floor), which a user's pip install picks anyway.
        # lowest-direct applies to direct requirements: give the extra's requirements
        # directly, the wheel without its dependencies.
        from tests.install.test_lowest import _requirements as wheel_requirements

        return make_venv(
            "readme-" + environment.replace(" +", "+"),
            [*wheel_requirements(dist.core_wheel, (name,)), *requirements[1:]],
            resolution="lowest-direct",
            no_deps=[dist.core_wheel],
        )
    return make_venv("readme-" + environment.replace(" +", "+"), requirements)


@pytest.mark.parametrize("environment", _environments())
def test_readme_sections_run_with_only_their_install_line(
    environment: str, dist: Dist, make_venv: MakeVenv, request: pytest.FixtureRequest
) -> None:
    """The snippets marked for ``environment``, on every page, pass in a virtualenv that has
    only it."""
    venv = _make(environment, dist, make_venv)
    marked = _marked(environment)
    env: dict[str, Any] = {}
    for found in marked.values():
        for snippet in found:
            if snippet.needs:
                env.update(request.getfixturevalue(snippet.needs) or {})
    installed = venv.distributions()
    if environment == "core":
        assert set(installed) <= {"agentstate-reducer", "pip", "setuptools"}, installed
    for page, found in marked.items():
        proc = run([venv.python, RUNNER, page, environment], cwd=venv.path,
                   env=clean_env(**env), timeout=900)  # fmt: skip
        assert f"ran {len(found)} snippets of {page.name}" in proc.stdout, proc.stdout


def test_cosmos_readme_runs_with_only_its_install_line(
    dist: Dist, make_venv: MakeVenv, request: pytest.FixtureRequest
) -> None:
    """Every snippet of the Cosmos DB README passes in a virtualenv that has only
    ``pip install agentstate-cosmosdb`` (from the built wheels)."""
    text = COSMOS_README.read_text(encoding="utf-8")
    found = snippets(text)
    assert found and {s.environment for s in found} == {"cosmos"}
    venv = make_venv("readme-cosmos-package", _requirements("cosmos", dist))
    env: dict[str, Any] = {}
    for snippet in found:
        if snippet.needs:
            env.update(request.getfixturevalue(snippet.needs) or {})
    proc = run([venv.python, RUNNER, COSMOS_README, "cosmos"], cwd=venv.path,
               env=clean_env(**env), timeout=900)  # fmt: skip
    assert f"ran {len(found)} snippets of README.md" in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    ("environment", "names"),
    [("core", "langchain-core"), ("langgraph", "langgraph-checkpoint-sqlite")],
)
def test_demo_without_its_extra_is_one_line_naming_it(
    environment: str, names: str, dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """On an install lacking the ``[demo]`` extra, ``agentstate-reducer demo`` exits 1 with
    one line naming the missing package and the extra to install; no traceback."""
    venv = make_venv(f"demo-missing-{environment}", _requirements(environment, dist))
    proc = run_allowing_failure(
        [venv.bin("agentstate-reducer"), "demo", "--turns", "2", "--output", tmp_path],
        env=clean_env(),
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("agentstate-reducer demo: error: the demo needs ")
    assert names in lines[0] and 'pip install "agentstate-reducer[demo]"' in lines[0]
    assert "Traceback" not in proc.stderr


def test_demo_runs_from_the_demo_extra_alone(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """``pip install "agentstate-reducer[demo]"`` is enough for the command, plot included,
    and installs neither the developer tools nor the Cosmos DB package."""
    venv = make_venv("demo-only", _requirements("demo", dist))
    installed = venv.distributions()
    for absent in ("agentstate-cosmosdb", "azure-cosmos", "pytest", "mypy", "ruff"):
        assert absent not in installed
    proc = run([venv.bin("agentstate-reducer"), "demo", "--turns", "6", "--max-messages", "8",
                "--output", tmp_path], env=clean_env())  # fmt: skip
    assert "After 6 turns" in proc.stdout
    assert (tmp_path / "demo.png").stat().st_size > 1000
    print(f"[demo] venv: {len(installed)} distributions")


def run_allowing_failure(
    args: list[Any], *, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, env=env,
        check=False,
    )  # fmt: skip


def test_approximate_counting_refuses_an_install_without_langchain_core(
    dist: Dist, make_venv: MakeVenv
) -> None:
    """``token_counter="approximate"`` is LangChain's counter: on a core-only install building
    the reducer says what to install, instead of counting with another method (the same list
    would then be pruned differently on two machines); the default estimate needs nothing."""
    venv = make_venv("core-approximate", _requirements("core", dist))
    code = (
        "from agentstate_reducer import MessageReducer, ReducerConfig\n"
        "MessageReducer(config=ReducerConfig(max_tokens=100))\n"
        "try:\n"
        "    MessageReducer(config=ReducerConfig(max_tokens=100, token_counter='approximate'))\n"
        "except ImportError as error:\n"
        "    print('refused:', error, '| cause:', type(error.__cause__).__name__)\n"
    )
    proc = run([venv.python, "-c", code], env=clean_env())
    assert proc.stdout.startswith("refused: token_counter='approximate'"), proc.stdout
    assert 'pip install "agentstate-reducer[langgraph]"' in proc.stdout
    assert "cause: ModuleNotFoundError" in proc.stdout

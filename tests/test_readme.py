"""Every Python snippet of README.md and of the Cosmos DB package's README
(integrations/cosmosdb/README.md, its PyPI page) runs, in order, each in a fresh namespace, in
the development environment.

The markers (``<!-- extra: ... -->``, ``<!-- needs: FIXTURE -->``) are read by
:mod:`tests.readme_snippets`: a ``needs`` fixture runs first and its dict becomes
environment variables. The CrewAI snippets need the ``crewai`` package, whose dependencies
clash with ours, so they run in CrewAI's own virtualenv (``tests/install/test_crewai.py``)
and not here; every snippet also runs in a clean virtualenv holding only what its marker
names (``tests/install/test_readme_extras.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.readme_snippets import install_lines, snippets

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
COSMOS_README = README.parent / "integrations" / "cosmosdb" / "README.md"
COSMOS_TEXT = COSMOS_README.read_text(encoding="utf-8")
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))  # guide pages' snippets run here too
OWN_ENVIRONMENT = {"crewai"}  # extras run only in a virtualenv of their own


def _params() -> list[Any]:
    return [
        pytest.param(readme, s.code, s.needs, id=f"{prefix}snippet{n}-line{s.line}")
        for readme, text, prefix in (
            (README, TEXT, ""),
            (COSMOS_README, COSMOS_TEXT, "cosmos-"),
            *((page, page.read_text(encoding="utf-8"), f"{page.stem}-") for page in GUIDES),
        )
        for n, s in enumerate(snippets(text), start=1)
        if s.extra not in OWN_ENVIRONMENT
    ]


@pytest.mark.parametrize(("readme", "code", "needs"), _params())
def test_readme_snippet_runs(
    readme: Path,
    code: str,
    needs: str | None,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if needs:
        env = request.getfixturevalue(needs)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    exec(compile(code, str(readme), "exec", dont_inherit=True), namespace)


def test_every_marker_names_an_install_line_of_the_readme() -> None:
    """Each snippet's extra is a line of the Install section, and each further package it
    names appears in a ``pip install`` line of the README, so the marker cannot drift from
    what a reader is told to install."""
    lines = install_lines(TEXT)
    assert set(lines) >= {"core", "langgraph", "agents", "tokens", "demo", "cosmos"}
    found = snippets(TEXT)
    assert len(found) >= 10
    for snippet in found:
        if snippet.extra == "crewai":
            assert "pip install agentstate-reducer crewai" in TEXT
            continue
        assert snippet.extra in lines, f"line {snippet.line}: unknown extra {snippet.extra!r}"
        for package in snippet.packages:
            assert any(package in line for line in TEXT.splitlines() if "pip install" in line), (
                f"line {snippet.line}: {package} is in no pip install line"
            )


def _broken_links(text: str, base: Path) -> list[str]:
    """The links of ``text`` that point at a repository this code does not live in, or,
    relative, at no file under ``base``."""
    broken = []
    for target in re.findall(r"\]\(([^)]+)\)", text) + re.findall(r"^\[[^]]+\]: (\S+)", text, re.M):
        if "github.com/skamalj" in target:
            broken.append(target)
        elif not target.startswith(("https://", "http://", "#")):
            path = target.split("#", 1)[0]
            if not (base / path).resolve().exists():
                broken.append(target)
    return broken


def test_the_readme_reads_right_on_pypi() -> None:
    """The README is the PyPI page too: the opening has no ``make`` targets or editable
    installs, the two commands sit under "Develop", and its links into the repository are
    relative and lead to files that exist (on PyPI they do not resolve: there is no URL
    of the repository we can vouch for)."""
    opening = TEXT[: TEXT.index("## Quick start")]
    assert "make " not in opening and "pip install -e" not in opening
    assert _broken_links(TEXT, ROOT) == []
    assert "](CHANGELOG.md" in TEXT and "](integrations/cosmosdb/README.md" in TEXT
    develop = TEXT[TEXT.index("## Develop") :]
    assert "make demo" in develop and "make test" in develop


def test_the_cosmos_readme_reads_right_on_pypi() -> None:
    """The Cosmos DB README is agentstate-cosmosdb's PyPI page: its install block opens with
    ``pip install agentstate-cosmosdb``, the editable install is only a note about the
    repository, every link into the repository is relative and leads to a file, and every
    snippet needs the package's own install."""
    fence = COSMOS_TEXT.index("```bash\n")
    assert COSMOS_TEXT[fence:].split("\n")[1] == "pip install agentstate-cosmosdb"
    opening = COSMOS_TEXT[: COSMOS_TEXT.index("## Use")]
    assert "pip install -e integrations/cosmosdb" in opening.split("```")[-1]  # after the block
    assert "make " not in opening
    assert "](agentstate_cosmosdb/schema.py)" in COSMOS_TEXT
    assert _broken_links(COSMOS_TEXT, ROOT / "integrations" / "cosmosdb") == []
    found = snippets(COSMOS_TEXT)
    assert found and {s.extra for s in found} == {"cosmos"}

"""Every Python snippet of README.md, of every documentation page (``docs/**/*.md``: the
guides) and of the Cosmos DB package's README (integrations/cosmosdb/README.md, its PyPI
page) runs, in order, each in a fresh namespace, in the development environment; and every
relative link of those pages leads to a file and, when it names one, a heading that exists.

The markers (``<!-- extra: ... -->``, ``<!-- needs: FIXTURE -->``) are read by
:mod:`tests.readme_snippets`: a ``needs`` fixture runs first and its dict becomes
environment variables. The CrewAI snippets need the ``crewai`` package, whose dependencies
clash with ours, so they run in CrewAI's own virtualenv (``tests/install/test_crewai.py``)
and not here; every snippet also runs in a clean virtualenv holding only what its marker
names (``tests/install/test_readme_extras.py``).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.readme_snippets import install_lines, pages, snippets

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
COSMOS_README = README.parent / "integrations" / "cosmosdb" / "README.md"
COSMOS_TEXT = COSMOS_README.read_text(encoding="utf-8")
GUIDES = ROOT / "docs" / "guides"
OWN_ENVIRONMENT = {"crewai"}  # extras run only in a virtualenv of their own
PAGES = [*pages(ROOT), COSMOS_README]
"""Every page whose snippets run and whose links are checked."""


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _params() -> list[Any]:
    return [
        pytest.param(page, s.code, s.needs, id=f"{_name(page)}:line{s.line}")
        for page in PAGES
        for s in snippets(page.read_text(encoding="utf-8"))
        if s.extra not in OWN_ENVIRONMENT
    ]


@pytest.mark.parametrize(("page", "code", "needs"), _params())
def test_snippet_runs(
    page: Path,
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
    exec(compile(code, str(page), "exec", dont_inherit=True), namespace)


def test_the_guides_hold_the_snippets() -> None:
    """The guides are where the runnable examples live now: each framework's page has its
    snippets, and the pages together hold far more than the README."""
    for guide, extra in (
        ("langgraph.md", "langgraph"),
        ("crewai.md", "crewai"),
        ("pydantic-ai.md", "pydantic-ai"),
        ("google-adk.md", "google-adk"),
        ("cosmosdb.md", "cosmos"),
        ("summaries-and-memory.md", "agents"),
        ("policy-and-counting.md", "tokens"),
    ):
        found = snippets((GUIDES / guide).read_text(encoding="utf-8"))
        assert extra in {s.extra for s in found}, f"{guide} has no snippet for {extra!r}"
    in_guides = sum(len(snippets(p.read_text(encoding="utf-8"))) for p in GUIDES.glob("*.md"))
    assert in_guides >= 25 and len(snippets(TEXT)) >= 4


def test_every_marker_names_an_install_line_of_the_readme() -> None:
    """Each snippet's extra, on any page, is a line of the README's Install section, and
    each further package it names appears in a ``pip install`` line of its page or of the
    README, so the marker cannot drift from what a reader is told to install."""
    lines = install_lines(TEXT)
    assert set(lines) >= {"core", "langgraph", "agents", "tokens", "demo", "cosmos"}
    readme_installs = [line for line in TEXT.splitlines() if "pip install" in line]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        installs = readme_installs + [line for line in text.splitlines() if "pip install" in line]
        for snippet in snippets(text):
            where = f"{_name(page)}, line {snippet.line}"
            if snippet.extra == "crewai":
                assert "pip install agentstate-reducer crewai" in text, where
                continue
            assert snippet.extra in lines, f"{where}: unknown extra {snippet.extra!r}"
            for package in snippet.packages:
                assert any(package in line for line in installs), (
                    f"{where}: {package} is in no pip install line"
                )


def slug(heading: str) -> str:
    """A heading's anchor as mkdocs (Python-Markdown's toc) makes it; for the ASCII headings
    these pages use, GitHub makes the same one."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (outside code fences)."""
    found: set[str] = set()
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (heading := re.match(r"#{1,6} (.+)", line)):
            found.add(slug(heading.group(1).replace("`", "")))
    return found


def _rendered(anchor: str, text: str) -> bool:
    """Whether ``anchor`` is an object an API reference page renders from its docstrings
    (``::: module`` and what it holds; ``mkdocs build --strict`` checks the exact id)."""
    return any(
        anchor == name or anchor.startswith(f"{name}.")
        for name in re.findall(r"^::: (\S+)", text, re.M)
    )


def broken_links(text: str, base: Path) -> list[str]:
    """The links of ``text`` that point at a repository this code does not live in, or,
    relative, at no file under ``base`` or at no heading of the page they name."""
    broken = []
    inline = re.findall(r"\]\(([^)\s]+)\)", text)
    for target in inline + re.findall(r"^\[[^]]+\]: (\S+)", text, re.M):
        if "github.com/skamalj" in target:
            broken.append(target)
            continue
        if target.startswith(("https://", "http://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (base / path).resolve() if path else None
        if file is not None and not file.exists():
            broken.append(target)
        elif anchor and (file is None or file.suffix == ".md"):
            page_text = text if file is None else file.read_text(encoding="utf-8")
            if anchor not in anchors(page_text) and not _rendered(anchor, page_text):
                broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    """README and guide links are relative; each leads to a file that exists and, when it
    names an anchor, to a heading of that page."""
    assert broken_links(page.read_text(encoding="utf-8"), page.parent) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    """The check itself: a link to a missing file, a missing heading of another page or of
    its own page is reported; links that resolve are not."""
    (tmp_path / "guide.md").write_text("# A guide\n\n## Token budgets, `max_tokens` and more\n")
    text = (
        "# Home\n\n## Install it\n\n```python\n# not a heading\n```\n"
        "[ok](guide.md) [ok](guide.md#token-budgets-max_tokens-and-more) [ok](#install-it)\n"
        "[gone](missing.md) [gone](guide.md#limits) [gone](#not-a-heading)\n"
    )
    assert broken_links(text, tmp_path) == ["missing.md", "guide.md#limits", "#not-a-heading"]


def test_the_readme_is_a_front_door() -> None:
    """The README is the PyPI page and the repository's front door: at most ~250 lines; the
    opening has no ``make`` targets or editable installs; the quick start is the seed's; the
    three ways in each have a snippet; it links to every guide and to the API reference; the
    two commands sit under "Develop"; and the hand-written API tables are gone."""
    assert len(TEXT.splitlines()) <= 250
    opening = TEXT[: TEXT.index("## Quick start")]
    assert "make " not in opening and "pip install -e" not in opening
    quick = TEXT[TEXT.index("## Quick start") :]
    assert "reducer = MessageReducer(min_messages=10, max_messages=20)" in quick
    ways = TEXT[TEXT.index("## Three ways in") : TEXT.index("## How data flows")]
    for needed in ("as_langgraph_reducer()", "ReducingCheckpointSaver(", "CosmosDBSaver("):
        assert needed in ways
    assert len(snippets(ways)) == 3
    for guide in GUIDES.glob("*.md"):
        assert f"](docs/guides/{guide.name}" in TEXT, f"the README does not link {guide.name}"
    assert "](docs/reference/index.md)" in TEXT
    assert "](CHANGELOG.md" in TEXT and "](integrations/cosmosdb/README.md" in TEXT
    assert "| `min_messages` | 0 |" not in TEXT and "## API reference" not in TEXT
    develop = TEXT[TEXT.index("## Develop") :]
    assert "make demo" in develop and "make test" in develop


def test_the_guides_keep_every_section_of_the_old_manual() -> None:
    """What the README held before it became a front door lives on a guide page: each
    section's heading is there, and the Limits page keeps every limit."""
    wanted = {
        "policy-and-counting.md": ["Pruning behaviour", "Token budgets and the context policy",
                                   "Token counting", "Writing your own step", "Message shapes",
                                   "Message formats"],
        "summaries-and-memory.md": ["Summaries", "An LLM summarizer", "Long-term memory hand-off",
                                    "Several writers of one conversation"],
        "langgraph.md": ["State annotation", "A reduction node", "Agents",
                         "Wrapping any checkpointer"],
    }  # fmt: skip
    for guide, headings in wanted.items():
        found = anchors((GUIDES / guide).read_text(encoding="utf-8"))
        for heading in headings:
            assert slug(heading) in found, f"{guide}: no section {heading!r}"
    limits = (GUIDES / "limits.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^\* ", limits, re.M)) >= 30


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
    found = snippets(COSMOS_TEXT)
    assert found and {s.extra for s in found} == {"cosmos"}

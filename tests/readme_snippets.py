"""The Python snippets of README.md and of the documentation pages (``docs/**/*.md``), and
what each needs; also a runner for clean virtualenvs.

A snippet is a fenced ``python`` block. Comment lines right above it say what it needs:

* ``<!-- extra: NAME -->``: the install line of the README's Install section for ``NAME``
  (``core`` when there is no marker; ``langgraph``, ``agents``, ``tokens``, ``demo``,
  ``cosmos``, ``crewai``), optionally followed by ``+package`` for each further package the
  section's own ``pip install`` line names
  (``<!-- extra: langgraph +langgraph-checkpoint-sqlite -->``);
* ``<!-- needs: FIXTURE -->``: a pytest fixture run first (a database), whose returned dict
  is set as environment variables.

``tests/test_readme.py`` runs every snippet in the development environment;
``tests/install/test_readme_extras.py`` runs each group in a virtualenv holding only what its
marker names, with this file as the runner (it needs nothing but the standard library)::

    python readme_snippets.py docs/guides/langgraph.md "langgraph +langgraph-checkpoint-sqlite"
"""

from __future__ import annotations

import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Snippet", "install_lines", "pages", "snippets"]

_BLOCK = re.compile(
    r"(?P<markers>(?:<!-- (?:extra|needs): [^>]*? -->[ \t]*\n)*)```python\n(?P<code>.*?)```",
    re.S,
)
_MARKER = re.compile(r"<!-- (?P<kind>extra|needs): (?P<value>[^>]*?) -->")
_INSTALL = re.compile(r"^pip install (?P<requirement>\S+)\s*(?:#.*)?$", re.M)
_EXTRA = re.compile(r'^"?agentstate-reducer\[(?P<extra>[\w-]+)\]"?$')


@dataclass(frozen=True)
class Snippet:
    """One fenced Python block of a page.

    Attributes:
        code: The block's source.
        line: The page's line the code starts on.
        extra: The install line it needs, by name (``"core"`` when unmarked).
        packages: Further packages its section's install line names.
        needs: The pytest fixture it needs, or None.
    """

    code: str
    line: int
    extra: str = "core"
    packages: tuple[str, ...] = ()
    needs: str | None = None

    @property
    def environment(self) -> str:
        """The virtualenv this snippet runs in: its extra and further packages."""
        return " ".join((self.extra, *(f"+{p}" for p in self.packages)))


def snippets(text: str) -> list[Snippet]:
    """Every Python block of ``text``, in order, with its markers."""
    out = []
    for match in _BLOCK.finditer(text):
        extra, packages, needs = "core", (), None
        for marker in _MARKER.finditer(match.group("markers")):
            if marker.group("kind") == "needs":
                needs = marker.group("value").strip()
                continue
            name, *rest = marker.group("value").split()
            extra = name
            packages = tuple(p.removeprefix("+") for p in rest)
        line = text.count("\n", 0, match.start("code")) + 1
        out.append(Snippet(match.group("code"), line, extra, packages, needs))
    return out


def pages(root: Path) -> list[Path]:
    """The pages whose snippets run: the README, then every Markdown page under ``docs/``."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def install_lines(text: str) -> dict[str, str]:
    """The Install section's lines by name: ``{"core": "agentstate-reducer", "langgraph":
    "agentstate-reducer[langgraph]", ..., "cosmos": "agentstate-cosmosdb"}``.

    Raises:
        ValueError: The README has no Install section, or a line names no known package.
    """
    start = text.find("## Install")
    if start < 0:
        raise ValueError("README.md has no '## Install' section")
    fence = text.index("```bash\n", start)
    block = text[fence : text.index("```\n", fence + 8)]
    lines: dict[str, str] = {}
    for match in _INSTALL.finditer(block):
        requirement = match.group("requirement").strip('"')
        if requirement == "agentstate-reducer":
            lines["core"] = requirement
        elif requirement == "agentstate-cosmosdb":
            lines["cosmos"] = requirement
        elif extra := _EXTRA.match(requirement):
            lines[extra.group("extra")] = requirement
        else:
            raise ValueError(f"the Install section names an unknown package: {requirement!r}")
    return lines


def _run(readme: Path, environment: str) -> int:
    """Run the snippets of the page ``readme`` marked for ``environment``; 0 when all pass."""
    text = readme.read_text(encoding="utf-8")
    chosen = [s for s in snippets(text) if s.environment == environment]
    if not chosen:
        print(f"no snippet of {readme.name} is marked for {environment!r}", file=sys.stderr)
        return 2
    for snippet in chosen:
        namespace = {"__name__": "readme_snippet"}
        try:
            code = compile(snippet.code, f"{readme}:{snippet.line}", "exec", dont_inherit=True)
            exec(code, namespace)
        except BaseException:
            print(f"{readme.name} snippet at line {snippet.line} failed:", file=sys.stderr)
            traceback.print_exc()
            return 1
        print(f"{readme.name} snippet at line {snippet.line}: ok")
    print(f"ran {len(chosen)} snippets of {readme.name} for {environment!r}")
    return 0


if __name__ == "__main__":
    sys.exit(_run(Path(sys.argv[1]), sys.argv[2]))

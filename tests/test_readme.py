"""Every Python snippet of README.md runs, in order, each in a fresh namespace.

A snippet preceded by ``<!-- needs: NAME -->`` gets the pytest fixture NAME first (for
snippets that need a database); the fixture may return a dict of environment variables.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"(?:<!-- needs: (?P<needs>[\w-]+) -->\s*\n)?```python\n(?P<code>.*?)```", re.S)


def snippets() -> list[Any]:
    text = README.read_text(encoding="utf-8")
    out = []
    for number, match in enumerate(_BLOCK.finditer(text), start=1):
        line = text.count("\n", 0, match.start("code")) + 1
        needs = match.group("needs")
        out.append(pytest.param(match.group("code"), needs, id=f"snippet{number}-line{line}"))
    return out


@pytest.mark.parametrize(("code", "needs"), snippets())
def test_readme_snippet_runs(
    code: str, needs: str | None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if needs:
        env = request.getfixturevalue(needs)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    exec(compile(code, str(README), "exec", dont_inherit=True), namespace)


def test_readme_has_snippets() -> None:
    assert len(snippets()) >= 6
    assert "make demo" in README.read_text() and "make test" in README.read_text()

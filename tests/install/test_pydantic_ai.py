"""pydantic-ai in virtualenvs of its own: the snippet of its guide (docs/guides/pydantic-ai.md) and
``tests/pydantic_ai`` with ``agentstate-reducer[pydantic-ai]`` at the newest versions, and
``tests/pydantic_ai`` with the extra's requirements at their floors (see
:mod:`tests.install.frameworks`)."""

from __future__ import annotations

from pathlib import Path

from tests.install.conftest import ROOT, Dist, MakeVenv
from tests.install.frameworks import lowest, newest

FLOORS = {"pydantic-ai-slim": "1.87.0"}


def test_readme_and_tests_pass_with_the_newest_pydantic_ai(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The guide's pydantic-ai snippet runs with only the extra installed, and the tests
    pass there."""
    newest("pydantic-ai", "pydantic-ai-slim", "pydantic_ai", dist, make_venv, tmp_path,
           page=ROOT / "docs" / "guides" / "pydantic-ai.md")  # fmt: skip


def test_tests_pass_with_pydantic_ai_at_its_floor(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The extra's floor is true: ``pydantic-ai-slim==1.87.0`` on the oldest Python."""
    lowest("pydantic-ai", FLOORS, "pydantic_ai", dist, make_venv, tmp_path)

"""Strands Agents in virtualenvs of its own: the guide page's Strands snippet and
``tests/strands`` with ``agentstate-reducer[strands]`` at the newest versions, and
``tests/strands`` with the extra's requirements at their floors (see
:mod:`tests.install.frameworks`)."""

from __future__ import annotations

from pathlib import Path

from tests.install.conftest import ROOT, Dist, MakeVenv
from tests.install.frameworks import lowest, newest

FLOORS = {"strands-agents": "1.21.0"}
GUIDE = ROOT / "docs" / "guides" / "strands.md"
TOOLS = ("pytest", "hypothesis")  # tests/strands has a property test


def test_guide_and_tests_pass_with_the_newest_strands(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The guide's Strands snippet runs with only the extra installed, and the tests pass
    there."""
    newest("strands", "strands-agents", "strands", dist, make_venv, tmp_path, page=GUIDE,
           tools=TOOLS)  # fmt: skip


def test_tests_pass_with_strands_at_its_floor(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The extra's floor is true: ``strands-agents==1.21.0`` on the oldest Python."""
    lowest("strands", FLOORS, "strands", dist, make_venv, tmp_path, tools=TOOLS)

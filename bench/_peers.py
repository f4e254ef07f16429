"""Separate virtual environments for the peers a benchmark compares against.

The published ``agentstate-reducer`` 0.5 is also imported as ``agentstate_reducer``, so it
cannot share an environment with this checkout. :func:`peer_python` creates (once) a venv
under ``.bench-peers/<name>/`` with exactly the requirements given and returns its
interpreter; a benchmark then runs the peer's part as a subprocess of that interpreter.

A venv is rebuilt when its requirement list changes (recorded in ``requirements.txt``
inside it). Run as a script to create the environments ahead of time::

    python bench/_peers.py            # creates every environment in PEERS
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS_DIR = ROOT / ".bench-peers"


def _installed(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _langchain_core_pin() -> str:
    """langchain-core at the version this checkout runs, so both sides count alike."""
    found = _installed("langchain-core")
    return f"langchain-core=={found}" if found else "langchain-core"


#: name -> requirements of each peer environment the benchmarks use.
PEERS: dict[str, list[str]] = {
    "reducer05": ["agentstate-reducer==0.5.0", _langchain_core_pin()],
}


class PeerSetupError(RuntimeError):
    """A peer environment could not be created (no network, a failing pip)."""


def peer_python(name: str, requirements: list[str] | None = None, *, quiet: bool = True) -> Path:
    """The interpreter of the peer environment ``name``, created on first use.

    Args:
        name: The environment's directory under ``.bench-peers/``; a key of :data:`PEERS`
            unless ``requirements`` is given.
        requirements: pip requirement strings; defaults to ``PEERS[name]``.
        quiet: Pass ``--quiet`` to pip.

    Returns:
        The path of the environment's ``python``.

    Raises:
        PeerSetupError: venv or pip failed; the message carries pip's last output lines.
        KeyError: ``name`` is not in :data:`PEERS` and no requirements were given.
    """
    wanted = list(requirements if requirements is not None else PEERS[name])
    home = PEERS_DIR / name
    python = home / "bin" / "python"
    stamp = home / "requirements.txt"
    if python.exists() and stamp.exists() and stamp.read_text().split("\n") == wanted:
        return python
    sys.stderr.write(f"[peers] creating {home} with {' '.join(wanted)}\n")
    try:
        venv.EnvBuilder(clear=True, with_pip=True).create(home)
    except Exception as exc:
        raise PeerSetupError(f"cannot create the venv {home}: {exc}") from exc
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    if quiet:
        command.append("--quiet")
    proc = subprocess.run(
        [*command, *wanted], capture_output=True, text=True, check=False, timeout=900
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise PeerSetupError(f"pip install {' '.join(wanted)} failed in {home}:\n{tail}")
    stamp.write_text("\n".join(wanted))
    return python


if __name__ == "__main__":
    for peer in PEERS:
        print(peer, peer_python(peer, quiet=False))

"""Set-up for the Strands Agents tests, run in the development environment (where the
``[strands]`` extra installs beside LangGraph) and in Strands' own virtualenv at the newest
and at the lowest versions the extra allows (``tests/install/test_strands.py``).

Without ``strands`` the tests are not collected. An audit hook records every attempt to open
a network connection or resolve a name, so a test can prove nothing left the machine.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

collect_ignore_glob = [] if importlib.util.find_spec("strands") else ["test_*.py"]

# Strands sets up OpenTelemetry tracing; nothing here may export anything.
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

NETWORK_EVENTS: list[tuple[str, str]] = []
"""Every ``socket.connect``, ``socket.getaddrinfo``, ``socket.sendto`` and
``socket.sendmsg`` seen in this process, with its arguments."""

_WATCHED = {"socket.connect", "socket.getaddrinfo", "socket.sendto", "socket.sendmsg"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _WATCHED:
        NETWORK_EVENTS.append((event, repr(args)[:200]))


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def no_network() -> Iterator[None]:
    """Fails a test that opened a connection or resolved a name."""
    before = len(NETWORK_EVENTS)
    yield
    assert NETWORK_EVENTS[before:] == []

"""Set-up for the OpenAI Agents SDK tests, run in the development environment (where the
``[openai-agents]`` extra installs beside LangGraph) and in the SDK's own virtualenv at
the newest and at the lowest versions the extra allows (``tests/install/test_openai_agents.py``).

Without ``agents`` (the SDK) the tests are not collected. An audit hook records every attempt to
open a network connection or resolve a name, so a test can prove nothing left the machine.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from typing import Any

import pytest

collect_ignore_glob = [] if importlib.util.find_spec("agents") else ["test_*.py"]

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

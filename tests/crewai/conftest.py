"""Set-up for the CrewAI tests, which run only in CrewAI's own virtualenv.

CrewAI's dependencies clash with ours, so these tests are not collected in the development
environment (where ``crewai`` is absent); ``tests/install/test_crewai.py`` builds a
virtualenv with the core wheel and ``crewai`` and runs them there, failing when they fail.

Before CrewAI is imported, its telemetry and tracing are turned off with its documented
environment variables, and an audit hook records every attempt to open a network
connection or resolve a name, so a test can prove nothing left the machine.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

collect_ignore_glob = [] if importlib.util.find_spec("crewai") else ["test_*.py"]

for name, value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
}.items():
    os.environ[name] = value

NETWORK_EVENTS: list[tuple[str, str]] = []
"""Every ``socket.connect``, ``socket.getaddrinfo``, ``socket.sendto`` and
``socket.sendmsg`` seen in this process, with its arguments."""

_WATCHED = {"socket.connect", "socket.getaddrinfo", "socket.sendto", "socket.sendmsg"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _WATCHED:
        NETWORK_EVENTS.append((event, repr(args)[:200]))


sys.addaudithook(_audit)

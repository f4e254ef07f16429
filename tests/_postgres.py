"""PostgreSQL for tests: the server named by ``AGENTSTATE_TEST_POSTGRES_URL``, one schema per test.

Without a reachable server the tests that need it are skipped with the reason, except under
``CI=true``, where they fail: a CI run must not pass by skipping its database tests.

Each test gets a schema of its own (created on entry, dropped with everything in it on
exit) and a connection string whose ``search_path`` points at it, so tests and engineers
running in parallel on one database never see each other's tables.

``tests/conftest.py`` makes the fixtures available to every test.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import conninfo as pg_conninfo

__all__ = ["POSTGRES_URL", "postgres_conninfo", "postgres_unreachable", "postgres_url"]

POSTGRES_URL = os.environ.get(
    "AGENTSTATE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


@functools.lru_cache(maxsize=1)
def postgres_unreachable() -> str | None:
    """Why the test server cannot be used, or None when it answers."""
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable ({type(exc).__name__}: {exc})"
    return None


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The server's URL; skips (or fails under ``CI=true``) when it does not answer."""
    reason = postgres_unreachable()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; CI=true requires it (set AGENTSTATE_TEST_POSTGRES_URL)")
        pytest.skip(f"{reason}; set AGENTSTATE_TEST_POSTGRES_URL to run these tests")
    return POSTGRES_URL


@pytest.fixture
def postgres_conninfo(postgres_url: str) -> Iterator[str]:
    """A connection string into a fresh schema of its own, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield pg_conninfo.make_conninfo(postgres_url, options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

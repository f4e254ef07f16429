"""Real savers for the wrapper tests: InMemory, SQLite and PostgreSQL, sync and async.

``sync_inner`` / ``async_inner`` are parametrised over the backends; the PostgreSQL ones
use a schema of their own per test (``tests._postgres``) and are skipped, or failed under
``CI=true``, when the server does not answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

SYNC_BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
ASYNC_BACKENDS = ["memory", "aiosqlite", pytest.param("apostgres", marks=pytest.mark.postgres)]


def open_sync(name: str, request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver[Any]]:
    if name == "memory":
        yield InMemorySaver()
    elif name == "sqlite":
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    elif name == "postgres":
        conninfo = request.getfixturevalue("postgres_conninfo")
        with PostgresSaver.from_conn_string(conninfo) as saver:
            saver.setup()
            yield saver
    else:  # pragma: no cover
        raise ValueError(name)


async def open_async(
    name: str, request: pytest.FixtureRequest
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    if name == "memory":
        yield InMemorySaver()
    elif name == "aiosqlite":
        async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
            yield saver
    elif name == "apostgres":
        conninfo = request.getfixturevalue("postgres_conninfo")
        async with AsyncPostgresSaver.from_conn_string(conninfo) as saver:
            await saver.setup()
            yield saver
    else:  # pragma: no cover
        raise ValueError(name)


@pytest.fixture(params=SYNC_BACKENDS)
def sync_inner(request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh bare saver with a sync API."""
    yield from open_sync(request.param, request)


@pytest_asyncio.fixture(params=ASYNC_BACKENDS)
async def async_inner(request: pytest.FixtureRequest) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """A fresh bare saver with an async API."""
    async for saver in open_async(request.param, request):
        yield saver


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sync_db_inner(request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh bare SQLite or PostgreSQL saver (sync)."""
    yield from open_sync(request.param, request)


@pytest_asyncio.fixture(params=["aiosqlite", pytest.param("apostgres", marks=pytest.mark.postgres)])
async def async_db_inner(
    request: pytest.FixtureRequest,
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """A fresh bare SQLite or PostgreSQL saver (async)."""
    async for saver in open_async(request.param, request):
        yield saver

"""Real savers for the wrapper tests: InMemory, SQLite, PostgreSQL and Redis, sync and async.

``sync_inner`` / ``async_inner`` are parametrised over the backends; the PostgreSQL ones
use a schema of their own per test (``tests._postgres``), the Redis ones
(langgraph-checkpoint-redis's ``RedisSaver`` / ``AsyncRedisSaver``) key prefixes of their
own on a Redis Stack server (``tests._redis_stack``); both are skipped, or failed under
``CI=true``, when their server cannot be had.
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
from langgraph.checkpoint.redis import RedisSaver
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

SYNC_BACKENDS = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("redis", marks=pytest.mark.redis),
]
ASYNC_BACKENDS = [
    "memory",
    "aiosqlite",
    pytest.param("apostgres", marks=pytest.mark.postgres),
    pytest.param("aredis", marks=pytest.mark.redis),
]
SYNC_DB_BACKENDS = [backend for backend in SYNC_BACKENDS if backend != "memory"]
ASYNC_DB_BACKENDS = [backend for backend in ASYNC_BACKENDS if backend != "memory"]


def redis_prefixes(request: pytest.FixtureRequest) -> dict[str, str]:
    """The Redis savers' key prefixes for this test (``redis_prefix``): its own indexes and
    keys, deleted when it ends."""
    prefix = request.getfixturevalue("redis_prefix")
    return {
        "checkpoint_prefix": f"{prefix}checkpoint",
        "checkpoint_write_prefix": f"{prefix}checkpoint_write",
    }


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
    elif name == "redis":
        url = request.getfixturevalue("redis_stack_url")
        with RedisSaver.from_conn_string(url, **redis_prefixes(request)) as saver:
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
    elif name == "aredis":
        url = request.getfixturevalue("redis_stack_url")
        async with AsyncRedisSaver.from_conn_string(url, **redis_prefixes(request)) as saver:
            await saver.asetup()
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


@pytest.fixture(params=SYNC_DB_BACKENDS)
def sync_db_inner(request: pytest.FixtureRequest) -> Iterator[BaseCheckpointSaver[Any]]:
    """A fresh bare SQLite, PostgreSQL or Redis saver (sync)."""
    yield from open_sync(request.param, request)


@pytest_asyncio.fixture(params=ASYNC_DB_BACKENDS)
async def async_db_inner(
    request: pytest.FixtureRequest,
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """A fresh bare SQLite, PostgreSQL or Redis saver (async)."""
    async for saver in open_async(request.param, request):
        yield saver

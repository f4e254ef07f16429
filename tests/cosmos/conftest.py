"""Fixtures for the Cosmos DB tests: one loopback server per session, savers on it.

The session server itself comes from ``tests/_cosmos.py`` (shared with the demo and README
tests).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver

from tests._cosmos import CosmosTestServer, ServerError

__all__ = ["CosmosTestServer", "ServerError"]

# Short SDK retries so that faults surface in seconds, not minutes.
FAST_RETRIES: dict[str, Any] = {
    "retry_total": 2,
    "retry_connect": 1,
    "retry_read": 1,
    "retry_backoff_max": 1,
    "retry_backoff_factor": 0.05,
    "connection_timeout": 5,
    "read_timeout": 15,
}

DATABASE = "agentstate"


@pytest.fixture
def server(cosmos_server: CosmosTestServer) -> CosmosTestServer:
    """The session server, restarted first if an earlier test stopped it."""
    if not cosmos_server.running:
        cosmos_server.start()
    cosmos_server.throttle(0)
    return cosmos_server


def saver_kwargs(server: CosmosTestServer, **overrides: Any) -> dict[str, Any]:
    """Arguments for a saver on the test server with TLS verification against its CA."""
    kwargs: dict[str, Any] = {
        "endpoint": server.endpoint,
        "credential": server.key,
        "connection_verify": str(server.ca_file),
        **FAST_RETRIES,
    }
    kwargs.update(overrides)
    return kwargs


def raw_container(server: CosmosTestServer, container: str) -> Any:
    """A plain azure.cosmos container client on the test server (TLS verified), for tests that
    inspect or alter stored documents directly."""
    from agentstate_cosmosdb.settings import tls_hook
    from azure.cosmos import CosmosClient

    client = CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )
    return client.get_database_client(DATABASE).get_container_client(container)


def documents_left(server: CosmosTestServer, container: str) -> list[str]:
    """Each document's id prefix and namespace, sorted (``t.''``: the tombstone)."""
    docs = raw_container(server, container).query_items(
        "SELECT * FROM c", enable_cross_partition_query=True
    )
    return sorted(f"{d['id'][:2]}{d.get('ns', '')!r}" for d in docs)


def new_container() -> str:
    """A fresh container name, so tests never see each other's documents."""
    return f"c-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sync_saver(server: CosmosTestServer) -> Iterator[CosmosDBSaver]:
    """A CosmosDBSaver on its own container."""
    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        saver.setup()
        yield saver


@pytest.fixture
async def async_saver(server: CosmosTestServer) -> AsyncIterator[AsyncCosmosDBSaver]:
    """An AsyncCosmosDBSaver on its own container."""
    async with AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
        await saver.setup()
        yield saver

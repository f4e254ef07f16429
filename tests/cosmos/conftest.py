"""Fixtures for the Cosmos DB tests: one loopback server per session, savers on it.

The server is ``tests/cosmos_server/launch.mjs`` (``@vercel/cosmosdb-server`` behind a small
patch layer), served over TLS with a certificate generated for the session; the savers verify it.
When the server cannot be started the tests are skipped, except under ``CI=true`` where that is
an error.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver


def _load_server_module() -> Any:
    name = "agentstate_cosmos_test_server"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "cosmos_server" / "server.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_server_module = _load_server_module()
CosmosTestServer = _server_module.CosmosTestServer
ServerError = _server_module.ServerError

# Short SDK retries so that faults surface in seconds, not minutes.
FAST_RETRIES: dict[str, Any] = {
    "retry_total": 2,
    "retry_connect": 1,
    "retry_read": 1,
    "retry_backoff_max": 1,
    "retry_backoff_factor": 0.05,
    "connection_timeout": 2,
    "read_timeout": 5,
}

DATABASE = "agentstate"


@pytest.fixture(scope="session")
def cosmos_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CosmosTestServer]:
    """The loopback Cosmos DB server, started once for the session."""
    server = CosmosTestServer(tmp_path_factory.mktemp("cosmos_server"))
    try:
        server.start()
    except ServerError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the Cosmos DB test server did not start: {exc}")
        pytest.skip(f"the Cosmos DB test server did not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


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
    from agentstate_cosmosdb._base import tls_hook
    from azure.cosmos import CosmosClient

    client = CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )
    return client.get_database_client(DATABASE).get_container_client(container)


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

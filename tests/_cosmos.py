"""The loopback Cosmos DB server for tests: one per session, shared by every test module.

The server is ``tests/cosmos_server/launch.mjs`` (``@vercel/cosmosdb-server`` behind a small
patch layer), served over TLS with a certificate generated for the session; clients verify
it. When it cannot be started the tests that need it are skipped, except under ``CI=true``
where that is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def import_published_saver() -> Any:
    """The published ``langgraph-checkpoint-cosmosdb`` 0.4 package (a dev dependency, to
    test against threads it wrote): under ``CI=true`` it must be there (an ImportError
    fails), elsewhere its tests are skipped without it."""
    if os.environ.get("CI", "").lower() == "true":
        import langgraph_checkpoint_cosmosdb

        return langgraph_checkpoint_cosmosdb
    return pytest.importorskip(
        "langgraph_checkpoint_cosmosdb", reason="pip install --group test (the published saver)"
    )


def _load_server_module() -> Any:
    name = "agentstate_cosmos_test_server"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parent / "cosmos_server" / "server.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_server_module = _load_server_module()
CosmosTestServer = _server_module.CosmosTestServer
ServerError = _server_module.ServerError


@pytest.fixture(scope="session")
def cosmos_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
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
def cosmos_env(cosmos_server: Any) -> dict[str, str]:
    """Environment variables pointing a client at the session server, TLS verified.

    ``COSMOSDB_ENDPOINT`` and ``COSMOSDB_KEY`` (read by ``CosmosDBSaver``), the same as the
    portal's ``COSMOSDB_CONNECTION_STRING`` (for the README examples), the server's CA as
    ``COSMOSDB_CA_FILE`` (read by the demo) and as ``REQUESTS_CA_BUNDLE`` / ``SSL_CERT_FILE``
    (honoured by the saver's transports).
    """
    if not cosmos_server.running:
        cosmos_server.start()
    cosmos_server.throttle(0)
    ca_file = str(cosmos_server.ca_file)
    return {
        "COSMOSDB_ENDPOINT": cosmos_server.endpoint,
        "COSMOSDB_KEY": cosmos_server.key,
        "COSMOSDB_CONNECTION_STRING": (
            f"AccountEndpoint={cosmos_server.endpoint};AccountKey={cosmos_server.key};"
        ),
        "COSMOSDB_CA_FILE": ca_file,
        "REQUESTS_CA_BUNDLE": ca_file,
        "SSL_CERT_FILE": ca_file,
    }


@pytest.fixture
def published_cosmos_env(
    cosmos_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """``cosmos_env``, and a container holding one thread written by the published
    ``langgraph-checkpoint-cosmosdb`` 0.4 saver (a one-node graph run once), named by
    ``OLD_COSMOSDB_DATABASE`` and ``OLD_COSMOSDB_CONTAINER``: the migration example's source."""
    published = import_published_saver()
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    for name, value in cosmos_env.items():
        monkeypatch.setenv(name, value)  # the published saver reads the endpoint and key
    database, container = "published", f"published-{uuid.uuid4().hex[:12]}"
    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda state: {"messages": [AIMessage(content="hello")]})
    builder.add_edge(START, "reply")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published saver leaves TLS to the SDK
        saver = published.CosmosDBSaver(database_name=database, container_name=container)
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "old"}})
    return {**cosmos_env, "OLD_COSMOSDB_DATABASE": database, "OLD_COSMOSDB_CONTAINER": container}

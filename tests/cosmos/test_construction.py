"""Construction: environment, key or token credential, existing clients, TLS, secrets."""

from __future__ import annotations

import logging
import os
import time
import traceback
from typing import Any

import pytest
from agentstate_cosmosdb import (
    AsyncCosmosDBSaver,
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosDBSaver,
    CosmosSaverError,
    CosmosUnavailableError,
)
from agentstate_cosmosdb.settings import tls_hook
from azure.core.credentials import AccessToken
from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos.aio import CosmosClient as AsyncCosmosClient
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from .conftest import (
    DATABASE,
    FAST_RETRIES,
    CosmosTestServer,
    new_container,
    raw_container,
    saver_kwargs,
)

pytestmark = pytest.mark.cosmos


class StaticToken:
    """A TokenCredential that hands out a fixed token (the test server ignores auth)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("token-for-tests", int(time.time()) + 3600)


def _roundtrip(saver: CosmosDBSaver) -> None:
    config = generate_config("t")
    stored = saver.put(
        config,
        generate_checkpoint(channel_values={"ch": [1]}, channel_versions={"ch": "1"}),
        generate_metadata(),
        {"ch": "1"},
    )
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"] == {"ch": [1]}


def test_seed_form_reads_the_environment(
    server: CosmosTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CosmosDBSaver(database_name=..., container_name=...) takes COSMOSDB_ENDPOINT and
    COSMOSDB_KEY and creates what is missing."""
    monkeypatch.setenv("COSMOSDB_ENDPOINT", server.endpoint)
    monkeypatch.setenv("COSMOSDB_KEY", server.key)
    with CosmosDBSaver(
        database_name="seeddb",
        container_name="checkpoints",
        connection_verify=str(server.ca_file),
        **FAST_RETRIES,
    ) as saver:
        _roundtrip(saver)


def test_missing_environment_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without endpoint or key the error says which variable or argument to set."""
    monkeypatch.delenv("COSMOSDB_ENDPOINT", raising=False)
    monkeypatch.delenv("COSMOSDB_KEY", raising=False)
    with pytest.raises(CosmosConfigurationError, match="COSMOSDB_ENDPOINT"):
        CosmosDBSaver("db", "c")
    monkeypatch.setenv("COSMOSDB_ENDPOINT", "https://example.invalid:443/")
    with pytest.raises(CosmosConfigurationError, match="COSMOSDB_KEY"):
        AsyncCosmosDBSaver("db", "c")
    with pytest.raises(CosmosConfigurationError, match="not both"):
        CosmosDBSaver("db", "c", client=object(), endpoint="https://x/")  # type: ignore[arg-type]
    with pytest.raises(CosmosConfigurationError, match="ttl"):
        CosmosDBSaver("db", "c", endpoint="https://x/", credential="k", ttl=0)


def test_token_credential_uses_existing_container(server: CosmosTestServer) -> None:
    """With a TokenCredential the saver uses an existing container, and when it is missing says
    what to create, partition key path included."""
    container = new_container()
    with (
        pytest.raises(CosmosContainerNotFoundError) as info,
        CosmosDBSaver(
            DATABASE, container, **saver_kwargs(server, credential=StaticToken())
        ) as saver,
    ):
        saver.setup()
    message = str(info.value)
    assert "partition key path '/pk'" in message and container in message

    admin = CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )
    admin.create_database_if_not_exists(DATABASE).create_container(
        container, partition_key=PartitionKey(path="/pk")
    )
    with CosmosDBSaver(
        DATABASE, container, **saver_kwargs(server, credential=StaticToken())
    ) as saver:
        _roundtrip(saver)


def test_wrong_partition_key_is_refused(server: CosmosTestServer) -> None:
    """A container with another partition key path is reported, not used."""
    container = new_container()
    admin = CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )
    admin.create_database_if_not_exists(DATABASE).create_container(
        container, partition_key=PartitionKey(path="/partition_key")
    )
    with (
        pytest.raises(CosmosConfigurationError, match="/pk"),
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver,
    ):
        saver.setup()


def test_existing_client_is_used_and_not_closed(server: CosmosTestServer) -> None:
    """client= is used as given (with create_if_missing=True it may create) and stays open."""
    client = CosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    )
    with CosmosDBSaver(DATABASE, new_container(), client=client, create_if_missing=True) as saver:
        _roundtrip(saver)
    assert list(client.list_databases())  # still usable


async def test_existing_async_client(server: CosmosTestServer) -> None:
    """An azure.cosmos.aio client works with AsyncCosmosDBSaver and is left open."""
    async with AsyncCosmosClient(
        server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
    ) as client:
        async with AsyncCosmosDBSaver(
            DATABASE, new_container(), client=client, create_if_missing=True
        ) as saver:
            config = generate_config("t")
            stored = await saver.aput(
                config,
                generate_checkpoint(channel_values={"ch": 1}, channel_versions={"ch": "1"}),
                generate_metadata(),
                {"ch": "1"},
            )
            assert await saver.aget_tuple(stored) is not None
        assert [d async for d in client.list_databases()]


def test_from_endpoint_context_manager(server: CosmosTestServer) -> None:
    """from_endpoint(...) yields a ready saver and closes its client on exit."""
    kwargs = saver_kwargs(server)
    endpoint, key = kwargs.pop("endpoint"), kwargs.pop("credential")
    with CosmosDBSaver.from_endpoint(endpoint, key, DATABASE, new_container(), **kwargs) as saver:
        _roundtrip(saver)
    assert saver._client is None


async def test_async_from_endpoint_context_manager(server: CosmosTestServer) -> None:
    """The async from_endpoint(...) does the same."""
    kwargs = saver_kwargs(server)
    endpoint, key = kwargs.pop("endpoint"), kwargs.pop("credential")
    async with AsyncCosmosDBSaver.from_endpoint(
        endpoint, key, DATABASE, new_container(), **kwargs
    ) as saver:
        assert await saver.aget_tuple(generate_config("none")) is None


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_even_on_loopback(server: CosmosTestServer) -> None:
    """Without the test CA the saver refuses the server's certificate (the SDK alone would skip
    verification for 127.0.0.1); with connection_verify=False it connects."""
    kwargs = saver_kwargs(server, connection_verify=True)
    with (
        pytest.raises(CosmosUnavailableError, match="CERTIFICATE_VERIFY_FAILED"),
        CosmosDBSaver(DATABASE, new_container(), **kwargs) as saver,
    ):
        saver.setup()
    with CosmosDBSaver(
        DATABASE, new_container(), **saver_kwargs(server, connection_verify=False)
    ) as saver:
        saver.setup()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
async def test_tls_is_verified_even_on_loopback_async(server: CosmosTestServer) -> None:
    """The same for the async saver (aiohttp)."""
    kwargs = saver_kwargs(server, connection_verify=True)
    with pytest.raises(CosmosUnavailableError, match="CERTIFICATE_VERIFY_FAILED"):
        async with AsyncCosmosDBSaver(DATABASE, new_container(), **kwargs) as saver:
            await saver.setup()


def test_key_never_in_reprs_logs_or_errors(
    server: CosmosTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The account key appears in no repr, log record (SDK debug logging included) or error."""
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    with CosmosDBSaver(
        DATABASE,
        new_container(),
        **saver_kwargs(server, logging_enable=True),
    ) as saver:
        _roundtrip(saver)
        texts += [repr(saver), str(saver.__dict__.get("_settings"))]
        server.throttle(10_000)
        with pytest.raises(CosmosSaverError) as info:
            saver.get_tuple(generate_config("t"))
        server.throttle(0)
        texts += [str(info.value), "".join(traceback.format_exception(info.value))]
    bad = saver_kwargs(server, endpoint="https://127.0.0.1:9/")
    with pytest.raises(CosmosSaverError) as info2, CosmosDBSaver(DATABASE, "x", **bad) as saver2:
        saver2.setup()
    texts += [repr(saver2), str(info2.value), "".join(traceback.format_exception(info2.value))]
    texts += [record.getMessage() for record in caplog.records]
    assert any("Authorization" in t or "authorization" in t for t in texts)  # logs were on
    for text in texts:
        assert server.key not in text
        assert server.key[:20] not in text


def test_ttl_stamps_every_item(server: CosmosTestServer) -> None:
    """ttl= creates the container with time-to-live on (no default) and stamps every item:
    the head with the ttl and one second more (the service keeps ``_ts`` in whole seconds,
    rounded down, so a head of exactly ``ttl`` could go up to a second early), everything it
    may reference (values, checkpoints, writes) with twice the ttl, so the head always
    expires first."""
    container = new_container()
    with CosmosDBSaver(DATABASE, container, ttl=3600, **saver_kwargs(server)) as saver:
        _roundtrip(saver)
        saver.put_writes(
            saver.get_tuple(generate_config("t")).config,  # type: ignore[union-attr]
            [("ch", os.urandom(100_000).hex())],
            "task",
        )
    items = raw_container(server, container)
    assert items.read().get("defaultTtl") == -1
    docs = list(items.query_items("SELECT * FROM c", enable_cross_partition_query=True))
    assert docs and all(doc.get("ttl") == 2 * 3600 for doc in docs if doc["kind"] != "head")
    assert all(doc["ttl"] == 3600 + 1 for doc in docs if doc["kind"] == "head")
    assert {doc["kind"] for doc in docs} >= {"head", "checkpoint", "writes", "write_value"}


def test_async_saver_repr_hides_the_key(server: CosmosTestServer) -> None:
    """The async saver's repr names the endpoint and container, never the key."""
    saver = AsyncCosmosDBSaver(DATABASE, "c", **saver_kwargs(server))
    assert server.key not in repr(saver) and "c" in repr(saver)


def test_the_package_uses_only_the_cores_public_api() -> None:
    """agentstate_cosmosdb is a distribution of its own: it imports nothing private of
    agentstate_reducer (a module or name starting with an underscore), which may change in any
    release of the core."""
    import ast
    from pathlib import Path

    import agentstate_cosmosdb

    private = []
    for path in Path(agentstate_cosmosdb.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "agentstate_reducer"
            ):
                parts = (node.module or "").split(".")
                names = [alias.name for alias in node.names]
                if any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in names):
                    private.append(f"{path.name}: from {node.module} import {', '.join(names)}")
            elif isinstance(node, ast.Import):
                private += [
                    f"{path.name}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("agentstate_reducer")
                    and any(p.startswith("_") for p in a.name.split("."))
                ]
    assert private == []

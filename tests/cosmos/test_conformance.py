"""LangGraph's checkpointer conformance suite, all eight capabilities, for both savers."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos

CAPABILITIES = [c.value for c in Capability]


@pytest.mark.parametrize("capability", CAPABILITIES)
async def test_async_saver_conformance(server: CosmosTestServer, capability: str) -> None:
    """AsyncCosmosDBSaver passes every conformance test of the capability."""

    @checkpointer_test(name="AsyncCosmosDBSaver")
    async def factory() -> AsyncGenerator[AsyncCosmosDBSaver, None]:
        async with AsyncCosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
            await saver.setup()
            yield saver

    report = await validate(factory, capabilities={capability})
    result = report.results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.passed, f"{capability}: {result.failures}"
    assert result.tests_passed > 0 and result.tests_failed == 0


@pytest.mark.parametrize("capability", CAPABILITIES)
async def test_sync_saver_conformance(server: CosmosTestServer, capability: str) -> None:
    """CosmosDBSaver passes every conformance test of the capability (its async methods run the
    sync ones in worker threads)."""

    @checkpointer_test(name="CosmosDBSaver")
    async def factory() -> AsyncGenerator[CosmosDBSaver, None]:
        with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server)) as saver:
            saver.setup()
            yield saver

    report = await validate(factory, capabilities={capability})
    result = report.results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.passed, f"{capability}: {result.failures}"
    assert result.tests_passed > 0 and result.tests_failed == 0

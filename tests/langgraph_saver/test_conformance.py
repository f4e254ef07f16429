"""LangGraph's checkpointer conformance suite, run against the wrapper around real savers.

The suite drives savers through their async methods only. Sync-only savers (SqliteSaver,
PostgresSaver) are driven through ``sync_driven``, which calls the wrapper's sync methods
under the async names, one for each sync method the wrapper has: the suite then checks
the wrapper's sync path, which is what a sync graph uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import DetectedCapabilities
from langgraph.checkpoint.memory import InMemorySaver

from agentstate_reducer.langgraph.wrapper import _MIRRORED, ReducingCheckpointSaver, _overrides
from tests.langgraph_saver._full_saver import FullInMemorySaver
from tests.langgraph_saver._graphs import Memory, agent_graph, config, reducer, turn
from tests.langgraph_saver.conftest import ASYNC_BACKENDS, SYNC_BACKENDS, open_async, open_sync

_ASYNC_TO_SYNC = {
    "aput": "put",
    "aget_tuple": "get_tuple",
    "alist": "list",
    "aput_writes": "put_writes",
    "adelete_thread": "delete_thread",
    "acopy_thread": "copy_thread",
    "adelete_for_runs": "delete_for_runs",
    "aprune": "prune",
}


def sync_driven(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """``saver`` seen through async names that call its sync methods directly."""

    def forward(sync_name: str) -> Any:
        if sync_name == "list":

            async def alist(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                for item in saver.list(*args, **kwargs):
                    yield item

            return alist

        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(saver, sync_name)(*args, **kwargs)

        return method

    namespace = {
        async_name: forward(sync_name)
        for async_name, sync_name in _ASYNC_TO_SYNC.items()
        if _overrides(type(saver), sync_name)
    }
    driven = type(f"SyncDriven[{type(saver).__name__}]", (BaseCheckpointSaver,), namespace)
    return driven()  # type: ignore[no-any-return]


CASES = [
    pytest.param("memory", False, id="InMemorySaver"),
    pytest.param("sqlite", True, id="SqliteSaver"),
    pytest.param("aiosqlite", False, id="AsyncSqliteSaver"),
    pytest.param("postgres", True, id="PostgresSaver", marks=pytest.mark.postgres),
    pytest.param("apostgres", False, id="AsyncPostgresSaver", marks=pytest.mark.postgres),
    pytest.param("redis", True, id="RedisSaver", marks=pytest.mark.redis),
    pytest.param("aredis", False, id="AsyncRedisSaver", marks=pytest.mark.redis),
]


_REDIS_FAILURES = {
    # list(checkpoint_ns="") returns the checkpoints of every namespace
    "test_list_by_namespace",
    "test_list_multiple_namespaces",
    "test_prune_keep_latest_across_namespaces",  # its check lists the root namespace
    # list(before=) returns the checkpoint named by before, and ones after it
    "test_list_before",
    "test_list_limit_plus_before",
    # list(filter=) on a metadata key of the caller's own: "Unsupported filter key"
    "test_list_metadata_custom_keys",
    # prune([]) raises ValueError instead of doing nothing
    "test_prune_empty_list_noop",
}
UPSTREAM_FAILURES = {"redis": _REDIS_FAILURES, "aredis": _REDIS_FAILURES}
"""The suite's tests that the bare inner saver fails too, and exactly as the wrapper does (the
wrapper passes these calls through unchanged): langgraph-checkpoint-redis 0.5's, in
docs/guides/limits.md with their reproductions. A fix upstream fails this test, asking for
its entry to go."""


def failed_tests(report: Any) -> set[str]:
    """The names of the suite's tests that failed in ``report``."""
    return {
        failure.split(":")[0]
        for result in report.results.values()
        if result.passed is False
        for failure in result.failures
    }


@pytest.mark.parametrize(("backend", "sync_only"), CASES)
async def test_conformance_suite_passes_through_the_wrapper(
    backend: str, sync_only: bool, request: pytest.FixtureRequest
) -> None:
    """Every capability the inner saver has passes LangGraph's suite through the wrapper,
    and the wrapper shows the suite exactly the inner saver's capabilities."""
    if "postgres" in backend:
        request.getfixturevalue("postgres_url")
    if "redis" in backend:
        request.getfixturevalue("redis_stack_url")
    inners: list[BaseCheckpointSaver[Any]] = []

    @checkpointer_test(name=f"Reducing[{backend}]")
    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        if sync_only:
            for inner in open_sync(backend, request):
                inners.append(inner)
                yield sync_driven(ReducingCheckpointSaver(inner, reducer(Memory())))
        else:
            async for inner in open_async(backend, request):
                inners.append(inner)
                yield ReducingCheckpointSaver(inner, reducer(Memory()))

    report = await validate(factory)
    failed = failed_tests(report)
    assert failed == UPSTREAM_FAILURES.get(backend, set()), report.results
    if failed:
        # The bare saver fails the same tests: none of them is the wrapper's.

        @checkpointer_test(name=f"bare {backend}")
        async def bare() -> AsyncIterator[BaseCheckpointSaver[Any]]:
            if sync_only:
                for inner in open_sync(backend, request):
                    yield sync_driven(inner)
            else:
                async for inner in open_async(backend, request):
                    yield inner

        assert failed_tests(await validate(bare)) == failed
    inner = sync_driven(inners[0]) if sync_only else inners[0]
    expected = DetectedCapabilities.from_instance(inner).detected
    ran = {name for name, result in report.results.items() if result.passed is not None}
    assert ran == {cap.value for cap in expected}
    assert {"put", "put_writes", "get_tuple", "list", "delete_thread"} <= ran


@pytest.mark.parametrize("backend", SYNC_BACKENDS)
def test_wrapper_has_exactly_the_inner_savers_methods_sync(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Each delegated method, sync or async, is overridden on the wrapper iff on the inner."""
    for inner in open_sync(backend, request):
        wrapper = ReducingCheckpointSaver(inner, reducer())
        for method in _MIRRORED:
            assert _overrides(type(wrapper), method.name) == _overrides(type(inner), method.name), (
                method
            )
        for dunder in ("__enter__", "__exit__", "__aenter__", "__aexit__"):
            assert hasattr(wrapper, dunder) == hasattr(inner, dunder), dunder


@pytest.mark.parametrize("backend", ASYNC_BACKENDS)
async def test_wrapper_has_exactly_the_inner_savers_methods_async(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Async savers: the same mirror, including aprune and the delta-channel history."""
    async for inner in open_async(backend, request):
        wrapper = ReducingCheckpointSaver(inner, reducer())
        for method in _MIRRORED:
            assert _overrides(type(wrapper), method.name) == _overrides(type(inner), method.name), (
                method
            )
        assert DetectedCapabilities.from_instance(wrapper) == DetectedCapabilities.from_instance(
            inner
        )


def test_a_method_the_inner_saver_lacks_raises_like_the_inner_saver() -> None:
    """InMemorySaver has no prune: neither has the wrapper, which raises NotImplementedError."""
    wrapper = ReducingCheckpointSaver(InMemorySaver(), reducer())
    with pytest.raises(NotImplementedError):
        wrapper.prune(["t"])
    with pytest.raises(NotImplementedError):
        wrapper.copy_thread("a", "b")


async def test_all_eight_capabilities_pass_through_the_wrapper() -> None:
    """Around a saver with every capability (copy_thread, delete_for_runs and prune too),
    the wrapper passes all eight of the suite's capability groups, as the saver does."""
    reports = {}
    for wrapped in (False, True):

        @checkpointer_test(name=f"FullInMemorySaver wrapped={wrapped}")
        async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
            inner = FullInMemorySaver()
            yield ReducingCheckpointSaver(inner, reducer()) if wrapped else inner  # noqa: B023

        reports[wrapped] = await validate(factory)
    for wrapped, report in reports.items():
        passed = {name for name, result in report.results.items() if result.passed}
        assert len(passed) == 8, (wrapped, report.results)


def test_extended_capabilities_reach_the_inner_saver() -> None:
    """copy_thread, delete_for_runs and prune on the wrapper act on the inner saver's data."""
    inner = FullInMemorySaver()
    graph = agent_graph(ReducingCheckpointSaver(inner, reducer()))
    for n in range(5):
        graph.invoke(turn(n), config("a", run_id="r1"))
    wrapper = graph.checkpointer
    wrapper.copy_thread("a", "b")
    assert len(list(inner.list(config("b")))) == len(list(inner.list(config("a"))))
    wrapper.prune(["b"])
    assert len(list(inner.list(config("b")))) == 1
    wrapper.delete_for_runs(["r1"])
    assert not list(inner.list(config("a")))

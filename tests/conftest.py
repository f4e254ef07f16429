"""Fixtures shared by every test directory (the PostgreSQL, Cosmos DB and Redis Stack
servers), and the hypothesis profile: no deadlines and no too-slow health check, since CI
machines are shared and a slow example is not a wrong one."""

import pytest
from hypothesis import HealthCheck, settings

from tests._cosmos import cosmos_env, cosmos_server, published_cosmos_env
from tests._postgres import postgres_conninfo, postgres_url
from tests._redis_stack import redis_prefix, redis_stack_env, redis_stack_url
from tests.langgraph_saver._redis_marks import mark_redis_upstream_failures

settings.register_profile("agentstate", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentstate")

__all__ = [
    "cosmos_env",
    "cosmos_server",
    "postgres_conninfo",
    "postgres_url",
    "published_cosmos_env",
    "redis_prefix",
    "redis_stack_env",
    "redis_stack_url",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_redis_upstream_failures(items)

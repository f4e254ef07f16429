"""Fixtures shared by every test directory: the PostgreSQL and Cosmos DB servers."""

from tests._cosmos import cosmos_env, cosmos_server
from tests._postgres import postgres_conninfo, postgres_url

__all__ = ["cosmos_env", "cosmos_server", "postgres_conninfo", "postgres_url"]

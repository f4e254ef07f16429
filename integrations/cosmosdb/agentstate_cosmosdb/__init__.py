"""LangGraph checkpoint savers on Azure Cosmos DB, with optional message reduction.

``CosmosDBSaver`` (sync, ``azure.cosmos``) and ``AsyncCosmosDBSaver`` (async,
``azure.cosmos.aio``) share one storage layout: all documents of a thread in one logical
partition (partition key path ``/pk``), the latest checkpoint found by point reads, each channel
value stored once per version, large values split across documents.
"""

from agentstate_cosmosdb.aio import AsyncCosmosDBSaver
from agentstate_cosmosdb.errors import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosItemTooLargeError,
    CosmosOperationError,
    CosmosSaverError,
    CosmosThrottledError,
    CosmosUnavailableError,
)
from agentstate_cosmosdb.saver import CosmosDBSaver
from agentstate_cosmosdb.schema import PARTITION_KEY_PATH

__all__ = [
    "PARTITION_KEY_PATH",
    "AsyncCosmosDBSaver",
    "CosmosConfigurationError",
    "CosmosContainerNotFoundError",
    "CosmosDBSaver",
    "CosmosItemTooLargeError",
    "CosmosOperationError",
    "CosmosSaverError",
    "CosmosThrottledError",
    "CosmosUnavailableError",
]

"""LangGraph checkpoint savers on Azure Cosmos DB, with optional message reduction.

Modules: ``schema`` (documents, ids, queries), ``settings`` (names, credentials, TLS),
``ops`` (storage operations), ``documents`` (encoding, compression, reachability), ``heads``
(the head cache), ``_base`` (every operation, written once, combining ``_setup``, ``_values``,
``_writes``, ``_reads`` and ``_maintenance`` over ``_state``), ``saver`` / ``aio`` (the sync
and async SDK drivers), ``errors``, ``migrate`` (from langgraph-checkpoint-cosmosdb 0.4).

``CosmosDBSaver`` (sync, ``azure.cosmos``) and ``AsyncCosmosDBSaver`` (async,
``azure.cosmos.aio``) share one storage layout: all documents of a thread in one logical
partition (partition key path ``/pk``), the latest checkpoint found by point reads, each channel
value stored once per version, large values split across documents.
"""

from agentstate_cosmosdb.aio import AsyncCosmosDBSaver
from agentstate_cosmosdb.errors import (
    CosmosCheckpointRemovedError,
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosDataError,
    CosmosItemTooLargeError,
    CosmosMissingDocumentError,
    CosmosOperationError,
    CosmosSaverClosedError,
    CosmosSaverError,
    CosmosSchemaError,
    CosmosThreadDeletedError,
    CosmosThrottledError,
    CosmosUnavailableError,
)
from agentstate_cosmosdb.migrate import MigrationReport, migrate_from_langgraph_checkpoint_cosmosdb
from agentstate_cosmosdb.saver import CosmosDBSaver
from agentstate_cosmosdb.schema import PARTITION_KEY_PATH

__version__ = "0.1.0"

__all__ = [
    "PARTITION_KEY_PATH",
    "AsyncCosmosDBSaver",
    "CosmosCheckpointRemovedError",
    "CosmosConfigurationError",
    "CosmosContainerNotFoundError",
    "CosmosDBSaver",
    "CosmosDataError",
    "CosmosItemTooLargeError",
    "CosmosMissingDocumentError",
    "CosmosOperationError",
    "CosmosSaverClosedError",
    "CosmosSaverError",
    "CosmosSchemaError",
    "CosmosThreadDeletedError",
    "CosmosThrottledError",
    "CosmosUnavailableError",
    "MigrationReport",
    "__version__",
    "migrate_from_langgraph_checkpoint_cosmosdb",
]

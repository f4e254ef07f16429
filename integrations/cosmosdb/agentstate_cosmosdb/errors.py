"""Exceptions raised by the Cosmos DB savers.

Every failure of the Azure SDK is mapped into this small hierarchy and raised with
``raise OurError(...) from sdk_error``, so callers catch one family and still reach the SDK's
exception through ``__cause__``. Messages name the operation and what to do; they never contain the
account key.

::

    CosmosSaverError
     ├── CosmosConfigurationError      bad arguments, missing COSMOSDB_ENDPOINT / COSMOSDB_KEY
     ├── CosmosContainerNotFoundError  database or container missing and not ours to create
     ├── CosmosUnavailableError        the service could not be reached (connection, TLS, timeout)
     ├── CosmosThrottledError          429 TooManyRequests still returned after the SDK's retries
     ├── CosmosItemTooLargeError       413: an item exceeded the service's size limit
     └── CosmosOperationError          any other error status from the service
"""

from __future__ import annotations

__all__ = [
    "CosmosConfigurationError",
    "CosmosContainerNotFoundError",
    "CosmosItemTooLargeError",
    "CosmosOperationError",
    "CosmosSaverError",
    "CosmosThrottledError",
    "CosmosUnavailableError",
]


class CosmosSaverError(Exception):
    """Base class of every error raised by the Cosmos DB savers.

    Attributes:
        status_code: The HTTP status returned by the service, when there was one.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class CosmosConfigurationError(CosmosSaverError, ValueError):
    """The saver was built with arguments or environment it cannot use."""


class CosmosContainerNotFoundError(CosmosSaverError):
    """The database or container does not exist and the saver may not create it."""


class CosmosUnavailableError(CosmosSaverError):
    """The service could not be reached: connection refused or reset, TLS failure, timeout."""


class CosmosThrottledError(CosmosSaverError):
    """The service kept answering 429 TooManyRequests after the SDK's throttling retries."""


class CosmosItemTooLargeError(CosmosSaverError):
    """The service refused an item as too large (413)."""


class CosmosOperationError(CosmosSaverError):
    """The service answered with an error status not covered by a more specific class."""

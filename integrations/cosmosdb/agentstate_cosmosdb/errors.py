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
     ├── CosmosOperationError          any other error status from the service
     ├── CosmosThreadDeletedError      the thread was deleted while a run was using it
     ├── CosmosCheckpointRemovedError  a put builds on a checkpoint retention removed (ValueError)
     ├── CosmosDataError               what is stored cannot be read back as a whole checkpoint
     │    ├── CosmosMissingDocumentError   a document a checkpoint references is gone
     │    └── CosmosSchemaError            documents written by a newer version of the saver
     └── CosmosSaverClosedError        the saver was used after close() / aclose()
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CosmosCheckpointRemovedError",
    "CosmosConfigurationError",
    "CosmosContainerNotFoundError",
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


class CosmosThreadDeletedError(CosmosSaverError):
    """A run stored a checkpoint on a thread that ``delete_thread`` removed while the run was
    using it; nothing of that checkpoint was stored. Start the thread again with new input."""


class CosmosCheckpointRemovedError(CosmosSaverError, ValueError):
    """A put names a parent checkpoint the namespace no longer holds (``keep_checkpoints``,
    ``prune`` or ``delete_for_runs`` removed it) while the thread has a newer checkpoint:
    LangGraph found nothing under that id and started the run from an empty state, which
    would have become the thread's latest. Nothing was stored; continue from the latest
    checkpoint (a config without ``checkpoint_id``).

    Attributes:
        thread_id: The thread.
        checkpoint_ns: The namespace.
        checkpoint_id: The parent checkpoint id the put named.
        latest_id: The namespace's newest checkpoint id.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        latest_id: str,
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.checkpoint_id = checkpoint_id
        self.latest_id = latest_id


class CosmosDataError(CosmosSaverError):
    """Stored documents cannot be read back as a complete checkpoint; nothing was returned."""


#: What a user can do about a missing document, said by every CosmosMissingDocumentError.
MISSING_DOCUMENT_HINT = (
    "To recover: restore that document (from a backup or the container's point-in-time "
    "restore), or call delete_thread and start the thread again; the older checkpoints that "
    "do not need it still read (get_state_history, or a config naming one of them)"
)


class CosmosMissingDocumentError(CosmosDataError):
    """A document that a checkpoint references (a value, a chunk, pending writes) is missing.

    The message names the document and ends with what to do (:data:`MISSING_DOCUMENT_HINT`).

    Attributes:
        document_id: The id of the missing document.
    """

    def __init__(self, message: str, *, document_id: str) -> None:
        super().__init__(f"{message}. {MISSING_DOCUMENT_HINT}")
        self.document_id = document_id


class CosmosSchemaError(CosmosDataError):
    """A document was written by a newer version of the saver (a higher ``schema``)."""


class CosmosSaverClosedError(CosmosSaverError, RuntimeError):
    """The saver was used after ``close()`` / ``aclose()``; build a new one."""


def map_sdk_error(exc: BaseException, action: str, secret: Any) -> CosmosSaverError:
    """Map an Azure SDK exception to a :class:`CosmosSaverError` naming ``action``.

    The account key (``secret``) never appears in the message.
    """
    from azure.core.exceptions import ServiceRequestError, ServiceResponseError
    from azure.cosmos.exceptions import (
        CosmosBatchOperationError,
        CosmosClientTimeoutError,
        CosmosHttpResponseError,
    )

    from agentstate_cosmosdb.settings import scrub

    detail = scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, secret)[:300]
    if isinstance(exc, (CosmosClientTimeoutError, ServiceRequestError, ServiceResponseError)):
        check = "that the endpoint is right and reachable"
        said = f"{exc!r} {getattr(exc, 'inner_exception', None)!r}"
        if "CERTIFICATE_VERIFY_FAILED" in said or "SSLError" in said or "SSLCertVerif" in said:
            check = (
                "the server's TLS certificate: trust its CA (REQUESTS_CA_BUNDLE / SSL_CERT_FILE) "
                "or, for a local emulator only, pass connection_verify=False"
            )
        return CosmosUnavailableError(
            f"Cosmos DB could not be reached while trying to {action}: {detail}. Check {check}; "
            "the operation was not completed."
        )
    if isinstance(exc, (CosmosHttpResponseError, CosmosBatchOperationError)):
        status = exc.status_code
        if status == 429:
            return CosmosThrottledError(
                f"Cosmos DB kept throttling (429) while trying to {action}, after the SDK's "
                "retries. Raise the container's throughput or the client's retry_total / "
                "retry_backoff_max.",
                status_code=status,
            )
        if status in (408, 503):
            return CosmosUnavailableError(
                f"Cosmos DB was unavailable (HTTP {status}) while trying to {action}, after the "
                "SDK's retries: the operation was not completed; try again later.",
                status_code=status,
            )
        if status == 413:
            return CosmosItemTooLargeError(
                f"Cosmos DB refused an item as too large while trying to {action}: {detail}",
                status_code=status,
            )
        if status in (401, 403):
            return CosmosOperationError(
                f"Cosmos DB refused the credential while trying to {action} (HTTP {status}). "
                "Check the account key or the identity's data-plane role.",
                status_code=status,
            )
        return CosmosOperationError(
            f"Cosmos DB answered HTTP {status} while trying to {action}: {detail}",
            status_code=status,
        )
    if isinstance(exc, OSError):
        return CosmosUnavailableError(
            f"Cosmos DB could not be reached while trying to {action}: {detail}"
        )
    return CosmosOperationError(f"Cosmos DB call failed while trying to {action}: {detail}")

"""How a saver reaches its container: names, endpoint, credential, TLS, connection strings.

Validated once, when the saver is built (nothing here does I/O). Both drivers take their TLS
setup from :func:`ca_bundle`, so the sync and the async saver verify certificates the same way:

* ``connection_verify=False``: no verification;
* ``connection_verify="/path/ca.pem"``: that bundle only;
* ``connection_verify=True`` (default): the bundle named by ``REQUESTS_CA_BUNDLE``, else
  ``SSL_CERT_FILE``, else ``CURL_CA_BUNDLE``, else certifi's bundle (the one ``requests``
  uses). Loopback endpoints are verified too (the SDK alone skips ``localhost``/``127.0.0.1``).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
from dataclasses import dataclass, field
from typing import Any

from agentstate_cosmosdb.errors import CosmosConfigurationError
from agentstate_cosmosdb.schema import PARTITION_KEY_PATH

__all__ = [
    "ClientSettings",
    "ca_bundle",
    "check_account_key",
    "client_options",
    "parse_connection_string",
    "resolve_settings",
    "ssl_context",
]

ENDPOINT_ENV = "COSMOSDB_ENDPOINT"
KEY_ENV = "COSMOSDB_KEY"
CA_ENV = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class ClientSettings:
    """How a saver reaches its container (validated; the credential is never shown).

    Attributes:
        endpoint: Account endpoint, None with ``client=``.
        credential: Account key (str) or token credential; None with ``client=``.
        key_auth: Whether the credential is an account key.
        database_name: Database of the checkpoint container.
        container_name: The checkpoint container.
        create_if_missing: Whether to try creating a missing database or container.
        verify: ``connection_verify`` as given.
    """

    endpoint: str | None
    credential: Any = field(repr=False)
    key_auth: bool
    database_name: str
    container_name: str
    create_if_missing: bool
    verify: bool | str


def resolve_settings(
    *,
    database_name: str,
    container_name: str,
    endpoint: str | None,
    credential: Any,
    has_client: bool,
    create_if_missing: bool | None,
    connection_verify: bool | str,
) -> ClientSettings:
    """Validate construction arguments, filling endpoint and key from the environment.

    Raises:
        TypeError: A name, ``create_if_missing`` or ``connection_verify`` has the wrong type.
        CosmosConfigurationError: A name is empty, ``client=`` is combined with ``endpoint=`` or
            ``credential=``, or no endpoint or credential is given or set in the environment.
    """
    for label, value in (("database_name", database_name), ("container_name", container_name)):
        if not isinstance(value, str):
            raise TypeError(f"{label} must be a str, got {type(value).__name__}: {value!r}")
        if not value:
            raise CosmosConfigurationError(f"{label} must be a non-empty string, got {value!r}")
    if not isinstance(connection_verify, (bool, str)):
        raise TypeError(
            "connection_verify must be True, False or the path of a CA bundle, "
            f"got {type(connection_verify).__name__}"
        )
    if create_if_missing is not None and not isinstance(create_if_missing, bool):
        raise TypeError(
            f"create_if_missing must be a bool or None, got {type(create_if_missing).__name__}"
        )
    # Creating what is missing is tried by default whatever the credential: a refusal (403)
    # then says what to create.
    create = True if create_if_missing is None else create_if_missing
    if has_client:
        if endpoint is not None or credential is not None:
            raise CosmosConfigurationError(
                "pass either client= or endpoint=/credential=, not both: the saver uses the "
                "client as given"
            )
        return ClientSettings(
            endpoint=None,
            credential=None,
            key_auth=False,
            database_name=database_name,
            container_name=container_name,
            create_if_missing=create,
            verify=connection_verify,
        )
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV) or None
    if endpoint is None:
        raise CosmosConfigurationError(
            f"no Cosmos DB endpoint: pass endpoint= or set {ENDPOINT_ENV} "
            "(e.g. https://<account>.documents.azure.com:443/)"
        )
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint must be a str, got {type(endpoint).__name__}")
    given_key = credential is not None
    if credential is None:
        credential = os.environ.get(KEY_ENV) or None
    if credential is None:
        raise CosmosConfigurationError(
            f"no Cosmos DB credential: pass credential= (an account key or an azure-identity "
            f"TokenCredential) or set {KEY_ENV}"
        )
    if isinstance(credential, str):
        check_account_key(credential, "credential" if given_key else f"${KEY_ENV}")
    return ClientSettings(
        endpoint=endpoint,
        credential=credential,
        key_auth=isinstance(credential, str),
        database_name=database_name,
        container_name=container_name,
        create_if_missing=create,
        verify=connection_verify,
    )


def parse_connection_string(conn_str: str) -> tuple[str, str]:
    """Split an Azure portal connection string into (endpoint, account key).

    ``AccountEndpoint=https://<account>.documents.azure.com:443/;AccountKey=<key>;`` (order
    free, the trailing ``;`` optional, other parts such as ``Database=`` ignored).

    Raises:
        TypeError: ``conn_str`` is not a str.
        CosmosConfigurationError: A part is missing or malformed; the message names the part and
            never repeats the key.
    """
    if not isinstance(conn_str, str):
        raise TypeError(f"conn_str must be a str, got {type(conn_str).__name__}")
    parts: dict[str, str] = {}
    for piece in conn_str.strip().split(";"):
        if not piece.strip():
            continue
        name, sep, value = piece.partition("=")
        if not sep:
            raise CosmosConfigurationError(
                "malformed Cosmos DB connection string: every part must be Name=Value, "
                "e.g. 'AccountEndpoint=https://<account>.documents.azure.com:443/;"
                "AccountKey=<key>;'"
            )
        parts[name.strip().lower()] = value.strip()
    endpoint = parts.get("accountendpoint")
    key = parts.get("accountkey")
    if not endpoint:
        raise CosmosConfigurationError(
            "the Cosmos DB connection string has no AccountEndpoint= part "
            "(expected 'AccountEndpoint=https://<account>.documents.azure.com:443/;AccountKey=...;')"
        )
    if not endpoint.startswith(("https://", "http://")):
        raise CosmosConfigurationError(
            f"the connection string's AccountEndpoint must be an https:// URL, got {endpoint!r}"
        )
    if not key:
        raise CosmosConfigurationError(
            "the Cosmos DB connection string has no AccountKey= part (copy the whole primary "
            "connection string from the account's Keys page)"
        )
    check_account_key(key, "the connection string's AccountKey")
    return endpoint, key


def check_account_key(key: str, where: str) -> None:
    """Refuse an account key that is not base64 (the SDK would fail at the first request
    with binascii's "Incorrect padding"), naming where it came from and never the key.

    Raises:
        CosmosConfigurationError: ``key`` is not valid base64.
    """
    try:
        base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raise CosmosConfigurationError(
            f"{where} is not a valid Cosmos DB account key: an account key is base64 (the "
            "88-character primary or secondary key from the account's Keys page, ending in "
            "'=='); check that it was copied whole, without spaces or quotes. For Microsoft "
            "Entra ID, pass an azure-identity credential instead of a string"
        ) from None


def missing_container_message(settings: ClientSettings, why: str) -> str:
    """Say exactly what to create when the database or container is missing."""
    return (
        f"Cosmos DB database {settings.database_name!r} or container "
        f"{settings.container_name!r} not found ({why}). Create the container with partition key "
        f"path '{PARTITION_KEY_PATH}' (for example: az cosmosdb sql container create "
        f"--database-name {settings.database_name} --name {settings.container_name} "
        f"--partition-key-path {PARTITION_KEY_PATH} ...), or give the saver a credential "
        "allowed to create it (an account key)."
    )


def wrong_partition_key_message(settings: ClientSettings, paths: object) -> str:
    """Explain a container created with another partition key."""
    return (
        f"container {settings.container_name!r} has partition key {paths!r}; the saver needs "
        f"partition key path '{PARTITION_KEY_PATH}'. Use another container or recreate it."
    )


# --------------------------------------------------------------------------------------------
# TLS: one policy for both drivers
# --------------------------------------------------------------------------------------------


def ca_bundle(verify: bool | str) -> str | None:
    """The CA bundle both drivers verify against; None when verification is off."""
    if verify is False:
        return None
    if isinstance(verify, str):
        return verify
    for name in CA_ENV:
        if os.environ.get(name):
            return os.environ[name]
    import certifi

    return str(certifi.where())


def ssl_context(verify: bool | str) -> ssl.SSLContext | None:
    """An SSL context for the async driver (aiohttp), or None when verification is off."""
    bundle = ca_bundle(verify)
    return None if bundle is None else ssl.create_default_context(cafile=bundle)


def tls_hook(bundle: str, user_hook: Any = None) -> Any:
    """Return a ``raw_request_hook`` that keeps TLS verification on, against ``bundle``.

    The SDK turns certificate verification off by itself for ``localhost`` and ``127.0.0.1``;
    this hook restores it on every request (and then calls ``user_hook``).
    """

    def hook(request: Any) -> None:
        request.context.options["connection_verify"] = bundle
        request.context.options.pop("connection_cert", None)
        if user_hook is not None:
            user_hook(request)

    return hook


def client_options(
    settings: ClientSettings, user_kwargs: dict[str, Any], *, asynchronous: bool
) -> dict[str, Any]:
    """SDK client keywords for a client the saver builds: the user's, minimal write responses,
    and the TLS policy above (a verifying transport for aiohttp, a verifying request hook for
    requests)."""
    options = dict(user_kwargs)
    # The saver never needs a written document back (it keeps the etag from the response
    # headers), so writes ask the service for empty bodies.
    options.setdefault("no_response_on_write", True)
    bundle = ca_bundle(settings.verify)
    if bundle is None:
        options["connection_verify"] = False
        return options
    if asynchronous:
        if "transport" not in options:
            from agentstate_cosmosdb._transport import VerifyingAioTransport

            context = ssl.create_default_context(cafile=bundle)
            options["transport"] = VerifyingAioTransport(
                context, use_env_settings=proxy_env_present()
            )
        return options
    from azure.core.pipeline.transport import RequestsTransport

    options["raw_request_hook"] = tls_hook(bundle, options.get("raw_request_hook"))
    options.setdefault("transport", RequestsTransport(use_env_settings=proxy_env_present()))
    return options


def proxy_env_present() -> bool:
    """Whether proxy environment variables are set.

    Without them the saver's transport skips reading the environment on every request (which
    costs about half a millisecond per request in ``requests``).
    """
    return any(os.environ.get(name) for name in _PROXY_ENV)


def scrub(text: str, secret: Any) -> str:
    """Remove ``secret`` (an account key) from ``text``."""
    if isinstance(secret, str) and len(secret) >= 8:
        text = text.replace(secret, "***")
    return text

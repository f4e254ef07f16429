"""The aiohttp transport of the async saver: one SSL context, verification always on."""

from __future__ import annotations

import ssl
from typing import Any

from azure.core.pipeline.transport import AioHttpTransport

__all__ = ["VerifyingAioTransport"]


class VerifyingAioTransport(AioHttpTransport):  # type: ignore[misc]
    """aiohttp transport that always verifies TLS with one SSL context built up front.

    The SDK turns verification off for loopback endpoints and rebuilds an SSL context from a CA
    path on every request (which defeats connection reuse); this transport does neither.
    """

    def __init__(self, context: ssl.SSLContext, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._context = context

    def _build_ssl_config(self, cert: Any, verify: Any) -> ssl.SSLContext:
        return self._context

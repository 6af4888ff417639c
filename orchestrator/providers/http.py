"""The HTTP client the official SDKs use: their own aiohttp transport (the `aiohttp` extra they ship), whose
C parser reads a streamed body for a fraction of the CPU the default httpx2/h11 stack spends per chunk.

A call's read timeout (the longest silence allowed inside the body) is sent only where it could end the
call before the call's own deadline (`call_timeout`): while one is set, aiohttp re-arms a timer for every
chunk it reads.

Both SDKs number their attempts in the `x-stainless-retry-count` header; a request hook counts the
ones sent again (after a 429, a 5xx or a dropped connection) in the process's metrics.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from orchestrator.metrics import CALL_RETRIES

RETRY_HEADER = "x-stainless-retry-count"


def call_timeout(sdk: ModuleType, client_timeout_s: float, call_timeout_s: float) -> Any:
    """The SDK's timeout for one call: `client_timeout_s` to connect, wait for the pool and write, and as the
    read timeout only when it is shorter than the deadline the whole call already runs under."""
    return sdk.Timeout(client_timeout_s, read=client_timeout_s if client_timeout_s < call_timeout_s else None)


def sdk_http_client(sdk: ModuleType, base_url: str | None, timeout_s: float, provider: str) -> Any:
    """An aiohttp-backed client for `sdk` (openai or anthropic) that counts `provider`'s retries.

    A base URL carrying credentials (http://user:pw@host) keeps the SDK's httpx client: aiohttp refuses
    to combine URL credentials with the SDK's Authorization header.
    """
    counter = CALL_RETRIES.labels(provider)

    async def count_retry(request: Any) -> None:
        if request.headers.get(RETRY_HEADER, "0") not in ("", "0"):
            counter.inc()

    hooks = {"request": [count_retry]}
    if base_url and urlsplit(base_url).username:
        return sdk.DefaultAsyncHttpxClient(timeout=timeout_s, event_hooks=hooks)
    return sdk.DefaultAioHttpClient(timeout=timeout_s, event_hooks=hooks)

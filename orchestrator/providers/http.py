"""The HTTP client the official SDKs use: their own aiohttp transport (the `aiohttp` extra they ship).

aiohttp's C parser reads a streamed body for a fraction of the CPU the default httpx2/h11 stack
spends per chunk (bench: 14.4 → 9.6 ms of CPU per model call at 100 concurrent debates).

Both SDKs number their attempts in the `x-stainless-retry-count` header; a request hook counts the
ones sent again (after a 429, a 5xx or a dropped connection) in the process's metrics.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from orchestrator.metrics import CALL_RETRIES

RETRY_HEADER = "x-stainless-retry-count"


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

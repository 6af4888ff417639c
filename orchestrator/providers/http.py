"""The HTTP client the official SDKs use: their own aiohttp transport (the `aiohttp` extra they ship).

aiohttp's C parser reads a streamed body for a fraction of the CPU the default httpx2/h11 stack
spends per chunk (bench: 14.4 → 9.6 ms of CPU per model call at 100 concurrent debates).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any
from urllib.parse import urlsplit


def sdk_http_client(sdk: ModuleType, base_url: str | None, timeout_s: float) -> Any:
    """An aiohttp-backed client for `sdk` (openai or anthropic), or None for the SDK's default.

    A base URL carrying credentials (http://user:pw@host) keeps the default client: aiohttp refuses
    to combine URL credentials with the SDK's Authorization header.
    """
    if base_url and urlsplit(base_url).username:
        return None
    return sdk.DefaultAioHttpClient(timeout=timeout_s)

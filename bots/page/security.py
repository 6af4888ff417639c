"""What every page response carries, and how many requests a client address may make.

The headers (bots/security_headers.py, on every answer of the server) keep the page inert and its key
at home: no script or style but the bot's own files (nothing inline: the page has none), no framing,
no sniffing, no Referer (the key is in the path), no indexing. The limit is a token bucket per client
address (the peer's address: behind a load balancer that is the balancer's, unless the front is told
otherwise, so keep it generous there)."""

from __future__ import annotations

import time
from collections import OrderedDict

from aiohttp import web

from bots.security_headers import CSP, HEADERS

__all__ = ["CSP", "HEADERS", "NOT_FOUND", "RateLimit", "not_found", "secured"]

NOT_FOUND = "Not found.\n"


def secured(response: web.StreamResponse, *, private: bool = True) -> web.StreamResponse:
    """The headers of every answer (the server sets them too: bots/web.py), with the route's own
    Cache-Control kept unless `private`."""
    for name, value in HEADERS.items():
        if name != "Cache-Control" or private or name not in response.headers:
            response.headers[name] = value
    return response


def not_found() -> web.Response:
    """The one answer for a wrong, missing or revoked key, or no such debate: nothing of any debate in it."""
    response = web.Response(status=404, text=NOT_FOUND, content_type="text/plain")
    secured(response)
    return response


class RateLimit:
    """`rate` requests a second per client address, in bursts of up to `burst`; the oldest addresses
    are forgotten past `remember`."""

    def __init__(self, rate: float = 5.0, burst: float = 60.0, *, remember: int = 10_000) -> None:
        self.rate, self.burst, self.remember = rate, burst, remember
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, address: str, *, at: float | None = None) -> bool:
        now = time.monotonic() if at is None else at
        tokens, last = self._buckets.pop(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= 1.0
        self._buckets[address] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > self.remember:
            self._buckets.popitem(last=False)
        return allowed

    def refuse(self) -> web.Response:
        response = web.Response(status=429, text="Too many requests; try again in a few seconds.\n",
                                content_type="text/plain", headers={"Retry-After": str(max(1, round(1 / self.rate)))})
        secured(response)
        return response

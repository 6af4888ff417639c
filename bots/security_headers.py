"""The headers every answer of the process's HTTP server carries (bots/web.py sets them on each response,
a route's own value kept where it set one): no script, style or framing but the server's own, no
sniffing, no Referer (a debate page's key is in its path), no indexing, and nothing kept in a cache
unless the route says it may be."""

from __future__ import annotations

from collections.abc import Mapping

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}

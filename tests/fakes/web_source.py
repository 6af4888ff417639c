"""A loopback web server of pages, files and misbehaving answers, for the brief's fetch tests.

    async with SourceServer() as web:
        web.pages["/doc.md"] = ("text/markdown", b"# Plan\n...")
        url = web.url("/doc.md")            # http://127.0.0.1:PORT/doc.md
        web.allow_hosts                      # "127.0.0.1:PORT", for DEBATE_FETCH_ALLOW_HOSTS

Besides `pages` it serves `/big` (6 MB of text, with or without a Content-Length: `/big-chunked`),
`/slow` (a body that never finishes until the server closes), `/image.png`, and `/redirect?to=URL`
(a 302 to URL) and `/loop` (a 302 to itself). Every request is recorded in `requests` (method, path, headers).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

SIX_MB = 6 * 1024 * 1024


@dataclass
class SourceServer:
    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    _runner: web.AppRunner | None = None
    gates: dict[str, asyncio.Event] = field(default_factory=dict)  # a page answered once its gate is set
    delays: dict[str, float] = field(default_factory=dict)  # a page answered after this many seconds (a slow site)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    @property
    def allow_hosts(self) -> str:
        return f"{self.host}:{self.port}"

    async def __aenter__(self) -> SourceServer:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._answer)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        self.requests.append({"method": request.method, "path": request.path, "headers": dict(request.headers)})
        path = request.path
        if path in self.gates:
            await self.gates[path].wait()
        if path in self.delays:
            await asyncio.sleep(self.delays[path])
        if path in self.pages:
            media, body = self.pages[path]
            return web.Response(body=body, headers={"Content-Type": media})
        if path == "/big":
            return web.Response(body=b"a" * SIX_MB, content_type="text/plain")
        if path == "/big-chunked":
            response = web.StreamResponse(headers={"Content-Type": "text/plain"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(SIX_MB // 65536 + 1):
                await response.write(b"b" * 65536)
            await response.write_eof()
            return response
        if path == "/slow":
            response = web.StreamResponse(headers={"Content-Type": "text/plain"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            await response.write(b"the first words, then nothing")
            await self._closing.wait()
            return response
        if path == "/image.png":
            return web.Response(body=b"\x89PNG\r\n\x1a\n", content_type="image/png")
        if path == "/redirect":
            raise web.HTTPFound(request.query["to"])
        if path == "/loop":
            raise web.HTTPFound("/loop")
        if path == "/cookie":
            return web.Response(text="cookie", content_type="text/plain", headers={"Set-Cookie": "session=abc"})
        raise web.HTTPNotFound()

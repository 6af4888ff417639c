"""The debate pages on a front's HTTP server (bots/web.py): `PageSite(...).mount(front)`.

    GET /d/{id}/{key}               the page (server-rendered; follows a running debate live)
    GET /d/{id}/{key}/events        Server-Sent Events while it runs (live.py)
    GET /d/{id}/{key}/export.md     the Markdown transcript; export.json: the JSON export, without the
                                    platform ids the page does not show (the CLI's export keeps them)
    GET /page/static/page.css|js    the page's own style and script (no external asset anywhere)

A wrong, missing or revoked key, an unknown debate and an unknown path all get the same 404 with
nothing of any debate in it. Every answer carries the headers of security.py; each client address is
rate-limited.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from importlib import resources

from aiohttp import web

from bots.page.keys import PAGE_PREFIX, LinkedDebates, key_matches, page_path, public_url
from bots.page.live import Feed, LiveHub
from bots.page.render import STATIC_PATH, render_page
from bots.page.security import RateLimit, not_found, secured
from bots.page.view import page_fingerprint, page_view
from bots.settings import BotSettings
from bots.web import Streamed
from orchestrator.export import to_markdown, to_shared_json
from orchestrator.log.records import DebateRecord

STATIC_TYPES = {"page.css": "text/css", "page.js": "text/javascript"}
EXPORTS = {"export.md": "text/markdown", "export.json": "application/json"}
RENDERED = 256  # pages kept rendered, each until its debate changes


def _static(name: str) -> bytes:
    return (resources.files("bots.page") / "static" / name).read_bytes()


def _sse(name: str, data: str) -> bytes:
    if name == "ping":
        return b": ping\n\n"
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"event: {name}\n{lines}\n".encode()


class PageSite:
    """The pages of the debates in `store`; `feed()`: the front's workflow feed, when it has one."""

    def __init__(self, store: LinkedDebates, settings: BotSettings, feed: Callable[[], Feed | None] = lambda: None, *,
                 limit: RateLimit | None = None, poll_s: float | None = None) -> None:
        self.store = store
        self.settings = settings
        self.limit = limit or RateLimit()
        self.hub = LiveHub(store, feed) if poll_s is None else LiveHub(store, feed, poll_s=poll_s)
        self._files = {name: _static(name) for name in STATIC_TYPES}
        self._rendered: OrderedDict[tuple[object, ...], str] = OrderedDict()

    def mount(self, front: object) -> None:
        front.mount_prefix(PAGE_PREFIX, self.handle)  # type: ignore[attr-defined]
        for name in STATIC_TYPES:
            front.mount("GET", f"{STATIC_PATH}/{name}", self.static)  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self.hub.close()

    async def static(self, request: web.Request) -> web.StreamResponse:
        name = request.path.rsplit("/", 1)[-1]
        response = web.Response(body=self._files[name], content_type=STATIC_TYPES[name], charset="utf-8",
                                headers={"Cache-Control": "public, max-age=3600"})
        return secured(response, private=False)

    async def handle(self, request: web.Request) -> web.StreamResponse | Streamed:
        if not self.limit.allow(request.remote or ""):
            return self.limit.refuse()
        if request.method not in ("GET", "HEAD"):
            return not_found()
        parts = request.path[len(PAGE_PREFIX):].split("/")
        if len(parts) not in (2, 3) or not all(parts):
            return not_found()
        debate_id, key, *rest = parts
        record = await self._debate(debate_id, key)
        if record is None:
            return not_found()
        path = page_path(debate_id, key)
        if not rest:
            return self._page(record, path)
        if rest[0] == "events":
            return await self._events(request, debate_id)
        if rest[0] in EXPORTS:
            return self._export(record, rest[0])
        return not_found()

    async def _debate(self, debate_id: str, key: str) -> DebateRecord | None:
        token = await self.store.stored_page_token(debate_id)
        if not key_matches(self.settings, debate_id, token, key):
            return None
        record = await self.store.debate(debate_id)
        return record if record is not None and record.id == debate_id else None

    def _page(self, record: DebateRecord, path: str) -> web.Response:
        key = (path, *page_fingerprint(record))
        html = self._rendered.pop(key, None)
        if html is None:
            base = public_url(self.settings)
            html = render_page(page_view(record), path, base + path if base else None)
        self._rendered[key] = html
        while len(self._rendered) > RENDERED:
            self._rendered.popitem(last=False)
        return secured(web.Response(text=html, content_type="text/html", charset="utf-8"))

    def _export(self, record: DebateRecord, name: str) -> web.Response:
        body = (to_markdown(record) if name == "export.md"
                else json.dumps(to_shared_json(record), ensure_ascii=False, indent=2))
        response = web.Response(text=body, content_type=EXPORTS[name], charset="utf-8",
                                headers={"Content-Disposition": f'inline; filename="debate-{record.id}.{name[7:]}"'})
        return secured(response)

    async def _events(self, request: web.Request, debate_id: str) -> Streamed:
        """Written by the server's loop (bots/web.py), each event produced here, on the main loop."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
        secured(response)
        return Streamed(response, self._event_stream(debate_id))

    async def _event_stream(self, debate_id: str) -> AsyncIterator[bytes]:
        yield b"retry: 1000\n\n"
        # closed with the viewer (the front closes this generator): a watch ends with its last viewer
        async with contextlib.aclosing(self.hub.follow(debate_id)) as changes:
            async for name, data in changes:
                yield _sse(name, data)

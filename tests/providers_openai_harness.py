"""What test_providers_openai.py shares with other test modules, moved here so that no test module imports another:
`_raw_server`."""

from __future__ import annotations

import asyncio

from aiohttp import web


async def _raw_server(body: bytes, stall_s: float = 0.0,
                      headers: dict[str, str] | None = None) -> tuple[web.AppRunner, str]:
    """POST /v1/chat/completions answers 200 with `body` as an event stream (two writes, split mid-way,
    with `stall_s` of silence between them; `headers` added to the response's)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", **(headers or {})})
        await resp.prepare(request)
        half = len(body) // 2
        await resp.write(body[:half])
        await asyncio.sleep(stall_s)
        await resp.write(body[half:])
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"

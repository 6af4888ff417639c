"""Slack transports in our own event loop: HTTP mode (aiohttp) and Socket Mode (connect_async).

`run_slack(core, host, port, stop)` picks Socket Mode when SLACK_APP_TOKEN is set, else HTTP mode,
and returns once `stop` is set and everything is closed. Neither transport takes over the loop, so
`debate serve` runs it in a TaskGroup beside Discord.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from bots.slack.app import build_app, check_settings
from bots.slack.restart import announce_interrupted
from bots.slack.runtime import SlackRuntime
from orchestrator.app import Core
from orchestrator.providers.registry import preload_sdks

log = logging.getLogger("bots.slack")

EVENTS_PATH = "/slack/events"
WATCHDOG_INTERVAL_S = 10.0

async def warm_up() -> None:
    """Before serving: a first `/debate` must not wait seconds for the model SDKs to import."""
    await preload_sdks()


def web_app(app: AsyncApp) -> web.Application:
    """POST /slack/events through bolt (signature checked there), GET /healthz, and the OAuth pages."""

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    routes = [web.post(EVENTS_PATH, events), web.get("/healthz", healthz)]
    flow = app.oauth_flow
    if flow is not None:

        async def install(request: web.Request) -> web.Response:
            return await to_aiohttp_response(await flow.handle_installation(await to_bolt_request(request)))

        async def callback(request: web.Request) -> web.Response:
            return await to_aiohttp_response(await flow.handle_callback(await to_bolt_request(request)))

        routes += [web.get(flow.install_path, install), web.get(flow.redirect_uri_path, callback)]
    application = web.Application()
    application.add_routes(routes)
    return application


async def serve_http(app: AsyncApp, host: str, port: int, stop: asyncio.Event,
                     started: Callable[[int], None] | None = None) -> None:
    """Serve until `stop` is set; `started` receives the bound port (useful with port 0)."""
    runner = web.AppRunner(web_app(app), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1] if site._server else port  # type: ignore[union-attr]
    log.info("slack: HTTP mode on http://%s:%s%s", host, bound, EVENTS_PATH)
    if started is not None:
        started(bound)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


async def serve_socket_mode(app: AsyncApp, app_token: str, stop: asyncio.Event,
                            watchdog_interval: float = WATCHDOG_INTERVAL_S) -> None:
    """Connect with connect_async() and keep the connection alive: slack_sdk reconnects by itself
    on most failures; the watchdog catches the rest (a session that died without telling anyone)."""
    handler = AsyncSocketModeHandler(app, app_token)
    await handler.connect_async()
    log.info("slack: Socket Mode connected")
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), watchdog_interval)
            except TimeoutError:
                if not await handler.client.is_connected():
                    log.warning("slack: Socket Mode connection lost; reconnecting")
                    try:
                        await handler.client.connect_to_new_endpoint()
                    except Exception:
                        log.exception("slack: Socket Mode reconnect failed; will retry")
    finally:
        await handler.close_async()


async def run_slack(core: Core, host: str, port: int, stop: asyncio.Event, *,
                    socket_mode: bool | None = None, runtime_ready: Callable[[SlackRuntime], None] | None = None
                    ) -> None:
    """Run Slack until `stop` is set. Socket Mode when SLACK_APP_TOKEN is set (unless `socket_mode`
    says otherwise), else HTTP mode on host:port. Raises ConfigError for missing settings. Debates a
    restart cut off (`core.interrupted`) get their root messages updated in the background."""
    settings = core.settings
    use_socket = bool(settings.slack_app_token) if socket_mode is None else socket_mode
    check_settings(settings, socket_mode=use_socket)
    await warm_up()
    app, runtime = build_app(core)
    if runtime_ready is not None:
        runtime_ready(runtime)
    if core.interrupted:  # in the background: startup never waits on Slack
        runtime.spawn(announce_interrupted(app, runtime), name="slack-restart-notices")
    try:
        if use_socket and app.oauth_flow is not None:  # install pages still need HTTP
            async with asyncio.TaskGroup() as group:
                group.create_task(serve_socket_mode(app, settings.slack_app_token or "", stop))
                group.create_task(serve_http(app, host, port, stop))
        elif use_socket:
            await serve_socket_mode(app, settings.slack_app_token or "", stop)
        else:
            await serve_http(app, host, port, stop)
    finally:
        await runtime.shutdown()

"""Slack transports in our own event loop: HTTP mode (aiohttp) and Socket Mode (connect_async).

`run_slack(core, host, port, stop, front=...)` picks Socket Mode when SLACK_APP_TOKEN is set, else
HTTP mode, and returns once `stop` is set and everything is closed. Neither transport takes over the
loop, so `debate serve` runs it in a TaskGroup beside Discord; HTTP mode's routes (`routes.py`, the
signature checked before anything parses a body) go on the process's one server (`bots.web`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from bots.settings import bot_settings
from bots.slack.app import build_app, check_settings
from bots.slack.routes import EVENTS_PATH, mount_slack
from bots.slack.runtime import SlackRuntime
from bots.web import Health, WebFront
from orchestrator.app import Core

log = logging.getLogger("bots.slack")

WATCHDOG_INTERVAL_S = 10.0

async def serve_http(app: AsyncApp, host: str, port: int, stop: asyncio.Event,
                     started: Callable[[int], None] | None = None, *, signing_secret: str | None) -> None:
    """HTTP mode on a server of its own until `stop` is set; `started` receives the bound port (useful
    with port 0). `debate serve` mounts the same routes on its one server instead (`run_slack`)."""
    front = WebFront()
    mount_slack(front, app, signing_secret)
    front.health.watch("slack", serving)
    async with front.listen(host, port) as bound:
        if started is not None:
            started(bound)
        await stop.wait()


def serving() -> bool:
    """HTTP mode is up while the server answers: the request asking is the proof."""
    return True


async def serve_socket_mode(app: AsyncApp, app_token: str, stop: asyncio.Event,
                            watchdog_interval: float = WATCHDOG_INTERVAL_S, *, health: Health | None = None) -> None:
    """Connect with connect_async() and keep the connection alive: slack_sdk reconnects by itself
    on most failures; the watchdog catches the rest (a session that died without telling anyone)."""
    handler = AsyncSocketModeHandler(app, app_token)
    await handler.connect_async()
    log.info("slack: Socket Mode connected")
    if health is not None:
        health.watch("slack", handler.client.is_connected)
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
                    socket_mode: bool | None = None, runtime_ready: Callable[[SlackRuntime], None] | None = None,
                    front: WebFront | None = None) -> None:
    """Run Slack until `stop` is set. Socket Mode when SLACK_APP_TOKEN is set (unless `socket_mode`
    says otherwise), else HTTP mode. Its routes (HTTP mode's /slack/events, the OAuth pages) go on
    `front`, the process's one server, which reports Slack in its /healthz; without a `front`, Slack
    listens on host:port itself. Raises ConfigError for missing settings. Before it takes any request,
    the tailer resumes the thread of every live Slack debate in the workspaces this front holds (the
    workers' streams replayed from their start: what the thread shows is edited, nothing is posted
    twice), and from then on renews its leases and takes over the workspaces of fronts that are gone."""
    settings = bot_settings(core.settings)
    use_socket = bool(settings.slack_app_token) if socket_mode is None else socket_mode
    check_settings(settings, socket_mode=use_socket)
    own_front = front is None
    web_front = front or WebFront(Health())
    web_front.health.expect("slack")
    await core.warm_up()  # a first `/debate` must not wait seconds for the model SDKs to import
    app, runtime = build_app(core)
    web_front.health.count(lambda: runtime.following)
    if runtime_ready is not None:
        runtime_ready(runtime)
    if runtime.tailer is not None:
        resumed = await runtime.tailer.start()
        if resumed:
            log.info("slack: resumed the threads of %d live debate(s)", len(resumed))
    mount_slack(web_front, app, settings.slack_signing_secret, events=not use_socket)  # install pages need HTTP
    try:
        async with contextlib.AsyncExitStack() as stack:
            if own_front:
                await stack.enter_async_context(web_front.listen(host, port))
            if use_socket:
                await serve_socket_mode(app, settings.slack_app_token or "", stop, health=web_front.health)
            else:
                log.info("slack: HTTP mode at %s", EVENTS_PATH)
                web_front.health.watch("slack", serving)
                await stop.wait()
    finally:
        await runtime.shutdown()

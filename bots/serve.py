"""`debate serve`, `debate worker` and `debate discord-sync`: the long-running roles, in one event loop each.

`debate serve` runs the configured platforms (the front) and a worker in one process; `--front-only`
leaves the worker out (debates run in `debate worker` processes sharing the workflow database). A
front answers each platform's requests, enqueues debates and renders their threads from the workers'
event streams; at start, and every few seconds, it takes up the threads of the workspaces it holds a lease
on (`bots.thread.tail`: one front renders a workspace's threads), each where it was left off.

SIGTERM or SIGINT is a graceful stop: /healthz answers 503 "stopping" and new debates are refused
(the user is told to try again in a minute); the worker stops taking steps and lets the model calls in
flight finish for up to `grace_s`; then the platforms disconnect. Nothing is marked failed: every
unfinished debate resumes at the next start (of the same executor: the same host for `debate serve`,
the same `--name` for `debate worker`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bots.page import PageSite
from bots.settings import BotSettings, bot_settings
from bots.signals import on_stop_signals
from bots.web import Health, WebFront, check_port, health_for, metrics_front
from orchestrator import heap
from orchestrator.app import STOP_GRACE_S, Core
from orchestrator.config import ConfigError, Settings
from orchestrator.logs import say

WORKER_PORT = 3001  # beside a front's default 3000 on the same host
WORKER_PORT_TRIES = 100  # a worker without --port takes the first free one from WORKER_PORT on

NOTHING_TO_SERVE = (
    "nothing to serve: set SLACK_BOT_TOKEN with SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET "
    "(HTTP mode), or SLACK_CLIENT_ID/SLACK_CLIENT_SECRET/SLACK_SIGNING_SECRET (multi-workspace), "
    "and/or DISCORD_BOT_TOKEN; see README"
)

log = logging.getLogger("bots.serve")


def slack_configured(settings: BotSettings) -> bool:
    oauth = settings.slack_client_id and settings.slack_client_secret
    return bool((settings.slack_bot_token or oauth) and (settings.slack_app_token or settings.slack_signing_secret))


async def serve(settings: Settings, *, slack: bool, discord: bool, host: str, port: int, front_only: bool = False,
                grace_s: float = STOP_GRACE_S, name: str | None = None, metrics: MetricsListener | None = None) -> int:
    """Run every requested platform (both configured ones by default) until SIGINT/SIGTERM. `name`
    (`--name`, default the host's): this front's name in the thread leases (and, with the worker in
    this process, its executor id `serve-<name>`): unique among running processes, stable across restarts.
    `metrics` (`--metrics-port`): GET /metrics on a listener of its own instead of this host's loopback."""
    settings = bot_settings(settings)
    if not slack and not discord:
        slack, discord = slack_configured(settings), bool(settings.discord_bot_token)
        if not slack and not discord:
            raise ConfigError(NOTHING_TO_SERVE)
    check_port(host, port)
    check_metrics_port(metrics, port)
    stopping, stop = asyncio.Event(), asyncio.Event()
    on_stop_signals(stopping.set)
    if slack:
        from bots.slack.serve import run_slack
    if discord:
        from bots.discord.client import run_discord
    # imported before the worker in this process settles its heap (orchestrator/heap.py), or the front's does
    async with await Core.open(settings, role="front" if front_only else "serve", name=name) as core:
        if core.executor is None:
            heap.settle()
        if name is None:  # two fronts on one host must not share a lease name: the port tells them apart
            core.name = f"{socket.gethostname()}-{port}"
        # one HTTP server in every shape: GET /healthz, and /slack/events in Slack's HTTP mode
        front = WebFront(health_for(lambda: 0, slack=slack, discord=discord),
                         metrics="off" if metrics is not None else "local")
        pages = PageSite(core, settings, lambda: core.feed)  # the debate pages (bots/page), live from the feed
        pages.mount(front)
        async with front.listen(host, port), metrics_listening(metrics, front.health), asyncio.TaskGroup() as group:
            say(log, f"GET /healthz on http://{host}:{port}")
            say(log, f"this front renders threads as {core.renderer}")
            if core.executor is not None:
                say(log, f"worker {core.executor} runs debates here")
            else:
                say(log, "front only: debates run in `debate worker` processes")
            if slack:
                mode = "Socket Mode" if settings.slack_app_token else f"HTTP on http://{host}:{port}/slack/events"
                say(log, f"Slack ({mode})")
                group.create_task(run_slack(core, host, port, stop, front=front), name="slack")
            if discord:
                say(log, "Discord (gateway)")
                group.create_task(run_discord(core, stop, health=front.health), name="discord")
            group.create_task(graceful_stop(core, front.health, stopping, stop, grace_s), name="graceful-stop")
            group.create_task(_close_on(stop, pages), name="pages")
    return 0


async def _close_on(stop: asyncio.Event, pages: PageSite) -> None:
    """The live pages' watches end with the platforms, so the task group can finish."""
    await stop.wait()
    await pages.close()


async def graceful_stop(core: Core, health: Health, stopping: asyncio.Event, stop: asyncio.Event,
                        grace_s: float) -> None:
    """Once `stopping` is set: refuse new debates, stop the worker gracefully, then set `stop` (the
    platforms close and stop following their threads)."""
    await stopping.wait()
    say(log, "stopping: new debates are refused; debates in progress resume at the next start")
    health.stop()
    core.stopping = True
    try:
        await core.stop_workers(grace_s)
    finally:
        stop.set()


async def work(settings: Settings, *, name: str | None, concurrency: int | None, host: str = "0.0.0.0",
               port: int | None = None, grace_s: float = STOP_GRACE_S, metrics: MetricsListener | None = None) -> int:
    """`debate worker`: run debate workflows from the shared queue until SIGINT/SIGTERM, then stop
    gracefully (the calls in flight get `grace_s`; unfinished debates resume at the next start).
    `GET /healthz` on host:port answers 200 once the worker takes debates, 503 while it stops. Without
    a `port`, WORKER_PORT, or the next free one when another worker on the host holds it."""
    if port is not None:
        check_port(host, port)
    check_metrics_port(metrics, port)
    stopping = asyncio.Event()
    on_stop_signals(stopping.set)
    async with await Core.open(settings, role="worker", name=name, concurrency=concurrency) as core:
        health = Health()
        listening = WebFront(health, metrics="off" if metrics is not None else "local").listen(
            host, WORKER_PORT if port is None else port, tries=WORKER_PORT_TRIES if port is None else 1)
        async with listening as bound, metrics_listening(metrics, health):
            if port is None and bound != WORKER_PORT:
                say(log, f"port {WORKER_PORT} is taken (another worker on this host?); "
                      f"GET /healthz on port {bound} instead")
            at_once = core.host.concurrency if core.host is not None else concurrency
            say(log, f"worker {core.executor} running, up to {at_once} debates at once "
                  f"(GET /healthz on http://{host}:{bound}; stop: SIGTERM)")
            await stopping.wait()
            health.stop()
            await core.stop_workers(grace_s)
    return 0


@dataclass(frozen=True)
class MetricsListener:
    """`--metrics-host`/`--metrics-port`: where GET /metrics is served when not on this host's loopback."""

    host: str
    port: int


def check_metrics_port(metrics: MetricsListener | None, port: int | None) -> None:
    if metrics is None:
        return
    if port is not None and metrics.port == port and port != 0:
        raise ConfigError(f"--metrics-port {metrics.port} is the --port: give /metrics a port of its own")
    check_port(metrics.host, metrics.port)


@asynccontextmanager
async def metrics_listening(metrics: MetricsListener | None, health: Health) -> AsyncIterator[None]:
    """GET /metrics (and /healthz) on the metrics listener while the block runs, when one is asked for."""
    if metrics is None:
        yield
        return
    async with metrics_front(health).listen(metrics.host, metrics.port) as bound:
        say(log, f"GET /metrics on http://{metrics.host}:{bound}")
        yield


async def discord_sync(settings: Settings, *, guild: int | None) -> int:
    """Sync to --guild, else to every DISCORD_GUILD_IDS guild, else globally; skipped when unchanged."""
    from bots.discord.sync import sync_commands

    settings = bot_settings(settings)
    targets: list[int | None] = [guild] if guild is not None else (list(settings.guild_ids) or [None])
    async with await Core.open(settings, role="read") as core:  # registers commands; never touches the log
        for target in targets:
            result = await sync_commands(core, target)
            state = "synced" if result.synced else "unchanged, skipped"
            print(f"{result.scope}: {', '.join(result.commands)} ({state})")
    return 0

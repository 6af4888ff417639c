"""`debate serve` and `debate discord-sync`: the platforms that are configured, in one event loop."""

from __future__ import annotations

import asyncio
import sys

from bots.signals import on_stop_signals
from bots.web import WebFront, health_for
from orchestrator.app import Core
from orchestrator.config import ConfigError, Settings

NOTHING_TO_SERVE = (
    "nothing to serve: set SLACK_BOT_TOKEN with SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET "
    "(HTTP mode), or SLACK_CLIENT_ID/SLACK_CLIENT_SECRET/SLACK_SIGNING_SECRET (multi-workspace), "
    "and/or DISCORD_BOT_TOKEN; see README"
)


def slack_configured(settings: Settings) -> bool:
    oauth = settings.slack_client_id and settings.slack_client_secret
    return bool((settings.slack_bot_token or oauth) and (settings.slack_app_token or settings.slack_signing_secret))


async def serve(settings: Settings, *, slack: bool, discord: bool, host: str, port: int) -> int:
    """Run every requested platform (both configured ones by default) until SIGINT/SIGTERM."""
    if not slack and not discord:
        slack, discord = slack_configured(settings), bool(settings.discord_bot_token)
        if not slack and not discord:
            raise ConfigError(NOTHING_TO_SERVE)
    stop = asyncio.Event()
    on_stop_signals(stop.set)
    async with await Core.open(settings, role="serve") as core:
        # one HTTP server in every shape: GET /healthz, and /slack/events in Slack's HTTP mode
        front = WebFront(health_for(lambda: len(core.jobs.running()), slack=slack, discord=discord))
        async with front.listen(host, port), asyncio.TaskGroup() as group:
            print(f"debate: GET /healthz on http://{host}:{port}", file=sys.stderr)
            if slack:
                from bots.slack.serve import run_slack

                mode = "Socket Mode" if settings.slack_app_token else f"HTTP on http://{host}:{port}/slack/events"
                print(f"debate: Slack ({mode})", file=sys.stderr)
                group.create_task(run_slack(core, host, port, stop, front=front), name="slack")
            if discord:
                from bots.discord.client import run_discord

                print("debate: Discord (gateway)", file=sys.stderr)
                group.create_task(run_discord(core, stop, health=front.health), name="discord")
    return 0


async def discord_sync(settings: Settings, *, guild: int | None) -> int:
    """Sync to --guild, else to every DISCORD_GUILD_IDS guild, else globally; skipped when unchanged."""
    from bots.discord.sync import sync_commands

    targets: list[int | None] = [guild] if guild is not None else (list(settings.guild_ids) or [None])
    async with await Core.open(settings, role="read") as core:  # registers commands; never touches the log
        for target in targets:
            result = await sync_commands(core, target)
            state = "synced" if result.synced else "unchanged, skipped"
            print(f"{result.scope}: {', '.join(result.commands)} ({state})")
    return 0

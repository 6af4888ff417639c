"""The bolt AsyncApp: token mode for one workspace, OAuth for many (installations in Postgres or SQLite:
bots/slack/oauth.py)."""

from __future__ import annotations

import logging

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from bots.page import page_link
from bots.settings import BotSettings, bot_settings
from bots.slack.install_stores import ThreadedInstallations
from bots.slack.listeners import register_listeners
from bots.slack.listeners.shapes import shape_problem
from bots.slack.listeners.uninstall import installed
from bots.slack.oauth import oauth_settings
from bots.slack.runtime import SlackRuntime
from bots.slack.surface import PLATFORM, SlackThread
from bots.telemetry import write_trace
from bots.thread import FrontTailer, Limits, Pacer, Reach
from orchestrator.app import Core
from orchestrator.config import ConfigError
from orchestrator.log import DebateRecord

log = logging.getLogger("bots.slack")

RATE_LIMIT_RETRIES = 6


class ConnectionRetry(AsyncConnectionErrorRetryHandler):
    """Calls whose connection failed are made again, except a post that may have reached Slack: only
    a post that never connected is. chat.postMessage is not idempotent; a post whose answer was lost is
    looked up by its key instead (bots.thread.intents), or a second copy would show in the thread."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None, error: Exception | None = None) -> bool:
        if request.url.endswith("/chat.postMessage") and not isinstance(error, aiohttp.ClientConnectorError):
            return False
        return await super()._can_retry_async(state=state, request=request, response=response, error=error)


def web_client(settings: BotSettings, token: str | None = None,
               session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """A client for SLACK_API_BASE_URL that waits out 429s (Retry-After) instead of failing; with
    `session`, its connections are that session's (kept alive between calls)."""
    return AsyncWebClient(
        token=token,
        base_url=settings.slack_api_base_url,
        session=session,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            ConnectionRetry(max_retry_count=2),
        ],
    )


class GuardedApp(AsyncApp):
    """bolt's app, for both transports (HTTP mode and Socket Mode dispatch through here): a signed
    request bolt or our listeners cannot read (listeners/shapes.py) is acked and dropped, and one no
    listener is for is acked too (bolt says 404, which Slack would retry, then disable the events for)."""

    runtime: SlackRuntime | None = None  # where HTTP mode runs a slash command after answering it (routes.py)

    async def async_dispatch(self, req: AsyncBoltRequest) -> BoltResponse:
        problem = shape_problem(req.body)
        if problem is not None:
            kind = req.body.get("type") if isinstance(req.body, dict) else None
            log.info("slack: ignored a malformed %s request (%s)", kind if isinstance(kind, str) else "untyped",
                     problem)
            return BoltResponse(status=200, body="")
        response = await super().async_dispatch(req)
        return BoltResponse(status=200, body="") if response.status == 404 else response


def is_multi_workspace(settings: BotSettings) -> bool:
    return bool(settings.slack_client_id and settings.slack_client_secret)


def check_settings(settings: BotSettings, *, socket_mode: bool) -> None:
    """Raise ConfigError naming the missing variable, so `debate serve` fails in one readable line."""
    if not is_multi_workspace(settings) and not settings.slack_bot_token:
        raise ConfigError("SLACK_BOT_TOKEN is not set (or set SLACK_CLIENT_ID and SLACK_CLIENT_SECRET to install "
                          "into several workspaces)")
    if socket_mode and not settings.slack_app_token:
        raise ConfigError("SLACK_APP_TOKEN (xapp-…) is needed for Socket Mode")
    if not socket_mode and not settings.slack_signing_secret:
        raise ConfigError("SLACK_SIGNING_SECRET is needed for HTTP mode (Basic Information → App Credentials)")


def build_app(
    core: Core, *, limits: Limits | None = None, redirect_uri: str | None = None
) -> tuple[AsyncApp, SlackRuntime]:
    """The app with every listener registered, and the runtime its listeners share (with the tailer
    that renders the threads of Slack debates, when the core is a front)."""
    settings = bot_settings(core.settings)
    multi = is_multi_workspace(settings)
    runtime = SlackRuntime.create(core, limits, multi_workspace=multi)
    oauth = oauth_settings(settings, redirect_uri=redirect_uri) if multi else None  # may raise ConfigError
    # bolt's per-request clients share the app client's session; its trace counts the writes (bots/telemetry.py)
    runtime.session = aiohttp.ClientSession(trace_configs=[write_trace(PLATFORM)])
    # every listener acks first and spawns its work, so bolt may answer as soon as the listener returns:
    # otherwise it runs the listener as a task and polls for the ack every 10 ms, on a loop that is busy
    # rendering threads (the ack queued behind that work)
    app = GuardedApp(
        process_before_response=True,
        signing_secret=settings.slack_signing_secret,
        client=web_client(settings, None if multi else settings.slack_bot_token, session=runtime.session),
        oauth_settings=oauth,
        logger=log,
    )
    app.runtime = runtime
    runtime.installations = app.installation_store
    if isinstance(runtime.installations, ThreadedInstallations):
        runtime.installations.saved = lambda installation: installed(runtime, installation)
    if core.feed is not None:
        runtime.tailer = FrontTailer(core.feed, core.store, PLATFORM, thread_reach(app, runtime),
                                     renderer=core.renderer)
    register_listeners(app, runtime)
    return app, runtime


def thread_reach(app: AsyncApp, runtime: SlackRuntime) -> Reach:
    """How a front reaches a Slack debate's thread (its root message and every reply) to resume it: the
    app's bot-token client in token mode; with several workspaces, one with the debate's workspace's bot
    token (None once it uninstalled the app). The log's `thread` is the root message's ts."""

    async def reach(record: DebateRecord) -> tuple[SlackThread, Pacer] | None:
        team = record.workspace
        client: AsyncWebClient = app.client
        if runtime.multi_workspace:
            installations = app.installation_store
            bot = None if installations is None or team is None else await installations.async_find_bot(
                enterprise_id=None, team_id=team)
            org = None if bot is not None or installations is None or team is None else \
                await runtime.core.org_of(PLATFORM, team)
            if org is not None and installations is not None:  # an org-wide install serves this workspace
                bot = await installations.async_find_bot(enterprise_id=org, team_id=None, is_enterprise_install=True)
            if bot is None or not bot.bot_token:
                return None
            client = web_client(bot_settings(runtime.core.settings), bot.bot_token, session=runtime.session)
        if record.channel is None or record.thread is None:
            return None
        page = await page_link(runtime.core, bot_settings(runtime.core.settings), record.id)
        return SlackThread(client, record.channel, record.thread, page), runtime.pacers.for_workspace(team)

    return reach

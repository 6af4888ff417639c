"""Slack's HTTP routes, mounted on the process's one server: the signature first, then bolt.

bolt's aiohttp adapter parses the body before its signature middleware runs, so unsigned malformed JSON would end in
a 500 and a traceback. Here the signature is checked on the raw bytes first: unsigned, stale or forged requests get
401 and nothing reads their body; a signed body bolt cannot read gets 400 (bolt checks the signature again: one HMAC).

The route runs on the server's own loop (bots/web.py), so a busy main loop does not delay the answer. A slash command
is answered there as soon as its signature holds (every command listener acks an empty 200 anyway), and bolt's
dispatch (middleware, listener, the command's work) is handed to the main loop before the 200 is written, to run
once the burst it came in is answered (bots/burst_gate.py); bolt's `ack()` in the listener then answers nothing.
Other requests (a button, a modal's submission, whose ack may carry errors) go through bolt before they are answered.
The OAuth pages are GETs whose body means nothing: it is never handed to bolt.
They are bolt's own HTML (an inline style, Slack's "Add to Slack" image), so they carry a CSP that
allows those and nothing else.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from concurrent.futures import Future
from urllib.parse import parse_qs

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bots.slack.runtime import SlackRuntime
from bots.web import WebFront
from orchestrator.metrics import COMMAND_ACK

# bolt's install and callback pages: their inline <style> and Slack's button image, nothing else
OAUTH_PAGE_CSP = ("default-src 'none'; img-src https://platform.slack-edge.com; style-src 'unsafe-inline'; "
                  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

log = logging.getLogger("bots.slack")

EVENTS_PATH = "/slack/events"
MAX_CLOCK_SKEW_S = 300  # Slack's own rule: a request more than 5 minutes old is a replay
INVALID = {"error": "invalid request"}  # bolt's body for the same refusal


def signature_ok(secret: str | None, raw: bytes, timestamp: str | None, signature: str | None,
                 now: float | None = None) -> bool:
    """`v0=` HMAC-SHA256(secret, `v0:{timestamp}:{raw}`) over the bytes as sent, in constant time.
    Never raises: slack_sdk's verifier does on a non-numeric timestamp or a body that is not UTF-8."""
    if not secret or not timestamp or not signature:
        return False
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent_at) > MAX_CLOCK_SKEW_S:
        return False
    base = b"v0:" + timestamp.encode("utf-8", "replace") + b":" + raw
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))


def is_slash_command(raw: bytes) -> bool:
    """A slash command's form body (`command=/…`, no interactive `payload`); never raises."""
    try:
        form = parse_qs(raw.decode("utf-8"), max_num_fields=100)
    except (UnicodeDecodeError, ValueError):
        return False
    return "command" in form and "payload" not in form


def _bolt_request(raw: bytes, query: str, headers: dict[str, str]) -> AsyncBoltRequest | None:
    try:
        return AsyncBoltRequest(body=raw.decode("utf-8"), query=query, headers=headers)  # type: ignore[arg-type]
    except Exception:  # bolt parses and reads ids here; what it cannot read is a bad request, not our bug
        log.warning("slack: a signed request with a body bolt cannot read (%d bytes)", len(raw))
        return None


async def _dispatch_answered(app: AsyncApp, raw: bytes, query: str, headers: dict[str, str],
                             after: Future[None]) -> None:
    """A slash command answered already: bolt runs it, once the burst it came in is answered (`after`)."""
    await asyncio.wrap_future(after)
    bolt_request = _bolt_request(raw, query, headers)
    if bolt_request is not None:
        bolt_request.context["answered"] = True  # the listener's ack() answers nothing (bots.slack.listeners)
        await app.async_dispatch(bolt_request)


def mount_slack(front: WebFront, app: AsyncApp, signing_secret: str | None, *, events: bool = True,
                runtime: SlackRuntime | None = None) -> None:
    """POST /slack/events (when `events`: HTTP mode) and, with OAuth, the install and redirect pages.
    `runtime` (default: the app's, `GuardedApp.runtime`): where a slash command's dispatch is spawned
    once it is answered; without one, bolt answers every request itself."""
    runtime = runtime or getattr(app, "runtime", None)

    def answered(raw: bytes, query: str, headers: dict[str, str], seconds: float, after: Future[None]) -> None:
        """On the main loop: bolt runs the command answered on the server's loop."""
        assert runtime is not None
        runtime.spawn(_dispatch_answered(app, raw, query, headers, after), name="slack-command-dispatch")
        runtime.record_ack(seconds)

    async def on_event(request: web.Request) -> web.Response:
        """On the server's loop (bots/web.py): nothing here waits for the main loop but bolt's answer."""
        arrived = time.perf_counter()
        raw = await request.read()
        headers = request.headers
        if not signature_ok(signing_secret, raw, headers.get("X-Slack-Request-Timestamp"),
                            headers.get("X-Slack-Signature")):
            return web.json_response(INVALID, status=401)
        if runtime is not None and is_slash_command(raw):
            seconds = time.perf_counter() - arrived
            try:  # handed over before the answer, to run once this burst of requests is answered
                front.call_main(answered, raw, request.query_string, dict(headers), seconds, front.burst_gate())
            except RuntimeError:  # the main loop is gone (the process is stopping): Slack may retry elsewhere
                return web.json_response({"error": "stopping"}, status=503)
            COMMAND_ACK.labels("slack").observe(seconds)
            return web.Response(status=200)  # the ack every command listener gives
        bolt_request = _bolt_request(raw, request.query_string, dict(headers))
        if bolt_request is None:
            return web.json_response({"error": "unreadable body"}, status=400)
        answer = await front.on_main(app.async_dispatch(bolt_request))
        if isinstance(bolt_request.body, dict) and "command" in bolt_request.body:
            COMMAND_ACK.labels("slack").observe(time.perf_counter() - arrived)
        return await to_aiohttp_response(answer)

    if events:
        front.mount("POST", EVENTS_PATH, on_event, here=True)
    flow = app.oauth_flow
    if flow is None:
        return

    def page_request(request: web.Request) -> AsyncBoltRequest:
        return AsyncBoltRequest(body="", query=request.query_string, headers=request.headers)  # type: ignore[arg-type]

    def oauth_page(answer: web.Response) -> web.Response:
        answer.headers["Content-Security-Policy"] = OAUTH_PAGE_CSP
        return answer

    async def install(request: web.Request) -> web.Response:
        return oauth_page(await to_aiohttp_response(await flow.handle_installation(page_request(request))))

    async def callback(request: web.Request) -> web.Response:
        return oauth_page(await to_aiohttp_response(await flow.handle_callback(page_request(request))))

    front.mount("GET", flow.install_path, install)
    front.mount("GET", flow.redirect_uri_path, callback)

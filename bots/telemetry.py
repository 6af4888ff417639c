"""Platform writes in the process's metrics, seen where every request leaves: the aiohttp session.

Slack's Web API calls share one keep-alive session per front, and discord.py takes an aiohttp
`TraceConfig` (`http_trace`), so one trace per platform counts every write, by API method and outcome
(`ok`, `rate_limited` for a 429 the client then waits out, `error`), 429s included, without touching
each call site. Methods are bounded names (`chat.update`; `PATCH /channels/{id}/messages/{id}`): ids and
tokens never reach a label. The same trace makes each write a span (orchestrator/tracing.py, when
tracing): `{platform} {method}` with its HTTP status and, written for a debate, `gen_ai.conversation.id`.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import aiohttp

from orchestrator import tracing
from orchestrator.logs import current_debate
from orchestrator.metrics import PLATFORM_WRITES, prepare_platform_metrics

SLACK_WRITES = ("chat.", "views.", "reactions.")
DISCORD_WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# the writes a debate's thread makes, counted from 0 (orchestrator/metrics.py, ERROR_KINDS says why)
THREAD_WRITES = {
    "slack": ("chat.postMessage", "chat.update"),
    "discord": ("POST /channels/{id}/messages", "PATCH /channels/{id}/messages/{id}",
                "POST /channels/{id}/messages/{id}/threads"),
}
_ID = re.compile(r"^\d+$")


def slack_method(url: Any) -> str | None:
    """`chat.postMessage` for https://…/api/chat.postMessage; None for a read."""
    method = str(url.path).rstrip("/").rsplit("/", 1)[-1]
    return method if method.startswith(SLACK_WRITES) else None


def discord_route(verb: str, url: Any) -> str | None:
    """`POST /channels/{id}/messages` for a write to the REST API, ids and tokens taken out; None for a read."""
    if verb.upper() not in DISCORD_WRITES:
        return None
    parts = str(url.path).split("/api/", 1)[-1].split("/")
    if parts and re.fullmatch(r"v\d+", parts[0]):
        parts = parts[1:]
    shown = ["{id}" if _ID.match(part) else "{token}" if len(part) > 20 else part for part in parts]
    return f"{verb.upper()} /{'/'.join(shown)}"  # a long part is an interaction's or a webhook's token


def outcome(status: int) -> str:
    if status == 429:
        return "rate_limited"
    return "ok" if status < 400 else "error"


def _write_attributes(platform: str, method: str, verb: str) -> dict[str, str]:
    attributes = {"debate.platform": platform, "debate.platform.method": method, "http.request.method": verb}
    if (debate_id := current_debate()) is not None:
        attributes[tracing.CONVERSATION] = debate_id
    return attributes


def write_trace(platform: str) -> aiohttp.TraceConfig:
    """A trace that counts `platform`'s writes (pass it to the aiohttp session, or discord.py's `http_trace`)."""
    name = slack_method if platform == "slack" else None
    prepare_platform_metrics(platform, THREAD_WRITES.get(platform, ()))
    trace = aiohttp.TraceConfig()

    def method_of(params: Any) -> str | None:
        return name(params.url) if name is not None else discord_route(params.method, params.url)

    async def on_start(_session: aiohttp.ClientSession, ctx: SimpleNamespace,
                       params: aiohttp.TraceRequestStartParams) -> None:
        if (method := method_of(params)) is not None:
            ctx.span = tracing.start_span(f"{platform} {method}", _write_attributes(platform, method, params.method))

    async def on_end(_session: aiohttp.ClientSession, ctx: SimpleNamespace,
                     params: aiohttp.TraceRequestEndParams) -> None:
        if (method := method_of(params)) is not None:
            status = params.response.status
            PLATFORM_WRITES.labels(platform, method, outcome(status)).inc()
            tracing.end(getattr(ctx, "span", None), {"http.response.status_code": status},
                        error=str(status) if status >= 400 else "")

    async def on_error(_session: aiohttp.ClientSession, ctx: SimpleNamespace,
                       params: aiohttp.TraceRequestExceptionParams) -> None:
        if (method := method_of(params)) is not None:
            PLATFORM_WRITES.labels(platform, method, "error").inc()
            tracing.end(getattr(ctx, "span", None), {}, error=type(params.exception).__name__)

    if tracing.enabled():  # off, a request costs no span callback
        trace.on_request_start.append(on_start)
    trace.on_request_end.append(on_end)
    trace.on_request_exception.append(on_error)
    trace.freeze()
    return trace

"""The serving process's one HTTP server: `GET /healthz` in every deployment shape (Socket Mode and
Discord-only included, so a container's health check always has something to poll), plus the routes
a platform mounts on it (Slack HTTP mode's /slack/events and install pages), and `GET /metrics`: the
process's own counters in the Prometheus text format (orchestrator/metrics.py).

The server listens before any platform has started, and Slack mounts its routes once its app is
built, so requests go through a table that may grow while serving (aiohttp freezes its own router).

/healthz answers 200 when every configured platform is up and 503 otherwise, with a JSON body:
`{"ok": true, "platforms": {"slack": "up", "discord": "up"}, "debates_running": 2}`. A platform is
"starting" until its probe first says yes, then "up" or "down" as the probe says at each request.
From the moment a graceful stop begins (SIGTERM) it answers 503 with `"status": "stopping"`, so a load
balancer sends nothing new to a process that refuses new debates.
"""

from __future__ import annotations

import errno
import inspect
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager

from aiohttp import web

from orchestrator.config import ConfigError
from orchestrator.metrics import CONTENT_TYPE_LATEST, exposition

log = logging.getLogger("bots.web")

HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"  # this process's own numbers, Prometheus text format (orchestrator/metrics.py)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Probe = Callable[[], bool | Awaitable[bool]]


class Health:
    """What /healthz reports: each platform's state (from a cheap probe) and how many debates run."""

    def __init__(self, running: Callable[[], int] = lambda: 0, platforms: Iterable[str] = ()) -> None:
        self._running: list[Callable[[], int]] = [running]
        self._probes: dict[str, Probe | None] = dict.fromkeys(platforms)
        self._was_up: set[str] = set()
        self.stopping = False  # a graceful stop began: 503, whatever the platforms say

    def stop(self) -> None:
        self.stopping = True

    def count(self, running: Callable[[], int]) -> None:
        """Add what `running()` says to the debates reported running (each platform's followed debates)."""
        self._running.append(running)

    def expect(self, platform: str) -> None:
        """`platform` is configured: report it as starting until it gives a probe."""
        self._probes.setdefault(platform, None)

    def watch(self, platform: str, probe: Probe) -> None:
        self._probes[platform] = probe

    async def _state(self, platform: str, probe: Probe | None) -> str:
        if probe is None:
            return "starting"
        try:
            answer = probe()
            up = bool(await answer) if inspect.isawaitable(answer) else bool(answer)
        except Exception:  # a probe that fails says the platform is not usable; /healthz must still answer
            log.warning("health: the %s probe failed", platform, exc_info=True)
            up = False
        if up:
            self._was_up.add(platform)
            return "up"
        return "down" if platform in self._was_up else "starting"

    async def report(self) -> tuple[int, dict[str, object]]:
        states = {name: await self._state(name, probe) for name, probe in self._probes.items()}
        ok = not self.stopping and all(state == "up" for state in states.values())
        body: dict[str, object] = {"ok": ok, "platforms": states, "debates_running": sum(r() for r in self._running)}
        if self.stopping:
            body["status"] = "stopping"
        return (200 if ok else 503), body


class WebFront:
    """`async with front.listen(host, port):` serves /healthz and whatever is mounted, until the block ends."""

    def __init__(self, health: Health | None = None) -> None:
        self.health = health or Health()
        self._routes: dict[str, dict[str, Handler]] = {}
        self.mount("GET", HEALTH_PATH, self._healthz)
        self.mount("GET", METRICS_PATH, self._metrics)

    def mount(self, method: str, path: str, handler: Handler) -> None:
        self._routes.setdefault(path, {})[method.upper()] = handler

    async def _healthz(self, _: web.Request) -> web.Response:
        status, body = await self.health.report()
        return web.json_response(body, status=status)

    async def _metrics(self, _: web.Request) -> web.Response:
        response = web.Response(body=exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        methods = self._routes.get(request.path)
        if methods is None:
            raise web.HTTPNotFound()
        handler = methods.get(request.method) or (methods.get("GET") if request.method == "HEAD" else None)
        if handler is None:
            raise web.HTTPMethodNotAllowed(request.method, sorted(methods))
        return await handler(request)

    @asynccontextmanager
    async def listen(self, host: str, port: int, *, tries: int = 1) -> AsyncIterator[int]:
        """Listen on host:port (0 picks a free port) and yield the bound port; `tries`: with `port`
        taken, the next ports up to `tries` in all (a default port, which two processes on one host
        would share). A port that cannot be bound is a ConfigError naming it, raised before any
        platform starts."""
        application = web.Application()
        application.router.add_route("*", "/{path:.*}", self._dispatch)
        runner = web.AppRunner(application, access_log=None)
        await runner.setup()
        try:
            site = await _bind(runner, host, port, tries)
            sockets = site._server.sockets if site._server else ()  # type: ignore[union-attr]
            bound = sockets[0].getsockname()[1] if sockets else port
            log.info("http: listening on http://%s:%s (GET %s)", host, bound, HEALTH_PATH)
            yield bound
        finally:
            await runner.cleanup()


def check_port(host: str, port: int) -> None:
    """Raise the ConfigError `listen` would when host:port is taken, before a process spends its start-up
    (the workflow engine, the platforms) on it; `listen` still decides (the port can be taken meanwhile)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return  # `listen` reports a host it cannot resolve
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                  "choose another with --host/--port") from None


async def _bind(runner: web.AppRunner, host: str, port: int, tries: int) -> web.TCPSite:
    for candidate in range(port, port + max(1, tries)):
        site = web.TCPSite(runner, host, candidate)
        try:
            await site.start()
            return site
        except OSError as exc:
            await site.stop()  # unregisters it from the runner
            if exc.errno == errno.EADDRINUSE and candidate + 1 < port + tries:
                continue
            taken = f"{host}:{port}" if candidate == port else f"{host}:{port}–{candidate}"
            raise ConfigError(f"cannot listen on {taken} ({exc.strerror or exc}); "
                              "choose another with --host/--port") from None
    raise ConfigError(f"cannot listen on {host}:{port}; choose another with --host/--port")


def health_for(running: Callable[[], int], *, slack: bool, discord: bool) -> Health:
    """The health of a `debate serve` that runs these platforms."""
    return Health(running, [name for name, on in (("slack", slack), ("discord", discord)) if on])

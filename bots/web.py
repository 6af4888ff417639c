"""The serving process's one HTTP server: `GET /healthz`, `GET /metrics` (orchestrator/metrics.py) and the routes a
platform mounts (Slack HTTP mode's /slack/events and install pages), every answer with the security headers.

The server runs on a thread with an event loop of its own, so a busy main loop does not hold up an answer: a route
mounted with `here=True` runs on the server's loop, every other handler on the main loop, where its objects live.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import logging
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any, Literal, TypeVar

from aiohttp import web

from bots import event_loop
from bots.burst_gate import HOLD_MAX_S, QUIET_S, BurstGates
from bots.security_headers import HEADERS
from orchestrator.config import ConfigError
from orchestrator.metrics import CONTENT_TYPE_LATEST, exposition

log = logging.getLogger("bots.web")

# How long a thread that holds the GIL keeps it from one that waits (CPython's default: 5 ms). The server's
# thread gives the GIL up at each system call (epoll, recv, send) and waits to get it back from a busy main
# loop, several times a request: at 5 ms a wait, a burst of requests queues for hundreds of ms. Lowered only
# while a route answered on the server's loop is mounted (Slack's HTTP events), not in a worker, whose many
# threads (the log's writer, DBOS's pool) would hand the GIL over ten times as often.
SWITCH_INTERVAL_S = 0.0005

HEALTH_PATH = "/healthz"  # in every deployment shape, so a container's health check always has something to poll
METRICS_PATH = "/metrics"  # this process's own numbers, Prometheus text format (orchestrator/metrics.py)
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")  # a request a proxy passed on from elsewhere
MetricsAccess = Literal["local", "open", "off"]  # this host only (the default), anyone, not served here

T = TypeVar("T")


@dataclass
class Streamed:
    """A streaming answer from a handler on the main loop: `response` (status and headers, not prepared)
    is sent by the server's loop, then each chunk of `chunks` (an async generator, run and closed on the
    main loop) as it comes; the response ends with the generator, or when the client leaves."""

    response: web.StreamResponse
    chunks: AsyncIterator[bytes]


class WrittenOffLoop(RuntimeError):
    """A handler on the main loop prepared a response itself (the connection is the server loop's)."""


Handler = Callable[[web.Request], Awaitable[web.StreamResponse | Streamed]]
Probe = Callable[[], bool | Awaitable[bool]]


class Health:
    """What /healthz reports: each platform's state (from a cheap probe) and how many debates run.

    200 when every configured platform is up, else 503, with a JSON body such as `{"ok": true, "platforms":
    {"slack": "up"}, "debates_running": 2}` (a platform is "starting" until its probe first says yes). Once a
    graceful stop begins it answers 503 with `"status": "stopping"`, so a load balancer sends nothing new to a
    process that refuses new debates."""

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

    def __init__(self, health: Health | None = None, *, quiet_s: float = QUIET_S, hold_max_s: float = HOLD_MAX_S,
                 metrics: MetricsAccess = "local") -> None:
        self.health = health or Health()
        self.metrics = metrics  # who GET /metrics answers here (see `_metrics`)
        self._hold = {"quiet_s": quiet_s, "hold_max_s": hold_max_s}  # for `burst_gate` (burst_gate.py)
        # routes are looked up here, not in aiohttp's router, which freezes once it serves: the server listens
        # before any platform has started and mounted its routes
        self._routes: dict[str, dict[str, tuple[Handler, bool]]] = {}
        self._prefixes: dict[str, tuple[Handler, bool]] = {}  # every method of every path under the prefix
        self._main: asyncio.AbstractEventLoop | None = None  # the loop `listen` was entered on
        self._server: _ServerLoop | None = None
        self._gates: BurstGates | None = None  # work waiting for a burst of requests to be answered
        self._switched = False  # this front lowered the switch interval (SWITCH_INTERVAL_S)
        self.mount("GET", HEALTH_PATH, self._healthz)
        if metrics != "off":
            self.mount("GET", METRICS_PATH, self._metrics)

    def mount(self, method: str, path: str, handler: Handler, *, here: bool = False) -> None:
        """`here`: the handler runs on the server's loop (it must touch nothing of the main loop's but
        through `on_main`/`call_main`); else on the main loop, returning a `web.Response` or a `Streamed`
        (a guard, `WrittenOffLoop`, refuses one that writes to the connection itself)."""
        self._routes.setdefault(path, {})[method.upper()] = (handler, here)
        self._switch_if(here)

    def mount_prefix(self, prefix: str, handler: Handler, *, here: bool = False) -> None:
        self._prefixes[prefix] = (handler, here)
        self._switch_if(here)

    def _switch_if(self, here: bool) -> None:
        """A route answered on the server's loop: the GIL handed over sooner while this front listens."""
        if here and self._server is not None and not self._switched:
            _Switching.enter()
            self._switched = True

    async def on_main(self, work: Coroutine[Any, Any, T]) -> T:
        """From the server's loop: run `work` on the main loop and await its result (cancelled with the caller)."""
        assert self._main is not None, "the front is not listening"
        if self._gates is not None:
            self._gates.unpark()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._main))

    def call_main(self, callback: Callable[..., object], *args: object) -> None:
        """From the server's loop: call `callback(*args)` on the main loop, soon; RuntimeError once it is closed."""
        assert self._main is not None, "the front is not listening"
        self._main.call_soon_threadsafe(callback, *args)

    def burst_gate(self) -> Future[None]:
        """From the server's loop: a future that completes once the requests it is answering now are
        answered (bots/burst_gate.py), for work handed to the main loop to await first."""
        assert self._gates is not None, "the front is not listening"
        return self._gates.gate()

    async def _healthz(self, _: web.Request) -> web.Response:
        status, body = await self.health.report()
        return web.json_response(body, status=status)

    async def _metrics(self, request: web.Request) -> web.Response:
        """Not for the public the pages and Slack's events are served to: with `metrics="local"` it answers only
        `from_this_host`, anyone else gets the 404 of a path that is not there. `--metrics-port` serves it on a
        listener of its own (`metrics_front`) and this port not at all."""
        if self.metrics == "local" and not from_this_host(request):
            raise web.HTTPNotFound()
        response = web.Response(body=exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def _route(self, request: web.Request) -> tuple[Handler, bool]:
        methods = self._routes.get(request.path)
        if methods is None:
            prefixed = next((h for p, h in self._prefixes.items() if request.path.startswith(p)), None)
            if prefixed is not None:
                return prefixed
            raise web.HTTPNotFound()
        route = methods.get(request.method) or (methods.get("GET") if request.method == "HEAD" else None)
        if route is None:
            raise web.HTTPMethodNotAllowed(request.method, sorted(methods))
        return route

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        handler, here = self._route(request)
        if here:
            assert self._gates is not None
            self._gates.started()
            try:
                answer = await handler(request)
            finally:
                self._gates.ended()
        else:
            await request.read()  # read on this loop: the handler's `read()` gets these bytes, not the socket
            try:
                answer = await self.on_main(handler(request))
            except WrittenOffLoop:  # nothing was sent, but the half-prepared writer cannot send a clean 500
                if request.transport is not None:
                    request.transport.close()
                raise
        return await self._stream(request, answer) if isinstance(answer, Streamed) else answer

    async def _stream(self, request: web.Request, streamed: Streamed) -> web.StreamResponse:
        response = streamed.response
        await response.prepare(request)
        try:
            await self.on_main(self._produce(response, streamed.chunks))
            await response.write_eof()
        except ConnectionResetError:  # the client left; the generator was closed on the main loop
            pass
        return response

    async def _produce(self, response: web.StreamResponse, chunks: AsyncIterator[bytes]) -> None:
        """On the main loop: each chunk, written by the server's loop before the next is asked for."""
        assert self._server is not None
        async with contextlib.aclosing(chunks):  # type: ignore[type-var]
            async for chunk in chunks:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(response.write(chunk), self._server.loop))

    @staticmethod
    async def _secured(_: web.Request, response: web.StreamResponse) -> None:
        """Every answer (a 404, a 405, a 500, /healthz and /metrics included) carries the security headers;
        a route's own value for one of them (a page's static file's Cache-Control) is kept."""
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)

    async def _written_here(self, _: web.Request, __: web.StreamResponse) -> None:
        """Every response is sent from the server's thread: a handler on the main loop returns a `Streamed`."""
        if self._server is None or threading.get_ident() != self._server.thread.ident:
            raise WrittenOffLoop("a response prepared off the server's loop: return a Streamed instead")

    @asynccontextmanager
    async def listen(self, host: str, port: int, *, tries: int = 1) -> AsyncIterator[int]:
        """Listen on host:port (0 picks a free port) and yield the bound port; `tries`: with `port`
        taken, the next ports up to `tries` in all (a default port, which two processes on one host
        would share). A port that cannot be bound is a ConfigError naming it, raised before any
        platform starts. The server runs on a thread of its own until the block ends."""
        self._main = asyncio.get_running_loop()
        server = self._server = _ServerLoop()
        gates = self._gates = BurstGates(server.loop, main=self._main, **self._hold)
        self._switch_if(any(here for methods in self._routes.values() for _handler, here in methods.values())
                        or any(here for _handler, here in self._prefixes.values()))
        application = web.Application()
        application.router.add_route("*", "/{path:.*}", self._dispatch)
        application.on_response_prepare.append(self._written_here)
        application.on_response_prepare.append(self._secured)
        runner = web.AppRunner(application, access_log=None)
        try:
            await server.run(runner.setup())
            site = await server.run(_bind(runner, host, port, tries))
            sockets = site._server.sockets if site._server else ()  # type: ignore[union-attr]
            bound = sockets[0].getsockname()[1] if sockets else port
            log.info("http: listening on http://%s:%s (GET %s)", host, bound, HEALTH_PATH)
            yield bound
        finally:
            try:
                server.loop.call_soon_threadsafe(gates.open_all)  # before the cleanup: waiting work goes on
                await server.close(runner)
            finally:
                self._server = None
                if self._switched:
                    self._switched = False
                    _Switching.leave()


def from_this_host(request: web.Request) -> bool:
    """A request from a loopback address that no proxy passed on (a proxy on this host forwards the
    public's requests from loopback, and says so in one of PROXY_HEADERS)."""
    try:
        peer = ip_address((request.remote or "").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(peer, "ipv4_mapped", None)
    loopback = (mapped or peer).is_loopback
    return loopback and not any(name in request.headers for name in PROXY_HEADERS)


def metrics_front(health: Health) -> WebFront:
    """The listener `--metrics-port` opens: GET /metrics to whoever reaches it (bind it where only the
    scraper does), and GET /healthz."""
    return WebFront(health, metrics="open")


class _Switching:
    """SWITCH_INTERVAL_S while any front listens in this process, the interval it had before once none does."""

    listening = 0
    before = sys.getswitchinterval()

    @classmethod
    def enter(cls) -> None:
        if cls.listening == 0:
            cls.before = sys.getswitchinterval()
            sys.setswitchinterval(min(cls.before, SWITCH_INTERVAL_S))
        cls.listening += 1

    @classmethod
    def leave(cls) -> None:
        cls.listening -= 1
        if cls.listening == 0:
            sys.setswitchinterval(cls.before)


class _ServerLoop:
    """An event loop on a thread of its own: the HTTP server's."""

    def __init__(self) -> None:
        self.loop = event_loop.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="http-front", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))

    async def close(self, runner: web.AppRunner) -> None:
        """The server closed (its requests finished, as aiohttp's cleanup does), then the loop and its thread;
        a cancelled caller does not cut the cleanup short: the thread still ends once it is done."""
        async def stop() -> None:
            try:
                await runner.cleanup()
            finally:
                asyncio.get_running_loop().stop()

        done = asyncio.run_coroutine_threadsafe(stop(), self.loop)
        await asyncio.shield(asyncio.wrap_future(done))
        await asyncio.to_thread(self.thread.join)


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


BACKLOG = 128  # aiohttp's TCPSite default


def _listening(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to host:port and listening, one per address `host` has, as the loop's `create_server` makes
    them, but made here so that a port taken between our bind and our listen is an OSError here: two processes
    can both bind a port with SO_REUSEADDR before either listens, and the second one's listen fails. uvloop then
    only reports EADDRINUSE to its exception handler and returns a server without a socket (aiohttp's
    TCPSite.start then fails on it: two `debate worker` started at once failed 3 times in 40)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    made: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            made.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds: TIME_WAIT is no conflict
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in made:
            sock.close()
        raise
    return made


async def _bind(runner: web.AppRunner, host: str, port: int, tries: int) -> web.BaseSite:
    for candidate in range(port, port + max(1, tries)):
        try:
            sockets = _listening(host, candidate)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE and candidate + 1 < port + tries:
                continue
            taken = f"{host}:{port}" if candidate == port else f"{host}:{port}–{candidate}"
            raise ConfigError(f"cannot listen on {taken} ({exc.strerror or exc}); "
                              "choose another with --host/--port") from None
        sites = [web.SockSite(runner, sock) for sock in sockets]
        for site in sites:
            await site.start()
        return sites[0]
    raise ConfigError(f"cannot listen on {host}:{port}; choose another with --host/--port")


def health_for(running: Callable[[], int], *, slack: bool, discord: bool) -> Health:
    """The health of a `debate serve` that runs these platforms."""
    return Health(running, [name for name, on in (("slack", slack), ("discord", discord)) if on])

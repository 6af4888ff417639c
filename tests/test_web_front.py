"""The process's HTTP server (bots/web.py) runs on a loop of its own: handlers on the main loop are awaited
from it, their bodies read for them, and a streaming answer (the page's live events) is produced on the main
loop and written by the server's; a handler on the main loop that writes to the connection itself is
refused (its connection closed)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import Future

import aiohttp
import pytest
from aiohttp import web

from bots.burst_gate import BurstGates
from bots.web import Streamed, WebFront

BOUND_S = 10.0  # a bound for a test that would otherwise hang, not a latency figure


async def test_a_main_loop_handler_reads_the_body_and_answers() -> None:
    front, ran_on = WebFront(), []

    async def echo(request: web.Request) -> web.Response:
        ran_on.append(threading.get_ident())
        return web.Response(text=(await request.text()).upper())

    front.mount("POST", "/echo", echo)
    async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        async with http.post(f"http://127.0.0.1:{port}/echo", data=b"a body") as response:
            assert (response.status, await response.text()) == (200, "A BODY")
        async with http.get(f"http://127.0.0.1:{port}/nowhere") as response:
            assert response.status == 404
    assert ran_on == [threading.get_ident()], "the handler ran on the main loop's thread"


async def test_a_stream_is_produced_on_the_main_loop_and_ends_with_its_generator() -> None:
    front, more, produced_on = WebFront(), asyncio.Event(), []

    async def chunks() -> AsyncIterator[bytes]:
        produced_on.append(threading.get_ident())
        yield b"one\n"
        await more.wait()  # an object of the main loop
        yield b"two\n"

    async def stream(_: web.Request) -> Streamed:
        return Streamed(web.StreamResponse(headers={"Content-Type": "text/plain"}), chunks())

    front.mount("GET", "/stream", stream)
    async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/stream") as response:
            assert await response.content.readline() == b"one\n"
            more.set()
            assert await response.content.read() == b"two\n"
    assert produced_on == [threading.get_ident()]


async def test_a_client_leaving_closes_the_stream_on_the_main_loop() -> None:
    front, closed_on, closed = WebFront(), [], asyncio.Event()

    async def pings() -> AsyncIterator[bytes]:
        try:
            while True:
                yield b": ping\n"
                await asyncio.sleep(0.01)  # the stream's own pace (the page pings its viewers)
        finally:
            closed_on.append(threading.get_ident())
            closed.set()

    async def stream(_: web.Request) -> Streamed:
        return Streamed(web.StreamResponse(), pings())

    front.mount("GET", "/stream", stream)
    async with front.listen("127.0.0.1", 0) as port:
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/stream") as response:
            assert await response.content.readline() == b": ping\n"
        await asyncio.wait_for(closed.wait(), BOUND_S)  # the viewer left: the next write fails, the generator closes
    assert closed_on == [threading.get_ident()]


async def test_a_main_loop_handler_that_writes_the_connection_itself_is_refused() -> None:
    front, refused = WebFront(), []

    async def writes(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        try:
            await response.prepare(request)
        except RuntimeError as exc:
            refused.append(str(exc))
            raise
        return response

    front.mount("GET", "/writes", writes)
    async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientError):  # the connection is closed: nothing of a response was sent
            async with http.get(f"http://127.0.0.1:{port}/writes") as response:
                await response.read()
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200  # the server goes on
    assert refused and "Streamed" in refused[0]


async def test_only_a_front_answering_on_its_server_loop_hands_the_gil_over_sooner() -> None:
    import sys

    from bots.web import SWITCH_INTERVAL_S

    before = sys.getswitchinterval()
    worker = WebFront()  # /healthz and /metrics only, as a `debate worker` serves
    async with worker.listen("127.0.0.1", 0):
        assert sys.getswitchinterval() == before

        async def answered(_request: web.Request) -> web.Response:
            return web.Response()

        worker.mount("POST", "/slack/events", answered, here=True)  # mounted while listening, as Slack's is
        assert sys.getswitchinterval() == min(before, SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() == before


class _Burst:
    """A front with /cmd (answered on the server's loop, its work held for the main loop) and /slow (on the
    server's loop too, in flight from `begun` until `release` is set)."""

    def __init__(self, hold_max_s: float, quiet_s: float = 0.002) -> None:
        self.front = WebFront(quiet_s=quiet_s, hold_max_s=hold_max_s)
        self.ran: list[str] = []
        self.all_ran = asyncio.Event()
        self.begun, self.release = threading.Event(), threading.Event()
        self.commands = 0
        self.front.mount("POST", "/cmd", self._cmd, here=True)
        self.front.mount("POST", "/slow", self._slow, here=True)

    def _work(self, n: int) -> None:
        self.ran.append(f"{n}@{'main' if threading.current_thread() is threading.main_thread() else 'other'}")
        if len(self.ran) == self.commands:
            self.all_ran.set()

    async def _cmd(self, _: web.Request) -> web.Response:
        self.commands += 1
        gate = self.front.burst_gate()
        self.front.call_main(self._after, gate, self.commands)
        return web.Response(status=200)

    def _after(self, gate: Future[None], n: int) -> None:  # on the main loop: the work waits for its gate
        asyncio.wrap_future(gate).add_done_callback(lambda _: self._work(n))

    async def _slow(self, _: web.Request) -> web.Response:
        self.begun.set()
        await asyncio.to_thread(self.release.wait, BOUND_S)
        return web.Response(status=200)

    async def slow_in_flight(self, http: aiohttp.ClientSession, base: str) -> asyncio.Task[int]:
        slow = asyncio.create_task(_post(http, f"{base}/slow"))
        assert await asyncio.to_thread(self.begun.wait, BOUND_S)
        return slow


async def _post(http: aiohttp.ClientSession, url: str) -> int:
    async with http.post(url) as response:
        return response.status


async def test_work_handed_over_after_a_burst_waits_for_the_requests_in_flight_then_runs_in_order() -> None:
    burst = _Burst(hold_max_s=BOUND_S * 10)
    async with burst.front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{port}"
        slow = await burst.slow_in_flight(http, base)
        assert [await _post(http, f"{base}/cmd") for _ in range(3)] == [200, 200, 200]
        async with http.get(f"{base}/healthz") as response:  # answered on the main loop, after anything handed to it
            assert response.status == 200
        assert burst.ran == [], "held while a request is still being answered"
        burst.release.set()
        assert await slow == 200
        await asyncio.wait_for(burst.all_ran.wait(), BOUND_S)
    assert burst.ran == ["1@main", "2@main", "3@main"]


async def test_a_request_that_never_ends_holds_work_back_no_longer_than_the_bound() -> None:
    burst = _Burst(hold_max_s=0.01)
    async with burst.front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{port}"
        slow = await burst.slow_in_flight(http, base)
        assert await _post(http, f"{base}/cmd") == 200
        await asyncio.wait_for(burst.all_ran.wait(), BOUND_S)
        assert not slow.done(), "it ran while the other request was still in flight"
        burst.release.set()
        assert await slow == 200
    assert burst.ran == ["1@main"]


async def test_work_still_held_when_the_front_stops_is_handed_over() -> None:
    burst = _Burst(hold_max_s=BOUND_S * 10, quiet_s=BOUND_S * 10)  # neither timer fires within the test
    async with burst.front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{port}"
        slow = await burst.slow_in_flight(http, base)
        assert await _post(http, f"{base}/cmd") == 200
        burst.release.set()
        assert await slow == 200
        assert burst.ran == []
    await asyncio.wait_for(burst.all_ran.wait(), BOUND_S)
    assert burst.ran == ["1@main"]


async def test_a_gate_whose_waiter_was_cancelled_does_not_keep_the_others_shut() -> None:
    gates = BurstGates(asyncio.get_running_loop(), hold_max_s=BOUND_S * 10)
    gates.started()
    first, second = gates.gate(), gates.gate()
    assert first.cancel()  # what a cancelled `asyncio.wrap_future(first)` does to it
    gates.ended()
    await asyncio.wait_for(asyncio.wrap_future(second), BOUND_S)


class _OtherLoop:
    """A loop on a thread of its own, standing for the front's main loop while the test's loop serves."""

    def __enter__(self) -> asyncio.AbstractEventLoop:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self.loop

    def __exit__(self, *_: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(BOUND_S)
        self.loop.close()


def _probe(loop: asyncio.AbstractEventLoop) -> threading.Event:
    """Set once `loop` runs its next callback."""
    ran = threading.Event()
    loop.call_soon_threadsafe(ran.set)
    return ran


async def test_the_main_loop_parks_while_a_burst_is_answered_and_goes_on_when_it_is() -> None:
    with _OtherLoop() as main:
        gates = BurstGates(asyncio.get_running_loop(), main=main, park_max_s=BOUND_S * 10)
        gates.started()
        parked = _probe(main)
        assert not await asyncio.to_thread(parked.wait, 0.05), "the main loop ran during the burst"
        gates.ended()  # the quiet timer (2 ms) ends the burst and the park
        assert await asyncio.to_thread(parked.wait, BOUND_S)


async def test_a_request_that_needs_the_main_loop_ends_its_park() -> None:
    with _OtherLoop() as main:
        gates = BurstGates(asyncio.get_running_loop(), main=main, park_max_s=BOUND_S * 10)
        gates.started()
        parked = _probe(main)
        assert not await asyncio.to_thread(parked.wait, 0.05)
        gates.unpark()  # what `WebFront.on_main` does before handing work over
        assert await asyncio.to_thread(parked.wait, BOUND_S), "still parked with the request in flight"
        gates.ended()


async def test_a_park_lasts_no_longer_than_its_bound() -> None:
    with _OtherLoop() as main:
        gates = BurstGates(asyncio.get_running_loop(), main=main, park_max_s=0.01)
        gates.started()  # and never ends
        assert await asyncio.to_thread(_probe(main).wait, BOUND_S)


async def test_after_a_park_the_main_loop_runs_at_least_as_long_before_the_next() -> None:
    with _OtherLoop() as main:
        gates = BurstGates(asyncio.get_running_loop(), main=main, park_max_s=BOUND_S * 10)
        gates.started()
        first = _probe(main)
        assert not await asyncio.to_thread(first.wait, 0.05)  # parked for 50 ms at least
        gates.ended()
        assert await asyncio.to_thread(first.wait, BOUND_S)
        gates.started()  # a new burst within 50 ms of the last park's end: no park
        assert await asyncio.to_thread(_probe(main).wait, BOUND_S)
        gates.ended()


async def test_every_answer_carries_the_security_headers() -> None:
    """Item 11 of issue 57: the 404, the 405, /healthz and /metrics had none of the page's headers."""
    front = WebFront()

    async def cached(_: web.Request) -> web.Response:
        return web.Response(text="style", headers={"Cache-Control": "public, max-age=60"})

    async def broken(_: web.Request) -> web.Response:
        raise RuntimeError("a handler that fails")

    front.mount("GET", "/cached", cached)
    front.mount("GET", "/broken", broken)
    async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{port}"
        answers = [("GET", "/healthz", 200), ("GET", "/metrics", 200), ("HEAD", "/healthz", 200),
                   ("GET", "/nowhere", 404), ("POST", "/healthz", 405), ("DELETE", "/metrics", 405),
                   ("GET", "/broken", 500), ("GET", "/cached", 200)]
        for method, path, status in answers:
            async with http.request(method, base + path) as response:
                assert response.status == status, (method, path)
                headers = response.headers
                csp = headers.get("Content-Security-Policy", "")
                assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp, (method, path)
                assert headers.get("X-Content-Type-Options") == "nosniff", (method, path)
                assert headers.get("Referrer-Policy") == "no-referrer", (method, path)
                assert headers.get("X-Frame-Options") == "DENY", (method, path)
                expected = "public, max-age=60" if path == "/cached" else "no-store"
                assert headers.get("Cache-Control") == expected, (method, path)

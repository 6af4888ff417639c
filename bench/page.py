"""The debate page at the front: time to first byte and full render of a finished 5-round debate's page
while 100 debates run (their turns landing in the same log), and the front's CPU per live viewer.

The front is this process: the real HTTP server (bots/web.py) with the pages mounted (bots/page), over a
real SQLite log. Page requests come one at a time from a client in this process (its own cost is in the
figures: they are upper bounds). Live viewers run in a process of their own (bench/page_viewers.py),
one SSE stream per running debate, so the CPU figure is the front's alone: CPU seconds of this process
per second with the viewers connected, less the same without them (the running debates' turns being
written either way), divided by the viewers. Target: p99 under 50 ms for both page figures.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.common import Table, percentile
from bots.page import PageSite, RateLimit, page_link
from bots.settings import BotSettings
from bots.web import WebFront
from orchestrator.log import DebateLog, open_log
from tests.page_harness import PUBLIC_URL, finish, operations, spec, turn

NAME = "page"
TARGET_MS = 50.0
TURN_TEXT = ("The **evidence** from `pg_stat_statements` says p99 is 12 ms under the load we measured.\n\n"
             "- replication is built in, and failover was rehearsed twice\n- the pool caps connections at 200\n\n"
             + "We measured this on the staging cluster over a week of real traffic. " * 20)


async def _log(store: DebateLog, running: int) -> tuple[str, list[str]]:
    finished = spec("A finished five-round debate", rounds=5)
    await store.create_debate(finished)
    for number in range(1, 6):
        for seat in ("A", "B"):
            await store.add_turn(turn(finished.id, number, seat, TURN_TEXT))
    await finish(store, finished, 5)
    live = []
    for n in range(running):
        debate = spec(f"Running debate {n}", rounds=5)
        await store.create_debate(debate)
        await store.add_turn(turn(debate.id, 1, "A", TURN_TEXT))
        live.append(debate.id)
    return finished.id, live


async def _write_turns(store: DebateLog, live: list[str], every_s: float) -> None:
    """The running debates' turns landing, one every `every_s` across all of them."""
    n = 0
    while True:
        await store.add_turn(turn(live[n % len(live)], 2 + n // len(live), "AB"[n % 2], TURN_TEXT))
        n += 1
        await asyncio.sleep(every_s)


async def _cpu_over(window_s: float) -> float:
    began, cpu = time.monotonic(), time.process_time()
    await asyncio.sleep(window_s)
    return (time.process_time() - cpu) / (time.monotonic() - began)


async def run(smoke: bool) -> Table:
    running, samples, window_s = (10, 40, 1.0) if smoke else (100, 400, 10.0)
    table = Table(f"debate page: a 5-round debate's page with {running} debates running; CPU per live viewer")
    settings = BotSettings(_env_file=None, DEBATE_PUBLIC_URL=PUBLIC_URL, DEBATE_WEB_SECRET="b" * 32)  # type: ignore[call-arg]
    with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
        async with open_log(Path(tmp) / "debates.db") as store:
            finished, live = await _log(store, running)
            links = {d: await page_link(store, settings, d) or "" for d in [finished, *live]}
            front = WebFront()
            site = PageSite(operations(store), settings, limit=RateLimit(rate=1e9, burst=1e9))
            site.mount(front)
            writer = asyncio.create_task(_write_turns(store, live, 0.1))
            try:
                async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
                    base = f"http://127.0.0.1:{port}"
                    page = links[finished].replace(PUBLIC_URL, base)
                    ttfb, full = await _page_times(http, page, samples)
                    table.check("time to first byte, p99", percentile(ttfb, 99) * 1000, ".1f", TARGET_MS, " ms")
                    table.check("full page (body read), p99", percentile(full, 99) * 1000, ".1f", TARGET_MS, " ms")
                    table.add("full page, p50", f"{percentile(full, 50) * 1000:.1f} ms")
                    table.add("page size", f"{len(await (await http.get(page)).read()) / 1024:.1f} KiB")
                    idle = await _cpu_over(window_s)
                    urls = [links[d].replace(PUBLIC_URL, base) + "/events" for d in live]
                    watched = await _with_viewers(urls, window_s)
                    per_viewer = max(0.0, watched - idle) / len(urls)
                    table.add("front CPU without viewers", f"{idle * 100:.1f} % of a core")
                    table.add(f"front CPU with {len(urls)} live viewers", f"{watched * 100:.1f} % of a core")
                    table.add("front CPU per live viewer", f"{per_viewer * 1000:.2f} ms/s")
            finally:
                writer.cancel()
                await site.close()
    table.note("one viewer per running debate: each debate's watch (one log read every 0.5 s, a render per change)"
               " is shared by all its viewers on a front, so more viewers of one debate cost only their writes")
    return table


async def _page_times(http: aiohttp.ClientSession, url: str, samples: int) -> tuple[list[float], list[float]]:
    for _ in range(10):  # warm: templates compiled, connections open
        async with http.get(url) as response:
            await response.read()
    ttfb, full = [], []
    for _ in range(samples):
        began = time.perf_counter()
        async with http.get(url) as response:
            ttfb.append(time.perf_counter() - began)
            await response.read()
            full.append(time.perf_counter() - began)
            assert response.status == 200
    return ttfb, full


async def _with_viewers(urls: list[str], window_s: float) -> float:
    viewers = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.page_viewers", *urls,
                                                   stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    try:
        assert viewers.stdout is not None and viewers.stdin is not None
        ready = await asyncio.wait_for(viewers.stdout.readline(), 60)
        assert ready.strip() == b"ready", ready
        return await _cpu_over(window_s)
    finally:
        if viewers.stdin is not None:
            viewers.stdin.close()
        try:
            await asyncio.wait_for(viewers.wait(), 10)
        except TimeoutError:
            viewers.kill()
            await viewers.wait()

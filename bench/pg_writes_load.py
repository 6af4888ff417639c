"""The load of `bench.pg_writes`, in a process of its own, on the log of whichever tree is on PYTHONPATH.

`bench.pg_writes` runs this file with `runpy`, so it imports only the product and the standard library (a
tree from before this bench has neither it nor the bench's helpers). It reads one JSON line of settings
on stdin, then:

1. Calibration, through `calibrate_url` (the bench's round-trip proxy): one debate's writes one at a time
   on an idle loop, each between a `{"before": kind}` and an `{"after": kind}` line, each line answered by
   the bench (it reads the proxy's count) before this goes on.
2. The load, on `url` (the server itself): `debates` simulated debates at once, each writing the hot-path
   sequence of a debate's run with a think time between writes (its model streaming), through one
   `PostgresLog`, while `busy` tasks keep the same event loop busy (each `slice_ms` of CPU, then a pause
   of about `pause_ms`: a worker streaming a hundred debates), between a `{"load": true}` and a
   `{"loaded": true}` line (answered as above). Then one `{"result": …}` line.

`mode` "waited" runs the log with each statement waited for in turn, BEGIN and COMMIT included (the
transport before pipelining; this tree's `PgConn` outside a pipeline); "default" runs the tree as it is.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from orchestrator.budgets import CallUsage
from orchestrator.log.postgres.store import PostgresLog
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict
from orchestrator.quotas import Quota

SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))
QUOTA = Quota(max_running=100_000, max_running_per_user=3, max_running_per_channel=50, max_starts_per_user_hour=20)
JUDGE_CALLS = 4  # two judges, each asked twice with the debaters' order swapped
TEXT = " ".join(f"word{i % 97} argument{i % 13}" for i in range(150))
Step = tuple[str, Callable[[], Awaitable[Any]]]


def open_log(url: str, mode: str) -> PostgresLog:
    if mode == "default":
        return PostgresLog(url)
    from orchestrator.log.postgres.store import WAIT_S, PgConn

    class Waited(PostgresLog):
        async def _run(self, fn: Any, *, transaction: bool = True) -> Any:
            assert self._pool is not None
            async with self._pool.connection(timeout=WAIT_S) as conn:
                if not transaction:
                    return await fn(PgConn(conn))
                async with conn.transaction():
                    return await fn(PgConn(conn))

    return Waited(url)


def debate_steps(log: PostgresLog, n: int, rounds: int) -> list[Step]:
    """One debate's writes in the order its run makes them (the front's first, then the worker's)."""
    spec = DebateSpec(topic=f"bench debate {n}", seats=SEATS, judge="openai:gpt-5", platform="slack",
                      channel=f"C{n % 10}", requested_by=f"U{n}")
    d = spec.id
    at = time.time()
    steps: list[Step] = [
        ("claim_request", lambda: log.claim_request(f"req-{d}")),
        ("admit", lambda: log.admit(spec, QUOTA)),
        ("create_debate", lambda: log.create_debate(spec.model_copy(update={"thread": f"{n}.0"}))),
        ("set_message", lambda: log.set_message(d, "root", "slack", spec.channel, f"{n}.0")),
    ]
    calls = 0

    def call(purpose: str) -> Step:
        nonlocal calls
        calls += 1
        usage = CallUsage(attempt=f"{d}:{calls}", debate_id=d, at=at, purpose=purpose, model="openai:gpt-5",
                          input_tokens=900, output_tokens=300)
        return "add_call", lambda: log.add_call(usage)

    for r in range(1, rounds + 1):
        steps.append(("take_interjections", lambda r=r: log.take_interjections(d, r, 2)))
        for seat in SEATS:
            done = Turn(debate_id=d, round=r, seat=seat.label, role=seat.role, kind="opening" if r == 1 else "defense",
                        model=seat.model, text=TEXT, started_at=at, duration_ms=1200, input_tokens=800,
                        output_tokens=400)
            steps += [("add_turn", lambda t=done: log.add_turn(t)),
                      ("set_message", lambda s=seat.label, r=r: log.set_message(d, f"turn:{r}:{s}", "slack",
                                                                                spec.channel, f"{n}.{r}{s}"))]
        steps.append(call("summary"))
    verdict = Verdict(winner="A", reasoning="clearer evidence", recommendation="adopt it")
    steps += [("add_notice", lambda: log.add_notice(d, "warning", "Round 2 ran long.")),
              *(call("judge") for _ in range(JUDGE_CALLS)),
              ("set_verdict", lambda: log.set_verdict(d, verdict)),
              ("set_message", lambda: log.set_message(d, "verdict", "slack", spec.channel, f"{n}.v", final=True)),
              ("finish_debate", lambda: log.finish_debate(d, Outcome(status="completed", rounds_completed=rounds)))]
    return steps


def tell(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)
    sys.stdin.readline()  # the bench answers once it has read the proxy's count


async def calibrate(url: str, mode: str, rounds: int) -> None:
    async with open_log(url, mode) as log:
        for kind, step in debate_steps(log, -1, rounds):
            tell({"before": kind})
            await step()
            tell({"after": kind})


def burn(ms: float) -> None:
    until = time.perf_counter() + ms / 1000
    while time.perf_counter() < until:
        pass


async def busy(rng: random.Random, slice_ms: float, pause_ms: float, burned: list[float]) -> None:
    while True:
        ms = rng.uniform(0.5, 1.5) * slice_ms
        burn(ms)
        burned[0] += ms
        await asyncio.sleep(rng.uniform(0.5, 1.5) * pause_ms / 1000)


async def lag_probe(lags: list[float]) -> None:
    while True:
        began = time.perf_counter()
        await asyncio.sleep(0)
        lags.append((time.perf_counter() - began) * 1000)
        await asyncio.sleep(0.02)


async def load(settings: dict[str, Any]) -> dict[str, Any]:
    rng = random.Random(settings["seed"])
    log = open_log(settings["url"], settings["mode"])
    await log.start()
    pool = log._pool
    assert pool is not None
    waits: list[float] = []
    getconn = pool.getconn

    async def timed_getconn(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await getconn(*args, **kwargs)
        finally:
            waits.append((time.perf_counter() - began) * 1000)

    pool.getconn = timed_getconn  # type: ignore[method-assign]
    writes: dict[str, list[float]] = {}
    stretch: list[float] = []
    errors: list[str] = []

    async def debate(n: int) -> None:
        steps = debate_steps(log, n, settings["rounds"])
        thinks = [rng.uniform(0.5, 1.5) * settings["think_ms"] / 1000 for _ in steps]
        began, thought = time.perf_counter(), 0.0
        for think, (kind, step) in zip(thinks, steps, strict=True):
            await asyncio.sleep(think)
            thought += think
            t0 = time.perf_counter()
            try:
                await step()
            except Exception as error:  # counted and shown: a bench that hides failures measures nothing
                errors.append(f"{kind}: {type(error).__name__}: {error}")
                return
            writes.setdefault(kind, []).append((time.perf_counter() - t0) * 1000)
        stretch.append((time.perf_counter() - began) / thought)

    lags: list[float] = []
    burned = [0.0]
    background = [asyncio.create_task(busy(random.Random(rng.random()), settings["slice_ms"], settings["pause_ms"],
                                           burned)) for _ in range(settings["busy"])]
    background.append(asyncio.create_task(lag_probe(lags)))
    await asyncio.sleep(settings["pause_ms"] / 1000)  # the busy tasks spread out before the debates start
    began, cpu_began, burned_before = time.perf_counter(), time.process_time(), burned[0]
    await asyncio.gather(*(debate(n) for n in range(settings["debates"])))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    busy_cpu = (burned[0] - burned_before) / 1000
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)
    await log.close()
    return {"writes": writes, "pool_wait_ms": waits, "wall_s": wall, "stretch": stretch, "lag_ms": lags,
            "cpu_s": cpu, "busy_cpu_s": busy_cpu, "errors": errors[:5], "failed": len(errors)}


async def main() -> None:
    settings = json.loads(sys.stdin.readline())
    await calibrate(settings["calibrate_url"], settings["mode"], settings["rounds"])
    tell({"load": True})
    result = await load(settings)
    tell({"loaded": True})  # the bench reads the server's CPU here
    print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

"""Durable debates (issue 11): Slack ack latency and wall ÷ critical path with front and workers apart.

The product runs as subprocesses configured only by environment (bench.served): `debate serve --slack`
(front and worker in one process: the baseline), or `debate serve --slack --front-only` with one or two
`debate worker` processes. The LLM peer is bench.llm_peer in a process of its own, the Slack Web API peer
runs here. Every debate starts as a signed `/debate` slash command to the front, in a channel of its own.

1. Ack: 150 commands in 3 batches of 50 (each batch at once, 0.5 s apart), every POST timed to its 200, so
   the later batches are acked while the earlier debates stream (their threads render at the Slack peer).
   Target: p99 ≤ 50 ms with the front on its own, next to the single-process figure.
2. Overhead: 1, 100 and 1,000 concurrent challenge debates of 2 rounds; each debate's wall time is its
   `created_at` → `finished_at` in the log, its critical path what the peer measured for its sequential
   calls (bench.overhead.critical_paths). Median over debates, as in bench.overhead.

The POSTing client and the Slack peer share this process's event loop, so their work is in the ack figure,
for every topology alike.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.common import CHALLENGER, JUDGE, PROPOSER, Table, median, percentile
from bench.llm_peer import TAG, PeerProcess, ReplyPlan
from bench.overhead import critical_paths
from bench.served import Peers, Proc, ProcessExited, read_log

NAME = "durable"
ACK_TARGET_MS = 50.0
RATIO_TARGETS = {1: 1.01, 100: 1.02, 1000: 1.03}
TOPOLOGIES: dict[str, int] = {"serve (one process)": 0, "front + 1 worker": 1, "front + 2 workers": 2}
FINISH_WITHIN_S = 60.0  # per level: debates still running then are cut off, counted as at least that slow


class Unavailable(RuntimeError):
    """The product has no such deployment shape (its command line refused it)."""


@asynccontextmanager
async def deployment(workers: int, peers: Peers, workdir: Path, llm: PeerProcess) -> AsyncIterator[Proc]:
    """The front (serving Slack HTTP) and `workers` worker processes, ready; yields the front."""
    env = peers.env(workdir, openai_url=llm.openai_base_url, anthropic_url=llm.anthropic_base_url,
                    DEBATE_PROPOSER=PROPOSER, DEBATE_CHALLENGER=CHALLENGER, DEBATE_JUDGE=JUDGE)
    front = Proc.serve(workdir, env, front_only=workers > 0, platforms=("slack",), name="front")
    procs = [front] + [Proc.worker(workdir, env, worker_name=f"w{i + 1}") for i in range(workers)]
    try:
        try:
            for proc in procs:  # one after the other: processes opening a new log at once can collide on it
                await proc.start()
                await proc.ready(peers)
        except ProcessExited as exc:
            if exc.code == 2:
                raise Unavailable(str(exc)) from None
            raise
        yield front
        for proc in procs:
            proc.check_alive()
    finally:
        await asyncio.gather(*(p.stop(30) for p in procs))


def _command(number: int, rounds: int) -> str:
    return (f"Bench debate #{number:06d}: Kafka or RabbitMQ for the audit log? --rounds {rounds} "
            f"--vs {PROPOSER},{CHALLENGER}")


async def _start(peers: Peers, port: int, numbers: range, rounds: int) -> list[tuple[int, float]]:
    async def one(n: int) -> tuple[int, float]:
        return await peers.slack_command(port, _command(n, rounds), channel=f"C{n:06d}", user=f"U{n:06d}",
                                         trigger=f"bench-durable-{n}")

    return list(await asyncio.gather(*(one(n) for n in numbers)))


async def _wait_finished(db: Path, count: int, within: float) -> int:
    """Until `count` debates are logged and none runs; the number finished."""
    deadline = time.monotonic() + within
    while True:
        rows = read_log(db, "select status from debates")
        finished = sum(1 for r in rows if r["status"] != "running")
        if (len(rows) >= count and finished == len(rows)) or time.monotonic() > deadline:
            return finished
        await asyncio.sleep(0.25)


@dataclass
class AckResult:
    statuses: list[int]
    ms: list[float]
    tail_ms: list[float]  # the batches after the first: acked while debates stream


async def measure_ack(workers: int, root: Path, smoke: bool) -> AckResult:
    batch, batches = (10, 2) if smoke else (50, 3)
    plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0)
    workdir = root / f"ack-{workers}"
    workdir.mkdir()
    async with PeerProcess(plan) as llm, Peers() as peers, deployment(workers, peers, workdir, llm) as front:
        assert front.port is not None
        await _start(peers, front.port, range(999_000, 999_001), 1)  # warm-up: imports, connections
        answers: list[tuple[int, float]] = []
        for b in range(batches):
            answers += await _start(peers, front.port, range(b * batch, (b + 1) * batch), 2)
            await asyncio.sleep(0.5)
    ms = [s * 1000 for _, s in answers]
    return AckResult([st for st, _ in answers], ms, ms[batch:])


@dataclass
class Level:
    concurrency: int
    completed: int
    ratio: float
    worst: float
    wall_s: float
    cut_off: int  # still running at the deadline: their ratio is a lower bound (elapsed ÷ ideal path)


def ideal_path(plan: ReplyPlan, rounds: int) -> float:
    """The ideal critical path of a challenge debate under `plan`: 2R debater calls, summaries from round 3,
    one judge stage."""
    from bench.llm_peer import verdict_text, words

    debater = plan.ideal_s(words(plan.debater_words, 1))
    summary = plan.ideal_s(words(plan.summary_words, 2))
    return 2 * rounds * debater + max(0, rounds - 2) * summary + plan.ideal_s(verdict_text(plan.judge_words))


async def measure_level(workers: int, concurrency: int, root: Path, plan: ReplyPlan, rounds: int) -> Level:
    workdir = root / f"overhead-{workers}-{concurrency}"
    workdir.mkdir()
    db = workdir / "debates.db"
    async with PeerProcess(plan) as llm:
        async with Peers() as peers, deployment(workers, peers, workdir, llm) as front:
            assert front.port is not None
            began = time.monotonic()
            for first in range(0, concurrency, 50):  # 50 POSTs in flight at a time
                await _start(peers, front.port, range(first, min(concurrency, first + 50)), rounds)
            await _wait_finished(db, concurrency, FINISH_WITHIN_S)
            wall = time.monotonic() - began
            rows = read_log(db, "select topic, status, created_at, finished_at from debates")
            now = datetime.now(UTC)
        stats = await llm.stop()
    paths = critical_paths(stats.calls)
    ratios = []
    for row in rows:
        tag = TAG.search(row["topic"])
        if tag is None:
            continue
        created = datetime.fromisoformat(row["created_at"])
        if row["status"] == "running":  # cut off: at least this slow
            ratios.append((now - created).total_seconds() / ideal_path(plan, rounds))
        elif row["status"] == "completed" and int(tag.group(1)) in paths:
            seconds = (datetime.fromisoformat(row["finished_at"]) - created).total_seconds()
            ratios.append(seconds / paths[int(tag.group(1))][0])
    return Level(concurrency, sum(1 for r in rows if r["status"] == "completed"), median(ratios),
                 max(ratios, default=float("nan")), wall, sum(1 for r in rows if r["status"] == "running"))


async def run(smoke: bool) -> Table:
    if smoke:
        plan = ReplyPlan(latency_s=0.05, tokens_per_s=1000.0, debater_words=30, judge_words=60, summary_words=30)
        levels, rounds = [1, 5], 2
    else:
        plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0, debater_words=100, judge_words=100, summary_words=100)
        levels, rounds = [1, 100, 1000], 2
    table = Table(f"durable — Slack ack with debates streaming, and wall ÷ critical path, per deployment shape "
                  f"(subprocesses; challenge {rounds} rounds, peer {plan.latency_s:g} s, {plan.tokens_per_s:g} "
                  "tokens/s, in its own process)")
    root = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    try:
        for label, workers in list(TOPOLOGIES.items())[:2]:
            try:
                ack = await measure_ack(workers, root, smoke)
            except Unavailable as exc:
                table.add(f"ack p99 @ {label}", "unavailable", f"≤ {ACK_TARGET_MS:g} ms", "miss")
                table.note(f"{label}: {exc}")
                continue
            ok = ack.statuses.count(200)
            table.add(f"ack: requests answered 200 @ {label}", f"{ok}/{len(ack.statuses)}", f"{len(ack.statuses)}",
                      "pass" if ok == len(ack.statuses) else "miss")
            table.add(f"ack p50 @ {label}", f"{percentile(ack.ms, 50):.1f} ms")
            target = workers > 0
            if target:
                table.check(f"ack p99 @ {label}", percentile(ack.ms, 99), ".1f", ACK_TARGET_MS, " ms")
            else:
                table.add(f"ack p99 @ {label}", f"{percentile(ack.ms, 99):.1f} ms")
            table.add(f"  ack p50 / p99 while debates stream (batches 2+) @ {label}",
                      f"{percentile(ack.tail_ms, 50):.1f} / {percentile(ack.tail_ms, 99):.1f} ms")
        for label, workers in TOPOLOGIES.items():
            for n in levels:
                try:
                    level = await measure_level(workers, n, root, plan, rounds)
                except Unavailable as exc:
                    table.add(f"wall ÷ critical path @{n} · {label}", "unavailable", "", "miss")
                    table.note(f"{label}: {exc}")
                    break
                name = f"wall ÷ critical path @{n} · {label}"
                if level.cut_off:
                    name += f" ({level.cut_off} cut off at {FINISH_WITHIN_S:.0f} s: ≥)"
                if n in RATIO_TARGETS and workers > 0:
                    table.check(name, level.ratio, ".3f", RATIO_TARGETS[n])
                else:
                    table.add(name, f"{level.ratio:.3f}")
                table.add(f"  worst debate / completed / wall @{n} · {label}",
                          f"{level.worst:.3f} / {level.completed}/{n} / {level.wall_s:.0f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table.note("wall = created_at → finished_at in the log; critical path = the peer-measured durations of the "
               "debate's sequential calls; median over debates")
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())

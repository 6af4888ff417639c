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
   calls (bench.overhead.critical_paths). Median over debates, as in bench.overhead. One warm-up debate per
   worker runs first, off the clock. Debates still running at the deadline (FINISH_WITHIN_S) count as
   elapsed ÷ ideal path (a lower bound); the median over those completed by then, the model calls done and
   the CPU per model call summed over the front and workers (/proc) are shown too, so a level that does not
   finish still reports what it did. bench.durable_pg runs the same on Postgres with 1, 2 and 4 workers.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import CHALLENGER, JUDGE, PROPOSER, Table, median, percentile
from bench.llm_peer import TAG, PeerProcess, PeerStats, ReplyPlan
from bench.overhead import critical_paths
from bench.served import LogSource, Peers, Proc, ProcessExited, read_log

if TYPE_CHECKING:
    from bench.pg import BenchPostgres

NAME = "durable"
ACK_TARGET_MS = 50.0
RATIO_TARGETS = {1: 1.01, 100: 1.02, 1000: 1.03}
TOPOLOGIES: dict[str, int] = {"serve (one process)": 0, "front + 1 worker": 1, "front + 2 workers": 2}
FINISH_WITHIN_S = 60.0  # per level: debates still running then are cut off, counted as at least that slow
ACK_BATCHES = (50, 3)  # (commands at once, batches 0.5 s apart)
ACK_BATCHES_SMOKE = (5, 2)
ACK_WARM_TAG = 999_000
SMOKE_LEVEL_TAG = 1000  # smoke: the level's debates follow the ack's in the same log


class Unavailable(RuntimeError):
    """The product has no such deployment shape (its command line refused it)."""


@dataclass
class Deployment:
    front: Proc
    procs: list[Proc]  # the front first, then the workers

    def cpu_s(self) -> float:
        return sum(p.cpu_s() for p in self.procs)


@asynccontextmanager
async def deployment(workers: int, peers: Peers, workdir: Path, llm: PeerProcess, *,
                     database_url: str | None = None, worker_concurrency: int | None = None,
                     profile: bool = False, graceful: bool = True,
                     code: Path | None = None) -> AsyncIterator[Deployment]:
    """The front (serving Slack HTTP) and `workers` worker processes, ready (a worker: DBOS launched).
    `database_url`: the log and the workflows in that Postgres database (DEBATE_DATABASE_URL), else
    SQLite files in `workdir`. `profile`: every process runs under cProfile (`<name>.prof` in workdir).
    Not `graceful`: the processes are SIGKILLed at the end (a smoke run: see Proc.stop). `code`: the source tree
    the processes run (PYTHONPATH; default bench.served.ROOT)."""
    extra = {"DEBATE_DATABASE_URL": database_url} if database_url else {}
    if code is not None:
        extra["PYTHONPATH"] = str(code)
    env = peers.env(workdir, openai_url=llm.openai_base_url, anthropic_url=llm.anthropic_base_url,
                    DEBATE_PROPOSER=PROPOSER, DEBATE_CHALLENGER=CHALLENGER, DEBATE_JUDGE=JUDGE, **extra)
    front = Proc.serve(workdir, env, front_only=workers > 0, platforms=("slack",), name="front")
    procs = [front] + [Proc.worker(workdir, env, worker_name=f"w{i + 1}", concurrency=worker_concurrency,
                                   healthz=True) for i in range(workers)]
    if profile:
        for proc in procs:
            proc.profile_to = workdir / f"{proc.name}.prof"
    try:
        try:
            await front.start()  # first alone: processes opening a new log at once can collide on it
            await front.ready(peers)
            for proc in procs[1:]:
                await proc.start()
            await asyncio.gather(*(proc.ready(peers) for proc in procs[1:]))
        except ProcessExited as exc:
            if exc.code == 2:
                raise Unavailable(str(exc)) from None
            raise
        yield Deployment(front, procs)
        for proc in procs:
            proc.check_alive()
    finally:
        await asyncio.gather(*(p.stop(30, graceful=graceful) for p in procs))


def _command(number: int, rounds: int) -> str:
    return (f"Bench debate #{number:06d}: Kafka or RabbitMQ for the audit log? --rounds {rounds} "
            f"--vs {PROPOSER},{CHALLENGER}")


async def _start(peers: Peers, port: int, numbers: range, rounds: int) -> list[tuple[int, float]]:
    async def one(n: int) -> tuple[int, float]:
        return await peers.slack_command(port, _command(n, rounds), channel=f"C{n:06d}", user=f"U{n:06d}",
                                         trigger=f"bench-durable-{n}")

    return list(await asyncio.gather(*(one(n) for n in numbers)))


async def _wait_finished(db: LogSource, count: int, within: float) -> int:
    """Until `count` debates are logged and none runs, or `within` has passed; the number finished."""
    deadline = time.monotonic() + within
    while True:
        rows = await asyncio.to_thread(read_log, db, "select status from debates")
        finished = sum(1 for r in rows if r["status"] != "running")
        if (len(rows) >= count and finished == len(rows)) or time.monotonic() > deadline:
            return finished
        await asyncio.sleep(0.25)


def _when(value: object) -> datetime:
    """A log time: ISO text from SQLite, a datetime from Postgres."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


@dataclass
class AckResult:
    statuses: list[int]
    ms: list[float]
    tail_ms: list[float]  # the batches after the first: acked while debates stream
    front_cpu_s: float = 0.0  # the front's CPU from the first batch to 0.5 s after the last
    window_s: float = 0.0


async def measure_ack(workers: int, root: Path, smoke: bool, *, database_url: str | None = None,
                      label: str = "") -> AckResult:
    """The ack on a deployment of its own (and an LLM peer of its own, at the full run's pace)."""
    plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0)
    workdir = root / f"ack-{workers}{label}"
    workdir.mkdir()
    async with (PeerProcess(plan) as llm, Peers() as peers,
                deployment(workers, peers, workdir, llm, database_url=database_url) as shape):
        return await ack_on(shape, peers, *(ACK_BATCHES_SMOKE if smoke else ACK_BATCHES))


async def ack_on(shape: Deployment, peers: Peers, batch: int, batches: int) -> AckResult:
    """A warm-up command, then `batches` of `batch` commands at once, 0.5 s apart, each POST timed.
    Tags 0 … batch × batches − 1, and ACK_WARM_TAG for the warm-up."""
    port = shape.front.port
    assert port is not None
    await _start(peers, port, range(ACK_WARM_TAG, ACK_WARM_TAG + 1), 1)  # warm-up: imports, connections
    answers: list[tuple[int, float]] = []
    front_cpu, began = shape.front.cpu_s(), time.monotonic()
    for b in range(batches):  # from a client process of its own: this loop also runs the Slack peer
        answers += await peers.slack_commands_apart(port, [
            {"text": _command(n, 2), "channel": f"C{n:06d}", "user": f"U{n:06d}", "trigger": f"bench-durable-{n}"}
            for n in range(b * batch, (b + 1) * batch)])
        await asyncio.sleep(0.5)
    front_cpu, window = shape.front.cpu_s() - front_cpu, time.monotonic() - began
    ms = [s * 1000 for _, s in answers]
    return AckResult([st for st, _ in answers], ms, ms[batch:], front_cpu_s=front_cpu, window_s=window)


@dataclass
class Level:
    concurrency: int
    completed: int
    ratio: float  # median over every debate (a cut-off one counts as elapsed ÷ ideal path: a lower bound)
    worst: float
    wall_s: float
    cut_off: int  # still running at the deadline: their ratio is a lower bound (elapsed ÷ ideal path)
    ratio_completed: float = float("nan")  # median over the debates completed by the deadline
    calls: int = 0  # model calls the peer answered in full
    cpu_s: float = 0.0  # front + workers, from the first POST to the deadline or the last debate's end
    pg_cpu_s: float | None = None  # the Postgres server over the same window (None on SQLite)
    peer_cpu_s: float = 0.0  # the LLM peer's process, its whole life (the warm-up's few calls too): not ours,
    # but on the same cores
    logged: int = 0  # debates in the log (admitted)
    threads: dict[str, dict[str, float]] = field(default_factory=dict)  # per process: CPU of main / other threads
    workdir: Path | None = None

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_s * 1000 / self.calls if self.calls else float("nan")

    @property
    def pg_cpu_ms_per_call(self) -> float:
        return (self.pg_cpu_s or 0.0) * 1000 / self.calls if self.calls else float("nan")


def ideal_path(plan: ReplyPlan, rounds: int) -> float:
    """The ideal critical path of a challenge debate under `plan`: 2R debater calls, summaries from round 3,
    one judge stage."""
    from bench.llm_peer import verdict_text, words

    debater = plan.ideal_s(words(plan.debater_words, 1))
    summary = plan.ideal_s(words(plan.summary_words, 2))
    return 2 * rounds * debater + max(0, rounds - 2) * summary + plan.ideal_s(verdict_text(plan.judge_words))


WARM_TAG = 999_100  # warm-up debates' tags (and up): left out of every figure
EXPECTED_CALLS_PER_DEBATE = 6  # a 2-round challenge: 4 debater turns and the judge's two passes


async def measure_level(workers: int, concurrency: int, root: Path, plan: ReplyPlan, rounds: int, *,
                        database_url: str | None = None, server: BenchPostgres | None = None,
                        within: float = FINISH_WITHIN_S, spread: bool = False, profile: bool = False,
                        warm: int = 0, label: str = "", graceful: bool = True,
                        cap: int | None = None, code: Path | None = None) -> Level:
    """`concurrency` debates through the front, all at once (50 POSTs in flight), until they end or
    `within` seconds have passed. `spread`: each worker takes at most its share (concurrency ÷ workers),
    so the debates split evenly rather than going to whichever worker polls the queue first. `warm`:
    that many one-round debates run first, off the clock (a worker imports each provider's SDK on its
    first call to it: ~1 s each, on the event loop). Not `graceful`: see `deployment`. `cap`: each worker runs
    at most that many debates at once (`debate worker --concurrency`), the rest wait in the queue. `code`: the
    source tree the product's processes run (see `deployment`)."""
    workdir = root / f"overhead-{workers}-{concurrency}{label}"
    workdir.mkdir()
    db: LogSource = database_url or workdir / "debates.db"
    share = -(-concurrency // workers) if spread and workers else None
    if cap is not None:
        share = min(share or cap, cap)
    async with PeerProcess(plan) as llm:
        async with (Peers() as peers,
                    deployment(workers, peers, workdir, llm, database_url=database_url, worker_concurrency=share,
                               profile=profile, graceful=graceful, code=code) as shape):
            window = await level_on(shape, peers, db, concurrency, rounds, server=server, within=within, warm=warm)
        stats = await llm.stop()
    return level_from(window, stats, plan, rounds, workdir)


@dataclass
class Window:
    """What one level's measuring window saw in the log and the processes (the peer's calls come after)."""

    concurrency: int
    first: int  # the level's debates are tagged first … first + concurrency − 1
    logged: list[dict[str, Any]]
    wall_s: float
    cpu_s: float
    threads: dict[str, dict[str, float]]
    pg_cpu_s: float | None
    ended: datetime


async def level_on(shape: Deployment, peers: Peers, db: LogSource, concurrency: int, rounds: int, *,
                   first: int = 0, server: BenchPostgres | None = None, within: float = FINISH_WITHIN_S,
                   warm: int = 0) -> Window:
    """One level on a running deployment whose log may already hold other debates (they must have ended)."""
    port = shape.front.port
    assert port is not None
    before = len(await asyncio.to_thread(read_log, db, "select id from debates"))
    if warm:
        await _start(peers, port, range(WARM_TAG, WARM_TAG + warm), 1)
        await _wait_finished(db, before + warm, 60)
    if server is not None:
        await asyncio.to_thread(server.reset_statements)
    for proc in shape.procs:
        proc.profile_window(start=True)
    cpu_before = shape.cpu_s()
    threads_before = {p.name: p.thread_cpu_s() for p in shape.procs}
    pg_before = server.server_cpu_s() if server is not None else None
    began = time.monotonic()
    for start in range(first, first + concurrency, 50):  # 50 POSTs in flight at a time
        await _start(peers, port, range(start, min(first + concurrency, start + 50)), rounds)
    await _wait_finished(db, before + concurrency + warm, max(1.0, within - (time.monotonic() - began)))
    wall = time.monotonic() - began
    cpu = shape.cpu_s() - cpu_before
    for proc in shape.procs:
        proc.profile_window(start=False)
    threads = {p.name: {k: v - threads_before[p.name].get(k, 0.0) for k, v in p.thread_cpu_s().items()}
               for p in shape.procs}
    pg_cpu = server.server_cpu_s() - pg_before if server is not None and pg_before is not None else None
    logged = await asyncio.to_thread(read_log, db, "select topic, status, created_at, finished_at from debates")
    return Window(concurrency, first, logged, wall, cpu, threads, pg_cpu, datetime.now(UTC))


def level_from(window: Window, stats: PeerStats, plan: ReplyPlan, rounds: int, workdir: Path) -> Level:
    """The level's figures: its debates in the log against the calls the peer saw for them."""
    n, first = window.concurrency, window.first
    mine = range(first, first + n)
    paths = critical_paths([c for c in stats.calls if c[0] in mine])
    ratios, completed_ratios = [], []
    rows = [(int(t.group(1)), r) for r in window.logged if (t := TAG.search(r["topic"])) and int(t.group(1)) in mine]
    for tag, row in rows:
        created = _when(row["created_at"])
        if row["status"] == "running":  # cut off: at least this slow
            ratios.append((window.ended - created).total_seconds() / ideal_path(plan, rounds))
        elif row["status"] == "completed" and tag in paths:
            ratio = (_when(row["finished_at"]) - created).total_seconds() / paths[tag][0]
            ratios.append(ratio)
            completed_ratios.append(ratio)
    calls = sum(1 for c in stats.calls if c[4] == 200 and c[0] in mine)
    return Level(n, sum(1 for _, r in rows if r["status"] == "completed"), median(ratios),
                 max(ratios, default=float("nan")), window.wall_s, sum(1 for _, r in rows if r["status"] == "running"),
                 ratio_completed=median(completed_ratios), calls=calls, cpu_s=window.cpu_s, pg_cpu_s=window.pg_cpu_s,
                 logged=len(rows), threads=window.threads, workdir=workdir, peer_cpu_s=stats.cpu_s)


def add_level(table: Table, level: Level, label: str, *, target: bool, within: float) -> None:
    """The level's rows: the ratio (with what it covers), then completed / wall / CPU per call."""
    n = level.concurrency
    name = f"wall ÷ critical path @{n} · {label}"
    if level.cut_off:
        name += f" ({level.cut_off} cut off at {within:.0f} s: ≥)"
    if n in RATIO_TARGETS and target:
        table.check(name, level.ratio, ".3f", RATIO_TARGETS[n])
    else:
        table.add(name, f"{level.ratio:.3f}")
    if level.cut_off:
        table.add(f"  median over the {level.completed} completed by the deadline @{n} · {label}",
                  f"{level.ratio_completed:.3f}" if level.completed else "none completed")
    table.add(f"  worst debate / completed / wall @{n} · {label}",
              f"{level.worst:.3f} / {level.completed}/{n} / {level.wall_s:.0f} s")
    per_call = f"{level.cpu_ms_per_call:.2f} ms ({level.calls} of ~{EXPECTED_CALLS_PER_DEBATE * n} calls done)"
    if level.pg_cpu_s is not None:
        per_call += f", + Postgres {level.pg_cpu_ms_per_call:.2f} ms"
    table.add(f"  CPU per model call, front + workers @{n} · {label}", per_call)


async def run(smoke: bool) -> Table:
    if smoke:
        plan = ReplyPlan(latency_s=0.05, tokens_per_s=1000.0, debater_words=30, judge_words=60, summary_words=30)
        levels, rounds = [3], 2
    else:
        plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0, debater_words=100, judge_words=100, summary_words=100)
        levels, rounds = [1, 100, 1000], 2
    table = Table(f"durable — Slack ack with debates streaming, and wall ÷ critical path, per deployment shape "
                  f"(subprocesses; challenge {rounds} rounds, peer {plan.latency_s:g} s, {plan.tokens_per_s:g} "
                  "tokens/s, in its own process)")
    root = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    try:
        if smoke:
            await _smoke(table, root, plan, rounds, levels[0])
        else:
            await _full(table, root, plan, rounds, levels)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table.note("wall = created_at → finished_at in the log; critical path = the peer-measured durations of the "
               "debate's sequential calls; median over debates; one warm-up debate per worker first, off the clock "
               "(a worker imports each provider's SDK at its first call)")
    return table


async def _full(table: Table, root: Path, plan: ReplyPlan, rounds: int, levels: list[int]) -> None:
    """Each measurement on deployments of its own: the ack on two shapes, every level on all three."""
    for label, workers in list(TOPOLOGIES.items())[:2]:
        try:
            ack = await measure_ack(workers, root, False)
        except Unavailable as exc:
            table.add(f"ack p99 @ {label}", "unavailable", f"≤ {ACK_TARGET_MS:g} ms", "miss")
            table.note(f"{label}: {exc}")
            continue
        add_ack(table, ack, label, target=workers > 0)
    for label, workers in TOPOLOGIES.items():
        for n in levels:
            try:
                level = await measure_level(workers, n, root, plan, rounds, warm=max(1, workers))
            except Unavailable as exc:
                table.add(f"wall ÷ critical path @{n} · {label}", "unavailable", "", "miss")
                table.note(f"{label}: {exc}")
                break
            add_level(table, level, label, target=workers > 0, within=FINISH_WITHIN_S)


async def _smoke(table: Table, root: Path, plan: ReplyPlan, rounds: int, concurrency: int) -> None:
    """The ack, then one level, on one front + 1 worker and one LLM peer (the shape both targets are about;
    the other shapes run the same code): two product processes started, not four. The ack's debates are
    the level's warm-up, and have ended before the level starts."""
    label = "front + 1 worker"
    workdir = root / "smoke"
    workdir.mkdir()
    db = workdir / "debates.db"
    batch, batches = ACK_BATCHES_SMOKE
    try:
        async with PeerProcess(plan) as llm:
            async with Peers() as peers, deployment(1, peers, workdir, llm, graceful=False) as shape:
                ack = await ack_on(shape, peers, batch, batches)
                await _wait_finished(db, batch * batches + 1, FINISH_WITHIN_S)
                window = await level_on(shape, peers, db, concurrency, rounds, first=SMOKE_LEVEL_TAG)
            stats = await llm.stop()
    except Unavailable as exc:
        table.add(f"ack p99 @ {label}", "unavailable", f"≤ {ACK_TARGET_MS:g} ms", "miss")
        table.note(f"{label}: {exc}")
        return
    add_ack(table, ack, label, target=True)
    add_level(table, level_from(window, stats, plan, rounds, workdir), label, target=True, within=FINISH_WITHIN_S)


def add_ack(table: Table, ack: AckResult, label: str, *, target: bool) -> None:
    ok = ack.statuses.count(200)
    table.add(f"ack: requests answered 200 @ {label}", f"{ok}/{len(ack.statuses)}", f"{len(ack.statuses)}",
              "pass" if ok == len(ack.statuses) else "miss")
    table.add(f"ack p50 @ {label}", f"{percentile(ack.ms, 50):.1f} ms")
    if target:
        table.check(f"ack p99 @ {label}", percentile(ack.ms, 99), ".1f", ACK_TARGET_MS, " ms")
    else:
        table.add(f"ack p99 @ {label}", f"{percentile(ack.ms, 99):.1f} ms")
    table.add(f"  ack p50 / p99 while debates stream (batches 2+) @ {label}",
              f"{percentile(ack.tail_ms, 50):.1f} / {percentile(ack.tail_ms, 99):.1f} ms")
    if ack.window_s:
        table.add(f"  front CPU from the first batch to 0.5 s after the last @ {label}",
                  f"{ack.front_cpu_s:.2f} s in {ack.window_s:.1f} s")


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())

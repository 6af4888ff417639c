"""1. Overhead: debate wall time ÷ its critical path at 1, 100 and 1,000 concurrent debates; CPU per model
call; RSS per in-flight debate.

Production wiring: `DebateJobs` → `Engine` → `DebateRun`, the real openai and anthropic SDKs, a real SQLite
store (temp file) behind `StoreSink` on every bus. The LLM peer runs in a child process, so its CPU and
its event loop are not ours. A debate's critical path is the sum of its sequential calls (2R debater
calls, one summary per round from round 3, one judge stage whose two passes overlap): "ideal" uses the
plan's fixed latency and rate, "peer" uses what the peer actually took for each of those calls, which
differs from ideal only when the peer itself falls behind. The target is judged against the peer figure.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Table, bench_settings, challenge_spec, median, percentile, rss_kb
from bench.llm_peer import PeerProcess, PeerStats, ReplyPlan
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.log import Store
from orchestrator.models import Outcome
from orchestrator.providers import ProviderRegistry

NAME = "overhead"
TARGETS = {1: 1.01, 100: 1.02, 1000: 1.03}
CPU_TARGET_MS = 5.0
RSS_TARGET_KB = 200.0
WARMUP_TAG = 999_999
DEADLINE_S = 45.0  # per level: debates still running then are cut off and counted as at least that slow

log = logging.getLogger(__name__)


@dataclass
class LevelResult:
    concurrency: int
    completed: int
    ratio_peer: float  # median over debates: wall ÷ peer-observed critical path
    ratio_peer_max: float
    ratio_ideal: float  # median: wall ÷ ideal critical path
    peer_lag_p50_ms: float
    peer_lag_p99_ms: float
    calls: int
    cpu_ms_per_call: float
    rss_kb_per_debate: float
    wall_s: float
    unfinished: int  # still running at the deadline; their ratio counts as a lower bound


def critical_paths(calls: list[list[Any]]) -> dict[int, tuple[float, float]]:
    """Per debate tag: (peer-observed, ideal) critical path in seconds."""
    per: dict[int, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for call in calls:
        tag, kind, duration, ideal = call[:4]
        per[tag][kind].append((duration, ideal))
    out = {}
    for tag, kinds in per.items():
        sequential = kinds["debater"] + kinds["summary"]
        judge = kinds["judge"]
        observed = sum(d for d, _ in sequential) + max((d for d, _ in judge), default=0.0)
        ideal = sum(i for _, i in sequential) + max((i for _, i in judge), default=0.0)
        out[tag] = (observed, ideal)
    return out


async def run_level(concurrency: int, rounds: int, plan: ReplyPlan, workdir: Path, deadline_s: float) -> LevelResult:
    async with PeerProcess(plan) as peer:
        settings = bench_settings(workdir / f"overhead-{concurrency}.db", peer.openai_base_url,
                                  peer.anthropic_base_url)
        store = Store(settings.debate_db)
        await store.start()
        registry = ProviderRegistry(settings)
        jobs = DebateJobs(Engine(registry, settings), store, max_concurrent=settings.debate_max_concurrent)
        try:
            warm = await jobs.start(challenge_spec(WARMUP_TAG, 1))  # connections, imports, caches
            if warm.status != "completed":
                raise RuntimeError(f"warm-up debate did not complete: {warm.error}")
            specs = [challenge_spec(i, rounds) for i in range(concurrency)]
            started: dict[int, float] = {}
            ended: dict[int, float] = {}
            peak = before = rss_kb()
            done = asyncio.Event()

            async def sample_rss() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, rss_kb())
                    try:
                        await asyncio.wait_for(done.wait(), 0.05)
                    except TimeoutError:
                        pass

            sampler = asyncio.create_task(sample_rss())
            cpu0, wall0 = time.process_time(), time.perf_counter()
            tasks: list[asyncio.Task[Outcome]] = []
            for number, spec in enumerate(specs):
                started[number] = time.perf_counter()
                task = jobs.start(spec)
                task.add_done_callback(lambda _t, n=number: ended.__setitem__(n, time.perf_counter()))
                tasks.append(task)
            await asyncio.wait(tasks, timeout=deadline_s)
            cpu = time.process_time() - cpu0
            wall = time.perf_counter() - wall0
            outcomes = [t.result() if t.done() else None for t in tasks]
            done.set()
            await sampler
        finally:
            await jobs.shutdown()
            await registry.aclose()
            await store.close()
        stats: PeerStats = await peer.stop()

    completed = sum(1 for o in outcomes if o is not None and o.status == "completed")
    for outcome in outcomes:
        if outcome is not None and outcome.status != "completed":
            log.warning("overhead: a debate ended %s: %s", outcome.status, outcome.error)
    paths = critical_paths([c for c in stats.calls if c[0] != WARMUP_TAG])
    ideal_path = _ideal_path(plan, rounds)
    ratios_peer, ratios_ideal = [], []
    for number, outcome in enumerate(outcomes):
        if outcome is None:  # cut off at the deadline: at least this slow
            ratios_peer.append(wall / ideal_path)
            ratios_ideal.append(wall / ideal_path)
            continue
        if number not in paths or outcome.status != "completed":
            continue
        observed, ideal = paths[number]
        debate_wall = ended[number] - started[number]
        ratios_peer.append(debate_wall / observed)
        ratios_ideal.append(debate_wall / ideal)
    measured = [c for c in stats.calls if c[0] != WARMUP_TAG]
    lags = [(c[2] - c[3]) * 1000 for c in measured if c[4] == 200]
    return LevelResult(
        concurrency=concurrency,
        completed=completed,
        ratio_peer=median(ratios_peer),
        ratio_peer_max=max(ratios_peer, default=float("nan")),
        ratio_ideal=median(ratios_ideal),
        peer_lag_p50_ms=percentile(lags, 50),
        peer_lag_p99_ms=percentile(lags, 99),
        calls=len(measured),
        cpu_ms_per_call=cpu * 1000 / max(1, len(measured)),
        rss_kb_per_debate=(peak - before) / concurrency,
        wall_s=wall,
        unfinished=sum(1 for o in outcomes if o is None),
    )


def _ideal_path(plan: ReplyPlan, rounds: int) -> float:
    """The ideal critical path of a challenge debate under `plan` (used for debates cut off at the deadline)."""
    from bench.llm_peer import verdict_text, words

    debater = plan.ideal_s(words(plan.debater_words, 1))
    summary = plan.ideal_s(words(plan.summary_words, 2))
    return 2 * rounds * debater + max(0, rounds - 2) * summary + plan.ideal_s(verdict_text(plan.judge_words))


async def run(smoke: bool) -> Table:
    if smoke:
        plan = ReplyPlan(latency_s=0.05, tokens_per_s=1000.0, debater_words=30, judge_words=60, summary_words=30)
        levels, rounds, deadline = [4], 1, 20.0
    else:
        plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0, debater_words=100, judge_words=100, summary_words=100)
        levels, rounds, deadline = [1, 100, 1000], 2, DEADLINE_S
    table = Table(f"overhead — challenge, {rounds} rounds, peer latency {plan.latency_s:g} s, "
                  f"{plan.tokens_per_s:g} tokens/s, ~{plan.debater_words}-word replies (peer in its own process)")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        results = [await run_level(n, rounds, plan, Path(tmp), deadline) for n in levels]
    for r in results:
        target = TARGETS.get(r.concurrency)
        label = f"wall ÷ critical path @{r.concurrency}"
        if r.unfinished:
            label += f" ({r.unfinished} cut off at {r.wall_s:.0f} s: ≥)"
        if target is not None:
            table.check(label, r.ratio_peer, ".3f", target)
        else:
            table.add(label, f"{r.ratio_peer:.3f}")
        table.add(f"  vs ideal path (peer lag p50 {r.peer_lag_p50_ms:.0f} ms, p99 {r.peer_lag_p99_ms:.0f} ms)",
                  f"{r.ratio_ideal:.3f}")
        table.add(f"  worst debate @{r.concurrency}", f"{r.ratio_peer_max:.3f}")
        table.add(f"  completed @{r.concurrency}", f"{r.completed}/{r.concurrency}", f"{r.concurrency}",
                  "pass" if r.completed == r.concurrency else "miss")
    for r in results:
        table.check(f"CPU per model call @{r.concurrency} ({r.calls} calls)", r.cpu_ms_per_call, ".2f", CPU_TARGET_MS,
                    " ms")
    for r in results:
        if r.concurrency >= 100:
            table.check(f"RSS per in-flight debate @{r.concurrency}", r.rss_kb_per_debate, ".0f", RSS_TARGET_KB, " KB")
    table.note("median over debates; a model call is a debater turn, a summary or a judge pass; CPU is this "
               "process's (engine, SDKs, store thread), the peer's is excluded")
    return table

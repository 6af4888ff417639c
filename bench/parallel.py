"""2. Parallel rounds: a round of N debaters ÷ its slowest call, N = 2 and 4.

A round is `asyncio.gather` of `DebateRun.turn` for every seat — what the stances openings and the
consensus seed round do — with a real store behind `StoreSink` on the bus. The seats stream replies of
different lengths (openai and anthropic seats alternating), so one call is clearly the slowest; the
denominator is that call's duration as the peer (in its own process) measured it.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import Table, bench_settings, median
from bench.llm_peer import PeerProcess, ReplyPlan
from orchestrator.debate.run import DebateRun
from orchestrator.events import EventBus
from orchestrator.log import Store, StoreSink
from orchestrator.models import DebateSpec, Seat
from orchestrator.providers import ProviderRegistry

NAME = "parallel"
TARGET = 1.05
SEAT_MODELS = ("openai:bench-w100", "anthropic:bench-w90", "openai:bench-w80", "anthropic:bench-w70")


async def run(smoke: bool) -> Table:
    plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0)
    repeats = 1 if smoke else 9
    table = Table(f"parallel — one round of N debaters (gather of DebateRun.turn), peer latency {plan.latency_s:g} s, "
                  f"{plan.tokens_per_s:g} tokens/s, 70–100-word replies, {repeats} rounds each")
    ratios: dict[int, list[int]] = {2: [], 4: []}  # the tags of the counted rounds
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        async with PeerProcess(plan) as peer:
            settings = bench_settings(Path(tmp) / "parallel.db", peer.openai_base_url, peer.anthropic_base_url)
            registry = ProviderRegistry(settings)
            walls: dict[int, float] = {}
            async with Store(settings.debate_db) as store:
                tag = 0
                for counted, n in ((False, 2), (False, 4), (True, 2), (True, 4)):  # warm connections first
                    seats = tuple(Seat(label="ABCD"[i], role="debater", model=SEAT_MODELS[i]) for i in range(n))
                    spec = DebateSpec(topic="Which queue should the audit log use?", format="stances", rounds=1,
                                      seats=seats, judge=SEAT_MODELS[0])
                    bus = EventBus(log=StoreSink(store))
                    await store.create_debate(spec)
                    run_ = DebateRun(spec=spec, settings=settings, registry=registry, bus=bus)
                    for _ in range(repeats):
                        tag += 1
                        user = f"Bench debate #{tag:06d}: give your opening statement."
                        began = time.perf_counter()
                        await asyncio.gather(*(run_.turn(seat, 1, "opening", "You are a debater.", user)
                                               for seat in seats))
                        walls[tag] = time.perf_counter() - began
                        if counted:
                            ratios[n].append(tag)
            await registry.aclose()
        stats = await peer.stop()
    slowest: dict[int, float] = {}
    for call in stats.calls:
        slowest[call[0]] = max(slowest.get(call[0], 0.0), call[2])
    for n, tags in ratios.items():
        values = [walls[t] / slowest[t] for t in tags]
        table.check(f"round of {n} ÷ slowest call (median of {len(values)})", median(values), ".3f", TARGET)
        table.add(f"  worst round of {n}", f"{max(values):.3f}")
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())

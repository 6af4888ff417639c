"""What the metrics cost: CPU per model call with the process's metrics counted and with them taken out,
the same debates (bench.overhead's level: `DebateJobs` → `Engine`, the real SDKs, a real SQLite store,
the LLM peer in its own process), the two ways interleaved so drift on a shared machine hits both.

"Off" replaces what a model call records (`observe_call`, the SDKs' retry-counting request hook) with
nothing; the per-debate counters stay (a few increments per debate). Target: under 3 % more CPU.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common import Table, median
from bench.llm_peer import ReplyPlan
from bench.overhead import run_level

NAME = "metrics_cost"
TARGET_PCT = 3.0


def _plain_client(sdk: Any, base_url: str | None, timeout_s: float, provider: str) -> Any:
    return sdk.DefaultAioHttpClient(timeout=timeout_s)


@contextmanager
def metrics_off() -> Iterator[None]:
    with mock.patch("orchestrator.debate.run.observe_call", lambda *a, **k: None), \
            mock.patch("orchestrator.providers.openai_compat.sdk_http_client", _plain_client), \
            mock.patch("orchestrator.providers.anthropic_api.sdk_http_client", _plain_client):
        yield


async def run(smoke: bool) -> Table:
    if smoke:
        plan = ReplyPlan(latency_s=0.05, tokens_per_s=1000.0, debater_words=30, judge_words=60, summary_words=30)
        concurrency, rounds, repeats, deadline = 2, 1, 1, 20.0
    else:
        plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0, debater_words=100, judge_words=100, summary_words=100)
        concurrency, rounds, repeats, deadline = 100, 2, 3, 45.0
    on: list[float] = []
    off: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        for i in range(repeats):
            for counted in (True, False):
                workdir = Path(tmp) / f"{i}-{counted}"
                workdir.mkdir()
                if counted:
                    on.append((await run_level(concurrency, rounds, plan, workdir, deadline)).cpu_ms_per_call)
                else:
                    with metrics_off():
                        off.append((await run_level(concurrency, rounds, plan, workdir, deadline)).cpu_ms_per_call)
    table = Table(f"metrics cost — {concurrency} concurrent challenge debates, {rounds} rounds, {repeats} runs "
                  "each way, interleaved")
    with_ms, without_ms = median(on), median(off)
    table.add("CPU per model call, metrics counted (median)", f"{with_ms:.2f} ms")
    table.add("CPU per model call, metrics taken out (median)", f"{without_ms:.2f} ms")
    table.check("metrics' share of CPU per model call", (with_ms / without_ms - 1) * 100, "+.1f", TARGET_PCT, " %")
    table.note("each run: " + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(on, off, strict=True)) + " ms (on/off)")
    return table

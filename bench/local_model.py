"""Local model: wall time of a one-round challenge on `local:smollm2-135m` (llama.cpp's server, this machine's
CPU), split into the server's start, the model's own time and the product's overhead.

The model's own time is llama.cpp's: the server's `llamacpp:prompt_seconds_total` and
`llamacpp:tokens_predicted_seconds_total` counters (its /metrics), read before and after the debate. The
server runs one slot here (DEBATE_LOCAL_PARALLEL=1, the default slot's 4,096 tokens), so the judge's two
passes take turns and the model's busy time is never counted twice: the product's overhead is the wall time
less that busy time. Not in `python -m bench`: it takes minutes. Run it alone:

    .venv/bin/python -m bench.local_model
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.common import Table
from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBase, EventBus, TurnCompleted, VerdictReached
from orchestrator.models import DebateSpec, Seat
from orchestrator.providers import ProviderRegistry
from orchestrator.providers.local_model import server_options
from orchestrator.providers.local_server import server_for, stop_all

NAME = "local_model"
MODEL = "local:smollm2-135m"
TOPIC = "Should a five-person startup run its services on Kubernetes from day one?"
_COUNTER = re.compile(r"^llamacpp:(\w+) ([0-9.e+-]+)$", re.MULTILINE)


class Collect:
    def __init__(self) -> None:
        self.events: list[tuple[float, EventBase]] = []

    async def handle(self, event: EventBase) -> None:
        self.events.append((time.perf_counter(), event))


def counters(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:  # loopback: the child's server
        text = answer.read().decode()
    return {name: float(value) for name, value in _COUNTER.findall(text)}


async def run(smoke: bool = False) -> Table:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(_env_file=None, DEBATE_DB=str(Path(folder) / "d.db"), DEBATE_EFFORT="low",  # type: ignore[call-arg]
                            DEBATE_CALL_TIMEOUT=600,
                            DEBATE_LOCAL_CTX=4096, DEBATE_LOCAL_PARALLEL=1)
        spec = DebateSpec(topic=TOPIC, format="challenge", rounds=1, effort="low", judge=MODEL,
                          seats=(Seat(label="A", role="proposer", model=MODEL),
                                 Seat(label="B", role="challenger", model=MODEL)))
        server = server_for(server_options(settings, "smollm2-135m"))
        began = time.perf_counter()
        url = await asyncio.to_thread(server.url)
        started = time.perf_counter() - began
        before = counters(url)
        sink = Collect()
        registry = ProviderRegistry(settings)
        debate_began = time.perf_counter()
        try:
            outcome = await Engine(registry, settings).run(spec, EventBus([sink]))
        finally:
            await registry.aclose()
        wall = time.perf_counter() - debate_began
        after = counters(url)
        stop_all()
    spent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    prompt_s, predict_s = spent.get("prompt_seconds_total", 0.0), spent.get("tokens_predicted_seconds_total", 0.0)
    tokens_in, tokens_out = spent.get("prompt_tokens_total", 0.0), spent.get("tokens_predicted_total", 0.0)
    turns = [e for _, e in sink.events if isinstance(e, TurnCompleted)]
    verdicts = [e for _, e in sink.events if isinstance(e, VerdictReached)]
    busy = prompt_s + predict_s
    overhead = wall - busy
    table = Table("Local model: a one-round challenge on local:smollm2-135m (llama.cpp, this machine's CPU)")
    table.add("outcome", f"{outcome.status}, {len(turns)} turns, verdict: {'yes' if verdicts else 'no'}")
    table.add("server start (child process, model load)", f"{started:.1f} s")
    table.add("debate wall time", f"{wall:.1f} s", "≤ 240 s", "pass" if wall <= 240 else "miss")
    table.add("model: prompt processing (llama.cpp)", f"{prompt_s:.1f} s, {tokens_in:.0f} tokens "
              f"({tokens_in / prompt_s if prompt_s else 0:.0f}/s)")
    table.add("model: generation (llama.cpp)", f"{predict_s:.1f} s, {tokens_out:.0f} tokens "
              f"({tokens_out / predict_s if predict_s else 0:.1f}/s)")

    def share(seconds: float) -> float:
        return seconds / wall * 100 if wall else 0.0

    table.add("model busy (prompt + generation)", f"{busy:.1f} s ({share(busy):.1f} % of the wall)")
    table.add("product overhead (wall − model busy)", f"{overhead:.2f} s ({share(overhead):.1f} %)")
    table.note("The model's time is llama.cpp's own (/metrics counters); the overhead is everything else: the log, "
               "events, rendering, the SDK and HTTP on loopback.")
    return table


if __name__ == "__main__":
    print(asyncio.run(run()).render())
    sys.exit(0)

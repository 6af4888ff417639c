"""`add_turn` on both logs: fresh turns (an insert each, its search index updated) and the same turn again
(a step run again after a restart: found and updated in place), sequential, awaited as the sink awaits it.

`python -m bench.add_turn [--turns N]` prints p50 / p99 / mean µs per call for SQLite (through the writer
thread) and Postgres (the embedded server of the tests, through the pool), and one JSON line with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from bench.common import percentile
from bench.pg import BenchPostgres, exit_cleanly_on_sigterm
from orchestrator.log import DebateLog, open_log
from orchestrator.models import DebateSpec, Seat, Turn

TEXT = " ".join(f"word{i % 97} argument{i % 13}" for i in range(150))


async def _timed(log: DebateLog, turns: int) -> dict[str, list[float]]:
    seats = (Seat(label="A", role="proposer", model="openai:gpt-5"), Seat(label="B", role="challenger",
                                                                           model="openai:gpt-5"))
    spec = DebateSpec(topic="add_turn bench", seats=seats, judge="openai:gpt-5")
    await log.create_debate(spec)
    out: dict[str, list[float]] = {"insert": [], "again": []}
    for kind, rounds in (("insert", range(turns)), ("again", [0] * turns)):
        for n in rounds:
            turn = Turn(debate_id=spec.id, round=n, seat="A", role="proposer", kind="opening", model="openai:gpt-5",
                        text=TEXT, input_tokens=900, output_tokens=600)
            began = time.perf_counter()
            await log.add_turn(turn)
            out[kind].append((time.perf_counter() - began) * 1e6)
    return out


async def run(turns: int) -> dict[str, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory(prefix="bench-add-turn-") as tmp:
        async with open_log(Path(tmp) / "log.db") as store:
            on_sqlite = await _timed(store, turns)
    server = await asyncio.to_thread(BenchPostgres.start)
    try:
        url = await asyncio.to_thread(server.create_database, "addturn")
        async with open_log(url) as pg:
            on_pg = await _timed(pg, turns)
    finally:
        await asyncio.to_thread(server.stop)
    return {"sqlite": on_sqlite, "postgres": on_pg}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2_000)
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    timed = asyncio.run(run(args.turns))
    figures = {f"{db} {kind}": {"p50": percentile(us, 50), "p99": percentile(us, 99), "mean": sum(us) / len(us)}
               for db, kinds in timed.items() for kind, us in kinds.items()}
    for name, f in figures.items():
        print(f"add_turn {name}: p50 {f['p50']:.0f} / p99 {f['p99']:.0f} / mean {f['mean']:.0f} µs")
    print(json.dumps(figures))

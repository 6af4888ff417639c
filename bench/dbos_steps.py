"""DBOS's cost per trivial step and per stream write from a step, three ways, in one run:
`python -m bench.dbos_steps [--workflows N] [--steps M] [--rounds R] [--sqlite-rounds R]
[--backend postgres|sqlite|both]` (~50 s by default).

- `dbos`: DBOS as shipped (nothing installed; a step writes with `DBOS.write_stream_async`);
- `txn`: this tree's prepared statements in DBOS's transactions, the stream writes in a transaction each
  (the product before the autocommit statements: `autocommits` answers no);
- `autocommit`: the product (`install_launched`, `StepStreams`, `dbos_step_hops.install`): on Postgres one
  statement each, and a step hops to the thread pool twice, not three times.

Each way runs in a process of its own (DBOS is one per process), launched as the worker launches it
(`config.prepare_system_db`, `config.dbos_config`, then `install_launched`), on a system database of
its own: a database of one Postgres server (bench.pg, `pg_stat_statements` loaded) or an SQLite file.
Every round runs three phases in each process in turn (the order rotated each round; round 0 warms up):
N concurrent workflows of one step (Z), of one step and M trivial steps more (A), of one step writing M
stream values one write at a time (B). Per step: (A − Z) ÷ N·M; per write: (B − Z) ÷ N·M, of the
process's CPU (os.times, all its threads), the server's (BenchPostgres.server_cpu_s: every backend,
busy or not) and the statements its database saw (pg_stat_statements, BEGIN and COMMIT included).
Figures are medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import psycopg
from dbos import DBOS

from bench.pg import BenchPostgres

WAYS = ("dbos", "txn", "autocommit")
PHASES = {"Z": (0, 0), "A": (1, 0), "B": (0, 1)}  # per phase: (trivial steps, stream writes) per M
KEY = "bench"
ROOT = Path(__file__).resolve().parent.parent

# -- in each way's process ------------------------------------------------------------------------------


async def trivial(i: int) -> int:
    return i + 1


async def first(writes: int, dbos_writes: bool) -> None:
    """The workflow's first step, which writes `writes` stream values, one write each."""
    if dbos_writes:
        for i in range(writes):
            await DBOS.write_stream_async(KEY, {"i": i, "text": "a stream chunk of forty characters, say"})
        return
    from orchestrator.durable.dbos_stream_writes import StepStreams

    streams = StepStreams()
    for i in range(writes):
        await streams.write(KEY, [{"i": i, "text": "a stream chunk of forty characters, say"}])


@DBOS.workflow(name="bench_dbos_steps")
async def steps_workflow(steps: int, writes: int, dbos_writes: bool) -> None:
    await DBOS.run_step_async({"name": "first"}, first, writes, dbos_writes)
    for i in range(steps):
        await DBOS.run_step_async({"name": "trivial"}, trivial, i)


def cpu_s() -> float:
    times = os.times()
    return times.user + times.system


async def serve(way: str, url: str, workflows: int, per: int) -> None:
    """One way's process: launch, then run each phase asked for on stdin, answering its CPU on stdout."""
    from orchestrator.durable import dbos_step_hops, dbos_step_records, dbos_steps_on_loop, dbos_stream_writes
    from orchestrator.durable.config import dbos_config, prepare_system_db

    if way == "txn":  # the product as it was before the autocommit statements
        dbos_step_records.autocommits = dbos_stream_writes.autocommits = lambda _sys_db: False  # type: ignore[assignment]
    prepare_system_db(url)
    DBOS(config=dbos_config(url, f"bench-{way}"))
    DBOS.launch()
    if way != "dbos":
        assert dbos_steps_on_loop.install_launched()
    if way == "autocommit":
        dbos_step_hops.install()
    print(json.dumps({"ready": way}), flush=True)
    while (phase := (await asyncio.to_thread(sys.stdin.readline)).strip()) in PHASES:
        steps, writes = (per * n for n in PHASES[phase])
        began, wall = cpu_s(), time.perf_counter()
        handles = [await DBOS.start_workflow_async(steps_workflow, steps, writes, way == "dbos")
                   for _ in range(workflows)]
        for handle in handles:
            await handle.get_result()
        print(json.dumps({"cpu_s": cpu_s() - began, "wall_s": time.perf_counter() - wall}), flush=True)
    DBOS.destroy(destroy_registry=False)


# -- the run ----------------------------------------------------------------------------------------------


class Way:
    """One way's process, asked for one phase at a time."""

    def __init__(self, way: str, url: str, workflows: int, per: int) -> None:
        self.way, self.url = way, url
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.dbos_steps", "--serve", way, "--url", url,
             "--workflows", str(workflows), "--steps", str(per)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})

    def answer(self) -> dict[str, Any]:
        stdout: IO[str] = self.proc.stdout  # type: ignore[assignment]
        while line := stdout.readline():
            if line.startswith("{"):
                return dict(json.loads(line))
        raise RuntimeError(f"{self.way}: its process ended (exit {self.proc.wait()})")

    def run(self, phase: str) -> dict[str, Any]:
        stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
        stdin.write(phase + "\n")
        stdin.flush()
        return self.answer()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.communicate("quit\n", timeout=30)


def kind(query: str) -> str:
    """A statement's kind, by its text."""
    text = " ".join(query.split()).lower()
    if text in ("begin", "commit", "rollback") or text.startswith("begin isolation"):
        return "BEGIN/COMMIT"
    for needle, name in (("insert into dbos.operation_outputs", "record INSERT"),
                         ("insert into dbos.streams", "stream INSERT"), ("for no key update", "owner lock"),
                         ("left outer join dbos.operation_outputs", "check SELECT"),
                         ("from dbos.operation_outputs", "check SELECT")):
        if needle in text:
            return name
    return "other"


def statements(server: BenchPostgres, url: str) -> Counter[str]:
    """The calls so far of each kind of statement in `url`'s database (pg_stat_statements); a statement
    run inside another (a trigger's) is counted apart, as "nested": it is no round trip."""
    counted = Counter[str]()
    with psycopg.connect(server.server.url(), autocommit=True) as conn:
        for calls, query, toplevel in conn.execute(
                "select s.calls, s.query, s.toplevel from pg_stat_statements s join pg_database d on d.oid = s.dbid"
                " where d.datname = %s", [url.rsplit("/", 1)[1]]):
            counted[kind(query) if toplevel else "nested (a trigger's pg_notify)"] += calls
    return counted


def measure(backend: str, workflows: int, per: int, rounds: int) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per way and phase, one sample a round: process CPU, server CPU and statements by kind."""
    server = BenchPostgres.start(statements=True) if backend == "postgres" else None
    if server:
        server.reset_statements()  # (the view is read from the server's own database)
    folder = tempfile.TemporaryDirectory(prefix="dbos-steps-")
    urls = {way: server.create_database(f"steps_{way}") if server else f"sqlite:///{folder.name}/{way}.sqlite"
            for way in WAYS}
    ways = {way: Way(way, urls[way], workflows, per) for way in WAYS}
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {way: {p: [] for p in PHASES} for way in WAYS}
    try:
        for way in ways.values():
            way.answer()  # ready
        for round_ in range(rounds + 1):
            order = WAYS[round_ % len(WAYS):] + WAYS[:round_ % len(WAYS)]
            for phase in PHASES:
                for name in order:
                    before = statements(server, urls[name]) if server else Counter[str]()
                    server_began = server.server_cpu_s() if server else 0.0
                    sample = ways[name].run(phase)
                    sample["server_s"] = server.server_cpu_s() - server_began if server else 0.0
                    sample["statements"] = statements(server, urls[name]) - before if server else before
                    if round_:
                        samples[name][phase].append(sample)
    finally:
        for way in ways.values():
            way.stop()
        if server:
            server.stop()
        folder.cleanup()
    return samples


def per_unit(samples: dict[str, list[dict[str, Any]]], phase: str, units: int) -> dict[str, Any]:
    """The medians over rounds of (phase − Z) ÷ units: process and server CPU in ms, statements by kind."""
    from bench.common import median

    rounds = list(zip(samples[phase], samples["Z"], strict=True))
    out: dict[str, Any] = {
        "process_ms": median([(s["cpu_s"] - z["cpu_s"]) * 1000 / units for s, z in rounds]),
        "server_ms": median([(s["server_s"] - z["server_s"]) * 1000 / units for s, z in rounds]),
        "statements": {}}
    kinds = {k for s, z in rounds for k in (*s["statements"], *z["statements"])}
    for k in sorted(kinds):
        out["statements"][k] = median([(s["statements"][k] - z["statements"][k]) / units for s, z in rounds])
    return out


def report(backend: str, workflows: int, per: int, rounds: int) -> str:
    from bench.common import Grid, machine

    samples = measure(backend, workflows, per, rounds)
    units = workflows * per
    grid = Grid(f"dbos_steps: {backend}, {workflows} workflows × {per} steps / writes, {rounds} rounds",
                ("figure", *WAYS))
    for label, phase in (("step", "A"), ("stream write", "B")):
        figures = {way: per_unit(samples[way], phase, units) for way in WAYS}
        grid.add(f"CPU per {label}, process (ms)", *(f"{figures[w]['process_ms']:.3f}" for w in WAYS))
        if backend == "postgres":
            grid.add(f"CPU per {label}, server (ms)", *(f"{figures[w]['server_ms']:.3f}" for w in WAYS))
            grid.add(f"CPU per {label}, both (ms)",
                     *(f"{figures[w]['process_ms'] + figures[w]['server_ms']:.3f}" for w in WAYS))
            grid.add(f"statements per {label} (sent)", *(
                f"{sum(n for k, n in figures[w]['statements'].items() if not k.startswith('nested')):.2f}"
                for w in WAYS))
            for k in sorted({k for w in WAYS for k in figures[w]["statements"]}):
                grid.add(f"  {k}", *(f"{figures[w]['statements'].get(k, 0.0):.2f}" for w in WAYS))
    walls = {w: sum(s["wall_s"] for p in PHASES for s in samples[w][p]) for w in WAYS}
    grid.note(f"wall of the measured phases: {', '.join(f'{w} {walls[w]:.1f} s' for w in WAYS)}; {machine()}")
    grid.note("a step's figures include its share of the workflow's own (its status row at the end is in Z)")
    return grid.render()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflows", type=int, default=20, help="concurrent workflows per phase")
    parser.add_argument("--steps", type=int, default=25, help="trivial steps (or stream writes) per workflow")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds on Postgres (after one warm-up)")
    parser.add_argument("--sqlite-rounds", type=int, default=2, help="measured rounds on SQLite (the reference)")
    parser.add_argument("--backend", choices=("postgres", "sqlite", "both"), default="both")
    parser.add_argument("--serve", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.url, args.workflows, args.steps))
        return
    for backend in ("postgres", "sqlite") if args.backend == "both" else (args.backend,):
        began = time.perf_counter()
        rounds = args.rounds if backend == "postgres" else args.sqlite_rounds
        print(report(backend, args.workflows, args.steps, rounds), flush=True)
        print(f"  ({backend}: {time.perf_counter() - began:.1f} s)\n", flush=True)


if __name__ == "__main__":
    main()

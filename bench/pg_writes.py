"""The log's writes on Postgres under load: what a debate's writes cost while the worker's event loop is busy.

`debates` simulated debates at once each write the hot-path sequence of a debate's run through one
`PostgresLog` (claim_request, admit, create_debate, set_message for the root; per round take_interjections,
add_turn and set_message per seat, a summary's add_call; then add_notice, four judge add_calls, set_verdict,
set_message, finish_debate: 24 writes for 2 rounds), with a think time between writes (the models streaming),
while CPU-bound tasks keep the same event loop busy (a worker streaming a hundred debates): by default they
take half the loop's time and the writes' own CPU comes on top (~85 % in all); `--pause-ms 200` saturates
it. The load runs in a process of its own (bench/pg_writes_load.py), one per run, each on a fresh database
of one server (the tests' embedded PostgreSQL, bench.pg). The variants are interleaved in one run:

- `after`: this tree, a write's statements sent in one pipeline;
- `after, waited`: this tree with each statement waited for in turn, BEGIN and COMMIT included (the
  transport before pipelining, over this tree's SQL);
- `before`: with `--before DIR`, another checkout of the project (`git worktree add DIR <commit>`), its code.

Printed per variant: the round trips of each kind of write (counted by a proxy, tests/pg_round_trips.py,
for one debate's writes made one at a time on an idle loop before the load), the p50 / p99 of a write's
latency and of its wait for a pooled connection, throughput, a debate's wall time ÷ its think time, the
loop's lag (a `sleep(0)` every 20 ms), and the log's backends idle in a transaction or active
(pg_stat_activity sampled every 50 ms).

`python -m bench.pg_writes [--smoke] [--debates N] [--repeats K] [--pause-ms MS] [--before DIR]`; default ~45 s,
`--smoke` ~6 s (two children's start-ups and migrations: too slow for `make bench-smoke`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench.common import Grid, median, percentile
from bench.pg import BenchPostgres, exit_cleanly_on_sigterm
from tests.pg_round_trips import RoundTrips

ROOT = Path(__file__).resolve().parent.parent
LOAD = Path(__file__).with_name("pg_writes_load.py")
CHILD = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
KINDS = ("add_call", "add_turn", "take_interjections", "add_notice", "set_message", "set_verdict", "finish_debate",
         "create_debate", "claim_request", "admit")


@dataclass(frozen=True)
class Variant:
    name: str
    tree: Path
    mode: str  # "default": the tree as it is; "waited": each statement waited for (pg_writes_load.open_log)


@dataclass
class Measured:
    trips: dict[str, list[int]] = field(default_factory=dict)  # per kind of write, each calibration write's
    results: list[dict[str, Any]] = field(default_factory=list)  # one per run
    backends: list[tuple[float, float]] = field(default_factory=list)  # (idle in transaction, active), per run
    server_cpu_s: list[float] = field(default_factory=list)  # Postgres's, during each run's load


class Sampler(threading.Thread):
    """pg_stat_activity of one database every 50 ms: the mean number of client backends in each state."""

    def __init__(self, url: str) -> None:
        super().__init__(name="pg-writes-sampler", daemon=True)
        self.url = url
        self.samples = 0
        self.states: dict[str, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.done.wait(0.05):
                found = conn.execute("select state, count(*) from pg_stat_activity where datname = current_database()"
                                     " and pid <> pg_backend_pid() and backend_type = 'client backend'"
                                     " group by state").fetchall()
                self.samples += 1
                for state, count in found:
                    self.states[state] = self.states.get(state, 0) + count

    def mean(self, state: str) -> float:
        return self.states.get(state, 0) / self.samples if self.samples else 0.0


def run_once(server: BenchPostgres, trips: RoundTrips, variant: Variant, settings: dict[str, Any],
             measured: Measured) -> None:
    url = server.create_database("pgwrites")
    sampler = Sampler(url)
    env = os.environ | {"PYTHONPATH": str(variant.tree)}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-pg-writes-") as empty:  # the child's sys.path[0]
            child = subprocess.Popen([sys.executable, "-c", CHILD, str(LOAD)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=empty, env=env)
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps(settings | {"url": url, "calibrate_url": trips.through(url),
                                                     "mode": variant.mode}) + "\n")
            child.stdin.flush()
            mark, server_began = 0, 0.0
            for line in child.stdout:
                told = json.loads(line)
                if "result" in told:
                    measured.results.append(told["result"])
                    break
                if "before" in told:
                    mark = trips.count
                elif "after" in told:
                    measured.trips.setdefault(told["after"], []).append(trips.count - mark)
                elif "load" in told:
                    sampler.start()
                    server_began = server.server_cpu_s()
                elif "loaded" in told:
                    measured.server_cpu_s.append(server.server_cpu_s() - server_began)
                child.stdin.write("\n")
                child.stdin.flush()
            if child.wait() != 0:
                raise RuntimeError(f"the load of {variant.name} exited {child.returncode}")
    finally:
        sampler.done.set()
        if sampler.is_alive():
            sampler.join()
        server.drop_database(url)
    measured.backends.append((sampler.mean("idle in transaction"), sampler.mean("active")))


def _pooled(results: list[dict[str, Any]], key: str) -> list[float]:
    return [v for r in results for v in r[key]]


def _writes(results: list[dict[str, Any]], kind: str | None = None) -> list[float]:
    return [v for r in results for k, values in r["writes"].items() if kind in (None, k) for v in values]


def _pq(values: list[float]) -> str:
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


def render(variants: list[Variant], measured: dict[str, Measured], settings: dict[str, Any],
           load: tuple[float, float]) -> Grid:
    grid = Grid(f"pg_writes — {settings['debates']} debates at once, {settings['rounds']} rounds each, on one "
                f"PostgresLog; {settings['busy']} busy tasks on the same loop ({settings['slice_ms']} ms of CPU, "
                f"then ~{settings['pause_ms']} ms)", ("figure", *(v.name for v in variants)))
    m = [measured[v.name] for v in variants]
    for kind in KINDS:
        grid.add(f"round trips: {kind}", *(f"{median(x.trips.get(kind, [])):g}" for x in m))
    grid.add("round trips: one debate's writes", *(f"{sum(sum(t) for t in x.trips.values()) / len(x.results):g}"
                                                   for x in m))
    grid.add("write latency p50 / p99, ms", *(_pq(_writes(x.results)) for x in m))
    grid.add("  each run's p50, ms", *(", ".join(f"{percentile(_writes([r]), 50):.1f}" for r in x.results) for x in m))
    for kind in ("add_call", "add_turn", "set_message", "admit"):
        grid.add(f"  {kind} p50 / p99, ms", *(_pq(_writes(x.results, kind)) for x in m))
    grid.add("pool wait p50 / p99, ms", *(_pq(_pooled(x.results, "pool_wait_ms")) for x in m))
    grid.add("throughput, writes/s", *(f"{median([len(_writes([r])) / r['wall_s'] for r in x.results]):.0f}"
                                       for x in m))
    grid.add("a debate's wall ÷ its think time, p50", *(f"{median(_pooled(x.results, 'stretch')):.2f}" for x in m))
    grid.add("loop lag p50 / p99, ms", *(_pq(_pooled(x.results, "lag_ms")) for x in m))
    grid.add("the load's CPU ÷ its wall (busy tasks' share)", *(
        f"{median([r['cpu_s'] / r['wall_s'] for r in x.results]):.0%}"
        f" ({median([r['busy_cpu_s'] / r['wall_s'] for r in x.results]):.0%})" for x in m))
    grid.add("CPU per write, ms: the load's (busy tasks' out) / Postgres's", *(
        f"{median([(r['cpu_s'] - r['busy_cpu_s']) / len(_writes([r])) * 1000 for r in x.results]):.2f} / "
        f"{median([cpu / len(_writes([r])) * 1000 for r, cpu in zip(x.results, x.server_cpu_s, strict=True)]):.2f}"
        for x in m))
    grid.add("backends idle in transaction / active", *(
        f"{median([b[0] for b in x.backends]):.1f} / {median([b[1] for b in x.backends]):.1f}" for x in m))
    grid.add("failed writes", *(str(sum(r["failed"] for r in x.results)) for x in m))
    for x in m:
        for r in x.results:
            for error in r["errors"]:
                grid.note(f"a write failed: {error}")
    grid.note(f"{settings['repeats']} run(s) per variant, interleaved; latencies pooled over them; "
              f"load average {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    return grid


def measure(variants: list[Variant], settings: dict[str, Any]) -> Grid:
    server = BenchPostgres.start()
    began_load = os.getloadavg()[0]
    measured = {v.name: Measured() for v in variants}
    try:
        with RoundTrips.running(server.server.url()) as trips:
            for _ in range(settings["repeats"]):
                for variant in variants:
                    run_once(server, trips, variant, settings, measured[variant.name])
    finally:
        server.stop()
    return render(variants, measured, settings, (began_load, os.getloadavg()[0]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pg_writes", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="4 debates of 1 round, 4 busy tasks, one run each")
    parser.add_argument("--debates", type=int, help="simulated debates at once (default 100)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--think-ms", type=float, default=100.0, help="mean pause between a debate's writes")
    parser.add_argument("--busy", type=int, help="CPU-bound tasks on the load's loop (default 100)")
    parser.add_argument("--slice-ms", type=float, default=1.5, help="CPU each busy task burns between pauses")
    parser.add_argument("--pause-ms", type=float, default=300.0,
                        help="each busy task's mean pause (300: the busy tasks take half the loop; 200: ~3/4, which"
                             " with the writes' own CPU saturates it)")
    parser.add_argument("--repeats", type=int, help="runs of each variant, interleaved (default 2)")
    parser.add_argument("--before", type=Path, metavar="DIR", help="also run the checkout in DIR, as `before`")
    args = parser.parse_args(argv)
    exit_cleanly_on_sigterm()
    settings = {"debates": args.debates or (4 if args.smoke else 100), "rounds": 1 if args.smoke else args.rounds,
                "think_ms": 10.0 if args.smoke else args.think_ms, "busy": args.busy or (4 if args.smoke else 100),
                "slice_ms": args.slice_ms, "pause_ms": 20.0 if args.smoke else args.pause_ms,
                "repeats": args.repeats or (1 if args.smoke else 2), "seed": 20240607}
    variants = [Variant("after", ROOT, "default"), Variant("after, waited", ROOT, "waited")]
    if args.before is not None:
        variants.append(Variant("before", args.before.resolve(), "default"))
    print(measure(variants, settings).render())


if __name__ == "__main__":
    main()

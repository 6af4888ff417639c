"""CPU per model call of two builds, interleaved in one run (issue 24): `python -m bench.cpu_compare
--tree before=/path/to/old/checkout --tree after=. --backend sqlite,postgres --workers 1,2 --debates 100`.

Each build runs as bench.durable runs the product (subprocesses: `debate serve --slack --front-only` and
`debate worker` processes, the LLM peer in a process of its own), its code taken from its tree through
PYTHONPATH. The measurements alternate between the builds, every other repeat in the reverse order (before,
after; after, before; …), so whatever else the shared machine runs weighs on both alike, and so does what a
measurement leaves behind for the next (issue 24 round 18: in A B A B order the second build measured higher in
6 of 6 Postgres pairs of one run, the probe slower in 5 of them). CPU is process time (user + sys from /proc), not wall:
the front's and the workers' summed, and Postgres's beside it. A probe (bench/machine_speed.py) times a fixed
piece of Python beside each measurement: how fast the machine ran meanwhile. `--together` runs the builds at
the same time instead, each with its own processes, peers and database: the machine's swings then weigh on
both at once, and the figure is the product's CPU alone (one Postgres server serves both). `--profile` keeps
each process's cProfile (main-thread CPU over the measuring window) under `--keep DIR` and prints the top
functions by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import bench.served
from bench.common import Table, median, percentile
from bench.durable import Level, measure_ack, measure_level
from bench.durable_pg import plan_for
from bench.machine_speed import SpeedProbe
from bench.pg import BenchPostgres


def _tree(value: str) -> tuple[str, Path]:
    name, _, path = value.partition("=")
    return name, Path(path).resolve()


def _floor_s(level: Level, *, database: bool = True, peer: bool = False) -> float:
    """The CPU floor: calls × CPU per call ÷ cores (the processes' CPU over the window, spread on every core),
    with Postgres's CPU in it, as in the issue's CPU per call (it runs on the same cores); `database=False`: the
    front's and workers' alone (SQLite's CPU is theirs either way). `peer`: the LLM peer's CPU too, which the
    bench runs on the same cores where a deployment's models run elsewhere (at 1,000 debates on SQLite, 10 s
    of it beside the product's 34 in issue 24 round 19), so the wall cannot come under this."""
    cpu = level.cpu_s + ((level.pg_cpu_s or 0.0) if database else 0.0) + (level.peer_cpu_s if peer else 0.0)
    return cpu / (os.cpu_count() or 1) or float("nan")


def top_functions(path: Path, top: int) -> list[tuple[str, float, float]]:
    """(function, own seconds, cumulative seconds) of a cProfile file, by own time."""
    stats = pstats.Stats(str(path))
    rows = [(f"{Path(f).name}:{line}({name})", tt, ct)
            for (f, line, name), (_, _, tt, ct, _) in stats.stats.items()]  # type: ignore[attr-defined]
    return sorted(rows, key=lambda r: -r[1])[:top]


async def run(trees: list[tuple[str, Path]], backends: list[str], workers: list[int], debates: int, repeats: int,
              within: float, profile: bool, keep: Path | None,
              caps: list[int | None] | None = None) -> Table:
    plan, rounds = plan_for(False)
    table = Table(f"cpu_compare — CPU per model call, builds interleaved ({debates} debates, challenge {rounds} "
                  f"rounds, peer {plan.latency_s:g} s, {plan.tokens_per_s:g} tokens/s)")
    root = keep or Path(tempfile.mkdtemp(prefix="bench-cpu-compare-"))
    root.mkdir(parents=True, exist_ok=True)
    server = BenchPostgres.start() if "postgres" in backends else None
    per: dict[tuple[str, str, int], list[tuple[float, float, int, float, float | None, float, float]]] = \
        defaultdict(list)
    variants = [(name, tree, cap) for name, tree in trees for cap in (caps or [None])]
    try:
        for rep in range(repeats):
            for backend in backends:
                for count in workers:
                    # every other repeat in the reverse order (A B, B A, …): a measurement leaves work behind it
                    # (its database dropped, the server's writes flushed) that weighs on the next one
                    for base, tree, cap in (variants if rep % 2 == 0 else variants[::-1]):
                        name = base if cap is None else f"{base}@{cap}"  # @N: each worker runs ≤ N at once
                        bench.served.ROOT = tree  # the product's code for this build (PYTHONPATH)
                        url = server.create_database(f"{name}_{count}") if server and backend == "postgres" else None
                        label = f"-{name}-{backend}-{rep}"
                        try:
                            async with SpeedProbe() as probe:  # the machine's speed meanwhile
                                level = await measure_level(count, debates, root, plan, rounds, database_url=url,
                                                            server=server if url else None, within=within,
                                                            spread=True, profile=profile, warm=count, label=label,
                                                            cap=cap)
                        except Exception as exc:  # a shared machine: a process that never got ready
                            print(f"{label}: did not run: {exc}", flush=True)
                            continue
                        floor, with_peer = level.wall_s / _floor_s(level), level.wall_s / _floor_s(level, peer=True)
                        print(f"{label}: {level.cpu_ms_per_call:.1f} ms/call + pg {level.pg_cpu_ms_per_call:.1f}, "
                              f"probe {probe.median_ms or float('nan'):.3f} ms, "
                              f"{level.calls} calls, {level.completed}/{debates} completed, "
                              f"ratio {level.ratio:.2f}, wall {level.wall_s:.0f} s ÷ CPU floor "
                              f"{_floor_s(level):.0f} s = {floor:.2f} (without the "
                              f"database's CPU {level.wall_s / _floor_s(level, database=False):.2f}; with the "
                              f"LLM peer's {level.peer_cpu_s:.1f} s {with_peer:.2f}), "
                              f"threads {level.threads}", flush=True)
                        per[(backend, name, count)].append((level.cpu_ms_per_call, level.pg_cpu_ms_per_call if url
                                                            else 0.0, level.completed, level.ratio, probe.median_ms,
                                                            floor, with_peer))
                        for proc, split in level.threads.items():
                            table.add(f"  {backend} · {count} w · {name} · run {rep}: {proc} CPU loop / other "
                                      "threads", f"{split.get('main thread', 0):.1f} / "
                                      f"{split.get('other threads', 0):.1f} s")
                        if url and server:
                            server.drop_database(url)
    finally:
        if server is not None:
            server.stop()
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    for (backend, name, count), runs in sorted(per.items()):
        bot = median([r[0] for r in runs])
        pg = median([r[1] for r in runs])
        total = f"{bot:.1f}" + (f" + Postgres {pg:.1f}" if backend == "postgres" else "")
        workers = f"front + {count} worker{'s' if count > 1 else ''}"
        table.add(f"{backend} · {workers} · {name}: CPU per call",
                  f"{total} ms (runs: {', '.join(f'{r[0]:.1f}' for r in runs)}; completed "
                  f"{', '.join(str(r[2]) for r in runs)}/{debates}; wall ÷ critical path "
                  f"{', '.join(f'{r[3]:.2f}' for r in runs)}; wall ÷ CPU floor "
                  f"{', '.join(f'{r[5]:.2f}' for r in runs)}, with the LLM peer's CPU "
                  f"{', '.join(f'{r[6]:.2f}' for r in runs)})")
        table.add(f"{backend} · {workers} · {name}: the machine-speed probe meanwhile",
                  f"{', '.join(f'{r[4]:.3f}' if r[4] else '-' for r in runs)} ms (its fixed work, median of a run)")
    if profile and keep is not None:
        add_profiles(table, keep)
    return table


def add_profiles(table: Table, root: Path) -> None:
    for prof in sorted(root.glob("*/*.prof")):
        table.add(f"profile {prof.parent.name}/{prof.stem}", "")
        for fn, own, cum in top_functions(prof, 12):
            table.add(f"    {fn[:90]}", f"{own:.2f} s own, {cum:.2f} s cum")


async def run_together(trees: list[tuple[str, Path]], backends: list[str], workers: list[int], debates: int,
                       repeats: int, within: float) -> Table:
    """The builds at the same time, each its own deployment, LLM peer and database, so that the shared machine's
    swings weigh on both at once. Only the product's processes' CPU: one Postgres server serves both."""
    plan, rounds = plan_for(False)
    table = Table(f"cpu_compare --together — CPU per model call of the product's processes, the builds run at "
                  f"once ({debates} debates each, challenge {rounds} rounds, peer {plan.latency_s:g} s)")
    root = Path(tempfile.mkdtemp(prefix="bench-cpu-together-"))
    server = BenchPostgres.start() if "postgres" in backends else None
    per: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    try:
        for rep in range(repeats):
            for backend in backends:
                for count in workers:
                    urls = {name: server.create_database(f"{name}_{count}") if server and backend == "postgres"
                            else None for name, _tree in trees}
                    try:
                        async with SpeedProbe() as probe:
                            levels = await asyncio.gather(*(
                                measure_level(count, debates, root, plan, rounds, database_url=urls[name],
                                              within=within, spread=True, warm=count, code=tree,
                                              label=f"-{name}-{backend}-{count}-{rep}-together")
                                for name, tree in trees))
                    finally:
                        for url in urls.values():
                            if url and server:
                                server.drop_database(url)
                    ms = {name: level.cpu_ms_per_call for (name, _), level in zip(trees, levels, strict=True)}
                    print(f"{backend} +{count} run {rep}: " + ", ".join(f"{n} {v:.1f}" for n, v in ms.items())
                          + f" ms/call; probe {probe.median_ms or float('nan'):.3f} ms; completed "
                          + ", ".join(f"{level.completed}/{debates}" for level in levels), flush=True)
                    per[(backend, count)].append(ms)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    first = trees[0][0]
    for (backend, count), runs in sorted(per.items()):
        for name, _tree in trees:
            table.add(f"{backend} · front + {count} · {name}: CPU per call (median; runs)",
                      f"{median([r[name] for r in runs]):.1f} ms ({', '.join(f'{r[name]:.1f}' for r in runs)})")
            if name != first:
                ratios = [r[name] / r[first] for r in runs]
                table.add(f"{backend} · front + {count} · {name} ÷ {first}, run by run (median; lower in)",
                          f"{median(ratios):.3f} ({sum(1 for x in ratios if x < 1)} of {len(ratios)})")
    return table


async def run_ack(trees: list[tuple[str, Path]], backends: list[str], workers: int, repeats: int) -> Table:
    """Slack ack latency (bench.durable's 150 commands in 3 batches while the earlier debates stream), the
    builds interleaved."""
    table = Table(f"cpu_compare --ack — Slack ack with debates streaming, front + {workers} workers, interleaved")
    root = Path(tempfile.mkdtemp(prefix="bench-ack-compare-"))
    server = BenchPostgres.start() if "postgres" in backends else None
    try:
        for rep in range(repeats):
            for backend in backends:
                for name, tree in trees:
                    bench.served.ROOT = tree
                    url = server.create_database(f"ack_{name}") if server and backend == "postgres" else None
                    try:
                        ack = await measure_ack(workers, root, False, database_url=url,
                                                label=f"-{name}-{backend}-{rep}")
                    except Exception as exc:
                        print(f"{name} {backend} {rep}: did not run: {exc}", flush=True)
                        continue
                    finally:
                        if url and server:
                            server.drop_database(url)
                    ok = ack.statuses.count(200)
                    row = (f"p50 {percentile(ack.ms, 50):.1f} / p99 {percentile(ack.ms, 99):.1f} ms "
                           f"({ok}/{len(ack.statuses)} answered 200; while streaming p99 "
                           f"{percentile(ack.tail_ms, 99):.1f} ms; front CPU {ack.front_cpu_s:.2f} s)")
                    print(f"{backend} {name} run {rep}: {row}", flush=True)
                    table.add(f"{backend} · {name} · run {rep}: ack", row)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=_tree, action="append", required=True, help="NAME=PATH of a source tree")
    parser.add_argument("--backend", default="sqlite", help="sqlite, postgres or both (comma-separated)")
    parser.add_argument("--workers", default="1", help="worker counts, comma-separated")
    parser.add_argument("--debates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--within", type=float, default=300.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--cap", default="", help="worker concurrencies to try, comma-separated (`none`: "
                        "each worker's share of the debates); each tree runs once per cap")
    parser.add_argument("--ack", action="store_true", help="Slack ack latency instead (front + first --workers)")
    parser.add_argument("--together", action="store_true",
                        help="run the builds at the same time, not in turn (the product's CPU only)")
    args = parser.parse_args()
    if args.together:
        print(asyncio.run(run_together(args.tree, args.backend.split(","), [int(w) for w in args.workers.split(",")],
                                       args.debates, args.repeats, args.within)).render())
        return
    if args.ack:
        print(asyncio.run(run_ack(args.tree, args.backend.split(","), int(args.workers.split(",")[0]),
                                  args.repeats)).render())
        return
    table = asyncio.run(run(args.tree, args.backend.split(","), [int(w) for w in args.workers.split(",")],
                            args.debates, args.repeats, args.within, args.profile, args.keep,
                            [None if c == "none" else int(c) for c in args.cap.split(",")] if args.cap else None))
    print(table.render())


if __name__ == "__main__":
    main()

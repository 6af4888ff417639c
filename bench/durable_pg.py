"""Durable debates on Postgres (issue 12): throughput with 1, 2 and 4 worker processes, and Slack ack.

The product runs as in bench.durable (subprocesses configured only by environment: `debate serve --slack
--front-only` and `debate worker --name wN` processes), with DEBATE_DATABASE_URL pointing at a database
of a real PostgreSQL 18 server started here (bench.pg): the log and DBOS's system database both live
there, a fresh database per measurement. The LLM peer is bench.llm_peer in a process of its own.

1. Ack: 150 signed `/debate` commands to one front in 3 batches of 50, with two workers streaming the
   earlier debates back through Postgres to that front (target p99 ≤ 50 ms).
2. Throughput: N concurrent challenge debates (2 rounds) through the front; 1, 2 and 4 workers, each
   taking at most its share (`--concurrency` N ÷ workers) so the debates split evenly. Per level: wall ÷
   critical path (median over debates; a debate still running at the deadline counts as elapsed ÷ ideal
   path, a lower bound, and the median over the completed ones is shown too; one warm-up debate per worker
   runs first, off the clock, so the workers have imported the providers' SDKs), debates completed by the
   deadline, and CPU per model call summed over the front and the workers (/proc, from the first POST to
   the end), with the Postgres server's CPU beside it.

Each level also shows each process's CPU split into its event-loop thread and its other threads (DBOS's
pollers and the pool its system-database calls run on). `--statements` adds the system-database and log
queries per debate by kind and table (pg_stat_statements); `--profile` adds those and a cProfile of each
process's main thread over the measuring window (CPU time, grouped by package, with its top functions;
the profiler roughly doubles the main threads' CPU, so read it for shares, not totals).
"""

from __future__ import annotations

import asyncio
import pstats
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import Table
from bench.durable import (
    ACK_TARGET_MS,
    Level,
    Unavailable,
    add_ack,
    add_level,
    measure_ack,
    measure_level,
)
from bench.llm_peer import ReplyPlan
from bench.pg import BenchPostgres, PostgresUnavailable, exit_cleanly_on_sigterm

NAME = "durable_pg"
WORKERS = (1, 2, 4)
DEADLINE_S = 120.0  # per level: what is still running then is cut off (and reported as such)
ACK_WORKERS = 2

_TABLE = re.compile(r'(?:from|into|update|join)\s+(?:"?dbos"?\.)?"?(\w+)"?', re.IGNORECASE)
_PACKAGES = ("dbos", "sqlalchemy", "psycopg", "psycopg_pool", "aiohttp", "openai", "anthropic", "httpx", "pydantic",
             "slack_bolt", "slack_sdk", "orchestrator", "bots", "asyncio", "json", "logging", "selectors")


def plan_for(smoke: bool) -> tuple[ReplyPlan, int]:
    if smoke:
        return ReplyPlan(latency_s=0.05, tokens_per_s=1000.0, debater_words=30, judge_words=60, summary_words=30), 2
    return ReplyPlan(latency_s=0.2, tokens_per_s=200.0, debater_words=100, judge_words=100, summary_words=100), 2


_KNOWN: tuple[tuple[str, str], ...] = (  # (fragment of the normalized SQL, what it is), first match wins
    ("left outer join dbos.streams", "read stream entries (a front's reader)"),
    ("owner_xid from dbos.workflow_status", "lock the workflow row (each step record / stream write)"),
    ("from only", "foreign-key check (log inserts)"),
    ("pg_notify", "notify (coalesced stream / event wake-ups)"),
    ("insert into dbos.streams", "insert stream entry"),
    ("insert into dbos.operation_outputs", "insert step result"),
    ("from dbos.operation_outputs", "look up a step's recorded result"),
    ("select dbos.workflow_status.status from dbos.workflow_status where", "workflow status check (per step)"),
    ("from dbos.queues", "queue poll: read the queue's settings"),
)


def query_kind(query: str) -> str:
    """What a statement is: a known DBOS or log operation, else '<verb> <table>' (the first table named)."""
    text = " ".join(query.split()).lower()
    for fragment, kind in _KNOWN:
        if fragment in text:
            return kind
    verb = text.split(" ", 1)[0]
    if verb == "with":
        verb = next((v for v in ("insert", "update", "delete", "select") if f" {v} " in text), "with")
    found = _TABLE.search(text)
    table = found.group(1) if found else "-"
    if "dbos." not in text and '"dbos"' not in text and verb in ("insert", "update", "delete", "select"):
        table = f"log.{table}" if found else table
    return f"{verb} {table}"


def statements_per_debate(rows: list[dict[str, Any]], debates: int) -> list[tuple[str, float, float]]:
    """(kind, calls per debate, ms per debate), largest call count first."""
    calls: dict[str, float] = defaultdict(float)
    ms: dict[str, float] = defaultdict(float)
    for row in rows:
        kind = query_kind(row["query"])
        if kind.startswith(("begin", "commit", "rollback", "set", "show", "select pg_stat", "listen")):
            kind = kind.split(" ", 1)[0]
        calls[kind] += row["calls"]
        ms[kind] += row["ms"]
    per = max(1, debates)
    return sorted(((k, calls[k] / per, ms[k] / per) for k in calls), key=lambda r: -r[1])


def profile_by_package(path: Path, top: int = 12) -> tuple[float, list[tuple[str, float]], list[tuple[str, float]]]:
    """From a cProfile file (main-thread CPU): total seconds, (package, own seconds) and the top functions."""
    stats = pstats.Stats(str(path))
    by_package: dict[str, float] = defaultdict(float)
    functions: list[tuple[str, float]] = []
    total = 0.0
    for (filename, line, name), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        package = _package(filename)
        by_package[package] += tottime
        functions.append((f"{package}:{Path(filename).name}:{line}({name})", tottime))
    functions.sort(key=lambda f: -f[1])
    return total, sorted(by_package.items(), key=lambda p: -p[1]), functions[:top]


def _package(filename: str) -> str:
    if filename.startswith("<") or filename == "~":
        return "builtins (C)"
    parts = Path(filename).parts
    if "site-packages" in parts:
        after = parts[parts.index("site-packages") + 1:]
        return after[0].removesuffix(".py") if after else "?"
    for package in _PACKAGES:
        if package in parts:
            return package
    return "stdlib" if "python3.11" in filename else Path(filename).parent.name


def add_threads(table: Table, level: Level, label: str) -> None:
    """Each process's CPU in the window: its event-loop thread, and its other threads (in a worker or a front
    these are DBOS's: the queue poller, the notification listener, and the pool its system-database calls
    run on)."""
    n = level.concurrency
    for proc, split in level.threads.items():
        table.add(f"  CPU {proc}: event-loop thread / other threads @{n} · {label}",
                  f"{split.get('main thread', 0):.1f} / {split.get('other threads', 0):.1f} s")


def add_profile(table: Table, level: Level, label: str, statements: list[dict[str, Any]] | None) -> None:
    n = level.concurrency
    if statements is not None:
        per = statements_per_debate(statements, level.logged)
        total_calls = sum(c for _, c, _ in per)
        total_ms = sum(m for _, _, m in per)
        table.add(f"  system + log queries per debate @{n} · {label}",
                  f"{total_calls:.0f} ({total_ms:.0f} ms in the server)")
        for kind, calls, ms in per[:14]:
            table.add(f"    {kind}", f"{calls:.1f} / debate, {ms:.1f} ms")
    if level.workdir is None:
        return
    for prof in sorted(level.workdir.glob("*.prof")):
        try:
            total, packages, functions = profile_by_package(prof)
        except (OSError, EOFError, TypeError, ValueError):
            continue
        table.add(f"  cProfile {prof.stem} (main thread CPU) @{n} · {label}", f"{total:.1f} s")
        table.add("    by package (own time)", ", ".join(f"{p} {s / total:.0%}" for p, s in packages[:8] if total))
        for name, seconds in functions[:8]:
            table.add(f"    {name[:100]}", f"{seconds:.2f} s")


async def run(smoke: bool, *, levels: list[int] | None = None, workers: tuple[int, ...] | None = None,
              within: float | None = None, ack: bool = True, profile: bool = False,
              statements: bool = False, keep: bool = False) -> Table:
    statements = statements or profile
    plan, rounds = plan_for(smoke)
    levels = levels if levels is not None else ([3] if smoke else [1, 100, 1000])
    workers = workers if workers is not None else ((1,) if smoke else WORKERS)
    ack = ack and not smoke  # smoke: bench.durable measures the same ack path on SQLite
    within = within or (60.0 if smoke else DEADLINE_S)
    table = Table(f"durable_pg — one front, 1/2/4 workers, all on Postgres (DEBATE_DATABASE_URL; challenge {rounds} "
                  f"rounds, peer {plan.latency_s:g} s, {plan.tokens_per_s:g} tokens/s, in its own process; "
                  f"deadline {within:.0f} s per level)")
    try:
        server = await asyncio.to_thread(BenchPostgres.start, statements=statements)
    except PostgresUnavailable as exc:
        table.add("Postgres", "unavailable", "", "miss")
        table.note(str(exc))
        return table
    root = Path(tempfile.mkdtemp(prefix="bench-durable-pg-"))
    try:
        if ack:
            url = await asyncio.to_thread(server.create_database, "ack")
            try:
                result = await measure_ack(ACK_WORKERS, root, smoke, database_url=url, label="-pg")
                add_ack(table, result, f"front + {ACK_WORKERS} workers, Postgres", target=True)
            except Unavailable as exc:
                table.add("ack p99", "unavailable", f"≤ {ACK_TARGET_MS:g} ms", "miss")
                table.note(str(exc))
            finally:
                await asyncio.to_thread(server.drop_database, url)
        for count in workers:
            label = f"{count} worker{'s' if count > 1 else ''}"
            for n in levels:
                url = await asyncio.to_thread(server.create_database, f"w{count}_n{n}")
                try:
                    level = await measure_level(count, n, root, plan, rounds, database_url=url, server=server,
                                                within=within, spread=True, profile=profile, warm=count,
                                                label="-pg", graceful=not smoke)
                    add_level(table, level, label, target=True, within=within)
                    add_threads(table, level, label)
                    if statements:
                        rows = await asyncio.to_thread(server.statements, url)
                        add_profile(table, level, label, rows)
                except Unavailable as exc:
                    table.add(f"wall ÷ critical path @{n} · {label}", "unavailable", "", "miss")
                    table.note(str(exc))
                finally:
                    await asyncio.to_thread(server.drop_database, url)
    finally:
        await asyncio.to_thread(server.stop)
        if keep:
            table.note(f"kept: each process's stdout and stderr under {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    table.note("wall = created_at → finished_at in the log; critical path = the peer-measured durations of the "
               "debate's sequential calls; each worker runs --concurrency N ÷ workers; CPU per call counts every "
               "model call the peer answered in full in the window, over the front's and workers' CPU")
    table.note("Postgres: the tests' embedded PostgreSQL 18 (shared_buffers 128 MB, synchronous_commit off) on "
               "this machine: its CPU competes with the product's for the same cores")
    return table


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few seconds: 3 short debates on 1 worker, no ack")
    parser.add_argument("--levels", type=lambda v: [int(x) for x in v.split(",") if x and x != "none"],
                        help="concurrent debates per level, comma-separated (default 1,100,1000; none: ack only)")
    parser.add_argument("--workers", type=lambda v: tuple(int(x) for x in v.split(",")),
                        help="worker process counts, comma-separated (default 1,2,4)")
    parser.add_argument("--within", type=float, help=f"deadline per level in seconds (default {DEADLINE_S:g})")
    parser.add_argument("--no-ack", action="store_true", help="skip the Slack ack measurement")
    parser.add_argument("--keep", action="store_true", help="keep the processes' output (printed where) to read errors")
    parser.add_argument("--profile", action="store_true",
                        help="per level: queries per debate (pg_stat_statements) and a cProfile of each process")
    parser.add_argument("--statements", action="store_true",
                        help="per level: queries per debate (pg_stat_statements), without cProfile's overhead")
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    print(asyncio.run(run(args.smoke, levels=args.levels, workers=args.workers, within=args.within,
                          ack=not args.no_ack, profile=args.profile, statements=args.statements,
                          keep=args.keep)).render())

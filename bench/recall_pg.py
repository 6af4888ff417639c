"""5b. Recall on Postgres beside SQLite: the same generated log, the same queries, each through its real DebateLog.

The log is bench.recall's (same seed: the same 100,000 turns of Zipf prose, the same query mix of rare,
mid-frequency, common and two-word queries). SQLite: loaded as bench.recall loads it, searched through
`Store` (its writer thread). Postgres: a real PostgreSQL 18 server started here (bench.pg, the tests'
embedded server), the schema created by `PostgresLog` as the bots create it, the rows bulk-loaded with
COPY in one transaction (the generated `tsvector` columns and GIN indexes doing their work as in
production), then `VACUUM ANALYZE` (what autovacuum does to a table after a bulk load: planner statistics
and the visibility map), and searched through `PostgresLog.search` (its connection pool). Both answer
from a warm cache (one warm-up query each; the data set fits in memory).

Also shown: how far the two rankers agree (bm25 over SQLite FTS5, `ts_rank` on Postgres; each ranks the
newest 1,000 matches per table), as the share of one's top-20 debates the other also returned, and
sequential `add_turn` cost through each log (the same turn again: after the first, each finds its row).

Postgres is also searched with the query of before issue 24 (bench/recall_pg_today.py), each query
through both in turn, on the same loaded log: the before/after figure, and the queries whose hits
differ between the two; and scoped to a channel, as `/debate search` is.

`--keep DIR` keeps both logs in DIR (the Postgres cluster stopped, the SQLite file, the queries) and a later
run with the same DIR searches them again without generating or loading anything: for EXPLAIN work on the
loaded log between runs. The turn the write figures add is deleted again after them, so every run searches
the same rows. A kept run's timings are not a fresh run's: its files are read back from wherever the OS left
them (a fresh run searches what it has just written, in the OS's page cache).
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg

from bench.common import Grid, median, percentile
from bench.pg import BenchPostgres, PostgresUnavailable, exit_cleanly_on_sigterm
from bench.recall import (
    TARGET_P99_MS,
    GeneratedLog,
    Prose,
    Searched,
    _queries,
    _vocabulary,
    build_sqlite,
    generate,
    sizes,
    time_searches,
    time_writes,
    write_turn,
)
from bench.recall_pg_today import TodaySearch, time_before_after
from orchestrator.log import Scope, Store
from orchestrator.log.postgres import PostgresLog
from orchestrator.log.postgres.store import to_time
from orchestrator.models import Turn

NAME = "recall_pg"
# the generated debates are Slack's, in C1 of no workspace: this channel's scope sees every one of them
CHANNEL = Scope(platform="slack", workspace=None, channel="C1")


def _pg_rows(rows: Iterable[dict[str, Any]], columns: list[str]) -> Iterable[tuple[Any, ...]]:
    for row in rows:
        yield tuple(to_time(row[c]) if c in GeneratedLog.TIMES else row[c] for c in columns)


def load_postgres(url: str, generated: GeneratedLog) -> float:
    """COPY every generated row in one transaction (parents first); seconds taken."""
    began = time.perf_counter()
    with psycopg.connect(url) as conn, conn.transaction(), conn.cursor() as cur:
        for table in ("debates", "seats", "turns", "verdicts"):
            rows = getattr(generated, table)
            columns = list(rows[0])
            quoted = ", ".join(f'"{c}"' for c in columns)
            with cur.copy(f"copy {table} ({quoted}) from stdin") as copy:
                for values in _pg_rows(rows, columns):
                    copy.write_row(values)
    return time.perf_counter() - began


def vacuum_analyze(url: str) -> tuple[float, float]:
    """VACUUM ANALYZE the loaded tables; (seconds, database size in MB)."""
    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("debates", "seats", "turns", "verdicts"):
            conn.execute(f"vacuum analyze {table}")
        took = time.perf_counter() - began
        row = conn.execute("select pg_database_size(current_database())").fetchone()
    return took, (row[0] if row else 0) / 1e6


def _forget_written(turn: Turn, sqlite_path: Path, url: str) -> None:
    """Delete the turn `time_writes` added from both logs (a kept log is searched again as it was built)."""
    where = "debate_id = ? and round = ?"
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute(f"delete from turns where {where}", [turn.debate_id, turn.round])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"delete from turns where {where.replace('?', '%s')}", [turn.debate_id, turn.round])
        conn.execute("vacuum turns")


def _kept_run(keep: Path) -> dict[str, Any] | None:
    """What an earlier run with `--keep` saved in `keep` (None: a first run, `keep` made empty)."""
    saved = keep / "run.json"
    if saved.exists():
        return dict(json.loads(saved.read_text()))
    if keep.exists() and any(keep.iterdir()):
        raise SystemExit(f"{keep} holds no finished run of this bench (no run.json): give an empty or new folder")
    keep.mkdir(parents=True, exist_ok=True)
    return None


def _save_run(saved: Path, run: dict[str, Any]) -> None:
    saved.write_text(json.dumps(run))


def _database(server: BenchPostgres, kept: bool) -> str:
    """The log's database: a fresh one, or the kept cluster's `recall` (made on its first run)."""
    if not kept:
        return server.create_database("recall")
    with psycopg.connect(server.server.url(), autocommit=True) as conn:
        if conn.execute("select 1 from pg_database where datname = 'recall'").fetchone() is None:
            conn.execute("create database recall")
    return server.server.url("recall")


def _overlap(a: Searched, b: Searched, kind: str) -> float:
    """Mean share of `a`'s hits for a query that `b` also returned, over the class's queries."""
    shares = []
    for query, ids in a.ids.items():
        if not query.startswith(f"{kind}: ") or not ids:
            continue
        shares.append(len(set(ids) & set(b.ids.get(query, []))) / len(ids))
    return sum(shares) / len(shares) if shares else float("nan")


def _p(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.1f}"


async def run(smoke: bool, *, turns: int | None = None, keep: Path | None = None) -> Grid:
    default_turns, per_class, writes, words_per_turn = sizes(smoke)
    turns = turns or default_turns
    saved = keep / "run.json" if keep else None
    rerun = _kept_run(keep) if keep else None
    generated: GeneratedLog | None = None
    if rerun is None:
        rng = random.Random(20240607)  # bench.recall's seed: the same log and queries
        vocabulary = _vocabulary(rng, 6000)
        prose = Prose(rng, vocabulary)
        began = time.perf_counter()
        generated = generate(prose, turns, words_per_turn)
        generated_s = time.perf_counter() - began
        queries = _queries(rng, vocabulary, per_class)
        turn = write_turn(prose, words_per_turn)
        vocabulary_size = len(vocabulary)
    else:
        turns, queries, vocabulary_size = rerun["turns"], rerun["queries"], rerun["vocabulary"]
        turn, generated_s = Turn.model_validate(rerun["turn"]), 0.0
    grid = Grid(f"recall_pg — search over {turns:,} turns (~{words_per_turn} words each, Zipf vocabulary of "
                f"{vocabulary_size:,} words), the same log and queries on SQLite and Postgres",
                ("figure", "SQLite", "Postgres", "target"))
    with tempfile.TemporaryDirectory(prefix="bench-recall-pg-") as tmp:
        path = (keep or Path(tmp)) / "recall.db"
        sqlite_load_s = await build_sqlite(path, generated) if generated is not None else 0.0
        async with Store(path) as store:
            sqlite_mb = path.stat().st_size / 1e6
            on_sqlite = await time_searches(store.search, queries)
            sqlite_writes = await time_writes(store.add_turn, turn, writes)
        try:
            server = await asyncio.to_thread(BenchPostgres.start, root=keep / "pg" if keep else None)
        except PostgresUnavailable as exc:
            grid.add("Postgres", "", "unavailable")
            grid.note(str(exc))
            return grid
        try:
            url = await asyncio.to_thread(_database, server, keep is not None)
            async with PostgresLog(url):  # the schema, as the bots create it
                pass
            pg_load_s = vacuum_s = 0.0
            if generated is not None:
                pg_load_s = await asyncio.to_thread(load_postgres, url, generated)
                vacuum_s, pg_mb = await asyncio.to_thread(vacuum_analyze, url)
            else:
                pg_mb = rerun["pg_mb"] if rerun else 0.0
            today = await TodaySearch.connect(url)
            try:
                async with PostgresLog(url) as pg:
                    compared = await time_before_after(today, pg.search, queries)
                    on_pg = compared.after
                    scoped = await time_searches(lambda text, limit: pg.search(text, limit, CHANNEL), queries)
                    pg_writes = await time_writes(pg.add_turn, turn, writes)
            finally:
                await today.close()
            if keep is not None:
                await asyncio.to_thread(_forget_written, turn, path, url)
        finally:
            await asyncio.to_thread(server.stop)
    if saved is not None and rerun is None:
        _save_run(saved, {"turns": turns, "queries": queries, "vocabulary": vocabulary_size,
                          "turn": turn.model_dump(mode="json"), "pg_mb": pg_mb})
    del generated

    if rerun is None:
        grid.add("log loaded (one transaction)", f"{sqlite_load_s:.1f} s, {sqlite_mb:.0f} MB",
                 f"{pg_load_s:.1f} s + {vacuum_s:.1f} s vacuum analyze, {pg_mb:.0f} MB")
        grid.add("  rows generated in Python (shared, not in the load times)", f"{generated_s:.1f} s", "")
    else:
        grid.add(f"log kept in {keep} (not loaded this run)", f"{sqlite_mb:.0f} MB", f"{pg_mb:.0f} MB")
    everything_sqlite, everything_pg = on_sqlite.everything, on_pg.everything
    grid.add(f"search p50 ({len(everything_sqlite)} queries)", f"{_p(everything_sqlite, 50)} ms",
             f"{_p(everything_pg, 50)} ms")
    p99_sqlite, p99_pg = percentile(everything_sqlite, 99), percentile(everything_pg, 99)
    grid.add("search p99", f"{p99_sqlite:.1f} ms", f"{p99_pg:.1f} ms",
             f"≤ {TARGET_P99_MS:g} ms: SQLite {'pass' if p99_sqlite <= TARGET_P99_MS else 'miss'}, "
             f"Postgres {'pass' if p99_pg <= TARGET_P99_MS else 'miss'}")
    grid.add("search max", f"{max(everything_sqlite):.1f} ms", f"{max(everything_pg):.1f} ms")
    grid.add("hits per query, median", f"{median(on_sqlite.hits):.0f}", f"{median(on_pg.hits):.0f}")
    for kind in queries:
        grid.add(f"  {kind}: p50 / p99", f"{_p(on_sqlite.ms[kind], 50)} / {_p(on_sqlite.ms[kind], 99)} ms",
                 f"{_p(on_pg.ms[kind], 50)} / {_p(on_pg.ms[kind], 99)} ms")
    before = compared.before.everything
    grid.add("  the query before issue 24 (interleaved): p50 / p99", "",
             f"{_p(before, 50)} / {_p(before, 99)} ms")
    for kind in queries:
        grid.add(f"    {kind}: p50 / p99", "",
                 f"{_p(compared.before.ms[kind], 50)} / {_p(compared.before.ms[kind], 99)} ms")
    asked = len(compared.before.ids)
    grid.add("  queries whose hits differ from the query before (debates, order, where, snippet)", "",
             f"{len(compared.differ)} of {asked}")
    grid.add("  scoped to a channel that sees every debate (/debate search): p50 / p99", "",
             f"{_p(scoped.everything, 50)} / {_p(scoped.everything, 99)} ms")
    for kind in queries:
        grid.add(f"    {kind}: p50 / p99", "", f"{_p(scoped.ms[kind], 50)} / {_p(scoped.ms[kind], 99)} ms")
    # the channel sees every debate, so its scoped search must return the unscoped one's debates, in order
    grid.add("    queries whose scoped hits differ from the unscoped ones (debates, order)", "",
             f"{sum(scoped.ids[key] != on_pg.ids[key] for key in on_pg.ids)} of {len(on_pg.ids)}")
    grid.add(f"top-20 debates both return: {' / '.join(queries)}", "",
             " / ".join(f"{_overlap(on_sqlite, on_pg, kind):.0%}" for kind in queries))
    grid.add(f"add_turn, {writes:,} sequential: p50 / mean",
             f"{percentile(sqlite_writes, 50):.0f} / {sum(sqlite_writes) / writes:.0f} µs",
             f"{percentile(pg_writes, 50):.0f} / {sum(pg_writes) / writes:.0f} µs")
    grid.note("Postgres: the embedded PostgreSQL 18 of the tests on 127.0.0.1 (shared_buffers 128 MB, "
              "synchronous_commit off), in a process of its own: its CPU is not this process's")
    grid.note("the rankers differ (bm25 against ts_rank, both over each table's newest 1,000 matches): "
              "for common words the two top-20s are different but equally valid picks")
    return grid


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="6,000 turns, 10 queries per class")
    parser.add_argument("--turns", type=int, help="turns in the generated log (default 100,000)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep both logs in DIR, and search the ones kept there by an earlier run")
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    print(asyncio.run(run(args.smoke, turns=args.turns, keep=args.keep)).render())

"""`search_sql` (orchestrator/log/postgres/search.py) joins only the debates scoring no worse than the
`:hits`-th best for their creation time (the tie-break). It gives the rows the statement gives that joins
every debate's best hit: with many equal scores and equal creation times at the cut, with fewer
candidates than hits, on every table, scoped and not."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from orchestrator.log.postgres import search as pg_search
from orchestrator.log.postgres.search import search_args, search_sql
from orchestrator.log.postgres.store import PgConn, _spelled
from orchestrator.log.records import Scope

pytestmark = pytest.mark.postgres

DEBATES = 90
CUT = ("\n            where b.score <= coalesce((select score from best order by score offset :hits - 1 limit 1),"
       " 'infinity')")
QUERIES = ("kafka", "kafka lag", "lag", "turnword", "verdictword", "kafka turnword", "rarely", "nowhere")
HITS = (1, 2, 5, 7, 20, 50, 200)
SCOPES = (None, Scope(platform="slack", workspace=None, channel="C1"))


def _load(url: str) -> None:
    """Scores come in a few equal values (a word repeated 1–3 times), creation times in groups of equal ones."""
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.executemany(
            "insert into debates (id, topic, format, status, created_at, platform, channel) values"
            " (%s, %s, 'challenge', 'completed', now() - make_interval(mins => %s), 'slack', %s)",
            [(f"d{d:03d}", " ".join(["kafka"] * (d % 3 + 1) + ["lag"] * (d % 2) + ["rarely"] * (d % 31 == 0)),
              d // 4, "C2" if d % 3 == 0 else "C1") for d in range(DEBATES)])
        cur.executemany("insert into turns (debate_id, round, seat, status, text) values (%s, %s, 'A', 'ok', %s)",
                        [(f"d{d:03d}", r, " ".join(["turnword"] * ((d + r) % 3 + 1) + ["kafka"] * (r == 2)))
                         for d in range(DEBATES) for r in (1, 2, 3)])
        cur.executemany("insert into verdicts (debate_id, winner, recommendation, reasoning, at) values"
                        " (%s, 'A', %s, 'because', now() - make_interval(mins => %s))",
                        [(f"d{d:03d}", " ".join(["verdictword"] * (d % 2 + 1) + ["lag"] * (d % 5 == 0)), d // 3)
                         for d in range(0, DEBATES, 2)])


@pytest.fixture
def loaded(postgres_log_url: str) -> str:
    _load(postgres_log_url)
    return postgres_log_url


def _rows(conn: psycopg.Connection[Any], sql: str, query: str, hits: int, scope: Scope | None) -> list[Any]:
    return conn.execute(_spelled(sql), search_args(query, hits, scope), prepare=False).fetchall()


@pytest.mark.parametrize("scope", SCOPES, ids=("everything", "one channel"))
def test_joining_only_the_best_scores_gives_the_rows_of_joining_every_debate(loaded: str,
                                                                            scope: Scope | None) -> None:
    trimmed = search_sql(scope)
    assert CUT in trimmed
    every = trimmed.replace(CUT, "")
    with psycopg.connect(loaded, autocommit=True) as conn:
        for query in QUERIES:
            for hits in HITS:
                found = _rows(conn, trimmed, query, hits, scope)
                assert found == _rows(conn, every, query, hits, scope), (query, hits)
                if query != "nowhere":
                    assert found, (query, hits)
        # equal scores across the cut, so the creation-time tie-break decides there
        scores = [r[1] for r in _rows(conn, every, "kafka", 200, scope)]
        assert scores[4] == scores[5] and len(set(scores)) < len(scores) // 3


async def _setting(conn: psycopg.AsyncConnection[Any]) -> str:
    row = await (await conn.execute("show random_page_cost")).fetchone()
    assert row is not None
    return str(row[0])


async def test_a_scoped_search_is_planned_as_cached_and_the_setting_ends_with_it(
        loaded: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scoped search runs with PLANNED_AS_CACHED's setting; the connection, and a caller's transaction it ran
    in, have their own after it; an unscoped search is left at the default; a query Postgres refuses still
    leaves the caller's transaction usable."""
    seen: list[str] = []
    ranked = pg_search._ranked

    async def spied(c: Any, query: str, limit: int, scope: Scope | None) -> Any:
        seen.append(await _setting(c.conn))
        return await ranked(c, query, limit, scope)

    monkeypatch.setattr(pg_search, "_ranked", spied)
    async with await psycopg.AsyncConnection.connect(loaded, autocommit=True) as conn:
        default = await _setting(conn)
        assert default != "1.1"
        channel = SCOPES[1]
        hits = await pg_search.search(PgConn(conn), conn, "kafka", 5, channel)
        assert hits and seen == ["1.1"]
        assert conn.info.transaction_status == TransactionStatus.IDLE and await _setting(conn) == default
        assert [h.debate_id for h in await pg_search.search(PgConn(conn), conn, "kafka", 5, None)]
        assert seen == ["1.1", default]
        async with conn.transaction():
            await conn.execute("set local random_page_cost = 2.5")
            again = await pg_search.search(PgConn(conn), conn, "kafka", 5, channel)
            assert [h.debate_id for h in again] == [h.debate_id for h in hits] and seen[-1] == "1.1"
            assert await _setting(conn) == "2.5"
            monkeypatch.setattr(pg_search, "MAX_WORD_BYTES", 10**6)
            assert await pg_search.search(PgConn(conn), conn, "é" * 3000, 5, channel) == []
            assert await _setting(conn) == "2.5"  # the transaction is still usable, its own setting in place
        assert await _setting(conn) == default

"""The Postgres recall query as it was before issue 24, for bench.recall_pg's before/after figure only.

Each table's window of newest matches carried its `tsvector` into the ranking and joined every row of
the window to its debate before taking the best; the verdicts' window had no index in its order (m015
added `verdicts_search_order`). `search_today` runs that query through the shared `ranked` on a
connection of its own, inside a transaction that drops m015's index and is rolled back, so the old
query is planned as it was, against the same loaded log, interleaved with today's searches.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.recall import Searched
from orchestrator.log.dialect import Args
from orchestrator.log.postgres.search import HEADLINE_OPTIONS, searchable
from orchestrator.log.postgres.store import PgConn
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit
from orchestrator.log.schema import TEXT_SEARCH_CONFIG
from orchestrator.log.search import ranked

M015_INDEX = "verdicts_search_order"


@dataclass(frozen=True)
class TodaySource:
    where: HitWhere
    name: str
    tsv: str
    body: str
    key: str
    newest: str
    debate: str
    nullable: bool
    join: str

    def candidates_sql(self, scope: Scope | None) -> str:
        visible, _ = scope_sql(scope, "d" if self.join else "s")
        join = self.join if scope is not None else ""
        newest = f"{self.newest} desc nulls last" if self.nullable else f"{self.newest} desc"
        return f"""
            with recent as (
                select {self.key} as key, {self.newest} as newest, s.{self.tsv} as tsv, {self.debate} as debate_id
                from {self.name} s {join}
                where s.{self.tsv} @@ debate_tsquery(:query) and {visible}
                order by {newest} limit :window
            )
            select r.key, -ts_rank(r.tsv, debate_tsquery(:query)) as score, d.id, d.topic, d.created_at, d.status
            from recent r join debates d on d.id = r.debate_id
            order by score, r.newest desc nulls last limit :limit"""

    def snippets(self, query: str, keys: list[Any]) -> tuple[str, Args]:
        return f"""
            select {self.key} as key, ts_headline('{TEXT_SEARCH_CONFIG}', {self.body}, debate_tsquery(:query),
                                                 :options) as snippet
            from {self.name} s where {self.key} = any(:keys)""", {
            "query": query, "options": HEADLINE_OPTIONS, "keys": keys}


TODAY_SOURCES: tuple[TodaySource, ...] = (
    TodaySource("topic", "debates", "topic_tsv", "s.topic", "s.id", "s.seq", "s.id", False, ""),
    TodaySource("turn", "turns", "text_tsv", "s.text", "s.id", "s.id", "s.debate_id", False,
                "join debates d on d.id = s.debate_id"),
    TodaySource("recommendation", "verdicts", "recommendation_tsv",
                "coalesce(s.recommendation, '') || ' ' || coalesce(s.reasoning, '')", "s.seq", "s.at",
                "s.debate_id", True, "join debates d on d.id = s.debate_id"),
)


class TodaySearch:
    """`search(query, limit)` with the query of before issue 24, on its own connection."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    @classmethod
    async def connect(cls, url: str) -> TodaySearch:
        return cls(await psycopg.AsyncConnection.connect(url, autocommit=True))

    async def timed(self, query: str, limit: int) -> tuple[list[SearchHit], float]:
        """The hits and the ms the search took (not the index drop before it)."""
        async with self.conn.transaction(force_rollback=True):
            await self.conn.execute(f"drop index if exists {M015_INDEX}")
            began = time.perf_counter()
            hits = await ranked(PgConn(self.conn), TODAY_SOURCES, searchable(query), limit, None)
            return hits, (time.perf_counter() - began) * 1000

    async def close(self) -> None:
        await self.conn.close()


@dataclass
class BeforeAfter:
    """Both queries' timings (bench.recall's `Searched`), and the queries whose hits differ between them."""

    before: Searched
    after: Searched
    differ: list[str]


def _record(out: Searched, kind: str, text: str, hits: list[SearchHit], ms: float) -> None:
    out.ms.setdefault(kind, []).append(ms)
    out.hits.append(len(hits))
    out.ids[f"{kind}: {text}"] = [hit.debate_id for hit in hits]


async def time_before_after(today: TodaySearch, search: Callable[[str, int], Awaitable[list[SearchHit]]],
                            queries: dict[str, list[str]], limit: int = 20) -> BeforeAfter:
    """Each query through both, the one first that went second the time before (so neither is always the
    one a warm cache favours); a query's hits differ when a debate, its order, where it matched or the
    snippet does."""
    await today.timed("warm up the page cache", limit)
    await search("warm up the page cache", limit)
    out = BeforeAfter(Searched(), Searched(), [])
    asked = [(kind, text) for kind, texts in queries.items() for text in texts]
    for n, (kind, text) in enumerate(asked):
        found: dict[bool, list[SearchHit]] = {}
        for old in (True, False) if n % 2 == 0 else (False, True):
            if old:
                hits, ms = await today.timed(text, limit)
            else:
                began = time.perf_counter()
                hits = await search(text, limit)
                ms = (time.perf_counter() - began) * 1000
            _record(out.before if old else out.after, kind, text, hits, ms)
            found[old] = hits
        if [(h.debate_id, h.where, h.snippet) for h in found[True]] != [
                (h.debate_id, h.where, h.snippet) for h in found[False]]:
            out.differ.append(f"{kind}: {text}")
    return out

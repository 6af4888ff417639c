"""Full-text recall over topics, turns and verdicts: a few ranked candidates per FTS table."""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

from sqlite_utils import Database

from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit, from_iso
from orchestrator.models import DebateStatus

log = logging.getLogger(__name__)

SNIPPET_TOKENS = 16
# Search ranks, per FTS table, only this many of a query's newest matches (see `Store.search`); with a
# scope, this many of the newest matches the scope may see.
SEARCH_RECENT_MATCHES = 1_000
# Candidate rows ranked per wanted hit: a debate has several turns, `limit` debates need more rows.
SEARCH_CANDIDATES_PER_HIT = 5


# Each FTS table: how its rows join back to a debate, and what a hit there is called.
@dataclass(frozen=True)
class _FtsSource:
    where: HitWhere
    fts: str
    join: str  # joins the FTS row `{row}` to its debate as `d`

    def candidates_sql(self, visible: str) -> str:
        """The best `:limit` of the newest `:window` matches `visible` keeps, bm25 first (ties: newest).

        `order by rowid desc limit :window` walks the FTS index in its own order and stops, so only
        those rows are scored; bm25's IDF still counts every match in the table. The scope joins in
        before that limit, so a tenant's matches compete among themselves, not against the whole log.
        """
        join, where = ("", "") if visible == "1" else (self.join.format(row=f"{self.fts}.rowid"), f"and {visible}")
        return f"""
            with recent as (
                select {self.fts}.rowid as rowid, bm25({self.fts}) as score from {self.fts} {join}
                where {self.fts} match :query {where} order by {self.fts}.rowid desc limit :window
            ),
            best as (select rowid, score from recent order by score, rowid desc limit :limit)
            select best.rowid, best.score, d.id, d.topic, d.created_at, d.status
            from best {self.join.format(row="best.rowid")}"""

    @property
    def snippets_sql(self) -> str:
        """Snippets for the chosen rowids only: one pass over the matches between `:lo` and `:hi`.

        The rowid range goes to FTS5 as a scan bound; `+rowid in (…)` is kept out of it (a lookup
        per rowid costs a doclist seek each), so the snippet is built only for the rows wanted.
        """
        return f"""
            select rowid, snippet({self.fts}, -1, '[', ']', '…', {SNIPPET_TOKENS}) from {self.fts}
            where {self.fts} match :query and rowid between :lo and :hi
              and +rowid in (select value from json_each(:rowids))"""


_FTS_SOURCES: tuple[_FtsSource, ...] = (
    _FtsSource("topic", "debates_fts", "join debates d on d.rowid = {row}"),
    _FtsSource("turn", "turns_fts", "join turns t on t.id = {row} join debates d on d.id = t.debate_id"),
    _FtsSource("recommendation", "verdicts_fts",
               "join verdicts v on v.rowid = {row} join debates d on d.id = v.debate_id"),
)


class _Candidate(NamedTuple):
    source: _FtsSource
    rowid: int
    rank: float
    debate_id: str
    topic: str
    created_at: float
    status: DebateStatus


def _fts_queries(db: Database, query: str) -> list[str]:
    """The quoted query (sqlite-utils `quote=True` semantics), then a words-only fallback."""
    candidates = [db.quote_fts(query)]
    words = "".join(ch if ch.isalnum() else " " for ch in query).split()
    candidates.append(" ".join(f'"{w}"' for w in words))
    return [c for c in candidates if c.strip()]


def search(db: Database, query: str, limit: int, scope: Scope | None = None) -> list[SearchHit]:
    for fts_query in _fts_queries(db, query):
        try:
            return _ranked_hits(db, fts_query, limit, scope)
        except sqlite3.OperationalError as error:  # an FTS syntax corner quote_fts missed
            log.info("search query %r rejected by FTS (%s); retrying with words only", query[:80], error)
    return []


def _ranked_hits(db: Database, fts_query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
    """Rank a few candidates per FTS table, keep each debate's best, then build `limit` snippets."""
    best: dict[str, _Candidate] = {}
    visible, scope_args = scope_sql(scope)
    # a debate can match many turns; fetch enough rows to fill `limit` distinct debates
    args = {"query": fts_query, "window": SEARCH_RECENT_MATCHES, "limit": limit * SEARCH_CANDIDATES_PER_HIT,
            **scope_args}
    for source in _FTS_SOURCES:
        for rowid, rank, debate_id, topic, created_at, status in db.execute(source.candidates_sql(visible), args):
            current = best.get(debate_id)
            if current is None or rank < current.rank:
                created = from_iso(created_at) or 0.0
                best[debate_id] = _Candidate(source, rowid, rank, debate_id, topic, created, status)
    chosen = sorted(best.values(), key=lambda c: (c.rank, -c.created_at))[:limit]
    snippets: dict[tuple[str, int], str] = {}
    for source in _FTS_SOURCES:
        rowids = [c.rowid for c in chosen if c.source is source]
        if rowids:
            rows = db.execute(
                source.snippets_sql,
                {"query": fts_query, "lo": min(rowids), "hi": max(rowids), "rowids": json.dumps(rowids)},
            )
            snippets.update(((source.fts, rowid), snippet or "") for rowid, snippet in rows)
    return [
        SearchHit(
            debate_id=c.debate_id,
            topic=c.topic,
            where=c.source.where,
            snippet=snippets.get((c.source.fts, c.rowid), ""),
            created_at=c.created_at,
            status=c.status,
            rank=c.rank,
        )
        for c in chosen
    ]

"""Full-text recall on Postgres: `tsvector` columns under GIN indexes, `ts_rank`, `ts_headline` snippets.

The same shape as ../search.py: per searched table, the newest `SEARCH_RECENT_MATCHES` matches the
scope may see are ranked (the scope is inside that window, so a tenant's matches compete among
themselves), each debate keeps its best hit, and snippets are built for the final hits only. User
text goes through `websearch_to_tsquery` (inside `debate_tsquery`), which accepts any input: quotes,
`or`, `-` and stray brackets are read as words or operators, never as an error. `SearchHit.rank` is
`-ts_rank`, so lower is better as with SQLite's bm25; ties go to the newer row.

What `websearch_to_tsquery` does refuse is size: a word of 2,047 bytes or more ("word is too long in
tsquery"; 512 emoji are 2,048), or a query past the tsquery's own limits. Such words are dropped before
the query is sent (no indexed lexeme is that long: `to_tsvector` skips them), and any other refusal of
the query is "no matches", never an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NamedTuple

import psycopg

from orchestrator.log.postgres.reads import Conn, from_time, rows, scope_sql
from orchestrator.log.postgres.schema import TEXT_SEARCH_CONFIG
from orchestrator.log.records import HitWhere, Scope, SearchHit
from orchestrator.log.search import SEARCH_CANDIDATES_PER_HIT, SEARCH_RECENT_MATCHES, SNIPPET_TOKENS
from orchestrator.models import DebateStatus

log = logging.getLogger(__name__)

# A lexeme is at most 2,046 bytes (Postgres's MAXSTRLEN is 2,047): a longer word can match nothing.
# Well under it, as unaccent may lengthen a word a little before the limit is checked.
MAX_WORD_BYTES = 1_000

HEADLINE_OPTIONS = (f"StartSel=[, StopSel=], MaxWords={SNIPPET_TOKENS}, MinWords={SNIPPET_TOKENS // 3},"
                    " ShortWord=0, MaxFragments=1, FragmentDelimiter=…")


@dataclass(frozen=True)
class _Source:
    where: HitWhere
    table: str  # the searched table, as `s`
    tsv: str  # its tsvector column
    body: str  # the text the snippet is cut from
    key: str  # the row's key
    newest: str  # orders its rows newest first (descending)
    debate: str  # the row's debate id
    nullable: bool  # whether `newest` may be null
    join: str  # joins `s` to its debate `d` ("" for `debates` itself, whose scope reads `s`)

    def candidates_sql(self, scope: Scope | None) -> str:
        """The best `%(limit)s` of the newest `%(window)s` matches the scope keeps, best rank first.

        The query is folded to a constant when planned (`debate_tsquery` is immutable), so the planner
        sees how common its words are: a common word walks the newest rows backwards by key and stops
        at the window; a rare one reads its few matches from the GIN index.
        """
        visible, _ = scope_sql(scope, "d" if self.join else "s")
        join = self.join if scope is not None else ""
        newest = f"{self.newest} desc nulls last" if self.nullable else f"{self.newest} desc"
        return f"""
            with recent as (
                select {self.key} as key, {self.newest} as newest, s.{self.tsv} as tsv, {self.debate} as debate_id
                from {self.table} s {join}
                where s.{self.tsv} @@ debate_tsquery(%(query)s) and {visible}
                order by {newest} limit %(window)s
            )
            select r.key, ts_rank(r.tsv, debate_tsquery(%(query)s)) as score, d.id, d.topic, d.created_at, d.status
            from recent r join debates d on d.id = r.debate_id
            order by score desc, r.newest desc nulls last limit %(limit)s"""

    @property
    def snippets_sql(self) -> str:
        return f"""
            select {self.key} as key, ts_headline('{TEXT_SEARCH_CONFIG}', {self.body}, debate_tsquery(%(query)s),
                                                 %(options)s) as snippet
            from {self.table} s where {self.key} = any(%(keys)s)"""


_SOURCES: tuple[_Source, ...] = (
    _Source("topic", "debates", "topic_tsv", "s.topic", "s.id", "s.seq", "s.id", False, ""),
    _Source("turn", "turns", "text_tsv", "s.text", "s.id", "s.id", "s.debate_id", False,
            "join debates d on d.id = s.debate_id"),
    _Source("recommendation", "verdicts", "recommendation_tsv",
            "coalesce(s.recommendation, '') || ' ' || coalesce(s.reasoning, '')", "s.seq", "s.at",
            "s.debate_id", True, "join debates d on d.id = s.debate_id"),
)


class _Candidate(NamedTuple):
    source: _Source
    key: int | str
    rank: float
    debate_id: str
    topic: str
    created_at: float
    status: DebateStatus


def searchable(query: str) -> str:
    """`query` without what no lexeme can equal: NULs, and words past MAX_WORD_BYTES."""
    return " ".join(w for w in query.replace("\x00", "").split() if len(w.encode()) <= MAX_WORD_BYTES)


async def search(conn: Conn, query: str, limit: int, scope: Scope | None = None) -> list[SearchHit]:
    """The hits for `query`; [] for a query Postgres refuses to read as a tsquery (see the module's doc)."""
    query = searchable(query)
    if not query:
        return []
    try:
        async with conn.transaction():  # a savepoint: a refused query leaves the connection usable
            return await _ranked(conn, query, limit, scope)
    except (psycopg.errors.ProgramLimitExceeded, psycopg.errors.StatementTooComplex, psycopg.DataError) as exc:
        log.info("search query refused by Postgres (%s); answered as no matches", type(exc).__name__)
        return []


async def _ranked(conn: Conn, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
    """Rank a few candidates per table, keep each debate's best, then build `limit` snippets."""
    _, scope_args = scope_sql(scope)
    args = {"query": query, "window": SEARCH_RECENT_MATCHES, "limit": limit * SEARCH_CANDIDATES_PER_HIT,
            **scope_args}
    best: dict[str, _Candidate] = {}
    for source in _SOURCES:
        # never a prepared statement: each query is planned for its own words (see `candidates_sql`)
        for r in await rows(conn, source.candidates_sql(scope), args, prepare=False):
            rank = -float(r["score"])
            current = best.get(r["id"])
            if current is None or rank < current.rank:
                best[r["id"]] = _Candidate(source, r["key"], rank, r["id"], r["topic"],
                                           from_time(r["created_at"]) or 0.0, r["status"])
    chosen = sorted(best.values(), key=lambda c: (c.rank, -c.created_at))[:limit]
    snippets: dict[tuple[str, int | str], str] = {}
    for source in _SOURCES:
        keys = [c.key for c in chosen if c.source is source]
        if keys:
            found = await rows(conn, source.snippets_sql, {"query": query, "options": HEADLINE_OPTIONS, "keys": keys})
            snippets.update(((source.table, r["key"]), r["snippet"] or "") for r in found)
    return [
        SearchHit(debate_id=c.debate_id, topic=c.topic, where=c.source.where,
                  snippet=snippets.get((c.source.table, c.key), ""), created_at=c.created_at, status=c.status,
                  rank=c.rank)
        for c in chosen
    ]

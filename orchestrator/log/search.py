"""Full-text recall over topics, turns and verdicts, the shape both databases share: per searched table,
a few ranked candidates among its newest matches the scope may see, each debate's best hit, snippets for
the final hits only. SQLite runs that shape here through its `Source`s (FTS5 in sqlite.py); Postgres runs the
same rules as one statement of its own (postgres/search.py `search_sql`: its candidates, ranking and
snippets in one round trip). A score is lower-is-better, ties go to the newer row.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from orchestrator.log.dialect import Args, Conn
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit
from orchestrator.models import DebateStatus

SNIPPET_TOKENS = 16
# Search ranks, per searched table, only this many of a query's newest matches (see `Source`); with a
# scope, this many of the newest matches the scope may see.
SEARCH_RECENT_MATCHES = 1_000
# Candidate rows ranked per wanted hit: a debate has several turns, `limit` debates need more rows.
SEARCH_CANDIDATES_PER_HIT = 5


class Source(Protocol):
    where: HitWhere
    name: str

    def candidates_sql(self, scope: Scope | None) -> str:
        """The best `:limit` of the newest `:window` matches of `:query` the scope keeps, as rows of
        key, score (lower is better), id, topic, created_at, status of the hit's debate."""
        ...

    def snippets(self, query: str, keys: list[Any]) -> tuple[str, Args]:
        """SQL and parameters giving (key, snippet) of each of `keys`."""
        ...


class _Candidate(NamedTuple):
    source: Source
    key: Any
    rank: float
    debate_id: str
    topic: str
    created_at: float
    status: DebateStatus


async def ranked(c: Conn, sources: tuple[Source, ...], query: str, limit: int,
                 scope: Scope | None) -> list[SearchHit]:
    """Rank a few candidates per table, keep each debate's best, then build `limit` snippets."""
    _, scope_args = scope_sql(scope)
    # a debate can match many turns; fetch enough rows to fill `limit` distinct debates
    args = {"query": query, "window": SEARCH_RECENT_MATCHES, "limit": limit * SEARCH_CANDIDATES_PER_HIT,
            **scope_args}
    best: dict[str, _Candidate] = {}
    for source in sources:
        # never a prepared statement: each query is planned for its own words
        for r in await c.rows(source.candidates_sql(scope), args, prepare=False):
            current = best.get(r["id"])
            if current is None or r["score"] < current.rank:
                best[r["id"]] = _Candidate(source, r["key"], float(r["score"]), r["id"], r["topic"],
                                           c.epoch(r["created_at"]) or 0.0, r["status"])
    chosen = sorted(best.values(), key=lambda hit: (hit.rank, -hit.created_at))[:limit]
    snippets: dict[tuple[str, Any], str] = {}
    for source in sources:
        keys = [hit.key for hit in chosen if hit.source is source]
        if keys:
            sql, snippet_args = source.snippets(query, keys)
            snippets.update(((source.name, r["key"]), r["snippet"] or "") for r in await c.rows(sql, snippet_args))
    return [SearchHit(debate_id=hit.debate_id, topic=hit.topic, where=hit.source.where,
                      snippet=snippets.get((hit.source.name, hit.key), ""), created_at=hit.created_at,
                      status=hit.status, rank=hit.rank) for hit in chosen]

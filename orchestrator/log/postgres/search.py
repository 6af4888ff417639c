"""Full-text recall on Postgres: `tsvector` columns under GIN indexes, `ts_rank`, `ts_headline` snippets.

The Postgres `Source`s of ../search.py `ranked` (the scope is inside each table's window of newest
matches, so a tenant's matches compete among themselves). User
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
from typing import Any

import psycopg

from orchestrator.log.dialect import Args, Conn
from orchestrator.log.postgres.schema import TEXT_SEARCH_CONFIG
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit
from orchestrator.log.search import SNIPPET_TOKENS, ranked

log = logging.getLogger(__name__)

# A lexeme is at most 2,046 bytes (Postgres's MAXSTRLEN is 2,047): a longer word can match nothing.
# Well under it, as unaccent may lengthen a word a little before the limit is checked.
MAX_WORD_BYTES = 1_000

HEADLINE_OPTIONS = (f"StartSel=[, StopSel=], MaxWords={SNIPPET_TOKENS}, MinWords={SNIPPET_TOKENS // 3},"
                    " ShortWord=0, MaxFragments=1, FragmentDelimiter=…")


@dataclass(frozen=True)
class _Source:
    where: HitWhere
    name: str  # the searched table, as `s`
    tsv: str  # its tsvector column
    body: str  # the text the snippet is cut from
    key: str  # the row's key
    newest: str  # the row's age (larger is newer), the tie-break between equal scores
    window_order: str  # newest first, as an index of the table reads it (m015 made the verdicts' one)
    debate: str  # the row's debate id
    join: str  # joins `s` to its debate `d` ("" for `debates` itself, whose scope reads `s`)

    def candidates_sql(self, scope: Scope | None) -> str:
        """The query is folded to a constant when planned (`debate_tsquery` is immutable), so the planner
        sees how common its words are: a common word walks the newest rows backwards by an index and
        stops at the window; a rare one reads its few matches from the GIN index. Only the window's
        rows are ranked, and only the best `:limit` of them meet their debate's row (a join before the
        ranking read every debate for a common word); with a scope, the window holds only the rows the
        scope may see, so their debate is joined inside it."""
        visible, _ = scope_sql(scope, "d" if self.join else "s")
        join = self.join if scope is not None else ""
        return f"""
            with recent as (
                select {self.key} as key, {self.newest} as newest, {self.debate} as debate_id,
                       -ts_rank(s.{self.tsv}, debate_tsquery(:query)) as score
                from {self.name} s {join}
                where s.{self.tsv} @@ debate_tsquery(:query) and {visible}
                order by {self.window_order} limit :window
            ), best as (
                select key, newest, debate_id, score from recent order by score, newest desc nulls last limit :limit
            )
            select b.key, b.score, d.id, d.topic, d.created_at, d.status
            from best b join debates d on d.id = b.debate_id
            order by b.score, b.newest desc nulls last"""

    def snippets(self, query: str, keys: list[Any]) -> tuple[str, Args]:
        return f"""
            select {self.key} as key, ts_headline('{TEXT_SEARCH_CONFIG}', {self.body}, debate_tsquery(:query),
                                                 :options) as snippet
            from {self.name} s where {self.key} = any(:keys)""", {
            "query": query, "options": HEADLINE_OPTIONS, "keys": keys}


SOURCES: tuple[_Source, ...] = (
    _Source("topic", "debates", "topic_tsv", "s.topic", "s.id", "s.seq", "s.seq desc", "s.id", ""),
    _Source("turn", "turns", "text_tsv", "s.text", "s.id", "s.id", "s.id desc", "s.debate_id",
            "join debates d on d.id = s.debate_id"),
    _Source("recommendation", "verdicts", "recommendation_tsv",
            "coalesce(s.recommendation, '') || ' ' || coalesce(s.reasoning, '')", "s.seq", "s.at",
            "s.at desc nulls last, s.seq desc", "s.debate_id", "join debates d on d.id = s.debate_id"),
)


def searchable(query: str) -> str:
    """`query` without what no lexeme can equal: NULs, and words past MAX_WORD_BYTES."""
    return " ".join(w for w in query.replace("\x00", "").split() if len(w.encode()) <= MAX_WORD_BYTES)


async def search(c: Conn, conn: psycopg.AsyncConnection, query: str, limit: int, scope: Scope | None
                 ) -> list[SearchHit]:
    """The hits for `query` (run through `c`, on `conn`); [] for a query Postgres refuses to read as a
    tsquery (see the module's doc)."""
    query = searchable(query)
    if not query:
        return []
    try:
        async with conn.transaction():  # a savepoint: a refused query leaves the connection usable
            return await ranked(c, SOURCES, query, limit, scope)
    except (psycopg.errors.ProgramLimitExceeded, psycopg.errors.StatementTooComplex, psycopg.DataError) as exc:
        log.info("search query refused by Postgres (%s); answered as no matches", type(exc).__name__)
        return []

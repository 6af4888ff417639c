"""Full-text recall on Postgres: `tsvector` columns under GIN indexes, `ts_rank`, `ts_headline` snippets.

The shape of ../search.py `ranked`, as one statement (`search_sql`): per table, the best few of its
newest matches the scope may see (the scope is inside each table's window, so a tenant's matches
compete among themselves), each debate's best hit, snippets for the returned hits only. User
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
from psycopg.pq import TransactionStatus

from orchestrator.log import turn_window
from orchestrator.log.dialect import Conn
from orchestrator.log.postgres.schema import TEXT_SEARCH_CONFIG
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit
from orchestrator.log.search import SEARCH_CANDIDATES_PER_HIT, SEARCH_RECENT_MATCHES, SNIPPET_TOKENS

log = logging.getLogger(__name__)

# A lexeme is at most 2,046 bytes (Postgres's MAXSTRLEN is 2,047): a longer word can match nothing.
# Well under it, as unaccent may lengthen a word a little before the limit is checked.
MAX_WORD_BYTES = 1_000

# A scoped search is planned with a random read priced as a cached one, as the log's indexes are when it runs (the
# pages it probes are in memory). At Postgres's default (4.0) a window whose few hundred matches could each look
# up their debate by its key hashed every debate the channel may see instead.
# An unscoped search's plans are the same either way, and it spares the round trips that set it.
PLANNED_AS_CACHED = "set local random_page_cost = 1.1"
_NAME = "debate_search"  # the savepoint a search inside a caller's transaction runs in

HEADLINE_OPTIONS = (f"StartSel=[, StopSel=], MaxWords={SNIPPET_TOKENS}, MinWords={SNIPPET_TOKENS // 3},"
                    " ShortWord=0, MaxFragments=1, FragmentDelimiter=…")


@dataclass(frozen=True)
class _Source:
    where: HitWhere
    name: str  # the searched table, as `s`
    tsv: str  # its tsvector column
    body: str  # the text the snippet is cut from
    key: str  # the row's key
    key_type: str  # its type (keys travel as text between the statement's parts)
    newest: str  # its rows newest first by columns of `s`, as an index reads them (m015 made the verdicts');
    # also the order between equal scores
    debate: str  # the row's debate id
    join: str  # joins `s` to its debate `d` ("" for `debates` itself, whose scope reads `s`)
    window: str | None = None  # a function giving the window of an unscoped search (key, debate, score)

    def best_sql(self, number: int, scope: Scope | None) -> str:
        """The best `:limit` of the newest `:window` matches of `:query` the scope keeps, each with its
        place among them (`pos`). The query is folded to a constant when planned (`debate_tsquery` is
        immutable), so the planner sees how common its words are: a common word walks the newest rows
        backwards by an index and stops at the window; a rarer one reads its matches from the GIN index.
        The turns' window comes from `debate_turn_window` (../turn_window.py): the matches of an id range
        that holds the newest, for a word between the two. Only the window's rows are ranked, and without
        their `tsvector` in tow (sorting wide rows spilled to disk); with a scope, the window holds only the
        rows the scope may see (the turns' function is given the scope's condition and values)."""
        ages = [part.split()[0] for part in self.newest.split(",")]  # "s.at desc nulls last" -> "s.at"
        aged = ", ".join(f"{column} as {column[2:]}" for column in ages)
        order = f"score, {self.newest.replace('s.', '')}"
        return f"""
            select {number} as src, key::text as key, debate_id, score, row_number() over (order by {order}) as pos
            from (
                select * from ({self._recent_sql(scope, aged)}) recent order by {order} limit :limit
            ) best"""

    def _recent_sql(self, scope: Scope | None, aged: str) -> str:
        """The newest `:window` matches, with their score (see `best_sql`)."""
        if self.window is not None:  # the turns: ../turn_window.py
            values = ", ".join(f":{name}" for name in turn_window.SCOPE_PARAMETERS)
            scoped = "" if scope is None else f", :window_visible, array[{values}]::text[]"
            return f"""
                    select s.turn_id as key, s.turn_debate as debate_id, s.turn_id as id, s.turn_score as score
                    from {self.window}(debate_tsquery(:query), :window{scoped}) s
                    order by s.turn_id desc limit :window"""
        visible, _ = scope_sql(scope, "d" if self.join else "s")
        join = self.join if scope is not None else ""
        return f"""
                    select {self.key} as key, {self.debate} as debate_id, {aged},
                           -ts_rank(s.{self.tsv}, debate_tsquery(:query)) as score
                    from {self.name} s {join}
                    where s.{self.tsv} @@ debate_tsquery(:query) and {visible}
                    order by {self.newest} limit :window"""

    def snippet_sql(self) -> str:
        """The snippet of chosen hit `c` (evaluated only for the hits returned)."""
        return (f"(select ts_headline('{TEXT_SEARCH_CONFIG}', {self.body}, debate_tsquery(:query), :options)"
                f" from {self.name} s where {self.key} = c.key::{self.key_type})")


SOURCES: tuple[_Source, ...] = (
    _Source("topic", "debates", "topic_tsv", "s.topic", "s.id", "text", "s.seq desc", "s.id", ""),
    _Source("turn", "turns", "text_tsv", "s.text", "s.id", "bigint", "s.id desc", "s.debate_id",
            "join debates d on d.id = s.debate_id", turn_window.FUNCTION),
    _Source("recommendation", "verdicts", "recommendation_tsv",
            "coalesce(s.recommendation, '') || ' ' || coalesce(s.reasoning, '')", "s.seq", "bigint",
            "s.at desc nulls last, s.seq desc", "s.debate_id", "join debates d on d.id = s.debate_id"),
    _Source("source", "sources", "text_tsv", "s.title || ' ' || s.text", "s.seq", "bigint", "s.seq desc",
            "s.debate_id", "join debates d on d.id = s.debate_id"),
)


def search_sql(scope: Scope | None) -> str:
    """Every table's best candidates, each debate's best hit, the best `:hits` of those with their
    debate, and their snippets, in one statement: the order of ../search.py `ranked` (a debate's best
    score, the earlier table then the better place on a tie; then the best score, the newer debate, and
    the debate seen first), with one plan and one round trip instead of one per table and snippet.
    Only the debates scoring no worse than the `:hits`-th best score are joined for their creation time
    (the tie-break): the best `:hits` are among them, and a mid-frequency word has ~250 best hits."""
    parts = "\n            union all ".join(f"({source.best_sql(n, scope)})" for n, source in enumerate(SOURCES))
    snippets = " ".join(f"when {n} then {source.snippet_sql()}" for n, source in enumerate(SOURCES))
    return f"""
        with hits as (
            {parts}
        ), seen as (
            select src, key, debate_id, score, pos,
                   min(src::bigint * {_PLACES} + pos) over (partition by debate_id) as seen
            from hits
        ), best as (
            select distinct on (debate_id) * from seen order by debate_id, score, src, pos
        ), chosen as (
            select b.src, b.key, b.score, b.seen, d.id, d.topic, d.created_at, d.status
            from best b join debates d on d.id = b.debate_id
            where b.score <= coalesce((select score from best order by score offset :hits - 1 limit 1), 'infinity')
            order by b.score, d.created_at desc, b.seen limit :hits
        )
        select c.src, c.score, c.id, c.topic, c.created_at, c.status, case c.src {snippets} end as snippet
        from chosen c order by c.score, c.created_at desc, c.seen"""


# `seen` orders a debate's first appearance by table, then place: places per table stay below this
_PLACES = 1_000_000_000


def search_args(query: str, hits: int, scope: Scope | None) -> dict[str, Any]:
    """The values `search_sql(scope)` takes for the best `hits` debates of `query`."""
    visible, scope_args = scope_sql(scope)
    args = {"query": query, "window": SEARCH_RECENT_MATCHES, "limit": hits * SEARCH_CANDIDATES_PER_HIT,
            "hits": hits, "options": HEADLINE_OPTIONS, **scope_args}
    if scope is not None:  # the turns' window applies the scope's condition itself (../turn_window.py)
        args["window_visible"] = turn_window.scope_condition(visible)
    return args


async def _ranked(c: Conn, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
    # never a prepared statement: each query is planned for its own words
    found = await c.rows(search_sql(scope), search_args(query, limit, scope), prepare=False)
    return [SearchHit(debate_id=r["id"], topic=r["topic"], where=SOURCES[r["src"]].where, snippet=r["snippet"] or "",
                      created_at=c.epoch(r["created_at"]) or 0.0, status=r["status"], rank=float(r["score"]))
            for r in found]


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
    inside = conn.info.transaction_status != TransactionStatus.IDLE
    try:
        if scope is None and not inside:  # autocommit: the statement is its own transaction
            return await _ranked(c, query, limit, scope)
        # A scoped search runs in a transaction of its own begun with the planner's setting in the same round trip,
        # and rolled back after, so the setting ends with it; inside the caller's transaction, in a savepoint, so
        # that a refused query leaves that transaction usable.
        begin = f"savepoint {_NAME}" if inside else "begin"
        await conn.execute(begin if scope is None else f"{begin}; {PLANNED_AS_CACHED}", prepare=False)
        try:
            return await _ranked(c, query, limit, scope)
        finally:
            await conn.execute(f"rollback to savepoint {_NAME}; release savepoint {_NAME}" if inside else "rollback",
                               prepare=False)
    except (psycopg.errors.ProgramLimitExceeded, psycopg.errors.StatementTooComplex, psycopg.DataError) as exc:
        log.info("search query refused by Postgres (%s); answered as no matches", type(exc).__name__)
        return []

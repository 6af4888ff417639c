"""Queries the Postgres log runs on one connection: rows in, records out, each scoped in SQL.

The twins of ../reads.py; the records are the same, only the dialect differs (named `%(x)s`
parameters, `timestamptz` and `boolean` columns, `seq` for SQLite's rowid).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row

from orchestrator.log import rows as shared_rows
from orchestrator.log.records import (
    MIN_ID_PREFIX,
    AmbiguousIdError,
    DebateNotFoundError,
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    Scope,
    Tally,
    TokenTotals,
)

Conn = AsyncConnection[Any]


def to_time(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def from_time(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


async def rows(conn: Conn, sql: str, args: dict[str, Any] | list[Any] | None = None, *,
               prepare: bool | None = None) -> list[dict[str, Any]]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(sql, args, prepare=prepare)
        return await cur.fetchall()


async def values(conn: Conn, sql: str, args: dict[str, Any] | list[Any] | None = None) -> list[Any]:
    """The first column of every row ([] for a statement that returns none)."""
    cur = await conn.execute(sql, args)
    return [r[0] for r in await cur.fetchall()] if cur.description else []


def scope_sql(scope: Scope | None, alias: str = "d") -> tuple[str, dict[str, Any]]:
    """A condition on the `debates` row `alias` keeping what `scope` may see ("true" for the operator),
    with its named parameters (`%(scope_*)s`). The same rule as ../reads.py `scope_sql`."""
    if scope is None:
        return "true", {}
    args: dict[str, Any] = {"scope_platform": scope.platform, "scope_channel": scope.channel,
                            "scope_workspace": scope.workspace}
    own_channel = (f"({alias}.channel = %(scope_channel)s"
                   f" and ({alias}.workspace = %(scope_workspace)s or {alias}.workspace is null))")
    if scope.workspace is None:
        return f"({alias}.platform = %(scope_platform)s and {own_channel})", args
    public = f"({alias}.workspace = %(scope_workspace)s and {alias}.channel_private = false)"
    return f"({alias}.platform = %(scope_platform)s and ({own_channel} or {public}))", args


async def lock_debate(conn: Conn, debate_id: str) -> str:
    """Lock the debate's row for this transaction (its writes apply one at a time); its status."""
    found = await values(conn, "select status from debates where id = %s for no key update", [debate_id])
    if not found:
        raise DebateNotFoundError(debate_id)
    return str(found[0])


async def tally(conn: Conn, debate_id: str) -> Tally:
    cur = await conn.execute(
        "select choice, count(*) from votes where debate_id = %s group by choice order by choice", [debate_id])
    counts = {choice: int(n) for choice, n in await cur.fetchall()}
    return Tally(debate_id=debate_id, counts=counts, total=sum(counts.values()))


async def token_totals(conn: Conn, debate_id: str) -> TokenTotals:
    """Sums over the debate's turns; each turn's cost was estimated once, when it was logged."""
    cur = await conn.execute("select cost_usd, input_tokens, output_tokens from turns where debate_id = %s",
                             [debate_id])
    found = await cur.fetchall()
    cost: float | None = 0.0
    for turn_cost, input_tokens, output_tokens in found:
        if turn_cost is None:
            if input_tokens or output_tokens:  # a priced-unknown model that used tokens
                cost = None
        elif cost is not None:
            cost += turn_cost
    return TokenTotals(debate_id=debate_id, turns=len(found), input_tokens=sum(r[1] or 0 for r in found),
                       output_tokens=sum(r[2] or 0 for r in found), cost_usd=cost)


async def resolve_id(conn: Conn, id_or_prefix: str, scope: Scope | None = None) -> str | None:
    """The full id for an id or a unique prefix (>= MIN_ID_PREFIX) among the debates `scope` sees."""
    key = id_or_prefix.strip().replace("\x00", "")
    if not key:
        return None
    visible, args = scope_sql(scope)
    args |= {"key": key, "length": len(key)}
    if await values(conn, f"select 1 from debates d where d.id = %(key)s and {visible}", args):
        return key
    if len(key) < MIN_ID_PREFIX:
        return None
    matches = await values(conn, f"select d.id from debates d where left(d.id, %(length)s) = %(key)s and {visible}"
                                 " order by d.created_at desc limit 11", args)
    if len(matches) > 1:
        raise AmbiguousIdError(key, matches)
    return matches[0] if matches else None


async def load_record(conn: Conn, debate_id: str, *, turns: bool = True, scope: Scope | None = None) -> DebateRecord:
    """One debate in full; with `turns=False`, without its turns and notices (a vote, a quote). Its
    rematches are those `scope` sees."""
    row = (await rows(conn, "select * from debates where id = %s", [debate_id]))[0]
    seats = await rows(conn, "select label, role, model from seats where debate_id = %s order by position, label",
                       [debate_id])
    turn_rows: list[dict[str, Any]] = []
    notice_rows: list[dict[str, Any]] = []
    if turns:
        turn_rows = await rows(conn, "select * from turns where debate_id = %s order by round, id", [debate_id])
        notice_rows = await rows(conn, "select at, level, text from notices where debate_id = %s order by id",
                                 [debate_id])
    verdicts = await values(conn, "select json from verdicts where debate_id = %s order by number", [debate_id])
    return shared_rows.debate_record(row, from_time, seats=seats, turns=turn_rows, notices=notice_rows,
                                     verdict_jsons=verdicts, interjections=await interjection_rows(conn, debate_id),
                                     rematches=await rematch_rows(conn, debate_id, scope),
                                     tally=await tally(conn, debate_id))


async def interjection_rows(conn: Conn, debate_id: str) -> list[dict[str, Any]]:
    """A debate's audience notes, oldest first."""
    return await rows(conn, "select * from interjections where debate_id = %s order by at, seq", [debate_id])


def summary(row: dict[str, Any]) -> DebateSummary:
    return shared_rows.summary(row, from_time)


# a debate `d` and its latest verdict `v` (a `continue` adds one; history and agreement read the last)
LATEST_VERDICT = "v.debate_id = d.id and v.number = (select max(number) from verdicts where debate_id = d.id)"
SUMMARY_COLUMNS = """
    d.*, v.winner as v_winner, v.split as v_split, v.recommendation as v_recommendation,
    (select count(*) from votes where votes.debate_id = d.id) as v_votes,
    (select model from seats s where s.debate_id = d.id and s.label = v.winner) as v_model"""


async def rematch_rows(conn: Conn, debate_id: str, scope: Scope | None) -> list[dict[str, Any]]:
    """Summary rows of the debates started as rematches of `debate_id` that `scope` sees, oldest first."""
    visible, args = scope_sql(scope)
    return await rows(conn, f"""
        select {SUMMARY_COLUMNS},
            (select coalesce(json_agg(s.model order by s.position, s.label), '[]')::text from seats s
             where s.debate_id = d.id) as v_models
        from debates d left join verdicts v on {LATEST_VERDICT}
        where d.rematch_of = %(of)s and {visible}
        order by d.created_at, d.seq""", args | {"of": debate_id})


async def history(
    conn: Conn, limit: int, scope: Scope | None, platform: str | None, channel: str | None
) -> list[DebateSummary]:
    """Newest first; the scope and filters are applied before the limit."""
    visible, args = scope_sql(scope)
    wheres = [visible]
    if platform is not None:
        wheres.append("d.platform = %(platform)s")
    if channel is not None:
        wheres.append("d.channel = %(channel)s")
    sql = f"""
        select {SUMMARY_COLUMNS}
        from debates d left join verdicts v on {LATEST_VERDICT}
        where {' and '.join(wheres)}
        order by d.created_at desc, d.seq desc
        limit %(limit)s"""
    args |= {"platform": platform, "channel": channel, "limit": max(0, limit)}
    return [summary(row) for row in await rows(conn, sql, args)]


async def judge_agreement(
    conn: Conn, scope: Scope | None, platform: str | None, channel: str | None
) -> JudgeAgreement:
    """Over debates with a verdict and at least one side vote: how many, and in how many the judge's
    winner got fewer side votes than some other seat (as ../reads.py `judge_agreement`)."""
    visible, args = scope_sql(scope)
    wheres = [visible]
    if platform is not None:
        wheres.append("d.platform = %(platform)s")
    if channel is not None:
        wheres.append("d.channel = %(channel)s")
    args |= {"platform": platform, "channel": channel}
    found = await rows(conn, f"""
        with side_votes as (
            select debate_id, substr(choice, 6) as side, count(*) as n
            from votes where left(choice, 5) = 'side:'
            group by debate_id, substr(choice, 6)
        ),
        per_debate as (
            select s.debate_id, max(s.n) as top,
                   coalesce(max(case when s.side = v.winner then s.n end), 0) as for_winner
            from side_votes s
            join debates d on d.id = s.debate_id
            join verdicts v on {LATEST_VERDICT}
            where {' and '.join(wheres)}
            group by s.debate_id
        )
        select count(*) as debates, coalesce(sum(case when for_winner < top then 1 else 0 end), 0) as disagreed
        from per_debate""", args)
    return JudgeAgreement(debates=found[0]["debates"] or 0, disagreed=found[0]["disagreed"] or 0)


async def find_by_message(
    conn: Conn, platform: str, channel: str, message_id: str, scope: Scope | None
) -> str | None:
    """The debate that posted `message_id` in `channel` (any message key), or whose thread it is."""
    visible, args = scope_sql(scope)
    found = await values(
        conn,
        f"""(select d.id from messages m join debates d on d.id = m.debate_id
             where m.platform = %(platform)s and m.channel = %(channel)s and m.message_id = %(message_id)s
               and {visible} limit 1)
            union all
            (select d.id from debates d
             where d.platform = %(platform)s and d.channel = %(channel)s and d.thread = %(message_id)s
               and {visible} limit 1)
            limit 1""",
        args | {"platform": platform, "channel": channel, "message_id": message_id},
    )
    return found[0] if found else None


async def messages(conn: Conn, debate_id: str) -> dict[str, MessageRecord]:
    """Every message recorded for a debate, by key."""
    found = await rows(conn, "select key, platform, channel, message_id, final from messages where debate_id = %s",
                       [debate_id])
    return {r["key"]: MessageRecord(key=r["key"], platform=r["platform"], channel=r["channel"],
                                    message_id=r["message_id"], final=bool(r["final"])) for r in found}


async def threads_to_resume(conn: Conn, platform: str, root_key: str) -> list[str]:
    """Debates of `platform` whose thread may still change, oldest first: those running, and those that
    ended while their root message (`root_key`) did not show it yet."""
    return await values(
        conn,
        """select id from (
               select id, created_at from debates where status = 'running' and platform = %(platform)s
               union
               select d.id, d.created_at from messages m join debates d on d.id = m.debate_id
               where m.key = %(root_key)s and not m.final and d.platform = %(platform)s
           ) live order by created_at""",
        {"platform": platform, "root_key": root_key},
    )

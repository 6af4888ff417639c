"""Queries the store runs inside its database thread: rows in, records out, each scoped in SQL."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database
from sqlite_utils.db import Table

from orchestrator.log import rows
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
    from_iso,
)


def table(db: Database, name: str) -> Table:
    table = db[name]
    assert isinstance(table, Table)
    return table


def scope_sql(scope: Scope | None, alias: str = "d") -> tuple[str, dict[str, Any]]:
    """A condition on the `debates` row `alias` keeping what `scope` may see ("1" for the operator),
    with its named parameters (`:scope_*`)."""
    if scope is None:
        return "1", {}
    args: dict[str, Any] = {"scope_platform": scope.platform, "scope_channel": scope.channel,
                            "scope_workspace": scope.workspace}
    own_channel = (f"({alias}.channel = :scope_channel"
                   f" and ({alias}.workspace = :scope_workspace or {alias}.workspace is null))")
    if scope.workspace is None:
        return f"({alias}.platform = :scope_platform and {own_channel})", args
    public = f"({alias}.workspace = :scope_workspace and {alias}.channel_private = 0)"
    return f"({alias}.platform = :scope_platform and ({own_channel} or {public}))", args


def require_debate(db: Database, debate_id: str) -> None:
    if db.execute("select 1 from debates where id = ?", [debate_id]).fetchone() is None:
        raise DebateNotFoundError(debate_id)


def dict_rows(db: Database, sql: str, args: list[Any] | dict[str, Any]) -> list[dict[str, Any]]:
    cursor = db.execute(sql, args)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def tally(db: Database, debate_id: str) -> Tally:
    rows = db.execute(
        "select choice, count(*) from votes where debate_id = ? group by choice order by choice",
        [debate_id],
    ).fetchall()
    counts = {choice: n for choice, n in rows}
    return Tally(debate_id=debate_id, counts=counts, total=sum(counts.values()))


def token_totals(db: Database, debate_id: str) -> TokenTotals:
    """Sums over the debate's turns; each turn's cost was estimated once, when it was logged."""
    rows = db.execute(
        "select cost_usd, input_tokens, output_tokens from turns where debate_id = ?", [debate_id]
    ).fetchall()
    cost: float | None = 0.0
    for turn_cost, input_tokens, output_tokens in rows:
        if turn_cost is None:
            if input_tokens or output_tokens:  # a priced-unknown model that used tokens
                cost = None
        elif cost is not None:
            cost += turn_cost
    return TokenTotals(
        debate_id=debate_id,
        turns=len(rows),
        input_tokens=sum(r[1] or 0 for r in rows),
        output_tokens=sum(r[2] or 0 for r in rows),
        cost_usd=cost,
    )


def resolve_id(db: Database, id_or_prefix: str, scope: Scope | None = None) -> str | None:
    """The full id for an id or a unique prefix (>= MIN_ID_PREFIX) among the debates `scope` sees."""
    key = id_or_prefix.strip()
    if not key:
        return None
    visible, args = scope_sql(scope)
    args |= {"key": key, "length": len(key)}
    if db.execute(f"select 1 from debates d where d.id = :key and {visible}", args).fetchone():
        return key
    if len(key) < MIN_ID_PREFIX:
        return None
    matches = [
        r[0]
        for r in db.execute(
            f"select d.id from debates d where substr(d.id, 1, :length) = :key and {visible}"
            " order by d.created_at desc limit 11",
            args,
        ).fetchall()
    ]
    if len(matches) > 1:
        raise AmbiguousIdError(key, matches)
    return matches[0] if matches else None


def load_record(db: Database, debate_id: str, *, turns: bool = True, scope: Scope | None = None) -> DebateRecord:
    """One debate in full; with `turns=False`, without its turns and notices (a vote, a quote). Its
    rematches are those `scope` sees."""
    row = dict_rows(db, "select * from debates where id = ?", [debate_id])[0]
    verdicts = db.execute("select json from verdicts where debate_id = ? order by number", [debate_id]).fetchall()
    return rows.debate_record(
        row,
        from_iso,
        seats=dict_rows(db, "select * from seats where debate_id = ? order by position, label", [debate_id]),
        turns=dict_rows(db, "select * from turns where debate_id = ? order by round, id", [debate_id]) if turns else (),
        notices=dict_rows(db, "select * from notices where debate_id = ? order by id", [debate_id]) if turns else (),
        verdict_jsons=[v[0] for v in verdicts],
        interjections=interjection_rows(db, debate_id),
        rematches=rematch_rows(db, debate_id, scope),
        tally=tally(db, debate_id),
    )


def interjection_rows(db: Database, debate_id: str) -> list[dict[str, Any]]:
    """A debate's audience notes, oldest first."""
    return dict_rows(db, "select * from interjections where debate_id = ? order by at, rowid", [debate_id])


def summary(row: dict[str, Any]) -> DebateSummary:
    return rows.summary(row, from_iso)


# a debate `d` and its latest verdict `v` (a `continue` adds one; history and agreement read the last)
LATEST_VERDICT = "v.debate_id = d.id and v.number = (select max(number) from verdicts where debate_id = d.id)"
SUMMARY_COLUMNS = """
    d.*, v.winner as v_winner, v.split as v_split, v.recommendation as v_recommendation,
    (select count(*) from votes where votes.debate_id = d.id) as v_votes,
    (select model from seats s where s.debate_id = d.id and s.label = v.winner) as v_model"""


def rematch_rows(db: Database, debate_id: str, scope: Scope | None) -> list[dict[str, Any]]:
    """Summary rows of the debates started as rematches of `debate_id` that `scope` sees, oldest first."""
    visible, args = scope_sql(scope)
    return dict_rows(db, f"""
        select {SUMMARY_COLUMNS},
            (select json_group_array(model) from (select model from seats s where s.debate_id = d.id
                                                  order by position, label)) as v_models
        from debates d left join verdicts v on {LATEST_VERDICT}
        where d.rematch_of = :of and {visible}
        order by d.created_at, d.rowid""", args | {"of": debate_id})


def history(
    db: Database, limit: int, scope: Scope | None, platform: str | None, channel: str | None
) -> list[DebateSummary]:
    """Newest first; the scope and filters are applied before the limit."""
    visible, args = scope_sql(scope)
    wheres = [visible]
    if platform is not None:
        wheres.append("d.platform = :platform")
    if channel is not None:
        wheres.append("d.channel = :channel")
    sql = f"""
        select {SUMMARY_COLUMNS}
        from debates d left join verdicts v on {LATEST_VERDICT}
        where {' and '.join(wheres)}
        order by d.created_at desc, d.rowid desc
        limit :limit"""
    args |= {"platform": platform, "channel": channel, "limit": max(0, limit)}
    return [summary(row) for row in dict_rows(db, sql, args)]


JUDGE_AGREEMENT_SQL = """
    with side_votes as (
        select debate_id, substr(choice, 6) as side, count(*) as n
        from votes where choice like 'side:%'
        group by debate_id, substr(choice, 6)
    ),
    per_debate as (
        select s.debate_id, max(s.n) as top, coalesce(max(case when s.side = v.winner then s.n end), 0) as for_winner
        from side_votes s
        join debates d on d.id = s.debate_id
        join verdicts v on {latest}
        where {where}
        group by s.debate_id
    )
    select count(*), coalesce(sum(case when for_winner < top then 1 else 0 end), 0) from per_debate"""


def judge_agreement(db: Database, scope: Scope | None, platform: str | None, channel: str | None) -> JudgeAgreement:
    """Over debates with a verdict and at least one side vote: how many, and in how many the judge's
    winner got fewer side votes than some other seat (a tie at the top that includes it is no disagreement)."""
    visible, args = scope_sql(scope)
    wheres = [visible]
    if platform is not None:
        wheres.append("d.platform = :platform")
    if channel is not None:
        wheres.append("d.channel = :channel")
    args |= {"platform": platform, "channel": channel}
    sql = JUDGE_AGREEMENT_SQL.format(where=" and ".join(wheres), latest=LATEST_VERDICT)
    debates, disagreed = db.execute(sql, args).fetchone()
    return JudgeAgreement(debates=debates or 0, disagreed=disagreed or 0)


def find_by_message(db: Database, platform: str, channel: str, message_id: str, scope: Scope | None) -> str | None:
    """The debate that posted `message_id` in `channel` (any message key), or whose thread it is."""
    visible, args = scope_sql(scope)
    row = db.execute(
        f"""select d.id from messages m join debates d on d.id = m.debate_id
            where m.platform = :platform and m.channel = :channel and m.message_id = :message_id and {visible}
            union all
            select d.id from debates d
            where d.platform = :platform and d.channel = :channel and d.thread = :message_id and {visible}
            limit 1""",
        args | {"platform": platform, "channel": channel, "message_id": message_id},
    ).fetchone()
    return row[0] if row else None


def messages(db: Database, debate_id: str) -> dict[str, MessageRecord]:
    """Every message recorded for a debate, by key."""
    rows = dict_rows(db, "select key, platform, channel, message_id, final from messages where debate_id = ?",
                     [debate_id])
    return {r["key"]: MessageRecord(key=r["key"], platform=r["platform"], channel=r["channel"],
                                    message_id=r["message_id"], final=bool(r["final"])) for r in rows}


def threads_to_resume(db: Database, platform: str, root_key: str) -> list[str]:
    """Debates of `platform` whose thread may still change, oldest first: those running, and those that
    ended while their root message (`root_key`) did not show it yet."""
    rows = db.execute(
        """select id, created_at from debates where status = 'running' and platform = :platform
           union
           select d.id, d.created_at from messages m join debates d on d.id = m.debate_id
           where m.key = :root_key and m.final = 0 and d.platform = :platform
           order by created_at""",
        {"platform": platform, "root_key": root_key},
    ).fetchall()
    return [r[0] for r in rows]

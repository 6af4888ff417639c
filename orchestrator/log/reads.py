"""What the log reads, written once for both databases: rows in, records out, each scoped in SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.log import rows
from orchestrator.log.dialect import Args, Conn, Sent
from orchestrator.log.records import (
    MIN_ID_PREFIX,
    AmbiguousIdError,
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    Scope,
    Tally,
    TokenTotals,
)


def scope_sql(scope: Scope | None, alias: str = "d") -> tuple[str, Args]:
    """A condition on the `debates` row `alias` keeping what `scope` may see ("true" for the operator),
    with its parameters (`:scope_*`). A debate whose privacy is unknown (NULL) counts as private."""
    if scope is None:
        return "true", {}
    args: Args = {"scope_platform": scope.platform, "scope_channel": scope.channel,
                  "scope_workspace": scope.workspace}
    own_channel = (f"({alias}.channel = :scope_channel"
                   f" and ({alias}.workspace = :scope_workspace or {alias}.workspace is null))")
    if scope.workspace is None:
        return f"({alias}.platform = :scope_platform and {own_channel})", args
    public = f"({alias}.workspace = :scope_workspace and {alias}.channel_private = false)"
    return f"({alias}.platform = :scope_platform and ({own_channel} or {public}))", args


def filters(scope: Scope | None, platform: str | None, channel: str | None) -> tuple[str, Args]:
    visible, args = scope_sql(scope)
    wheres = [visible]
    if platform is not None:
        wheres.append("d.platform = :platform")
    if channel is not None:
        wheres.append("d.channel = :channel")
    return " and ".join(wheres), args | {"platform": platform, "channel": channel}


async def tally(c: Conn, debate_id: str) -> Tally:
    found = await c.rows("select choice, count(*) as n from votes where debate_id = :id group by choice"
                         " order by choice", {"id": debate_id})
    counts = {r["choice"]: int(r["n"]) for r in found}
    return Tally(debate_id=debate_id, counts=counts, total=sum(counts.values()))


@dataclass
class TurnTokens:
    """The turns' tokens and costs of one debate, sent (`send_turn_tokens`)."""

    debate_id: str
    sent: Sent

    async def totals(self) -> TokenTotals:
        """Sums over the debate's turns; each turn's cost was estimated once, when it was logged."""
        found = await self.sent.rows()
        cost: float | None = 0.0
        for r in found:
            if r["cost_usd"] is None:
                if r["input_tokens"] or r["output_tokens"]:  # a priced-unknown model that used tokens
                    cost = None
            elif cost is not None:
                cost += r["cost_usd"]
        return TokenTotals(debate_id=self.debate_id, turns=len(found),
                           input_tokens=sum(r["input_tokens"] or 0 for r in found),
                           output_tokens=sum(r["output_tokens"] or 0 for r in found), cost_usd=cost)


async def send_turn_tokens(c: Conn, debate_id: str) -> TurnTokens:
    return TurnTokens(debate_id, await c.send("select cost_usd, input_tokens, output_tokens from turns"
                                              " where debate_id = :id", {"id": debate_id}))


async def resolve_id(c: Conn, id_or_prefix: str, scope: Scope | None = None) -> str | None:
    """The full id for an id or a unique prefix (>= MIN_ID_PREFIX) among the debates `scope` sees."""
    key = id_or_prefix.strip()
    if not key:
        return None
    visible, args = scope_sql(scope)
    args |= {"key": key, "length": len(key)}
    if await c.values(f"select 1 from debates d where d.id = :key and {visible}", args):
        return key
    if len(key) < MIN_ID_PREFIX:
        return None
    matches = await c.values(f"select d.id from debates d where substr(d.id, 1, :length) = :key and {visible}"
                             " order by d.created_at desc limit 11", args)
    if len(matches) > 1:
        raise AmbiguousIdError(key, matches)
    return matches[0] if matches else None


async def get_debate(c: Conn, id_or_prefix: str, scope: Scope | None, turns: bool) -> DebateRecord | None:
    debate_id = await resolve_id(c, id_or_prefix, scope)
    return None if debate_id is None else await load_record(c, debate_id, turns=turns, scope=scope)


async def load_record(c: Conn, debate_id: str, *, turns: bool = True, scope: Scope | None = None) -> DebateRecord:
    """One debate in full; with `turns=False`, without its turns and notices (a vote, a quote). Its
    rematches are those `scope` sees."""
    key = {"id": debate_id}
    (row,) = await c.rows("select * from debates where id = :id", key)
    return rows.debate_record(
        row, c.epoch,
        seats=await c.rows("select * from seats where debate_id = :id order by position, label", key),
        turns=await c.rows("select * from turns where debate_id = :id order by round, id", key) if turns else (),
        notices=await c.rows("select * from notices where debate_id = :id order by id", key) if turns else (),
        verdict_jsons=await c.values("select json from verdicts where debate_id = :id order by number", key),
        interjections=await interjection_rows(c, debate_id),
        rematches=await rematch_rows(c, debate_id, scope),
        tally=await tally(c, debate_id),
        sources=await c.rows("select * from sources where debate_id = :id order by number", key),
    )


async def interjection_rows(c: Conn, debate_id: str) -> list[dict[str, Any]]:
    """A debate's audience notes, oldest first."""
    return await c.rows(f"select * from interjections where debate_id = :id order by at, {c.seq}", {"id": debate_id})


# a debate `d` and its latest verdict `v` (a `continue` adds one; history and agreement read the last)
LATEST_VERDICT = "v.debate_id = d.id and v.number = (select max(number) from verdicts where debate_id = d.id)"
SUMMARY_COLUMNS = """
    d.*, v.winner as v_winner, v.split as v_split, v.recommendation as v_recommendation, v.confidence as v_confidence,
    (select count(*) from votes where votes.debate_id = d.id) as v_votes,
    (select model from seats s where s.debate_id = d.id and s.label = v.winner) as v_model"""


async def rematch_rows(c: Conn, debate_id: str, scope: Scope | None) -> list[dict[str, Any]]:
    """Summary rows of the debates started as rematches of `debate_id` that `scope` sees, oldest first."""
    visible, args = scope_sql(scope)
    return await c.rows(f"""
        select {SUMMARY_COLUMNS}, {c.seat_models} as v_models
        from debates d left join verdicts v on {LATEST_VERDICT}
        where d.rematch_of = :of and {visible}
        order by d.created_at, d.{c.seq}""", args | {"of": debate_id})


async def history(c: Conn, limit: int, scope: Scope | None, platform: str | None,
                  channel: str | None) -> list[DebateSummary]:
    """Newest first; the scope and filters are applied before the limit."""
    where, args = filters(scope, platform, channel)
    found = await c.rows(f"""
        select {SUMMARY_COLUMNS}
        from debates d left join verdicts v on {LATEST_VERDICT}
        where {where}
        order by d.created_at desc, d.{c.seq} desc
        limit :limit""", args | {"limit": max(0, limit)})
    return [rows.summary(row, c.epoch) for row in found]


def per_debate_votes(where: str) -> str:
    """A `with` clause: per debate that `where` (over `d` and its latest verdict `v`) keeps and that has a
    side vote, the most votes any side got (`top`) and the votes for the verdict's winner (`for_winner`)."""
    return f"""with side_votes as (
            select debate_id, substr(choice, 6) as side, count(*) as n
            from votes where substr(choice, 1, 5) = 'side:'
            group by debate_id, substr(choice, 6)
        ),
        per_debate as (
            select s.debate_id, max(s.n) as top,
                   coalesce(max(case when s.side = v.winner then s.n end), 0) as for_winner
            from side_votes s
            join debates d on d.id = s.debate_id
            join verdicts v on {LATEST_VERDICT}
            where {where}
            group by s.debate_id
        )"""


async def judge_agreement(c: Conn, scope: Scope | None, platform: str | None, channel: str | None) -> JudgeAgreement:
    """Over debates with a verdict and at least one side vote: how many, and in how many the judge's
    winner got fewer side votes than some other seat (a tie at the top that includes it is no disagreement)."""
    where, args = filters(scope, platform, channel)
    where = f"{where} and v.winner is not null"  # a No clear winner verdict picked no one to disagree with
    (found,) = await c.rows(f"""
        {per_debate_votes(where)}
        select count(*) as debates, coalesce(sum(case when for_winner < top then 1 else 0 end), 0) as disagreed
        from per_debate""", args)
    return JudgeAgreement(debates=found["debates"] or 0, disagreed=found["disagreed"] or 0)


async def find_by_message(c: Conn, platform: str, channel: str, message_id: str, scope: Scope | None) -> str | None:
    """The debate that posted `message_id` in `channel` (any message key), or whose thread it is."""
    visible, args = scope_sql(scope)
    return await c.one(f"""
        select d.id from messages m join debates d on d.id = m.debate_id
        where m.platform = :platform and m.channel = :channel and m.message_id = :message_id and {visible}
        union all
        select d.id from debates d
        where d.platform = :platform and d.channel = :channel and d.thread = :message_id and {visible}
        limit 1""", args | {"platform": platform, "channel": channel, "message_id": message_id})


async def debate_status(c: Conn, debate_id: str) -> str | None:
    return await c.one("select status from debates where id = :id", {"id": debate_id})


async def get_message(c: Conn, debate_id: str, key: str) -> str | None:
    return await c.one("select message_id from messages where debate_id = :id and key = :key",
                       {"id": debate_id, "key": key})


async def messages(c: Conn, debate_id: str) -> dict[str, MessageRecord]:
    """Every message recorded for a debate, by key."""
    found = await c.rows("select key, platform, channel, message_id, final from messages where debate_id = :id",
                         {"id": debate_id})
    return {r["key"]: MessageRecord(key=r["key"], platform=r["platform"], channel=r["channel"],
                                    message_id=r["message_id"], final=bool(r["final"])) for r in found}


async def threads_to_resume(c: Conn, platform: str, root_key: str) -> list[str]:
    """Debates of `platform` whose thread may still change, oldest first: those running, and those that
    ended while their root message (`root_key`) did not show it yet."""
    return await c.values(f"""
        select id from (
            select id, created_at from debates where status = 'running' and platform = :platform
            union
            select d.id, d.created_at from messages m join debates d on d.id = m.debate_id
            where m.key = :root_key and {c.not_final} and d.platform = :platform
        ) live order by created_at""", {"platform": platform, "root_key": root_key})

"""The history figures over juries, read from Postgres (as ../jury.py reads them from SQLite)."""

from __future__ import annotations

from orchestrator.log.jury import JuryFigures
from orchestrator.log.postgres.reads import LATEST_VERDICT, Conn, rows, scope_sql
from orchestrator.log.records import Scope


async def jury_figures(conn: Conn, scope: Scope | None, platform: str | None, channel: str | None) -> JuryFigures:
    visible, args = scope_sql(scope)
    wheres = [visible, "v.jury_size is not null"]
    if platform is not None:
        wheres.append("d.platform = %(platform)s")
    if channel is not None:
        wheres.append("d.channel = %(channel)s")
    args |= {"platform": platform, "channel": channel}
    where = " and ".join(wheres)
    (found,) = await rows(conn, f"""
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
            where {where}
            group by s.debate_id
        )
        select (select count(*) from debates d join verdicts v on {LATEST_VERDICT} where {where}) as juries,
               (select count(*) from debates d join verdicts v on {LATEST_VERDICT}
                 where {where} and v.jury_agreement < 1) as split,
               (select count(*) from per_debate) as team,
               (select count(*) from per_debate where for_winner < top) as against""", args)
    return JuryFigures(juries=found["juries"] or 0, split=found["split"] or 0, team_debates=found["team"] or 0,
                       team_against=found["against"] or 0)

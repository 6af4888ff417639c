"""Which debates a workspace may see: all of them with one workspace, its own with several.

A Slack debate remembers its workspace as the message key "team" (store.set_message), so a
multi-workspace install never shows one team's debates, votes or recommendations to another.
"""

from __future__ import annotations

from orchestrator.log.store import DebateSummary, SearchHit, Store

TEAM_KEY = "team"


async def remember_team(store: Store, debate_id: str, channel: str, team_id: str | None) -> None:
    if team_id:
        await store.set_message(debate_id, TEAM_KEY, "slack", channel, team_id)


async def visible(store: Store, debate_id: str, team_id: str | None, multi_workspace: bool) -> bool:
    if not multi_workspace:
        return True
    return team_id is not None and await store.get_message(debate_id, TEAM_KEY) == team_id


async def visible_summaries(
    store: Store, summaries: list[DebateSummary], team_id: str | None, multi_workspace: bool
) -> list[DebateSummary]:
    return [s for s in summaries if await visible(store, s.id, team_id, multi_workspace)]


async def visible_hits(
    store: Store, hits: list[SearchHit], team_id: str | None, multi_workspace: bool
) -> list[SearchHit]:
    return [h for h in hits if await visible(store, h.debate_id, team_id, multi_workspace)]

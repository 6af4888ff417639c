"""`/debate models | history | search | show | stop`: answers only the asking user sees.

Every read passes the invocation's Scope to the log, so a debate the asker may not see is never
fetched, ranked or named; to them it does not exist (“No debate with id `x` here”). A stop needs a
debate visible from here, running, and an asker who requested it or is a workspace admin or owner.
"""

from __future__ import annotations

import asyncio

from bots.commands import History, Search, Show, Stop
from bots.slack.links import permalink, thread_links
from bots.slack.listeners.invocation import Invocation
from bots.slack.views import history_text, models_text, search_text, show_text
from bots.thread.tail import stop_answer
from orchestrator.log import DebateRecord
from orchestrator.log.audit import Actor
from orchestrator.policy import ChatPolicy

SEARCH_LIMIT = 10


def not_found(debate_id: str) -> str:
    return f"No debate with id `{debate_id}` here. `/debate history` lists recent ones."


async def show_models(inv: Invocation) -> None:
    core = inv.runtime.core
    await inv.tell(models_text(ChatPolicy(core.settings, core.registry)))


async def show_history(command: History, inv: Invocation) -> None:
    summaries = await inv.runtime.core.history(command.limit, await inv.scope(), channel=inv.channel_id)
    await inv.tell(history_text(summaries, await thread_links(inv.client, summaries)))


async def search_debates(command: Search, inv: Invocation) -> None:
    core, scope = inv.runtime.core, await inv.scope()
    hits = await core.search(command.query, SEARCH_LIMIT, scope)
    found = [r for hit in hits if (r := await core.debate(hit.debate_id, scope, turns=False)) is not None]
    links = await asyncio.gather(*(permalink(inv.client, r.channel, r.thread) for r in found))
    await inv.tell(search_text(command.query, hits, dict(zip([r.id for r in found], links, strict=True))))


async def show_debate(command: Show, inv: Invocation) -> None:
    record = await inv.runtime.core.debate(command.debate_id, await inv.scope())
    if record is None:
        await inv.tell(not_found(command.debate_id))
        return
    await inv.tell(show_text(record, await permalink(inv.client, record.channel, record.thread)))


async def stop_debate(command: Stop, inv: Invocation) -> None:
    """Resolved by the log within scope (a full id, or an unambiguous prefix of MIN_ID_PREFIX or more);
    running is what the log says (the debate may run in any worker)."""
    core, tailer = inv.runtime.core, inv.runtime.tailer
    record: DebateRecord | None = await core.debate(command.debate_id, await inv.scope(), turns=False)
    if record is None or record.status != "running" or tailer is None:
        await inv.tell(f"No running debate with id `{command.debate_id}` here.")
        return
    if not await inv.runtime.users.may_stop(inv.client, inv.team_id, record, inv.user_id):
        await inv.tell(f"Only the person who started it or a workspace admin can stop debate `{record.id}`.")
        return
    outcome = await tailer.stop(record.id)
    await core.stopped_by(record, Actor(platform="slack", workspace=inv.team_id, user=inv.user_id))
    await inv.tell(stop_answer(record.id, outcome))

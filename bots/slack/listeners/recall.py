"""`/debate models | history | search | show | stop`: answers only the asking user sees."""

from __future__ import annotations

from bots.commands import History, Search, Show, Stop
from bots.slack.links import permalink, thread_links
from bots.slack.listeners.invocation import Invocation
from bots.slack.scope import visible, visible_hits, visible_summaries
from bots.slack.views import history_text, models_text, search_text, show_text


async def show_models(inv: Invocation) -> None:
    core = inv.runtime.core
    await inv.tell(models_text(core.settings, core.registry))


async def show_history(command: History, inv: Invocation) -> None:
    store, multi = inv.runtime.core.store, inv.runtime.multi_workspace
    summaries = await store.history(command.limit, platform="slack", channel=inv.channel_id)
    summaries = await visible_summaries(store, summaries, inv.team_id, multi)
    await inv.tell(history_text(summaries, await thread_links(inv.client, summaries)))


async def search_debates(command: Search, inv: Invocation) -> None:
    store, multi = inv.runtime.core.store, inv.runtime.multi_workspace
    hits = await visible_hits(store, await store.search(command.query, 10), inv.team_id, multi)
    links: dict[str, str | None] = {}
    for hit in hits:
        record = await store.get_debate(hit.debate_id)
        if record is not None and record.platform == "slack":
            links[hit.debate_id] = await permalink(inv.client, record.channel, record.thread)
    await inv.tell(search_text(command.query, hits, links))


async def show_debate(command: Show, inv: Invocation) -> None:
    store = inv.runtime.core.store
    record = await store.get_debate(command.debate_id)
    if record is None or not await visible(store, record.id, inv.team_id, inv.runtime.multi_workspace):
        await inv.tell(f"No debate with id `{command.debate_id}`. `/debate history` lists recent ones.")
        return
    link = await permalink(inv.client, record.channel, record.thread) if record.platform == "slack" else None
    await inv.tell(show_text(record, link))


async def stop_debate(command: Stop, inv: Invocation) -> None:
    jobs, store = inv.runtime.core.jobs, inv.runtime.core.store
    debate_id = jobs.find(command.debate_id)
    if debate_id is None or not await visible(store, debate_id, inv.team_id, inv.runtime.multi_workspace):
        await inv.tell(f"No running debate with id `{command.debate_id}`.")
        return
    jobs.cancel(debate_id)
    await inv.tell(f"Stopping debate `{debate_id}`; its thread will say it was cancelled.")

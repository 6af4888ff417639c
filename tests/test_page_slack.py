"""The debate page in Slack, through bolt's real dispatch against the Slack peer: the root and the
verdict carry the page's link button when DEBATE_PUBLIC_URL is set; a pasted link is unfurled
(`link_shared` → `chat.unfurl`) only where recall may see the debate and only with its right key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bots.page import page_link
from bots.slack.blocks import PAGE_ACTION
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.page_harness import PUBLIC_URL, VERDICT, local, log_debate, read_events, serve_pages

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_channel("G2", "private")
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    script_judge(llm_server, "A", recommendation="Ship the smaller change first.")
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_PUBLIC_URL=PUBLIC_URL, DEBATE_WEB_SECRET="slack-page-secret-0123456789abcdef")
    async with SlackBot(settings) as b:
        yield b


def page_buttons(blocks: list[dict] | None) -> list[str]:
    return [e["url"] for b in blocks or [] if b.get("type") == "actions" for e in b["elements"]
            if e.get("action_id") == PAGE_ACTION]


async def test_the_root_and_the_verdict_carry_the_page_link(bot: SlackBot, peer: SlackAPIPeer) -> None:
    status, _ = await bot.command("Should we ship the smaller change first? --rounds 1", peer)
    assert status == 200
    await peer.wait_for(lambda p: any(m.blocks and any(b.get("type") == "header" for b in m.blocks)
                                      for m in p.messages.values()), within=60)
    await bot.settle()
    (debate,) = await bot.core.store.history(5)
    link = await page_link(bot.core.store, bot.settings, debate.id)
    root = next(m for m in peer.messages.values() if m.thread_ts is None and m.ts == debate.thread)
    verdict = next(m for m in peer.messages.values() if m.blocks and any(b.get("type") == "header" for b in m.blocks))
    assert page_buttons(root.blocks) == [link] and page_buttons(verdict.blocks) == [link]
    assert link is not None and link.startswith(f"{PUBLIC_URL}/d/{debate.id}/")


async def test_a_link_unfurls_only_where_recall_may_see_its_debate(bot: SlackBot, peer: SlackAPIPeer) -> None:
    store, settings = bot.core.store, bot.settings
    public = await log_debate(store, platform="slack", workspace="T1", channel="C1")
    private = await log_debate(store, platform="slack", workspace="T1", channel="G2", channel_private=True)
    public_link = await page_link(store, settings, public.id)
    private_link = await page_link(store, settings, private.id)
    assert public_link and private_link
    wrong_key = public_link[:-3] + "xyz"
    events = f"{bot.url}/slack/events"

    # pasted in the public channel C1: the public debate unfurls; the private one and a wrong key show nothing
    assert await peer.share_links(events, [public_link, private_link, wrong_key], channel="C1") == 200
    await peer.wait_for(lambda p: p.unfurls)
    ((where, unfurls),) = peer.unfurls.items()
    assert where[0] == "C1" and list(unfurls) == [public_link]
    shown = str(unfurls[public_link])
    assert public.topic in shown and "Winner:" in shown and "high confidence" in shown
    assert VERDICT.recommendation in shown

    # inside its own private channel, the private debate unfurls
    assert await peer.share_links(events, [private_link], channel="G2") == 200
    await peer.wait_for(lambda p: any(key[0] == "G2" for key in p.unfurls))
    (private_unfurl,) = [u for key, u in peer.unfurls.items() if key[0] == "G2"]
    assert list(private_unfurl) == [private_link] and private.topic in str(private_unfurl)
    assert all(call.ok for call in peer.of("chat.unfurl"))


async def test_the_page_of_a_durable_debate_shows_the_turn_as_it_streams_then_settles(
        bot: SlackBot, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> None:
    """The page reads the workers' event stream (any front can: it is in the shared workflow database),
    so a turn's text shows while the model writes it, before the log has the turn; then the page settles."""
    words = " ".join(f"point{n}" for n in range(60))
    llm_server.add_rule(Reply(text=f"Opening: {words}", tokens_per_s=12), match="gpt-5")
    topic = "Should the page stream turns? --rounds 1 --vs openai:gpt-5,anthropic:claude-sonnet-4-6"
    assert (await bot.command(topic, peer))[0] == 200
    await peer.wait_for(lambda p: p.of("chat.postMessage"))  # the root: the debate is logged, its turn begins
    (debate,) = await bot.core.store.history(5)
    link = await page_link(bot.core.store, bot.settings, debate.id)
    assert link is not None
    async with serve_pages(bot.core.store, bot.settings, feed=bot.core.feed) as served, \
            aiohttp.ClientSession() as http, http.get(local(link, served) + "/events") as response:
        names, partial = [], None
        async for name, data in read_events(response):
            names.append(name)
            if name == "live" and partial is None:
                partial = data
            if name == "end":
                break
    assert partial is not None and "Opening:" in partial and "point59" not in partial, names  # before the model ended
    assert names[-1] == "end" and "main" in names


async def test_a_purged_debates_link_unfurls_to_nothing(bot: SlackBot, peer: SlackAPIPeer) -> None:
    """Issue 55: once purged (by retention, on request, by an uninstall), its link shows nothing."""
    from orchestrator.log.purge import PurgeSelection
    from orchestrator.purge import purge

    store, settings = bot.core.store, bot.settings
    gone = await log_debate(store, platform="slack", workspace="T1", channel="C1")
    kept = await log_debate(store, platform="slack", workspace="T1", channel="C1")
    gone_link, kept_link = await page_link(store, settings, gone.id), await page_link(store, settings, kept.id)
    assert gone_link and kept_link
    await purge(store, PurgeSelection(debate=gone.id), reason="retention")
    assert await peer.share_links(f"{bot.url}/slack/events", [gone_link, kept_link], channel="C1") == 200
    await peer.wait_for(lambda p: p.unfurls)
    ((_, unfurls),) = peer.unfurls.items()
    assert list(unfurls) == [kept_link]

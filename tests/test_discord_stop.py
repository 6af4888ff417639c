"""After a stop, a Discord thread gets the message that says it stopped and nothing else new (issue 57, item
21), through the real discord.py client against the Discord peer: the thread's channel lets one write through
every few seconds while the model answers at once, so when the first turn shows, the rest is written (in the
log) and waiting; `/debate-stop` then posts only the cancelled message, edits finish what was posted, and
the log keeps every turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from bots.discord import DebateBot
from bots.discord.surface import discord_limits
from orchestrator.app import Core
from tests import discord_team_harness
from tests.discord_harness import connected
from tests.fakes.discord_api import MEMBER_PERMISSIONS, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

# the team tests' settings and core, over this module's peer (its members' names) and bot (a slow channel)
settings, core = discord_team_harness.settings, discord_team_harness.core

SLOW = discord_limits(writes=1, window=3.0, edit_interval=0.05)  # a write every few seconds per channel
DANA = "740000000000000301"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS, names={DANA: "Dana Scully"}) as server:
        yield server


@pytest.fixture
async def bot(core: Core) -> AsyncIterator[DebateBot]:
    async with connected(core, pacing=SLOW) as client:
        yield client


async def test_a_stopped_discord_thread_gets_the_stop_and_nothing_else_new(
    bot: DebateBot, core: Core, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    judge = asyncio.Event()  # the debate waits at its judge: every turn is written by then
    llm_server.add_rule(Reply(text="unused", gate=judge), match=is_judge)
    llm_server.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
    llm_server.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
    options = {"topic": "Should ingest move to Go?", "rounds": 2, "proposer": "openai:gpt-5",
               "challenger": "anthropic:claude-sonnet-4-6", "judge": "openai:judge-1"}
    started = await peer.dispatch_interaction(peer.slash_command("debate", options, user_id=DANA))
    await peer.wait_for(lambda: started.original is not None, within=20)
    root = started.original
    assert root is not None
    debate_id = peer.messages[root]["embeds"][0]["footer"]["text"].split()[1]
    await llm_server.wait_for_requests(5)  # four turns, then the judge's first pass: held
    record = await core.store.get_debate(debate_id)
    assert record is not None and len(record.turns) == 4

    def thread_text() -> str:
        return json.dumps(peer.channel_messages(root))

    await peer.wait_for(lambda: "benchmark" in thread_text(), within=30)  # the first turn shows
    shown_turns = [m for m in peer.channel_messages(root) if "benchmark" in (t := json.dumps(m)) or "staffing" in t]
    assert len(shown_turns) < 4, "every turn was posted before the stop: nothing was held back"
    writes_before = len(peer.writes())
    shown_before = {m["id"] for m in peer.channel_messages(root)}

    stop = await peer.dispatch_interaction(peer.slash_command("debate-stop", {"debate_id": debate_id},
                                                              user_id=DANA))
    await peer.wait_for(lambda: stop.ephemeral, within=20)
    assert f"Stopping debate `{debate_id}`" in json.dumps(stop.ephemeral)
    judge.set()
    await bot.output.rendered()

    new_posts = [c for c in peer.writes()[writes_before:] if c.method == "POST" and root in c.path]
    assert len(new_posts) == 1, [json.dumps(c.body)[:120] for c in new_posts]  # the stop's message, nothing else
    assert "Stopped: no verdict" in json.dumps(new_posts[0].body, ensure_ascii=False)
    edited = {c.path.rsplit("/", 1)[1] for c in peer.writes()[writes_before:] if c.method == "PATCH"}
    assert edited <= shown_before | {root}  # edits only finish what was posted (and the root's status)
    ended = await core.store.get_debate(debate_id)
    assert ended is not None and ended.status == "cancelled"
    assert [t.text for t in ended.turns] == [t.text for t in record.turns]  # `show` and the page keep them
    assert "staffing" in "".join(t.text for t in ended.turns)  # written, if never shown

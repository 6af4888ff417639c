"""The Discord adapter, driven through the real discord.py client against the loopback Discord peer.

One whole debate runs from an INTERACTION_CREATE to the verdict with the fake LLM server behind it;
votes and quotes follow, then the client and the store are closed and reopened on the same SQLite file
and the old verdict's buttons still work.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.discord import DebateBot, point_discord_at, run_discord, sync_commands
from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.fakes.discord_api import APP_ID, CHANNEL_ID, GUILD_ID, TOKEN, Call, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import steady_judge_json

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

USER_1 = "740000000000000101"
USER_2 = "740000000000000102"
MENTIONS = "Ping @everyone and @here, <@123> and <@&456> and <@!789>."
CODE = "```python\n" + "\n".join(f"value_{i} = compute({i})  # step {i}" for i in range(160)) + "\n```"
PROPOSER_TEXT = f"{MENTIONS}\n\nWe should adopt Rust for the ingest service.\n\n{CODE}\n\n" + "Evidence. " * 120
VERDICT = {
    "evidence": ["Round 1, Debater A: the benchmarks; Debater B never answered them"],
    "winner": "A",
    "reasoning": "Debater A cited benchmarks; Debater B did not answer them.",
    "ratings": {"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "low"},
    "agreements": [], "disagreements": [], "unresolved": [],
    "recommendation": "Adopt Rust for the ingest service behind a feature flag; @everyone review the benchmarks.",
}


def _settings(tmp_path: Path, llm: FakeLLMServer, peer: DiscordPeer) -> Settings:
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
        DEBATE_MAX_RETRIES=0,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(rate_limit=(5, 5.0)) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    steady_judge_json(llm_server, VERDICT, "judge-1")
    llm_server.add_rule(Reply(text=PROPOSER_TEXT, tokens_per_s=400), match="gpt-5")
    llm_server.add_rule(Reply(text="I challenge that: " + "weakness, " * 150, tokens_per_s=40),
                        match="claude-sonnet-4-6")
    return _settings(tmp_path, llm_server, peer)


def _message_writes(peer: DiscordPeer) -> list[Call]:
    """Every call that creates or edits a message, whatever the route."""
    out = []
    for call in peer.calls:
        if call.method not in ("POST", "PATCH") or call.status >= 300 or not isinstance(call.body, dict):
            continue
        if call.path.endswith("/callback"):
            if call.body["type"] in (4, 7):
                out.append(call)
        elif "/messages" in call.path or call.path.startswith("/webhooks/"):
            if not call.path.endswith("/threads"):
                out.append(call)
    return out


def _embed_size(embed: dict[str, Any]) -> int:
    size = len(embed.get("title", "")) + len(embed.get("description", ""))
    size += len(embed.get("footer", {}).get("text", "")) + len(embed.get("author", {}).get("name", ""))
    return size + sum(len(f["name"]) + len(f["value"]) for f in embed.get("fields", []))


def _payload_data(call: Call) -> dict[str, Any]:
    return call.body.get("data") or {} if call.path.endswith("/callback") else call.body


def _verdict_message(peer: DiscordPeer, thread_id: str) -> dict[str, Any] | None:
    for message in peer.channel_messages(thread_id):
        if message["components"]:
            return message
    return None


def _votes_field(message: dict[str, Any]) -> str:
    return next(f["value"] for f in message["embeds"][0]["fields"] if f["name"] == "Votes")


async def _click(peer: DiscordPeer, message_id: str, custom_id: str, user_id: str) -> None:
    record = await peer.dispatch_interaction(peer.button_click(message_id, custom_id, user_id=user_id))
    token = record.payload["token"]
    await peer.wait_for(lambda: any(c.path.startswith(f"/webhooks/{APP_ID}/{token}") for c in peer.calls))


async def test_a_whole_debate_in_a_thread_then_votes_quotes_and_a_restart(
    settings: Settings, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    peer.fail_next("PATCH", r"^/channels/\d+/messages/\d+$", count=3, retry_after=0.2)  # with Via: retried
    core = await Core.open(settings)
    async with connected(core):
        options = {"topic": "Should we adopt Rust for ingest? @everyone " + "x" * 150, "rounds": 1,
                   "proposer": "openai:gpt-5", "challenger": "anthropic:claude-sonnet-4-6", "judge": "openai:judge-1"}
        record = await peer.dispatch_interaction(peer.slash_command("debate", options, user_id=USER_1))
        thread = await peer.wait_for(lambda: peer.threads() and peer.threads()[0], within=5)
        thread_id = thread["id"]
        verdict = await peer.wait_for(lambda: _verdict_message(peer, thread_id), within=45)
        await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]))

        # the ack came first, well within Discord's 3 s
        after = [c for c in peer.calls if c.at >= record.dispatched_at]
        assert after[0].path == f"/interactions/{record.payload['id']}/{record.payload['token']}/callback"
        assert record.callback_at is not None and record.callback_at - record.dispatched_at < 3.0
        # a public thread on the ack message, named from the topic
        assert thread["type"] == 11 and thread["parent_id"] == CHANNEL_ID and thread["id"] == record.original
        assert len(thread["name"]) <= 100 and thread["name"].startswith("Should we adopt Rust")
        assert "@everyone" not in thread["name"]

        # every turn went through the channel endpoints with the bot token, never the interaction webhook
        thread_calls = [c for c in peer.calls if c.path.startswith(f"/channels/{thread_id}/")]
        assert thread_calls and all(c.auth == f"Bot {TOKEN}" for c in thread_calls)
        assert not [c for c in peer.calls if c.path.startswith("/webhooks/")]
        # no mention can fire: every send and edit says so, and model text arrives escaped
        writes = _message_writes(peer)
        assert writes and all(_payload_data(c).get("allowed_mentions", {}).get("parse") == [] for c in writes)
        for call in writes:
            data = _payload_data(call)
            assert len(data.get("content") or "") <= 2000
            embeds = data.get("embeds") or []
            assert all(len(e.get("description", "")) <= 4096 for e in embeds)
            assert sum(_embed_size(e) for e in embeds) <= 6000
        texts = [e.get("description", "") for m in peer.channel_messages(thread_id) for e in m["embeds"]]
        turn_text = "\n".join(texts)
        assert "@\u200beveryone" in turn_text and "<@\u200b123>" in turn_text and "<@&\u200b456>" in turn_text
        assert "@everyone" not in turn_text and "<@123>" not in turn_text and "<@&456>" not in turn_text
        # the long turn was split, and no message leaves a code block open
        proposer_messages = [m for m in peer.channel_messages(thread_id)
                             if m["embeds"] and m["embeds"][0].get("author", {}).get("name", "").startswith("A ·")]
        assert len(proposer_messages) >= 2
        assert all(m["embeds"][0]["description"].count("```") % 2 == 0 for m in proposer_messages)
        assert "value_159 = compute(159)" in turn_text  # nothing lost, the 429 included
        assert sum(c.status == 429 for c in peer.calls) == 3  # the injected ones; pacing kept to 5 writes/5 s
        # streamed by editing, at most about once per 1.2 s per message
        edits: dict[str, list[float]] = {}
        for call in peer.calls:
            if call.method == "PATCH" and call.path.startswith(f"/channels/{thread_id}/") and call.status < 300:
                edits.setdefault(call.path, []).append(call.at)
        assert edits, "turns should be streamed by editing"
        gaps = [b - a for times in edits.values() for a, b in itertools.pairwise(times)]
        assert gaps and min(gaps) >= 1.0
        # progress and the verdict
        assert any("Round 1 of 1" in m["content"] for m in peer.channel_messages(thread_id))
        embed = verdict["embeds"][0]
        assert "Verdict" in embed["title"] and "openai:gpt-5" in embed["title"]
        assert "Adopt Rust" in embed["description"] and "@\u200beveryone" in embed["description"]
        assert any(f["name"] == "Debate quality" for f in embed["fields"])
        assert "tokens" in embed["footer"]["text"]
        root = peer.messages[record.original]
        assert root["edited_timestamp"] and "Finished" in json.dumps(root["embeds"])

        # votes: one per person, changeable, the tally edited into the verdict message
        debate_id = await core.store.history(1)
        debate_id = debate_id[0].id
        await _click(peer, verdict["id"], f"debate:vote:{debate_id}:agree", USER_1)
        assert "Agree 1" in _votes_field(peer.messages[verdict["id"]])
        await _click(peer, verdict["id"], f"debate:vote:{debate_id}:disagree", USER_1)
        await _click(peer, verdict["id"], f"debate:vote:{debate_id}:side:b", USER_2)
        tally = await core.store.tally(debate_id)
        assert tally.counts == {"disagree": 1, "side:B": 1} and tally.total == 2
        assert "Agree 0" in _votes_field(peer.messages[verdict["id"]])
        assert "Disagree 1" in _votes_field(peer.messages[verdict["id"]])
        judge_team = next(f["value"] for f in peer.messages[verdict["id"]]["embeds"][0]["fields"]
                          if f["name"] == "Judge · Team")
        assert judge_team == "Judge: **A** · Team: 1–0 for B"

        # quote by button and by the message context menu: into the parent channel, linking the thread
        await _click(peer, verdict["id"], f"debate:quote:{debate_id}", USER_2)
        menu = await peer.dispatch_interaction(peer.message_command("Quote recommendation", verdict["id"]))
        await peer.wait_for(lambda: any(c.path.startswith(f"/webhooks/{APP_ID}/{menu.payload['token']}")
                                        for c in peer.calls))
        quotes = [m for m in peer.channel_messages(CHANNEL_ID) if m["embeds"] and "💬" in m["embeds"][0]["title"]]
        assert len(quotes) == 2
        link = f"https://discord.com/channels/{GUILD_ID}/{thread_id}"
        assert all(q["embeds"][0]["url"] == link and "Adopt Rust" in q["embeds"][0]["description"] for q in quotes)
    await core.close()

    # a new client and a new store on the same SQLite file: the old buttons still count
    core = await Core.open(settings)
    async with connected(core):
        await _click(peer, verdict["id"], f"debate:vote:{debate_id}:agree", USER_2)
        tally = await core.store.tally(debate_id)
        assert tally.counts == {"disagree": 1, "agree": 1} and tally.total == 2
        assert "Agree 1" in _votes_field(peer.messages[verdict["id"]])
    await core.close()
    assert peer.identifies == 2


async def test_a_failed_debate_says_so_in_the_thread_and_on_the_root_message(
    tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer
) -> None:
    llm_server.add_rule(Reply(status=500), match="gpt-5")
    async with await Core.open(_settings(tmp_path, llm_server, peer)) as core, connected(core):
        options = {"topic": "Monorepo?", "proposer": "openai:gpt-5", "challenger": "anthropic:claude-sonnet-4-6",
                   "judge": "openai:judge-1", "rounds": 1}
        record = await peer.dispatch_interaction(peer.slash_command("debate", options))
        await peer.wait_for(lambda: "Failed" in json.dumps(peer.messages.get(record.original or "", {})), within=20)
        thread_id = peer.threads()[0]["id"]
        shown = json.dumps([m["embeds"] for m in peer.channel_messages(thread_id)])
        assert "no verdict" in shown and "This turn failed" in shown


async def test_discord_sync_sends_the_tree_once_and_skips_it_while_unchanged(settings: Settings,
                                                                           peer: DiscordPeer) -> None:
    async with await Core.open(settings) as core:
        first = await sync_commands(core)
        second = await sync_commands(core)
        guild = await sync_commands(core, int(GUILD_ID))
    puts = [c for c in peer.calls if c.method == "PUT"]
    assert first.synced and not second.synced and guild.synced
    assert [c.path for c in puts] == [f"/applications/{APP_ID}/commands",
                                      f"/applications/{APP_ID}/guilds/{GUILD_ID}/commands"]
    commands = {c["name"]: c for c in puts[0].body}
    assert set(commands) == {"debate", "debate-stop", "debate-history", "debate-search", "debate-show",
                             "debate-quote", "Quote recommendation", "debate-interject", "debate-continue",
                             "debate-rematch", "debate-config", "debate-usage", "Debate this"}
    assert commands["Quote recommendation"]["type"] == 3 and commands["Debate this"]["type"] == 3
    options = {o["name"]: o for o in commands["debate"]["options"]}
    assert options["context"]["type"] == 11 and options["context_url"]["type"] == 3  # an attachment, a link
    assert options["topic"]["required"]
    assert (options["topic"]["min_length"], options["topic"]["max_length"]) == (1, 4000)
    assert (options["rounds"]["min_value"], options["rounds"]["max_value"]) == (1, 5)
    assert [c["value"] for c in options["format"]["choices"]] == ["challenge", "consensus", "stances", "council"]
    assert all(options[name]["autocomplete"] for name in ("proposer", "challenger", "judge"))
    assert commands["debate"]["description"].startswith("Start a debate")


async def test_autocomplete_errors_and_stop_signal(settings: Settings, peer: DiscordPeer) -> None:
    async with await Core.open(settings) as core:
        stop = asyncio.Event()
        runner = asyncio.create_task(run_discord(core, stop, guild_ready_timeout=0.05))
        await peer.wait_for(lambda: peer.identifies == 1)
        await peer.wait_for(lambda: any(c.path == "/oauth2/applications/@me" for c in peer.calls))

        complete = await peer.dispatch_interaction(
            peer.slash_command("debate", {"topic": "x", "proposer": "anth"}, autocomplete="proposer"))
        await peer.wait_for(lambda: complete.callback_at is not None)
        answer = next(c.body for c in peer.calls if c.path.startswith(f"/interactions/{complete.payload['id']}/"))
        assert answer["type"] == 8
        suggested = [c["value"] for c in answer["data"]["choices"]]
        assert suggested == [f"anthropic:{core.registry.default_model('anthropic')}"]

        missing = await peer.dispatch_interaction(peer.slash_command("debate-show", {"debate_id": "abcdef12"}))
        await peer.wait_for(lambda: missing.original is not None)
        reply = peer.messages[missing.original]
        assert reply["flags"] & 64 and "No debate `abcdef12`" in reply["content"]

        bad = await peer.dispatch_interaction(peer.slash_command("debate", {"topic": "Tabs or spaces?",
                                                                            "proposer": "nonsense"}))
        await peer.wait_for(lambda: bad.original is not None)
        assert peer.messages[bad.original]["flags"] & 64 and not peer.threads()

        stop.set()
        await asyncio.wait_for(runner, 10)


async def test_a_429_without_via_is_retried_by_the_writer(settings: Settings, peer: DiscordPeer) -> None:
    from bots.discord.surface import discord_limits, post_in_channel
    from bots.thread import Pacer

    async with await Core.open(settings) as core, DebateBot(core) as bot:
        point_discord_at(settings)
        await bot.login(TOKEN)
        peer.fail_next("POST", rf"^/channels/{CHANNEL_ID}/messages$", count=1, retry_after=0.1, via=False)
        channel = bot.get_partial_messageable(int(CHANNEL_ID))
        message_id = await post_in_channel(Pacer(discord_limits()), channel, {"content": "nothing lost"})
    statuses = [c.status for c in peer.calls if c.path == f"/channels/{CHANNEL_ID}/messages"]
    assert statuses == [429, 200]
    assert peer.messages[message_id]["content"] == "nothing lost"



"""Issue 18's Discord findings, through the real discord.py client against the loopback Discord peer.

- A debate started in a private channel is private in the log from its first write: the peer looks at
  the log the moment the bot answers the interaction and again when it opens the thread, and a read
  scoped to a public channel of the same guild finds nothing then. So is one started in a channel whose
  privacy the bot cannot work out (a server it has not loaded: no roles to judge by).
- `/debate` refused outside a text channel says why for each place: a DM, a thread, a voice channel, a
  forum (the command is guild_only, but discord.py still runs it if Discord delivers one from a DM).
- The verdict shows the judge's agreements, disagreements and unresolved points: whole, as fields of
  its embed when they fit, else in a second embed cut at whole points; a vote keeps that second embed.
  Every write stays within Discord's embed limits and mentions nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.discord import render
from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from orchestrator.log import Scope, Tally
from orchestrator.models import JudgeReading, Outcome, Verdict
from tests.debate_harness import make_spec
from tests.discord_harness import connected
from tests.fakes.discord_api import APP_ID, CHANNEL_ID, GUILD_ID, MEMBER_PERMISSIONS, TOKEN, Call, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fuzz_harness import check_discord
from tests.llm_scripts import steady_judge_json

PRIVATE_CHANNEL = "730000000000000002"
THREAD = "730000000000000005"
VOICE = "730000000000000006"
FORUM = "730000000000000007"
DM = "760000000000000001"
UNLOADED_GUILD = "720000000000000077"  # the bot has not loaded it (not in GUILD_CREATE): no roles, privacy unknown
UNLOADED_CHANNEL = "730000000000000077"
USER = "740000000000000201"
PUBLIC_SCOPE = Scope(platform="discord", workspace=GUILD_ID, channel=CHANNEL_ID, channel_private=False)
HOSTILE = "@everyone <@123> <@&456> [click](https://evil.example) "
AGREEMENTS = [f"Agreement {i}: {HOSTILE}both sides accept the p99 numbers from the staging run. " + "detail " * 30
              for i in range(12)]
DISAGREEMENTS = [f"Disagreement {i}: whether the migration cost is worth it. " + "because " * 40 for i in range(15)]
UNRESOLVED = [f"Unresolved {i}: what the on-call load will be." for i in range(6)]
LONG_VERDICT = {
    "winner": "A", "reasoning": "A measured it; B did not answer the numbers. " * 10,
    "ratings": {"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "low"},
    "evidence": ["Round 1, Debater A: the staging benchmark"],
    "agreements": AGREEMENTS, "disagreements": DISAGREEMENTS, "unresolved": UNRESOLVED,
    "recommendation": "Adopt it behind a flag. " * 60,
}
SHORT_VERDICT = {"winner": "A", "reasoning": "A gave numbers.", "ratings": {}, "recommendation": "Adopt it.",
                 "agreements": ["The cost is known."], "disagreements": ["Whether it pays back."], "unresolved": []}


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        server.add_channel(PRIVATE_CHANNEL, "board-room", hidden=True)
        server.add_channel(UNLOADED_CHANNEL, "general", guild_id=UNLOADED_GUILD)
        server.channels[THREAD] = {
            "id": THREAD, "type": 11, "guild_id": GUILD_ID, "parent_id": CHANNEL_ID, "owner_id": USER,
            "name": "a thread", "last_message_id": None, "message_count": 0, "member_count": 1,
            "rate_limit_per_user": 0, "flags": 0, "total_message_sent": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": 1440, "archive_timestamp":
                                "2026-01-01T00:00:00+00:00", "locked": False},
        }
        common = {"guild_id": GUILD_ID, "permission_overwrites": [], "parent_id": None, "flags": 0, "nsfw": False}
        server.channels[VOICE] = {"id": VOICE, "type": 2, "name": "lounge", "position": 8, "bitrate": 64000,
                                  "user_limit": 0, "rtc_region": None, **common}
        server.channels[FORUM] = {"id": FORUM, "type": 15, "name": "ideas", "position": 9, "topic": None,
                                  "available_tags": [], "default_reaction_emoji": None, **common}
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    steady_judge_json(llm_server, LONG_VERDICT, "judge-long")
    steady_judge_json(llm_server, SHORT_VERDICT, "judge-1")
    llm_server.add_rule(Reply(text="Kafka keeps an ordered, replayable log."), match="gpt-5")
    llm_server.add_rule(Reply(text="A queue is simpler to run."), match="claude-sonnet-4-6")
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DEBATE_MAX_RETRIES=0,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


def _options(topic: str, judge: str = "openai:judge-1") -> dict[str, Any]:
    return {"topic": topic, "rounds": 1, "proposer": "openai:gpt-5", "challenger": "anthropic:claude-sonnet-4-6",
            "judge": judge}


def _verdict_message(peer: DiscordPeer, parent: str) -> dict[str, Any] | None:
    for thread in peer.threads():
        if thread["parent_id"] == parent:
            for message in peer.channel_messages(thread["id"]):
                if message["components"]:
                    return message
    return None


async def _run(peer: DiscordPeer, channel: str, options: dict[str, Any]) -> dict[str, Any]:
    """Start a debate with `/debate` in `channel`; its verdict message, once the root says it finished."""
    record = await peer.dispatch_interaction(peer.slash_command("debate", options, user_id=USER, channel_id=channel))
    verdict = await peer.wait_for(lambda: _verdict_message(peer, channel), within=30)
    await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]))
    return verdict


# ---- item 0: private from the first write


@pytest.mark.slow
async def test_a_private_channels_debate_is_private_in_the_log_from_its_first_write(
    settings: Settings, peer: DiscordPeer
) -> None:
    seen: list[tuple[str, str | None, bool | None, list[str]]] = []  # (moment, channel, private?, public sees)
    debate_of: dict[str, str] = {}  # interaction id → the debate its answer names

    async with await Core.open(settings) as core, connected(core) as bot:
        async def look(call: Call) -> None:
            if match := re.fullmatch(r"/interactions/(\d+)/[^/]+/callback", call.path):
                footer = call.body["data"]["embeds"][0]["footer"]["text"]
                debate_of[match.group(1)] = footer.split()[1]  # "Debate <id> · /debate-stop …"
                moment, debate_id = "answered", debate_of[match.group(1)]
            elif call.method == "POST" and call.path.endswith("/threads"):
                moment, debate_id = "thread", list(debate_of.values())[-1]
            else:
                return
            row = await core.store.get_debate(debate_id, turns=False)  # None: not in the log yet
            public = [h.id for h in await core.store.history(50, PUBLIC_SCOPE) if h.id == debate_id]
            seen.append((moment, row and row.channel, row and row.channel_private, public))

        peer.on_call = look
        await _run(peer, PRIVATE_CHANNEL, _options("Should we buy Zephyrcorp before the board meets?"))
        await _run(peer, CHANNEL_ID, _options("Should we adopt Kafka for the audit log?"))
        await _run(peer, UNLOADED_CHANNEL, _options("Should we merge the two guilds?"))
        peer.on_call = None
        await bot.output.rendered()
        (public_debate,) = [h.id for h in await core.store.history(50, PUBLIC_SCOPE)]

    private_moments = [(m, p) for m, channel, p, _ in seen if channel == PRIVATE_CHANNEL]
    assert private_moments == [("answered", True), ("thread", True)]
    assert all(not public for _m, channel, _p, public in seen if channel == PRIVATE_CHANNEL)  # nothing to recall
    assert [(m, p) for m, channel, p, _ in seen if channel == CHANNEL_ID] == [("answered", False), ("thread", False)]
    assert public_debate == debate_of[list(debate_of)[1]]
    # a channel whose privacy the bot cannot work out counts as private, from the first write too
    assert [(m, p) for m, channel, p, _ in seen if channel == UNLOADED_CHANNEL] == [("answered", True),
                                                                                  ("thread", True)]


# ---- item 14: a reason for each place


@pytest.mark.slow
async def test_debate_outside_a_text_channel_says_why_for_each_place(settings: Settings, peer: DiscordPeer) -> None:
    places = {
        "dm": peer.slash_command("debate", _options("Tabs or spaces?"), user_id=USER, channel_id=DM, dm=True),
        "thread": peer.slash_command("debate", _options("Tabs or spaces?"), user_id=USER, channel_id=THREAD),
        "voice": peer.slash_command("debate", _options("Tabs or spaces?"), user_id=USER, channel_id=VOICE),
        "forum": peer.slash_command("debate", _options("Tabs or spaces?"), user_id=USER, channel_id=FORUM),
    }
    async with await Core.open(settings) as core, connected(core):
        answers = {}
        for place, payload in places.items():
            record = await peer.dispatch_interaction(payload)
            (answers[place],) = await peer.wait_for(lambda record=record: record.ephemeral)
        assert await core.store.history(10) == []  # nothing admitted anywhere
    said = {place: answer["content"] for place, answer in answers.items()}
    assert said["dm"] == "Start debates in a server's text channel; debates cannot run in direct messages."
    assert said["thread"] == "Start debates in a text channel: threads cannot hold threads of their own."
    assert said["voice"] == "Start debates in a server's text channel; a voice channel cannot hold a debate's thread."
    assert said["forum"] == "Start debates in a server's text channel; a forum channel cannot hold a debate's thread."
    assert not peer.threads()[1:]  # only the thread declared above


# ---- item 16: the judge's points


def _embed_size(embed: dict[str, Any]) -> int:
    size = len(embed.get("title", "")) + len(embed.get("description", ""))
    size += len(embed.get("footer", {}).get("text", "")) + len(embed.get("author", {}).get("name", ""))
    return size + sum(len(f["name"]) + len(f["value"]) for f in embed.get("fields", []))


def _assert_within_discords_rules(peer: DiscordPeer) -> int:
    """Every message write the bot made: mentions off, every embed limit kept; returns how many there were."""
    writes = [c for c in peer.calls if c.method in ("POST", "PATCH") and c.status < 300 and isinstance(c.body, dict)
              and ("/messages" in c.path or c.path.endswith("/callback")) and not c.path.endswith("/threads")]
    for call in writes:
        data = call.body.get("data") or {} if call.path.endswith("/callback") else call.body
        if call.path.endswith("/callback") and call.body["type"] not in (4, 7):
            continue
        assert data.get("allowed_mentions", {}).get("parse") == [], call.path
        embeds = data.get("embeds") or []
        assert len(embeds) <= 10 and sum(_embed_size(e) for e in embeds) <= 6000
        for embed in embeds:
            assert len(embed.get("title", "")) <= 256 and len(embed.get("description", "")) <= 4096
            assert len(embed.get("fields", [])) <= 25
            assert all(len(f["name"]) <= 256 and len(f["value"]) <= 1024 for f in embed.get("fields", []))
    return len(writes)


@pytest.mark.slow
async def test_a_long_verdict_shows_agreements_disagreements_and_unresolved_in_a_second_embed(
    settings: Settings, peer: DiscordPeer
) -> None:
    async with await Core.open(settings) as core, connected(core) as bot:
        verdict = await _run(peer, CHANNEL_ID, _options("Should we adopt Kafka?", judge="openai:judge-long"))
        main, points = verdict["embeds"]
        assert "Verdict" in main["title"] and "Adopt it behind a flag." in main["description"]
        assert points["title"] == render.POINTS_TITLE
        text = points["description"]
        for heading in ("**Agreements**", "**Disagreements**", "**Unresolved**"):
            assert heading in text
        assert all(f"• {u}" in text for u in UNRESOLVED)  # the short list is whole
        assert "• Agreement 0: @\u200beveryone <@\u200b123> <@&\u200b456>" in text  # escaped, never a ping
        assert "@everyone" not in json.dumps(verdict["embeds"]) and "](https://evil" not in text
        assert re.search(r"… and \d+ more", text)  # the long lists are cut at whole points, and say so
        assert _embed_size(main) + _embed_size(points) <= 6000 - 100  # room for the tally to grow

        (debate,) = await core.store.history(1)
        click = await peer.dispatch_interaction(peer.button_click(verdict["id"], f"debate:vote:{debate.id}:agree",
                                                                  user_id=USER))
        await peer.wait_for(lambda: any(c.path.startswith(f"/webhooks/{APP_ID}/{click.payload['token']}")
                                        for c in peer.calls))
        after = peer.messages[verdict["id"]]["embeds"]
        assert len(after) == 2 and after[1] == points  # the vote kept the judge's points
        assert "Agree 1" in next(f["value"] for f in after[0]["fields"] if f["name"] == "Votes")
        await bot.output.rendered()
    assert _assert_within_discords_rules(peer) > 5


@pytest.mark.slow
async def test_a_short_verdict_shows_the_judges_points_as_fields_of_its_one_embed(
    settings: Settings, peer: DiscordPeer
) -> None:
    async with await Core.open(settings) as core, connected(core) as bot:
        verdict = await _run(peer, CHANNEL_ID, _options("Should we adopt Kafka?"))
        await bot.output.rendered()
    (embed,) = verdict["embeds"]
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert fields["Agreements"] == "• The cost is known." and fields["Disagreements"] == "• Whether it pays back."
    assert "Unresolved" not in fields and embed["fields"][-1]["name"] == "Votes"
    _assert_within_discords_rules(peer)


@pytest.mark.parametrize("size", [1, 300, 1100, 5000])
def test_verdict_embeds_keep_every_limit_whatever_the_judge_writes(size: int) -> None:
    """Every part of a verdict at `size` characters, hostile text in every list: within limits, nothing lost
    silently (a list that does not fit whole says how many points it left out)."""
    text = (HOSTILE * (size // len(HOSTILE) + 1))[:size]
    readings = tuple(JudgeReading(kind=kind, winner="A", reasoning=text, family="Google")  # type: ignore[arg-type]
                     for kind in ("seated", "swapped", "tiebreak"))
    verdict = Verdict(winner="A", reasoning=text, recommendation=text, evidence=(text,) * 5, change_note=text,
                      changed=True, split=True, readings=readings, judge_shares_family_with=("A", "B"),
                      ratings={"evidence": "high", "depth": "low"},
                      agreements=(text,) * 30, disagreements=(text,) * 30, unresolved=(text,) * 30)
    spec = make_spec("challenge")
    tally = Tally(debate_id=spec.id, counts={"agree": 10**6, "disagree": 10**6}, total=2 * 10**6)
    outcome = Outcome(status="completed", rounds_completed=2, rounds_planned=2, warnings=(text,) * 3)
    embeds = render.verdict_embeds(spec, verdict, outcome, Tally(debate_id=spec.id))
    check_discord(*embeds)
    check_discord(render.with_tally(embeds[0], tally, ("A", "B"), "A"), *embeds[1:])
    shown = json.dumps([e.to_dict() for e in embeds], ensure_ascii=False)
    for heading in ("Agreements", "Disagreements", "Unresolved"):
        assert heading in shown
    if size > 300:
        assert "more" in shown

"""Who sees and stops what in Discord (issue 10, items 2 and 3), through the real discord.py client.

The guild here is realistic: @everyone may view and talk but not moderate, and one channel hides itself
from @everyone. A member of that private channel runs a debate there; a member who is only in the public
channel then tries every way in: the recall commands, the Quote menu, the vote and quote buttons (clicks
that claim the public channel as their place), and a DM. The assertions are on what the peer received:
interaction answers, followups, and messages posted in channels. The same log also holds a Slack debate
and a debate of another guild, which Discord must never show or post into. Stopping a debate is for its
requester and for members with Manage Messages in its channel, with a full id or an unambiguous prefix.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.app import Core
from orchestrator.config import Settings
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Seat, Verdict
from tests import discord_tenancy_harness
from tests.discord_harness import connected
from tests.discord_tenancy_harness import (
    INSIDER,
    OTHER_GUILD,
    OTHER_GUILD_CHANNEL,
    PRIVATE_CHANNEL,
    SIDE_CHANNEL,
    _options,
    _start_held,
)
from tests.fakes.discord_api import (
    CHANNEL_ID,
    GUILD_ID,
    MANAGE_MESSAGES,
    MEMBER_PERMISSIONS,
    DiscordPeer,
)
from tests.fakes.llm_server import FakeLLMServer

# the fixtures this module's tests take, defined with what other test modules share
peer, settings = discord_tenancy_harness.peer, discord_tenancy_harness.settings

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

OUTSIDER = "740000000000000202"  # sees the public channels only
MODERATOR = "740000000000000203"
MODERATOR_PERMISSIONS = str(int(MEMBER_PERMISSIONS) | MANAGE_MESSAGES)
SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-6"))

PRIVATE_TOPIC = "Should we buy Zephyrcorp before the board meets?"
PUBLIC_TOPIC = "Should we adopt Kafka for the audit log?"
SECRETS = ("Zephyr", "Quibblewax", "Glimmerfen")  # in the private debate, the Slack one, the other guild's


async def _log_elsewhere(store: DebateLog) -> tuple[str, str]:
    """A finished Slack debate and a finished debate of another guild, in the same log."""
    slack = DebateSpec(topic="Kafka on Slack: the Quibblewax plan", seats=SEATS, judge="openai:judge-1",
                       platform="slack", workspace="T1", channel="C1", thread="1.0", requested_by="U1")
    other = DebateSpec(topic="Kafka in the Glimmerfen guild", seats=SEATS, judge="openai:judge-1",
                       platform="discord", workspace=OTHER_GUILD, channel=OTHER_GUILD_CHANNEL, thread="1",
                       requested_by=OUTSIDER)
    for spec in (slack, other):
        await store.create_debate(spec)
        await store.set_verdict(spec.id, Verdict(winner="A", recommendation=f"{spec.topic}: adopt Kafka."))
    return slack.id, other.id


async def _ask(peer: DiscordPeer, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Dispatch one interaction; return everything the bot answered to it, once it answered privately."""
    record = await peer.dispatch_interaction(payload)
    await peer.wait_for(lambda: record.ephemeral)
    return record.answers


def _verdict_message(peer: DiscordPeer, parent: str) -> dict[str, Any] | None:
    for thread in peer.threads():
        if thread["parent_id"] == parent:
            for message in peer.channel_messages(thread["id"]):
                if message["components"]:
                    return message
    return None


async def _run_debate(peer: DiscordPeer, channel: str, user: str, options: dict[str, Any]) -> dict[str, Any]:
    """Start a debate with `/debate` and return its verdict message once its root says it finished."""
    record = await peer.dispatch_interaction(peer.slash_command("debate", options, user_id=user, channel_id=channel))
    verdict = await peer.wait_for(lambda: _verdict_message(peer, channel), within=30)
    await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]))
    return verdict


def _text(answers: list[dict[str, Any]]) -> str:
    return json.dumps(answers, ensure_ascii=False)


async def test_a_public_member_gets_nothing_of_a_private_channel_another_guild_or_slack(
    settings: Settings, peer: DiscordPeer
) -> None:
    async with await Core.open(settings) as core, connected(core):
        slack_id, other_id = await _log_elsewhere(core.store)
        private_verdict = await _run_debate(peer, PRIVATE_CHANNEL, INSIDER,
                                            _options(PRIVATE_TOPIC, "openai:gpt-private", "openai:judge-private"))
        public_verdict = await _run_debate(peer, CHANNEL_ID, INSIDER,
                                           _options(PUBLIC_TOPIC, "openai:gpt-5", "openai:judge-1"))
        (public, private) = [h for h in await core.store.history(10) if h.platform == "discord"
                             and h.workspace == GUILD_ID]
        assert (private.topic, private.channel, private.channel_private) == (PRIVATE_TOPIC, PRIVATE_CHANNEL, True)
        assert (public.topic, public.channel, public.channel_private) == (PUBLIC_TOPIC, CHANNEL_ID, False)
        hidden_ids = (private.id, slack_id, other_id)

        posted_before = set(peer.messages)
        calls_before = len(peer.calls)

        def outsider(name: str, options: dict[str, Any] | None = None, **where: Any) -> dict[str, Any]:
            return peer.slash_command(name, options, user_id=OUTSIDER, **where)

        probes = [outsider("debate-history", {"limit": 25})]
        probes += [outsider("debate-search", {"query": q}) for q in ("Zephyrcorp", "Zephyrplan", "Zephyrturn",
                                                                       "Quibblewax", "Glimmerfen", "Kafka")]
        for debate_id in (*hidden_ids, private.id[:4]):
            probes += [outsider("debate-show", {"debate_id": debate_id}),
                       outsider("debate-quote", {"debate_id": debate_id}),
                       outsider("debate-stop", {"debate_id": debate_id})]
        probes += [
            peer.message_command("Quote recommendation", private_verdict["id"], user_id=OUTSIDER,
                                 channel_id=CHANNEL_ID),
            peer.button_click(private_verdict["id"], f"debate:vote:{private.id}:agree", user_id=OUTSIDER,
                              channel_id=CHANNEL_ID),
            peer.button_click(private_verdict["id"], f"debate:quote:{private.id}", user_id=OUTSIDER,
                              channel_id=CHANNEL_ID),
            # the same, asked in a DM with the bot
            outsider("debate-search", {"query": "Zephyrcorp"}, channel_id="760000000000000001", dm=True),
            outsider("debate-show", {"debate_id": private.id}, channel_id="760000000000000001", dm=True),
            outsider("debate-history", {"limit": 25}, channel_id="760000000000000001", dm=True),
        ]
        answers = [await _ask(peer, probe) for probe in probes]

        for probe, answer in zip(probes, answers, strict=True):
            shown = _text(answer)
            for option in probe["data"].get("options", []):  # what the asker typed may be echoed back
                shown = shown.replace(str(option["value"]), "")
            leaked = [s for s in (*SECRETS, *hidden_ids) if s in shown]
            assert not leaked, (probe["data"].get("name") or probe["data"].get("custom_id"), leaked, shown)
        # nothing reached a channel but private answers; no call went to the other guild's channel
        new = [peer.messages[m] for m in peer.messages if m not in posted_before]
        assert new and all(m["flags"] & 64 for m in new), [m for m in new if not m["flags"] & 64]
        assert not [c for c in peer.calls[calls_before:] if OTHER_GUILD_CHANNEL in c.path]
        assert (await core.store.tally(private.id)).total == 0

        # the controls: the outsider does find the public debate, and can quote it (into its own channel)
        found = _text(answers[probes.index(next(p for p in probes if p["data"]["name"] == "debate-search"
                                                and p["data"]["options"][0]["value"] == "Kafka"))])
        assert public.id in found
        quoted = await _ask(peer, peer.slash_command("debate-quote", {"debate_id": public.id}, user_id=OUTSIDER,
                                                     channel_id=SIDE_CHANNEL))
        assert f"<#{CHANNEL_ID}>" in _text(quoted)
        assert any("💬" in (m["embeds"] or [{}])[0].get("title", "") for m in peer.channel_messages(CHANNEL_ID))
        # and the insider, inside the private channel and its thread, sees and votes on its debate
        shown = await _ask(peer, peer.slash_command("debate-show", {"debate_id": private.id[:4]}, user_id=INSIDER,
                                                    channel_id=PRIVATE_CHANNEL))
        assert "Zephyrcorp" in _text(shown) and "Zephyrplan" in _text(shown)
        await _ask(peer, peer.button_click(private_verdict["id"], f"debate:vote:{private.id}:agree",
                                           user_id=INSIDER))
        assert (await core.store.tally(private.id)).total == 1
        await _ask(peer, peer.message_command("Quote recommendation", private_verdict["id"], user_id=INSIDER))
        quotes = [m for m in peer.channel_messages(PRIVATE_CHANNEL) if m["embeds"]
                  and "💬" in m["embeds"][0].get("title", "")]
        assert len(quotes) == 1 and "Zephyrplan" in quotes[0]["embeds"][0]["description"]
        assert quotes[0]["embeds"][0]["url"].startswith(f"https://discord.com/channels/{GUILD_ID}/")
        assert public_verdict["id"] != private_verdict["id"]


async def test_a_quote_from_the_public_channel_never_lands_in_another_guild(
    settings: Settings, peer: DiscordPeer
) -> None:
    """Even a debate logged before guilds were recorded (no workspace) is quoted only from its own channel."""
    async with await Core.open(settings) as core, connected(core):
        _, other_id = await _log_elsewhere(core.store)
        legacy = DebateSpec(topic="Kafka, Glimmerfen legacy", seats=SEATS, judge="openai:judge-1",
                            platform="discord", channel=OTHER_GUILD_CHANNEL, thread="2")
        await core.store.create_debate(legacy)
        await core.store.set_verdict(legacy.id, Verdict(winner="A", recommendation="Glimmerfen: adopt."))
        for debate_id in (other_id, legacy.id):
            answer = await _ask(peer, peer.slash_command("debate-quote", {"debate_id": debate_id}))
            assert "No debate" in _text(answer) and "Glimmerfen" not in _text(answer)
    assert not [c for c in peer.calls if OTHER_GUILD_CHANNEL in c.path]
    assert not peer.channel_messages(OTHER_GUILD_CHANNEL)


def _root_says(peer: DiscordPeer, thread_id: str, word: str) -> bool:
    return word in json.dumps(peer.messages[thread_id]["embeds"])


async def test_a_stop_from_a_member_without_manage_messages_is_refused_and_the_debate_completes(
    settings: Settings, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    async with await Core.open(settings) as core, connected(core) as bot:
        debate_id, gate = await _start_held(peer, llm_server, core, INSIDER)
        thread_id = (await core.store.get_debate(debate_id)).thread  # type: ignore[union-attr]
        attempts = [
            peer.slash_command("debate-stop", {"debate_id": debate_id}, user_id=OUTSIDER,
                               permissions=MEMBER_PERMISSIONS),
            peer.slash_command("debate-stop", {"debate_id": debate_id[:1]}, user_id=INSIDER),
            peer.slash_command("debate-stop", {"debate_id": debate_id[:3]}, user_id=INSIDER),
            # Manage Messages in another channel is not Manage Messages in the debate's
            peer.slash_command("debate-stop", {"debate_id": debate_id}, user_id=MODERATOR,
                               permissions=MODERATOR_PERMISSIONS, channel_id=SIDE_CHANNEL),
        ]
        refusals = [await _ask(peer, attempt) for attempt in attempts]
        assert (await core.store.get_debate(debate_id, turns=False)).status == "running"  # type: ignore[union-attr]
        assert all(len(r) == 1 and r[0]["flags"] & 64 and "Stopping" not in r[0]["content"] for r in refusals)
        assert "who started" in refusals[0][0]["content"] and "Manage Messages" in refusals[0][0]["content"]
        assert "at least its first 4 characters" in refusals[1][0]["content"]
        gate.set()
        await peer.wait_for(lambda: _root_says(peer, thread_id, "Finished"), within=30)
        assert (await core.store.get_debate(debate_id)).status == "completed"  # type: ignore[union-attr]
        await bot.output.rendered()


async def test_a_stop_by_a_moderator_or_by_the_requester_with_a_prefix_works(
    settings: Settings, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    async with await Core.open(settings) as core, connected(core) as bot:
        debate_id, gate = await _start_held(peer, llm_server, core, INSIDER)
        thread_id = (await core.store.get_debate(debate_id)).thread  # type: ignore[union-attr]
        answer = await _ask(peer, peer.slash_command("debate-stop", {"debate_id": debate_id}, user_id=MODERATOR,
                                                     permissions=MODERATOR_PERMISSIONS, channel_id=thread_id))
        assert "Stopping" in _text(answer)
        await peer.wait_for(lambda: _root_says(peer, thread_id, "Stopped"), within=30)
        assert (await core.store.get_debate(debate_id)).status == "cancelled"  # type: ignore[union-attr]
        gate.set()

        debate_id, gate = await _start_held(peer, llm_server, core, OUTSIDER)
        thread_id = (await core.store.get_debate(debate_id)).thread  # type: ignore[union-attr]
        answer = await _ask(peer, peer.slash_command("debate-stop", {"debate_id": debate_id[:4]},
                                                     user_id=OUTSIDER, channel_id=SIDE_CHANNEL))
        assert "Stopping" in _text(answer)
        await peer.wait_for(lambda: _root_says(peer, thread_id, "Stopped"), within=30)
        gate.set()
        await bot.output.rendered()
        # the moderator's stop of another's debate is in the audit trail (issue 55); the requester's own is not
        stops = [(e.who, e.action) for e in await core.store.audit(0.0) if e.action == "stop"]
        assert stops == [(f"discord:{MODERATOR}", "stop")]


async def test_a_forged_or_unknown_button_click_is_answered_privately_with_no_debate(
    settings: Settings, peer: DiscordPeer
) -> None:
    """Item 22 of issue 57: a `debate:…` click for a debate the clicker may not see, on a public message that
    does not carry it (or on its own message, claimed from the public channel), got no answer at all, so
    Discord said "This interaction failed". Each gets the commands' private "no debate" (naming no id the
    clicker did not type); nothing leaks."""
    async with await Core.open(settings) as core, connected(core):
        private_verdict = await _run_debate(peer, PRIVATE_CHANNEL, INSIDER,
                                            _options(PRIVATE_TOPIC, "openai:gpt-private", "openai:judge-private"))
        public_verdict = await _run_debate(peer, CHANNEL_ID, INSIDER,
                                           _options(PUBLIC_TOPIC, "openai:gpt-5", "openai:judge-1"))
        private = next(h for h in await core.store.history(10) if h.channel == PRIVATE_CHANNEL)
        shown = await _ask(peer, peer.slash_command("debate-show", {"debate_id": private.id}, user_id=OUTSIDER))
        (command_answer,) = [a["content"] for a in shown]
        assert command_answer == f"No debate `{private.id}` here; `/debate-history` lists recent ones."
        no_debate = "No such debate here; `/debate-history` lists recent ones."

        forged = [f"debate:{kind}:{private.id}" for kind in ("continue", "interject", "quote", "rematch")]
        forged.append(f"debate:vote:{private.id}:agree")
        clicks = [peer.button_click(public_verdict["id"], custom_id, user_id=OUTSIDER) for custom_id in forged]
        # the private debate's own Continue button, clicked as if from the public channel: no form for it
        clicks.append(peer.button_click(private_verdict["id"], f"debate:continue:{private.id}", user_id=OUTSIDER,
                                        channel_id=CHANNEL_ID))
        for click in clicks:
            answers = await _ask(peer, click)
            assert [a["content"] for a in answers] == [no_debate], click["data"]["custom_id"]
            assert not [s for s in (PRIVATE_TOPIC, "Zephyr", private.id) if s in _text(answers)]
        unknown = await _ask(peer, peer.button_click(public_verdict["id"], "debate:rematch:not-an-id",
                                                     user_id=OUTSIDER))
        assert [a["content"] for a in unknown] == [no_debate]
        assert (await core.store.tally(private.id)).total == 0

        # the controls: the debate's own members still get the form, and the public buttons still work
        opened = await peer.dispatch_interaction(peer.button_click(private_verdict["id"],
                                                                   f"debate:continue:{private.id}", user_id=INSIDER))
        await peer.wait_for(lambda: opened.modal is not None)
        assert opened.modal is not None and opened.modal["custom_id"] == f"debate:continue-form:{private.id}"
        public = next(h for h in await core.store.history(10) if h.channel == CHANNEL_ID)
        await _ask(peer, peer.button_click(public_verdict["id"], f"debate:vote:{public.id}:agree", user_id=OUTSIDER))
        assert (await core.store.tally(public.id)).total == 1

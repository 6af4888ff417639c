"""Who sees what and who may stop what in Slack (issue 10, items 2 and 3), through bolt's real dispatch
against the Slack API peer: every command, the shortcut, the buttons and App Home, asserted on all the
peer received."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.oauth.installation_store import Installation

from bots.thread.vote import NOT_A_VOTE
from orchestrator.log import Scope
from orchestrator.models import DebateSpec, Seat, Verdict
from tests import slack_tenancy_harness
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Message, SlackAPIPeer, SlackBot, action_payload, shortcut_payload, slack_settings
from tests.llm_scripts import script_judge
from tests.slack_tenancy_harness import LIMITS, SECRET_RECOMMENDATION, _keys, open_home

# the fixtures this module's tests take, defined with what other test modules share
peer, bot = slack_tenancy_harness.peer, slack_tenancy_harness.bot

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

PRIVATE_TOPIC = "Should we merge with Initech this quarter?"
SECRETS = ("Initech", "SECRETREC", "CONFIDENTIALTURN")
PUBLIC_TOPIC = "Kafka or RabbitMQ for the audit log?"
SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-6"))


async def ask(bot: SlackBot, peer: SlackAPIPeer, text: str, **kwargs: Any) -> str:
    """Send `/debate text`; returns the response_url key its answers arrive under."""
    key = f"k{next(_keys)}"
    await bot.command(text, peer, response_url=peer.response_url(key), **kwargs)
    return key


def answers(peer: SlackAPIPeer, key: str | None = None) -> list[str]:
    return [c.params.get("text", "") for c in peer.of("response_url")
            if c.params.get("response_type") == "ephemeral" and (key is None or c.params["key"] == key)]


async def run_debate(bot: SlackBot, peer: SlackAPIPeer, topic: str, channel: str, user: str = "U2") -> str:
    before = {s.id for s in await bot.core.store.history(100)}
    await ask(bot, peer, f"{topic} --rounds 1", channel=channel, user=user)
    await bot.settle()
    (new,) = [s for s in await bot.core.store.history(100) if s.id not in before]
    return new.id


# -- recording where a debate was held ------------------------------------------------------------


async def test_a_debate_records_its_workspace_and_whether_its_channel_is_private(
    bot: SlackBot, peer: SlackAPIPeer
) -> None:
    peer.declare_channel("G8", "unreachable")  # conversations.info fails: counted as private
    peer.declare_channel("G9", "mpim")
    held = {channel: await run_debate(bot, peer, f"Tabs or spaces in {channel}?", channel)
            for channel in ("C1", "G2", "D7", "G8", "G9")}
    await run_debate(bot, peer, "Tabs or spaces, again?", "C1")
    private = {}
    for channel, debate_id in held.items():
        record = await bot.core.store.get_debate(debate_id, turns=False)
        assert record is not None and record.workspace == "T1" and record.channel == channel
        private[channel] = record.channel_private
    assert private == {"C1": False, "G2": True, "D7": True, "G8": True, "G9": True}
    asked = [c.params["channel"] for c in peer.of("conversations.info")]
    assert "D7" not in asked, "a DM is private without asking"
    assert asked.count("C1") == 1, "a channel's privacy is cached"


async def test_a_burst_of_commands_from_a_new_channel_asks_its_privacy_once(bot: SlackBot, peer: SlackAPIPeer) -> None:
    await asyncio.gather(*(ask(bot, peer, f"Tabs or spaces, take {n}? --rounds 1", channel="C5", user=f"U{n}")
                           for n in range(3)))  # a channel's quota: 3 running at once
    await bot.settle()
    started = [s for s in await bot.core.store.history(100) if s.channel == "C5"]
    assert len(started) == 3 and not any(s.channel_private for s in started)
    assert [c.params["channel"] for c in peer.of("conversations.info")] == ["C5"]


# -- who sees what ----------------------------------------------------------------------------------


async def test_a_non_member_in_a_public_channel_learns_nothing_of_a_private_channels_debate(
    bot: SlackBot, peer: SlackAPIPeer
) -> None:
    secret = await run_debate(bot, peer, PRIVATE_TOPIC, "G2")
    public = await run_debate(bot, peer, PUBLIC_TOPIC, "C1")
    record = await bot.core.store.get_debate(secret)
    assert record is not None and record.verdict is not None and record.channel_private
    verdict = next(m for m in peer.thread("G2", record.thread or "")
                   if m.blocks and any(b["type"] == "actions" for b in m.blocks))
    # the verdict's blocks (ids, buttons) as if posted into the public channel the attacker is in
    forged = Message("C1", "1800000000.000001", verdict.text, verdict.blocks, None)
    seen_from = len(peer.calls)

    keys = [await ask(bot, peer, text, user="U1", channel="C1") for text in (
        "history", "history 50", "search Initech", "search SECRETREC", "search CONFIDENTIALTURN",
        f"show {secret}", f"show {secret[:4]}", f"quote {secret}", f"stop {secret}")]
    await bot.interact(shortcut_payload(forged, "quote_recommendation", user="U1",
                                        response_url=peer.response_url("shortcut")))
    await bot.interact(action_payload(forged, "quote_recommendation", secret, user="U1",
                                      response_url=peer.response_url("quote-button")))
    await bot.interact(action_payload(forged, "debate_vote_agree", f"{secret}|agree", user="U1",
                                      response_url=peer.response_url("vote")))
    await bot.interact(action_payload(forged, "debate_vote_side_A", f"{secret}|side:A", user="U1",
                                      response_url=peer.response_url("vote")))
    await open_home(bot, "U1")
    await open_home(bot, "U2")  # a member of the private channel: App Home is not inside it either
    await bot.settle()

    for call in peer.calls[seen_from:]:
        sent = json.dumps(call.params, ensure_ascii=False)
        for query in SECRETS:  # “Nothing found for “Initech”” only says back what the asker typed
            sent = sent.replace(f"“{query}”", "")
        for secret_text in SECRETS:
            assert secret_text not in sent, (call.method, call.params)
    assert not [c for c in peer.calls[seen_from:] if c.method in ("chat.postMessage", "chat.update")]
    assert (await bot.core.store.tally(secret)).total == 0
    assert all(answers(peer, key) for key in (*keys, "shortcut", "quote-button", "vote")), "every ask is answered"
    assert answers(peer, keys[5]) == [f"No debate with id `{secret}` here. `/debate history` lists recent ones."]

    # what the public channel may see, it still sees
    assert public in answers(peer, keys[0])[0]
    assert PUBLIC_TOPIC.removesuffix("?") in json.dumps(peer.views["U1"])
    assert PUBLIC_TOPIC.removesuffix("?") in json.dumps(peer.views["U2"])

    # inside the private channel, its debate is there
    inside = [await ask(bot, peer, text, user="U2", channel="G2")
              for text in ("history", "search Initech", f"show {secret[:4]}")]
    await bot.settle()
    assert all(secret in answers(peer, key)[0] for key in inside)
    assert SECRET_RECOMMENDATION.split(" (")[0] in answers(peer, inside[2])[0]


async def test_every_forged_button_click_is_answered_privately_with_not_found(
    bot: SlackBot, peer: SlackAPIPeer
) -> None:
    """Item 22 of issue 57, on Slack: each of our buttons, clicked on a public message for a private
    channel's debate, is answered privately with the commands' "not found" (or the vote's refusal), and
    opens no form."""
    secret = await run_debate(bot, peer, PRIVATE_TOPIC, "G2")
    await run_debate(bot, peer, PUBLIC_TOPIC, "C1")
    public = next(m for m in peer.messages.values() if m.channel == "C1" and m.thread_ts is None)
    clicks = {"debate_interject": secret, "debate_continue": secret, "quote_recommendation": secret,
              "debate_vote_agree": f"{secret}|agree"}
    for action, value in clicks.items():
        await bot.interact(action_payload(public, action, value, user="U1", response_url=peer.response_url(action)))
    await bot.settle()
    not_found = f"No debate with id `{secret}` here. `/debate history` lists recent ones."
    for action in ("debate_interject", "debate_continue", "quote_recommendation"):
        assert answers(peer, action) == [not_found], action
    assert answers(peer, "debate_vote_agree") == [NOT_A_VOTE]
    assert not peer.of("views.open") and (await bot.core.store.tally(secret)).total == 0


async def test_an_ambiguous_prefix_names_only_debates_the_asker_may_see(bot: SlackBot, peer: SlackAPIPeer) -> None:
    for debate_id, workspace, channel, private in (("abcd0001", "T1", "C1", False), ("abcd0002", "T1", "G2", True),
                                                   ("abcd0003", "T2", "C1", False)):
        await bot.core.store.create_debate(DebateSpec(
            id=debate_id, topic=f"Prefix {debate_id}", seats=SEATS, judge="openai:gpt-5", platform="slack",
            workspace=workspace, channel=channel, channel_private=private))
    public = await ask(bot, peer, "show abcd", user="U1", channel="C1")
    private = await ask(bot, peer, "show abcd", user="U2", channel="G2")
    short = await ask(bot, peer, "show abc", user="U2", channel="G2")
    await bot.settle()
    assert "Prefix abcd0001" in answers(peer, public)[0]
    (ambiguous,) = answers(peer, private)
    assert "abcd0001" in ambiguous and "abcd0002" in ambiguous and "abcd0003" not in ambiguous
    assert "abcd0003" not in json.dumps([c.params for c in peer.calls])
    assert "takes one debate id" in answers(peer, short)[0]


async def test_a_quote_goes_only_into_the_debates_own_channel(bot: SlackBot, peer: SlackAPIPeer) -> None:
    public = await run_debate(bot, peer, PUBLIC_TOPIC, "C1")
    posts_before = len(peer.of("chat.postMessage"))
    elsewhere = await ask(bot, peer, f"quote {public}", user="U1", channel="C5")
    await bot.settle()
    assert len(peer.of("chat.postMessage")) == posts_before
    assert "its own channel" in answers(peer, elsewhere)[0]

    await ask(bot, peer, f"quote {public}", user="U1", channel="C1")
    await bot.settle()
    (quote,) = peer.of("chat.postMessage")[posts_before:]
    assert quote.params["channel"] == "C1" and "Use Kafka for the audit log." in quote.params["text"]


# -- who may stop what ------------------------------------------------------------------------------


async def held_debate(bot: SlackBot, peer: SlackAPIPeer, llm: FakeLLMServer, gate: asyncio.Event) -> str:
    """A debate in the private channel G2, started by U2, held open at its first turn."""
    llm.reset()
    script_judge(llm)
    llm.add_rule(Reply(text="Holding the floor.", gate=gate))
    await ask(bot, peer, "Hold the floor? --rounds 1", user="U2", channel="G2")
    await llm.wait_for_requests(1)
    (running,) = bot.running()
    return running


async def answered(peer: SlackAPIPeer, *keys: str) -> None:
    await peer.wait_for(lambda p: all(answers(p, key) for key in keys))


async def test_a_stop_from_anyone_but_the_requester_or_an_admin_is_refused_and_the_debate_completes(
    bot: SlackBot, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    gate = asyncio.Event()
    debate_id = await held_debate(bot, peer, llm_server, gate)
    member = await ask(bot, peer, f"stop {debate_id}", user="U1", channel="G2")  # a plain member of G2
    prefix = await ask(bot, peer, f"stop {debate_id[:4]}", user="U1", channel="G2")
    outsider = await ask(bot, peer, f"stop {debate_id}", user="U3", channel="C1")  # not in G2
    one_char = await ask(bot, peer, f"stop {debate_id[:1]}", user="U2", channel="G2")
    await answered(peer, member, prefix, outsider, one_char)
    assert debate_id in bot.running()
    assert "who started it" in answers(peer, member)[0] and "who started it" in answers(peer, prefix)[0]
    assert answers(peer, outsider) == [f"No running debate with id `{debate_id}` here."]
    assert "takes one debate id" in answers(peer, one_char)[0]
    assert not [c for c in peer.of("response_url") if c.params.get("response_type") == "in_channel"]

    gate.set()
    await bot.settle()
    record = await bot.core.store.get_debate(debate_id, turns=False)
    assert record is not None and record.status == "completed"


@pytest.mark.parametrize(("user", "role"), [("U2", "plain"), ("U9", "admin"), ("U8", "owner")])
async def test_the_requester_or_a_workspace_admin_may_stop_a_debate(
    bot: SlackBot, peer: SlackAPIPeer, llm_server: FakeLLMServer, user: str, role: Any
) -> None:
    peer.declare_user(user, role)
    gate = asyncio.Event()
    debate_id = await held_debate(bot, peer, llm_server, gate)
    stop = await ask(bot, peer, f"stop {debate_id[:6]}", user=user, channel="G2")
    await answered(peer, stop)
    assert answers(peer, stop) == [f"Stopping debate `{debate_id}`; its thread will say it was cancelled."]
    await bot.settle()
    gate.set()
    record = await bot.core.store.get_debate(debate_id, turns=False)
    assert record is not None and record.status == "cancelled"
    stops = [(e.who, e.target, e.workspace) for e in await bot.core.store.audit(0.0) if e.action == "stop"]
    # an admin's stop of someone else's debate is in the audit trail (issue 55); the requester's own is not
    assert stops == ([] if role == "plain" else [(f"slack:{user}", debate_id, "T1")])


# -- several workspaces -----------------------------------------------------------------------------


async def test_each_workspace_sees_its_own_results_past_another_workspaces_newer_ones(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url,
                              llm_server.anthropic_base_url, SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222",
                              SLACK_CLIENT_SECRET="shh-secret")
    async with SlackBot(settings, LIMITS) as bot:
        installations = bot.app.installation_store
        assert installations is not None
        for team in ("T1", "T2"):
            await installations.async_save(Installation(
                app_id="A1", team_id=team, bot_token=f"xoxb-{team}", bot_id=f"B{team}", bot_user_id="UBOT",
                bot_scopes="commands,chat:write", user_id="U1"))
        store = bot.core.store
        mine = DebateSpec(id="aaaa0001", topic="Tail latency in our ingest path", seats=SEATS, judge="openai:gpt-5",
                          platform="slack", workspace="T1", channel="C1")
        await store.create_debate(mine, at=1_600_000_000.0)
        await store.set_verdict(mine.id, Verdict(winner="A", recommendation="Cap the queue."))
        for i in range(60):  # newer, matching, in the same channel id of another workspace
            await store.create_debate(DebateSpec(
                id=f"bbbb{i:04d}", topic=f"Tail latency for team two, take {i}", seats=SEATS,
                judge="openai:gpt-5", platform="slack", workspace="T2", channel="C1"), at=1_700_000_000.0 + i)

        keys = [await ask(bot, peer, text, team="T1", channel="C1") for text in ("history", "search latency")]
        await open_home(bot, "U1", "T1")
        await bot.settle()
        for key in keys:
            (text,) = answers(peer, key)
            assert mine.id in text and "team two" not in text, text
        home = json.dumps(peer.views["U1"])
        assert "Tail latency in our ingest path" in home and "team two" not in home
        assert len(await store.history(20, Scope(platform="slack", workspace="T2", channel="C1"))) == 20

"""Debaters that copy our quoting convention (issue 57 item 12), as llama.cpp's small model did: one turn
opens with the echoed tag, another has every line prefixed "| " (the way other turns are quoted to it) and
the entities our quoting wrote. Through the real bolt app and the Slack peer: the turns are stored, shown
and quoted to the next seat without the convention, no HTML entity reaches a markdown block (Slack shows
one as written), and the debaters' prompts say the convention is ours. The filter that does it while the
text streams gives the same text as the one run on the whole turn."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from bots.settings import load_settings
from bots.slack.surface import slack_limits
from orchestrator.app import Core
from orchestrator.debate.echo import EchoFilter, strip_echo
from tests.discord_harness import connected
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import is_judge, script_judge
from tests.serve_harness import discord_verdict_posted

OPENING = ('<<turn round="1" debater="A" role="proposer" kind="opening">>\n'
           "We should ship weekly: a change of 40 lines < a change of 400 lines, and R&D agrees.\n\n"
           "- smaller diffs\n- faster rollback\n</turn>")
OPENING_SHOWN = ("We should ship weekly: a change of 40 lines < a change of 400 lines, and R&D agrees.\n\n"
                 "- smaller diffs\n- faster rollback")
CHALLENGE = ("| I challenge that.\n|\n| Weekly is not free: p99 &lt; 40 ms holds only when the pipeline is green.\n"
             "| - rollback needs a runbook\n| - on-call doubles")
CHALLENGE_SHOWN = ("I challenge that.\n\nWeekly is not free: p99 < 40 ms holds only when the pipeline is green.\n"
                   "- rollback needs a runbook\n- on-call doubles")
ENTITY = re.compile(r"&(?:lt|gt|amp|quot);")


@pytest.mark.slow
async def test_a_turn_that_copies_our_quoting_is_stored_and_shown_without_it(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        llm.add_rule(Reply(text=OPENING, tokens_per_s=300), match="claude-sonnet-4-6")
        llm.add_rule(Reply(text=CHALLENGE, tokens_per_s=300), match="gpt-5")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, slack_limits(streams=False)) as bot:
            await bot.command("Weekly or monthly releases? --rounds 1", peer, channel="C7")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            record = await bot.core.store.get_debate(summary.id)

    assert record is not None and record.status == "completed"
    assert {t.seat: t.text for t in record.turns} == {"A": OPENING_SHOWN, "B": CHALLENGE_SHOWN}
    # the challenger read the opening quoted once, by us, without the copy of our tag
    debaters = [r for r in llm.requests if not is_judge(r)]
    (challenger,) = [r for r in debaters if r.model == "gpt-5"]
    assert "| We should ship weekly" in challenger.last_user and "&lt;&lt;turn" not in challenger.last_user
    assert challenger.last_user.count("<turn ") == 1
    # every debater is told the convention is ours, not how a turn is written
    for request in debaters:
        system = request.messages[0]["content"]
        assert 'never start a line with "| "' in system and "This quoting is ours" in system
    # in the thread: every message the bot sent into it, as the peer holds it now
    shown = [m for m in peer.messages.values() if m.channel == "C7"]
    markdown = "\n".join(m.markdown for m in shown)
    assert OPENING_SHOWN.splitlines()[0] in markdown and "p99 < 40 ms holds" in markdown
    assert not ENTITY.search(markdown), "a markdown block shows an entity as written"
    assert "turn round=" not in markdown and not re.search(r"(?m)^\| ", markdown)


def test_the_streamed_text_is_the_stored_text() -> None:
    table = "| Option | Cost |\n|---|---|\n| Go | 3 days |"
    texts = [OPENING, CHALLENGE, table, "Plain answer.\n\n| a line that is ours to keep",
             '&lt;turn round="2" debater="B"&gt;\nText.\n&lt;/turn&gt;', "x < y\n<b>bold</b> & more"]
    shuffled = random.Random(57)
    for text in texts:
        echo, out, at = EchoFilter(), [], 0
        while at < len(text):
            size = shuffled.randint(1, 7)
            out.append(echo.feed(text[at:at + size]))
            at += size
        streamed = "".join(out) + echo.finish()
        assert strip_echo(text) in (streamed, streamed.strip()), text
    assert strip_echo(table) == table, "a table's pipes are no quoting"
    assert strip_echo("Plain answer.\n\n| a line that is ours to keep").endswith("| a line that is ours to keep")
    # a closing tag ending a line already shown goes only from the stored text (which then replaces the shown)
    assert strip_echo("Ends with a tag. </turn>") == "Ends with a tag."
    assert strip_echo('&lt;turn round="2" debater="B"&gt;\nText.\n&lt;/turn&gt;') == "Text."
    assert strip_echo("x < y\n<b>bold</b> & more") == "x < y\n<b>bold</b> & more"


@pytest.mark.slow
async def test_discord_shows_the_turns_without_the_convention_or_an_entity(tmp_path: Path) -> None:
    async with DiscordPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        llm.add_rule(Reply(text=OPENING, tokens_per_s=300), match="claude-sonnet-4-6")
        llm.add_rule(Reply(text=CHALLENGE, tokens_per_s=300), match="gpt-5")
        settings = load_settings(
            DEBATE_DB=str(tmp_path / "debates.db"), DEBATE_MAX_RETRIES=0,
            OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm.openai_base_url,
            ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
            DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url)
        async with await Core.open(settings) as core, connected(core):
            await peer.dispatch_interaction(peer.slash_command("debate", {"topic": "Weekly or monthly?", "rounds": 1}))
            await peer.wait_for(lambda: discord_verdict_posted(peer), within=60)
            (thread,) = peer.threads()
            messages = peer.channel_messages(thread["id"])
    shown = "\n".join([m["content"] or "" for m in messages]
                      + [e.get("description", "") for m in messages for e in m.get("embeds") or []])
    assert "We should ship weekly" in shown and "p99 < 40 ms holds" in shown
    assert not ENTITY.search(shown) and "turn round=" not in shown and not re.search(r"(?m)^\| ", shown)

"""A council end to end in a Slack thread (signed requests through bolt, the Slack Web API peer) and in a
Discord thread (the real discord.py client, the Discord REST + gateway peer): the answers stream in, the
rankings and the aggregate table follow, and the synthesis is the verdict the team votes on and quotes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from bots.settings import load_settings
from orchestrator.app import Core
from tests.council_scripts import CHAIR, MODELS, SYNTHESIS, answer_text, is_answer, is_ranking, script_council
from tests.discord_harness import connected
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, action_payload, slack_settings

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

TOPIC = "Which queue should the ingest service use?"


async def test_a_council_in_a_slack_thread_shows_answers_the_ranking_and_the_synthesis(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_council(llm)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings) as bot:
            status, _ = await bot.command(f"{TOPIC} --format council --vs {','.join(MODELS)} --judge {CHAIR}",
                                          peer, channel="C9")
            assert status == 200
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed" and record.format == "council"

            thread = peer.thread("C9", record.thread or "")
            shown = [m.markdown for m in thread]
            answers = [i for i, text in enumerate(shown) if "ANS-" in text]
            table = next(i for i, text in enumerate(shown) if "Aggregate ranking" in text)
            verdict = next(m for m in thread if m.blocks and any(b["type"] == "actions" for b in m.blocks))
            assert len(answers) == 3 and all(answer_text(x) in "\n".join(shown) for x in "ABC")
            assert sum("1. Member" in text for text in shown) == 3, "each ranker's ballot, by member"
            assert max(answers) < table < thread.index(verdict), "answers, then the ranking, then the synthesis"
            assert "B ranks: C › A" in shown[table]
            assert SYNTHESIS in json.dumps(verdict.blocks) and "Winner:* B" in json.dumps(verdict.blocks)
            assert not any(m.split(":")[1] in shown[table] for m in MODELS)

            await bot.interact(action_payload(peer.message("C9", verdict.ts), "debate_vote_agree",
                                              f"{summary.id}|agree", user="U1", response_url=peer.response_url()))
            await bot.interact(action_payload(peer.message("C9", verdict.ts), "quote_recommendation", summary.id,
                                              response_url=peer.response_url()))
            await bot.settle()
            assert (await bot.core.store.tally(summary.id)).counts == {"agree": 1}
            quotes = [c.params["text"] for c in peer.of("chat.postMessage")
                      if "thread_ts" not in c.params and c.params["text"].startswith(">")]
            assert len(quotes) == 1 and SYNTHESIS in quotes[0]


async def test_a_council_in_a_discord_thread_shows_answers_the_ranking_and_the_synthesis(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    labels = itertools.cycle("ABC")  # Discord seats a council from proposer, challenger and the defaults
    llm_server.add_rule(Reply(text=lambda body: answer_text(next(labels))), match=is_answer)
    script_council(llm_server)
    async with DiscordPeer() as peer:
        settings = load_settings(
            DEBATE_DB=str(tmp_path / "debates.db"), DEBATE_MAX_RETRIES=0,
            OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
            ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
            DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        )
        core = await Core.open(settings)
        async with connected(core):
            options = {"topic": TOPIC, "format": "council", "proposer": MODELS[0], "challenger": MODELS[1],
                       "judge": CHAIR}
            record = await peer.dispatch_interaction(peer.slash_command("debate", options))
            thread = await peer.wait_for(lambda: peer.threads() and peer.threads()[0], within=5)
            await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]),
                                within=45)
            messages = peer.channel_messages(thread["id"])
            texts = [m["content"] + json.dumps(m["embeds"]) for m in messages]
            answers = [i for i, text in enumerate(texts) if "ANS-" in text]
            table = next(i for i, text in enumerate(texts) if "Aggregate ranking" in text)
            verdict = next(i for i, m in enumerate(messages) if m["components"])
            assert len(answers) >= 3 and max(answers) < table < verdict
            assert sum("1. Member" in text for text in texts) == 3
            assert SYNTHESIS in messages[verdict]["embeds"][0]["description"]
            (summary,) = await core.store.history(1)
            assert summary.format == "council" and summary.status == "completed"
            assert len([r for r in llm_server.requests if is_ranking(r)]) == 3
        await core.close()

"""A whole debate from `/debate` to verdict, votes, quotes and App Home, as the Slack API peer saw it."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest
import sqlite_utils

from bots.slack.surface import STREAM_LIMIT, slack_limits
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import (
    SlackAPIPeer,
    SlackBot,
    action_payload,
    shortcut_payload,
    slack_settings,
)
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

PINGS = "Ping <!channel> and <!here>, also <@U123>, <!subteam^S1> and @everyone — and <!everyone>."
CODE = "\n".join(f"    total += weigh(item_{i}, factor={i})  # step {i}" for i in range(90))
LONG_TURN = ("Opening: the evidence favours Rust for the ingest path.\n\n" + "Benchmarks matter. " * 40
             + "\n\n```python\n" + CODE + "\n```\n\nThat settles the hot loop.")
RECOMMENDATION = "Adopt Rust for the ingest hot path only; keep Go elsewhere."
FORBIDDEN = ("<!channel>", "<!here>", "<!everyone>", "<@U123>", "<!subteam^S1>", " @everyone")


def fences_balanced(text: str) -> bool:
    return sum(1 for line in text.splitlines() if line.strip().startswith("```")) % 2 == 0


async def test_a_debate_streams_into_a_thread_and_takes_votes_and_quotes(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.05, updates=600, window=60.0, edit_interval=1.0, streams=False)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "B", recommendation=RECOMMENDATION + " " + PINGS)
        llm.add_rule(Reply(text=LONG_TURN, tokens_per_s=500), match="gpt-5")
        llm.add_rule(Reply(text="Rebuttal. " + PINGS + " Memory safety is not free. " * 20, tokens_per_s=80),
                     match="claude-sonnet-4-6")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, limits) as bot:
            status, _ = await bot.command("Should we rewrite ingest in Rust? --rounds 1", peer, channel="C9")
            assert status == 200
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed"

            # the root message, in the channel, updated with the outcome
            roots = [c for c in peer.of("chat.postMessage") if "thread_ts" not in c.params]
            assert len(roots) == 1
            root = peer.message("C9", record.thread or "")
            assert root.thread_ts is None and "completed" in json.dumps(root.blocks)
            assert "winner B" in json.dumps(root.blocks)

            # progress shows in the root's status (no round post takes a channel slot ahead of turn text)
            root_updates = [json.dumps(c.params.get("blocks")) for c in peer.of("chat.update")
                            if c.params["ts"] == root.ts]
            assert any("round 1 of 1" in u for u in root_updates)

            # every turn threaded under the root, then the verdict
            thread = peer.thread("C9", root.ts)
            assert not any("Round 1 of 1" in m.text for m in thread)
            long_turn = [m for m in thread if "Benchmarks matter" in m.markdown or "weigh(item_" in m.markdown]
            assert len(long_turn) >= 2, "a 4,000+ character turn continues in a second reply"
            assert all(len(m.markdown) <= STREAM_LIMIT and fences_balanced(m.markdown) for m in long_turn)
            assert long_turn[1].markdown.startswith("```python"), "the code block reopens in the next reply"
            verdict = next(m for m in thread if m.blocks and any(b["type"] == "actions" for b in m.blocks))
            assert "Winner:* B" in json.dumps(verdict.blocks) and "Tokens:" in json.dumps(verdict.blocks)

            # streamed with chat.update, never more often than about once a second per message
            updates: dict[str, list[float]] = defaultdict(list)
            for call in peer.of("chat.update"):
                updates[call.params["ts"]].append(call.at)
            streamed = [ts for ts in updates if ts not in (root.ts, verdict.ts)]
            assert streamed, "turns should be edited as they stream"
            gaps = [b - a for times in updates.values() for a, b in pairwise(times)]
            assert min(gaps) >= 0.9, gaps

            # no mention survives in anything the bot sent
            for call in peer.calls:
                sent = json.dumps(call.params, ensure_ascii=False).replace("\\u200b", "\u200b")
                for needle in FORBIDDEN:
                    assert needle not in sent, (call.method, needle)
            assert "<\u200b!channel>" in "".join(m.markdown for m in thread)

            # votes: one per person, changeable, tally edited into the verdict
            for user, choice in (("U1", "agree"), ("U1", "side:B"), ("U2", "agree")):
                action = "debate_vote_" + choice.replace(":", "_")
                await bot.interact(action_payload(peer.message("C9", verdict.ts), action, f"{summary.id}|{choice}",
                                                  user=user, response_url=peer.response_url()))
                await bot.settle()
            tally = await bot.core.store.tally(summary.id)
            assert (tally.total, tally.counts) == (2, {"side:B": 1, "agree": 1})
            rows = list(sqlite_utils.Database(tmp_path / "d.db")["votes"].rows)
            assert sorted((r["user"], r["choice"]) for r in rows) == [("U1", "side:B"), ("U2", "agree")]
            assert "2 votes" in json.dumps(peer.message("C9", verdict.ts).blocks)

            # quotes: the button, the message shortcut and `/debate quote`
            verdict_now = peer.message("C9", verdict.ts)
            await bot.interact(action_payload(verdict_now, "quote_recommendation", summary.id,
                                              response_url=peer.response_url()))
            turn = next(m for m in thread if m.markdown.startswith("**B · challenger**"))
            await bot.interact(shortcut_payload(turn, "quote_recommendation", response_url=peer.response_url()))
            await bot.command(f"quote {summary.id}", peer, channel="C9")
            await bot.settle()
            quotes = [c.params for c in peer.of("chat.postMessage")
                      if "thread_ts" not in c.params and c.params["text"].startswith(">")]
            assert len(quotes) == 3
            for quote in quotes:
                assert RECOMMENDATION in quote["text"] and "peer.slack/archives/C9/p" in quote["text"]

            # App Home lists the debate with its outcome and tally
            event = {"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
                     "event_id": "Ev1", "event_time": 1,
                     "event": {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home"}}
            await bot.post(json.dumps(event), headers={"Content-Type": "application/json"})
            await bot.settle()
            home = json.dumps(peer.views["U1"])
            assert "Should we rewrite ingest in Rust?" in home and "winner B" in home and "agree 1" in home

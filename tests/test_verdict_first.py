"""The verdict is what a thread waits for: its caveats (the judge's family, a split, one usable pass)
are said inside the verdict message, not posted ahead of it at the channel's pace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Message, SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

CAVEATS = ("favour its own", "could not be cross-checked", "passes disagreed")


def shown(message: Message) -> str:
    """What a message shows: its text and its blocks (a streamed turn has only blocks)."""
    return message.text + json.dumps(message.blocks or [])


async def test_the_verdict_follows_the_last_turn_and_carries_its_caveats(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.05, updates=600, window=60.0, edit_interval=1.0)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A", steady=False)  # the same letter from both order-swapped passes: a split, No clear winner
        llm.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
        llm.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
        # a judge of the proposer's own family, and no third family to break the tie
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_JUDGE="openai:gpt-5-mini")
        async with SlackBot(settings, limits) as bot:
            status, _ = await bot.command("Should we rewrite ingest in Rust? --rounds 1", peer, channel="C9")
            assert status == 200
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed"
            assert record.verdict is not None and record.verdict.split
            (shares,) = record.verdict.judge_shares_family_with  # the OpenAI debater, whichever label it has

            thread = peer.thread("C9", record.thread or "")
            verdict_at = next(i for i, m in enumerate(thread)
                              if m.blocks and any(b["type"] == "actions" for b in m.blocks))
            shown_before = [shown(m) for m in thread[:verdict_at]]
            assert not any(c in text for text in shown_before for c in CAVEATS), shown_before
            assert verdict_at == len(thread) - 1, "the verdict is the thread's last message"
            turns = [m for m in thread if "Proposer:" in shown(m) or "Challenger:" in shown(m)]
            assert thread[verdict_at - 1] in turns, "nothing stands between the last turn and the verdict"

            verdict = shown(thread[verdict_at])
            assert f"same model family as debater {shares}" in verdict
            assert "No clear winner" in verdict and "no tie-break judge decided" in verdict
            assert "Cruxes" in verdict and "Whether the team can staff it" in verdict

"""A jury end to end in a Discord thread: `/debate` with its `judges` option, through the real discord.py
client against the Discord REST + gateway peer; the verdict embed carries the count, the dissent and
each juror's cost, and the command tree offers the option."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.discord import DebateBot
from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.discord_team_harness import CLAUDE, FAST, GPT, finished, options, start, verdict_messages
from tests.fakes.discord_api import MEMBER_PERMISSIONS, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.jury_harness import picks

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

JURORS = ("gemini:juror-one", "ollama:qwen-juror-two", "ollama:llama-juror-three")


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        GEMINI_API_KEY="gm-test", GEMINI_BASE_URL=llm_server.openai_base_url,
        OLLAMA_BASE_URL=llm_server.openai_base_url, DEBATE_MAX_RETRIES=0,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


@pytest.fixture
async def bot(settings: Settings) -> AsyncIterator[DebateBot]:
    async with await Core.open(settings) as core, connected(core, pacing=FAST) as client:
        yield client


async def test_a_jury_named_in_the_judges_option_decides_in_the_thread(bot: DebateBot, peer: DiscordPeer,
                                                                        llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
    llm_server.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
    picks(llm_server, JURORS[0], "challenger")
    picks(llm_server, JURORS[1], "proposer", reasoning="The measured 2x was never answered.")
    picks(llm_server, JURORS[2], "challenger")

    debate_id, root = await start(peer, peer.slash_command(
        "debate", options("Should ingest move to Go?", judges=",".join(JURORS))))
    await finished(bot, peer, root)

    record = await bot.core.store.get_debate(debate_id)
    assert record is not None and record.spec is not None and record.spec.judges == JURORS
    assert [s.model for s in record.seats] == [GPT, CLAUDE] and record.verdict is not None
    assert record.verdict.winner == "B" and record.verdict.confidence == "medium"
    (verdict,) = verdict_messages(peer, root)
    shown = json.dumps(verdict["embeds"], ensure_ascii=False)
    assert "Jury 2–1 for B" in shown and "medium confidence" in shown
    assert "Juror 2 (dissent, for A)" in shown and "The measured 2x was never answered." in shown
    assert "Juror 1 · gemini:juror-one (Google): for B" in shown

    # /debate-rematch takes a jury too: the same topic and debaters, these judges
    others = (JURORS[2], JURORS[0])
    rematch_id, rematch_root = await start(peer, peer.slash_command(
        "debate-rematch", {"debate_id": debate_id, "judges": ",".join(others)}))
    await finished(bot, peer, rematch_root)
    rematch = await bot.core.store.get_debate(rematch_id, turns=False)
    assert rematch is not None and rematch.spec is not None and rematch.rematch_of == debate_id
    assert rematch.spec.judges == others and rematch.verdict is not None and len(rematch.verdict.jury) == 2


async def test_a_jury_with_no_majority_shows_no_clear_winner_and_the_cruxes(bot: DebateBot, peer: DiscordPeer,
                                                                            llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
    llm_server.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
    picks(llm_server, JURORS[0], "challenger")
    picks(llm_server, JURORS[1], "proposer")

    debate_id, root = await start(peer, peer.slash_command(
        "debate", options("Should ingest move to Go?", judges=",".join(JURORS[:2]))))
    await finished(bot, peer, root)

    record = await bot.core.store.get_debate(debate_id)
    assert record is not None and record.verdict is not None and record.verdict.no_clear_winner
    (verdict,) = verdict_messages(peer, root)
    shown = json.dumps(verdict["embeds"], ensure_ascii=False)
    assert "Verdict: No clear winner" in shown and " wins" not in verdict["embeds"][0]["title"]
    assert "Judge: **no clear winner**" in shown and "Jury 1–1 (A 1 · B 1), no majority" in shown
    assert '"name": "Cruxes"' in shown and "1. Whether the team can staff it" in shown

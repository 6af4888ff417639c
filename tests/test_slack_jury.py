"""A jury end to end in a Slack thread: `/debate … --judges`, `judges=` in `/debate config`, the verdict
message with the count, the dissent and each juror's cost, through bolt's real dispatch against the
Slack API peer (the debate runs as a durable workflow, front and worker in one process)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Message, SlackAPIPeer, SlackBot, slack_settings
from tests.jury_harness import picks
from tests.slack_team_harness import LIMITS, answer, ask, debated

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

JURORS = ("gemini:juror-one", "ollama:qwen-juror-two", "ollama:llama-juror-three")


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_user("U9", "admin")
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              GEMINI_API_KEY="gm-test-secret-0123456789", GEMINI_BASE_URL=llm_server.openai_base_url,
                              OLLAMA_BASE_URL=llm_server.openai_base_url)
    async with SlackBot(settings, LIMITS) as b:
        yield b


def script(llm: FakeLLMServer) -> None:
    llm.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
    llm.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
    picks(llm, JURORS[0], "challenger")
    picks(llm, JURORS[1], "challenger")
    picks(llm, JURORS[2], "proposer", reasoning="The measured 2x was never answered.")


def verdict_message(peer: SlackAPIPeer, channel: str, thread: str) -> Message:
    return next(m for m in peer.thread(channel, thread) if m.blocks and any(b["type"] == "actions" for b in m.blocks))


async def test_a_jury_named_with_judges_decides_in_the_thread(bot: SlackBot, peer: SlackAPIPeer,
                                                              llm_server: FakeLLMServer) -> None:
    script(llm_server)

    debate_id = await debated(bot, peer, f"Should we rewrite ingest in Rust? --rounds 1 --judges {','.join(JURORS)}",
                              channel="C7")

    record = await bot.core.store.get_debate(debate_id)
    assert record is not None and record.status == "completed" and record.spec is not None
    assert record.spec.judges == JURORS and record.verdict is not None
    challenger = next(s.label for s in record.seats if s.role == "challenger")
    assert record.verdict.winner == challenger and record.verdict.confidence == "medium"
    shown = json.dumps(verdict_message(peer, "C7", record.thread or "").blocks, ensure_ascii=False)
    assert f"Jury 2–1 for {challenger}" in shown and "medium confidence" in shown
    assert "Juror 3 (dissent, for" in shown and "The measured 2x was never answered." in shown
    assert "Juror 1 · gemini:juror-one (Google)" in shown and "in /" in shown


async def test_judges_in_channel_config_seat_the_next_debates_jury(bot: SlackBot, peer: SlackAPIPeer,
                                                                   llm_server: FakeLLMServer) -> None:
    script(llm_server)
    few = await answer(peer, await ask(bot, peer, "config judges=gemini:juror-one", user="U9", channel="C8"))
    assert "2 to 5 judges" in few
    saved = await answer(peer, await ask(bot, peer, f"config judges={','.join(JURORS)}", user="U9", channel="C8"))
    assert ",".join(JURORS) in saved

    debate_id = await debated(bot, peer, "Should we rewrite ingest in Rust? --rounds 1", channel="C8")

    record = await bot.core.store.get_debate(debate_id)
    assert record is not None and record.spec is not None and record.spec.judges == JURORS
    assert record.verdict is not None and len(record.verdict.jury) == 3
    assert "Jury 2–1" in json.dumps(verdict_message(peer, "C8", record.thread or "").blocks, ensure_ascii=False)

"""How a verdict's confidence and the team's vote show: Slack blocks, Discord embeds, the export, and
`debate history`'s rate of teams disagreeing with the judge (a real SQLite log, the real CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bots.discord import render as discord_render
from bots.slack import blocks as slack_blocks
from bots.slack.surface import slack_limits
from orchestrator.export import to_json, to_markdown
from orchestrator.log import Scope, Store, Tally
from orchestrator.models import DebateSpec, JudgeReading, Verdict, Vote
from tests.cli_harness import clean_env, debate
from tests.debate_harness import make_spec
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, action_payload, slack_settings
from tests.llm_scripts import script_steady_judge

AGREED = Verdict(winner="A", confidence="high", recommendation="Adopt it for one quarter.",
                 reasoning="A measured it.", evidence=('Round 1, Debater A: "2x on the real workload"',),
                 readings=(JudgeReading(kind="seated", winner="A", reasoning="A measured it.", family="Google"),
                           JudgeReading(kind="swapped", winner="A", reasoning="Still A.", family="Google")))
SPLIT = Verdict(winner="A", split=True, confidence="low", recommendation="Benchmark before deciding.",
                reasoning="A had numbers.",
                readings=(JudgeReading(kind="seated", winner="A", reasoning="A had numbers.", family="Google"),
                          JudgeReading(kind="swapped", winner="B", reasoning="B exposed the synthetic setup.",
                                       family="Google")))
BROKEN = SPLIT.model_copy(update={
    "winner": "B", "confidence": "medium", "tiebreak_family": "Anthropic", "reasoning": "B's objection stands.",
    "readings": (*SPLIT.readings, JudgeReading(kind="tiebreak", winner="B", reasoning="B's objection stands.",
                                               family="Anthropic"))})


def votes(**counts: int) -> Tally:
    return Tally(debate_id="d", counts=counts, total=sum(counts.values()))


def slack_text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def discord_text(embed: Any) -> str:
    return json.dumps(embed.to_dict(), ensure_ascii=False)


def test_team_text() -> None:
    assert votes(**{"side:B": 3, "side:A": 1, "agree": 4}).team_text("AB") == "3–1 for B"
    assert votes(**{"side:A": 2, "side:B": 2}).team_text("AB") == "tied 2–2"
    assert votes(agree=5).team_text("AB") == "no side votes yet"
    assert votes(**{"side:C": 2, "side:A": 1}).team_text("ABC") == "2–1–0 for C"


def test_slack_shows_the_judges_pick_beside_the_team_vote() -> None:
    spec = make_spec("challenge")
    _text, blocks = slack_blocks.verdict_message(spec, AGREED, votes(**{"side:B": 3, "side:A": 1}))
    shown = slack_text(blocks)
    assert "*Judge:* A · *Team:* 3–1 for B" in shown
    assert "Confidence: high" in shown and "Decisive evidence" in shown and "2x on the real workload" in shown


def test_discord_shows_the_judges_pick_beside_the_team_vote_and_keeps_it_current() -> None:
    spec = make_spec("challenge")
    embed = discord_render.verdict_embed(spec, AGREED, None, votes())
    assert "Judge: **A** · Team: no side votes yet" in discord_text(embed)
    updated = discord_render.with_tally(embed, votes(**{"side:B": 3, "side:A": 1}), ("A", "B"), "A")
    assert "Judge: **A** · Team: 3–1 for B" in discord_text(updated)
    assert [f.name for f in updated.fields].count(discord_render.JUDGE_TEAM_FIELD) == 1


def test_a_split_shows_low_confidence_and_both_readings_everywhere() -> None:
    spec = make_spec("challenge")
    _text, blocks = slack_blocks.verdict_message(spec, SPLIT, votes())
    embed = discord_render.verdict_embed(spec, SPLIT, None, votes())
    for shown in (slack_text(blocks), discord_text(embed)):
        assert "Split — low confidence" in shown
        assert "A had numbers." in shown and "B exposed the synthetic setup." in shown
        assert "Order swapped: B wins" in shown


def test_a_tiebreak_says_who_decided() -> None:
    spec = make_spec("challenge")
    _text, blocks = slack_blocks.verdict_message(spec, BROKEN, votes())
    embed = discord_render.verdict_embed(spec, BROKEN, None, votes())
    for shown in (slack_text(blocks), discord_text(embed)):
        assert "split; decided by a tie-break judge of family Anthropic" in shown
        assert "Tie-break judge (Anthropic): B wins" in shown


async def test_the_log_keeps_confidence_and_the_export_shows_it(tmp_path: Path) -> None:
    spec = make_spec("challenge")
    async with Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        await store.set_verdict(spec.id, BROKEN.model_copy(update={"evidence": AGREED.evidence,
                                                                   "judge_shares_family_with": ("A",)}))
        await store.record_vote(Vote(debate_id=spec.id, user="u1", choice="side:A"))
        record = await store.get_debate(spec.id)
    assert record is not None and record.verdict is not None
    assert record.verdict.confidence == "medium" and record.verdict.tiebreak_family == "Anthropic"
    markdown = to_markdown(record)
    assert "split; decided by a tie-break judge of family Anthropic" in markdown
    assert "Judge: B · Team: 1–0 for A" in markdown and "2x on the real workload" in markdown
    assert "same model family as debater A" in markdown
    exported = to_json(record)["verdict"]
    assert exported["confidence"] == "medium" and exported["evidence"] == list(AGREED.evidence)
    assert exported["team_side"] == "A" and [r["kind"] for r in exported["readings"]] == ["seated", "swapped",
                                                                                          "tiebreak"]


async def _judged(store: Store, spec: DebateSpec, winner: str, *choices: str) -> None:
    await store.create_debate(spec)
    await store.set_verdict(spec.id, Verdict(winner=winner, recommendation="do it"))
    for i, choice in enumerate(choices):
        await store.record_vote(Vote(debate_id=spec.id, user=f"u{i}", choice=choice, platform=spec.platform))


@pytest.mark.slow
async def test_history_says_how_often_teams_disagreed_with_the_judge(tmp_path: Path) -> None:
    db = tmp_path / "debates.db"

    def in_slack(workspace: str) -> DebateSpec:
        return make_spec("challenge").model_copy(update={"platform": "slack", "workspace": workspace,
                                                         "channel": "C1"})

    async with Store(db) as store:
        await _judged(store, in_slack("T1"), "A", "side:B", "side:B", "side:A")  # the team sided with B
        await _judged(store, in_slack("T1"), "A", "side:A", "agree")  # with the judge
        await _judged(store, in_slack("T1"), "A", "side:A", "side:B")  # tied, the judge's pick among the top
        await _judged(store, in_slack("T1"), "B", "agree", "disagree")  # no side votes: not counted
        await _judged(store, in_slack("T2"), "A", "side:B")  # another workspace
        everyone = await store.judge_agreement()
        t1 = await store.judge_agreement(Scope(platform="slack", workspace="T1", channel="C1"))
    assert (everyone.debates, everyone.disagreed) == (4, 2) and everyone.rate == 0.5
    assert (t1.debates, t1.disagreed) == (3, 1)

    env = clean_env(tmp_path, DEBATE_DB=str(db))
    code, out, err = await debate(tmp_path, "history", env=env)
    assert code == 0, err
    assert "Teams disagreed with the judge in 2 of 4 debates with side votes (50%)." in out
    code, out, err = await debate(tmp_path, "history", "--json", env=env)
    assert code == 0, err
    data = json.loads(out)
    assert len(data["debates"]) == 5 and data["teams_vs_judge"] == {"debates": 4, "disagreed": 2, "rate": 0.5}


@pytest.mark.slow
async def test_a_side_vote_through_bolt_updates_the_judge_and_team_line(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.01, updates=600, window=60.0, edit_interval=0.05)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_steady_judge(llm, "challenger")  # B
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, limits) as bot:
            await bot.command("Should we rewrite ingest in Rust? --rounds 1", peer, channel="C9")
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.thread
            verdict = next(m for m in peer.thread("C9", record.thread)
                           if m.blocks and any(b["type"] == "actions" for b in m.blocks))
            assert "*Judge:* B · *Team:* no side votes yet" in json.dumps(verdict.blocks, ensure_ascii=False)
            for user in ("U1", "U2"):
                await bot.interact(action_payload(peer.message("C9", verdict.ts), "debate_vote_side_A",
                                                  f"{summary.id}|side:A", user=user,
                                                  response_url=peer.response_url()))
                await bot.settle()
            shown = json.dumps(peer.message("C9", verdict.ts).blocks, ensure_ascii=False)
            assert "*Judge:* B · *Team:* 2–0 for A" in shown

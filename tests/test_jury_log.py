"""A jury's verdict in the log, on both backends: its columns (winner, each juror's pick, agreement),
the whole jury back through `get_debate` and the exports, and the history figures (how often juries
split, how often the team sided against the jury)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from orchestrator.export import to_json, to_markdown
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, JurorVote, Outcome, Seat, Verdict, Vote
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="openai:model-b"))
JURY = ("gemini:juror-one", "anthropic:juror-two", "ollama:qwen-juror-three")
T0 = 1_700_000_000.0


def spec(id: str) -> DebateSpec:
    return DebateSpec(id=id, topic="Kafka or NATS?", seats=SEATS, judge="openai:judge", judges=JURY,
                      platform="slack", workspace="T1", channel="C1")


def jury_verdict(*picks: str | None) -> Verdict:
    jurors = tuple(JurorVote(seat=i + 1, model=JURY[i], family=("Google", "Anthropic", "Qwen")[i],
                             status="voted" if pick else "failed", winner=pick, reasoning=f"Juror {i + 1} on {pick}.",
                             passes=(pick, pick) if pick else (), input_tokens=1200, output_tokens=300,
                             cost_usd=0.002, calls=2) for i, pick in enumerate(picks))
    votes = [p for p in picks if p]
    winner = max(set(votes), key=votes.count)
    return Verdict(winner=winner, recommendation="Use NATS.", jury=jurors, split=len(set(votes)) > 1,
                   confidence="medium" if len(set(votes)) > 1 else "high")


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def judged(store: DebateLog, id: str, verdict: Verdict, *sides: str) -> None:
    await store.create_debate(spec(id), at=T0)
    await store.set_verdict(id, verdict, at=T0 + 1)
    await store.finish_debate(id, Outcome(status="completed", rounds_completed=2), at=T0 + 2)
    for n, side in enumerate(sides):
        await store.record_vote(Vote(debate_id=id, user=f"U{n}", choice=f"side:{side}", platform="slack"))


async def test_a_jurys_verdict_is_kept_whole_and_in_its_columns(store: DebateLog, log_backend: LogBackend) -> None:
    await judged(store, "jury0001", jury_verdict("B", "B", "A"))

    (row,) = log_backend.sql("select winner, jury_size, jury_picks, jury_agreement from verdicts "
                             "where debate_id = ?", ["jury0001"])
    assert row[0] == "B" and row[1] == 3 and json.loads(row[2]) == ["B", "B", "A"]
    assert row[3] == pytest.approx(2 / 3)
    record = await store.get_debate("jury0001")
    assert record is not None and record.verdict is not None and record.spec is not None
    assert record.spec.judges == JURY
    assert [j.winner for j in record.verdict.jury] == ["B", "B", "A"]
    exported = to_json(record)["verdict"]
    assert exported["jury_tally"] == "Jury 2–1 for B" and exported["jury_agreement"] == pytest.approx(2 / 3)
    assert [j["model"] for j in exported["jury"]] == list(JURY) and exported["jury"][2]["cost_usd"] == 0.002
    md = to_markdown(record)
    assert "Jury 2–1 for B" in md and "Juror 3 (dissent, for A)" in md and "Juror 3 on A." in md
    assert "Juror 1 · gemini:juror-one (Google): for B · 2 calls · 1,200 in / 300 out tokens · ≈ $0.0020" in md


async def test_history_figures_count_split_juries_and_a_team_against_the_jury(store: DebateLog,
                                                                            log_backend: LogBackend) -> None:
    await judged(store, "jury0001", jury_verdict("B", "B", "A"), "A", "A")  # split; the team sided with A
    await judged(store, "jury0002", jury_verdict("A", "A", "A"), "A")  # unanimous; the team agreed
    await judged(store, "jury0003", jury_verdict("B", None, "B"))  # a failed juror, no side votes
    await store.create_debate(DebateSpec(id="single01", topic="One judge", seats=SEATS, judge="openai:judge"), at=T0)
    await store.set_verdict("single01", Verdict(winner="A", recommendation="x", split=True), at=T0 + 1)

    figures = await store.jury_figures()

    assert (figures.juries, figures.split, figures.team_debates, figures.team_against) == (3, 1, 2, 1)
    assert figures.text() == "Juries: 3 · split 1 (33%) · team sided against the jury 1 of 2"
    (single,) = log_backend.sql("select jury_size, jury_picks from verdicts where debate_id = ?", ["single01"])
    assert single == (None, None)

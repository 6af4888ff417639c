"""A jury of judges from different families: each juror on the anonymous transcript, all at once, the
majority's verdict with its count, its dissent and a confidence from agreement."""

from __future__ import annotations

import io
import re

import pytest

from bots.cli.terminal import Style, render_verdict
from orchestrator.debate.jury import _plan
from orchestrator.events import VerdictReached
from orchestrator.models import Seat
from tests.debate_harness import overlapping, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.judge_harness import PROMPT, script_debaters
from tests.jury_harness import JURORS, jury_env, jury_spec, picks
from tests.llm_scripts import verdict_json


def juror_calls(srv: FakeLLMServer) -> list[RequestRecord]:
    return [r for r in srv.requests if PROMPT in r.prompt_text]


async def test_a_split_jury_gives_the_majority_the_dissent_and_medium_confidence(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    picks(srv, JURORS[0], "challenger")
    picks(srv, JURORS[1], "challenger")
    picks(srv, JURORS[2], "proposer", reasoning="Debater A's benchmark was never refuted.")

    result = await run_debate(srv, jury_spec(), env=jury_env(srv))

    calls = juror_calls(srv)
    assert len(calls) == 6 and overlapping(calls), "every juror's two passes run at once"
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and verdict.confidence == "medium" and verdict.split
    assert verdict.jury_tally() == "Jury 2–1 for B" and verdict.agreement == pytest.approx(2 / 3)
    (dissent,) = verdict.dissents()
    assert (dissent.seat, dissent.winner) == (3, "A")
    assert dissent.reasoning == "Debater A's benchmark was never refuted."
    assert verdict.recommendation == "Follow the challenger."
    assert all(j.input_tokens > 0 and j.output_tokens > 0 and j.calls == 2 for j in verdict.jury)
    shown = "\n".join(render_verdict(verdict, jury_spec(), Style(io.StringIO())))
    assert "Jury 2–1 for B" in shown and "medium confidence" in shown
    assert "Juror 3 (dissent" in shown and "never refuted" in shown


async def test_a_unanimous_jury_is_high_confidence(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    for juror in JURORS:
        picks(srv, juror, "proposer")

    result = await run_debate(srv, jury_spec(), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "A" and verdict.confidence == "high" and not verdict.split
    assert verdict.jury_tally() == "Jury 3–0 for A" and verdict.agreement == 1.0 and not verdict.dissents()
    assert "high confidence — unanimous" in verdict.confidence_note()


async def test_a_failing_juror_leaves_a_two_judge_jury_that_says_so(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    picks(srv, JURORS[0], "challenger")
    srv.add_rule(Reply(status=500), lambda r: r.model == "juror-two")
    picks(srv, JURORS[2], "challenger")

    result = await run_debate(srv, jury_spec(), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and verdict.confidence == "high"
    assert [j.status for j in verdict.jury] == ["voted", "failed", "voted"]
    assert verdict.jury_tally() == "Jury 2–0 for B"
    assert "1 of 3 jurors gave no usable answer, so a 2-judge jury decided" in verdict.confidence_note()
    assert any("Juror 2 gave no usable answer, so a 2-judge jury decided" in w for w in result.notices("warning"))


async def test_no_jurors_prompt_names_a_model_or_a_family(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    for juror in JURORS:
        picks(srv, juror, "proposer")

    await run_debate(srv, jury_spec(), env=jury_env(srv))

    forbidden = re.compile(r"model-a|model-b|juror-|openai|anthropic|gemini|google|qwen|ollama|claude|gpt",
                           re.IGNORECASE)
    calls = juror_calls(srv)
    assert len(calls) == 6
    for request in calls:
        assert all(not forbidden.search(m["content"]) for m in request.messages)


async def test_a_tied_jury_is_no_clear_winner_whoever_was_named_first(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    four = (*JURORS, "gemini:juror-four")
    for juror, side in zip(four, ("challenger", "proposer", "proposer", "challenger"), strict=True):
        picks(srv, juror, side)

    result = await run_debate(srv, jury_spec(*four), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.no_clear_winner and verdict.clear_winner is None and verdict.jury_tie
    assert verdict.confidence == "none" and "no majority" in verdict.confidence_rule
    assert verdict.jury_tally() == "Jury 2–2 (A 2 · B 2), no majority"
    assert "No clear winner" in verdict.confidence_note() and "tie rule" not in verdict.confidence_note()
    assert verdict.cruxes and verdict.cruxes[0].disagreement == "Whether the team can staff it"


async def test_a_juror_whose_passes_disagree_is_undecided(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    picks(srv, JURORS[0], "challenger")
    picks(srv, JURORS[1], "challenger")
    srv.add_rule(Reply(text=verdict_json("A")), lambda r: r.model == "qwen-juror-three")  # the first shown, always

    result = await run_debate(srv, jury_spec(), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert [j.status for j in verdict.jury] == ["voted", "voted", "undecided"]
    assert verdict.winner == "B" and verdict.confidence == "medium" and verdict.jury_tally() == "Jury 2–0 for B"
    assert "Juror 3 did not vote" in verdict.confidence_note()


async def test_a_juror_of_a_debaters_family_is_flagged(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    picks(srv, JURORS[0], "proposer")
    picks(srv, "openai:juror-openai", "proposer")

    result = await run_debate(srv, jury_spec(JURORS[0], "openai:juror-openai"), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert [j.same_family for j in verdict.jury] == [False, True]
    assert "Juror 2 is of a debater's model family" in verdict.family_note()
    assert any("Juror 2 is of a debater's model family (OpenAI)" in n for n in result.notices())


def test_the_alternating_plan_asks_each_juror_once_in_alternating_order() -> None:
    seats = [Seat(label="A", role="proposer", model="openai:a"), Seat(label="B", role="challenger", model="openai:b")]
    plan = _plan(JURORS, seats, "alternating")
    assert [(i, kind, [s.label for s in shown]) for i, kind, shown in plan] == [
        (0, "seated", ["A", "B"]), (1, "swapped", ["B", "A"]), (2, "seated", ["A", "B"])]
    assert len(_plan(JURORS, seats, "swapped")) == 6


async def test_a_jury_whose_every_juror_splits_is_no_clear_winner(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("A")), lambda r: PROMPT in r.prompt_text)  # the first shown, always

    result = await run_debate(srv, jury_spec(), env=jury_env(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert [j.status for j in verdict.jury] == ["undecided"] * 3
    assert verdict.no_clear_winner and verdict.clear_winner is None and not verdict.jury_tie
    assert verdict.jury_tally() == "Jury undecided: no juror's two passes agreed"
    assert "No clear winner" in verdict.confidence_note() and "Juror 1 and Juror 2 and Juror 3 did not vote" in (
        verdict.confidence_note())

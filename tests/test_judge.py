"""The judge: two concurrent order-swapped passes, evidence before the winner, a third family's tie-break
exactly when the passes split, confidence, tie refusal with one retry, anonymity, the judge's family."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest

from bots.cli.terminal import Style, render_verdict
from orchestrator.events import VerdictReached
from orchestrator.log import Store
from orchestrator.models import DebateSpec
from tests.debate_harness import make_spec, overlapping, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.judge_harness import PROMPT, challenger_first, judging, proposer_first, script_debaters
from tests.llm_scripts import verdict_json


def tiebreaking(r: RequestRecord) -> bool:
    return r.model == "tiebreak" and PROMPT in r.prompt_text


def three_families(srv: FakeLLMServer) -> dict[str, str]:
    """Gemini (Google) and Anthropic on the same loopback peer, beside the harness's OpenAI."""
    return {"GEMINI_API_KEY": "gm-test-secret-0123456789", "GEMINI_BASE_URL": srv.openai_base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789", "ANTHROPIC_BASE_URL": srv.anthropic_base_url}


def judged_by_third_families(tiebreak: str | None = "anthropic:tiebreak") -> DebateSpec:
    """OpenAI debaters, a Google judge, an Anthropic tie-break judge."""
    return make_spec("challenge", rounds=1, judge="gemini:judge").model_copy(update={"tiebreak_judge": tiebreak})


def first_shown_wins(srv: FakeLLMServer) -> None:
    """A judge that always prefers whoever is presented first: "A" is the proposer in one pass and the
    challenger in the other, so the passes split."""
    srv.add_rule(Reply(text=verdict_json("A"), latency_s=0.1), proposer_first)
    srv.add_rule(Reply(text=verdict_json("A", reasoning="First shown wins."), latency_s=0.1), challenger_first)


async def test_split_without_a_tiebreak_judge_is_no_clear_winner_with_both_readings_and_cruxes(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    script_debaters(srv)
    first_shown_wins(srv)

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    passes = [r for r in srv.requests if judging(r)]
    assert len(passes) == 2 and overlapping(passes)
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.split is True and verdict.confidence == "none" and verdict.tiebreak_family is None
    assert verdict.no_clear_winner and verdict.clear_winner is None
    assert "no tie-break judge decided" in verdict.confidence_rule
    assert [(r.kind, r.winner, r.reasoning) for r in verdict.readings] == [
        ("seated", "A", "Debater A backed its claims with specific evidence in round 1."),
        ("swapped", "B", "First shown wins."),
    ]
    assert any("No clear winner" in w for w in result.notices("warning"))
    assert [c.disagreement for c in verdict.cruxes] == ["Whether the team can staff it"]
    assert verdict.recommendation == "Adopt it behind a feature flag for one quarter."  # both passes recommend it
    shown = "\n".join(render_verdict(verdict, make_spec("challenge"), Style(io.StringIO())))
    assert "No clear winner" in shown and " wins" not in shown.splitlines()[0]
    assert "Cruxes" in shown and "1. Whether the team can staff it" in shown
    assert "Debaters as seated: A wins" in shown and "Order swapped: B wins" in shown and "First shown wins." in shown


@pytest.mark.parametrize(("split", "tiebreak_requests"), [(False, 0), (True, 1)])
async def test_the_tiebreak_pass_runs_exactly_when_the_passes_disagree(
    llm_server: FakeLLMServer, split: bool, tiebreak_requests: int
) -> None:
    srv = llm_server
    script_debaters(srv)
    if split:
        first_shown_wins(srv)
    else:
        srv.add_rule(Reply(text=verdict_json("B")), proposer_first)  # the challenger, shown second
        srv.add_rule(Reply(text=verdict_json("A")), challenger_first)  # the challenger, shown first
    srv.add_rule(Reply(text=verdict_json("B", reasoning="Debater B showed the benchmark was synthetic.",
                                         recommendation="Run a production-shaped benchmark first.")), tiebreaking)

    result = await run_debate(srv, judged_by_third_families(), env=three_families(srv))

    assert len([r for r in srv.requests if judging(r)]) == 2
    tiebreaks = [r for r in srv.requests if r.model == "tiebreak"]
    assert len(tiebreaks) == tiebreak_requests
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.split is split
    if not split:
        assert verdict.winner == "B" and verdict.confidence == "high" and verdict.tiebreak_family is None
        assert [r.kind for r in verdict.readings] == ["seated", "swapped"]
        return
    # the tie-break judge decides: its winner, its recommendation, and the verdict says how it was reached
    (request,) = tiebreaks
    assert request.api == "anthropic" and "- Debater A: proposer" in request.prompt_text
    assert verdict.winner == "B" and verdict.recommendation == "Run a production-shaped benchmark first."
    assert verdict.confidence == "medium" and verdict.tiebreak_family == "Anthropic"
    assert [(r.kind, r.winner, r.family) for r in verdict.readings] == [
        ("seated", "A", "Google"), ("swapped", "B", "Google"), ("tiebreak", "B", "Anthropic")]
    assert "split; decided by a tie-break judge of family Anthropic" in verdict.confidence_note()
    forbidden = re.compile(r"model-a|model-b|openai|anthropic|gemini|claude|gpt", re.IGNORECASE)
    assert all(not forbidden.search(m["content"]) for m in request.messages)


async def test_a_failed_tiebreak_leaves_no_clear_winner(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    first_shown_wins(srv)
    srv.add_rule(Reply(status=500), tiebreaking)

    result = await run_debate(srv, judged_by_third_families(), env=three_families(srv))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.split and verdict.confidence == "none" and verdict.clear_winner is None
    assert verdict.tiebreak_family is None and [r.kind for r in verdict.readings] == ["seated", "swapped"]
    assert any("tie-break judge gave no usable answer" in w for w in result.notices("warning"))


async def test_evidence_precedes_the_winner_and_is_stored(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    srv = llm_server
    script_debaters(srv)
    evidence = ['Round 1, Debater B: "the benchmark is synthetic" — the proposer never answered it']
    srv.add_rule(Reply(text=verdict_json("B", evidence=evidence)), proposer_first)
    srv.add_rule(Reply(text=verdict_json("A", evidence=['Round 1, Debater A: "synthetic"'])), challenger_first)
    db = tmp_path / "log.db"
    spec = make_spec("challenge", rounds=1)

    result = await run_debate(srv, spec, db=db)

    for request in (r for r in srv.requests if judging(r)):  # the judge is asked to list evidence first
        assert request.last_user.index('"evidence"') < request.last_user.index('"winner"')
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.evidence == tuple(evidence) and verdict.confidence == "high"
    async with Store(db, readonly=True) as store:
        record = await store.get_debate(spec.id)
    assert record is not None and record.verdict is not None
    assert record.verdict.evidence == tuple(evidence) and record.verdict.confidence == "high"


async def test_a_tie_is_refused_and_retried_once(llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("both have merit")), lambda r: judging(r) and len(r.messages) == 2)
    srv.add_rule(Reply(text=verdict_json("B")), proposer_first)
    srv.add_rule(Reply(text=verdict_json("A")), challenger_first)
    caplog.set_level(logging.WARNING)

    # a backend sent no schema (OpenRouter here; a strict schema's enum would not let a tie be written at all)
    result = await run_debate(srv, make_spec("challenge", rounds=1, judge="openrouter:judge"),
                              env={"OPENROUTER_API_KEY": "sk-or-test-0123", "OPENROUTER_BASE_URL": srv.openai_base_url})

    judge_calls = [r for r in srv.requests if judging(r)]
    assert len(judge_calls) == 4
    retries = [r for r in judge_calls if r.messages[-1]["role"] == "user" and len(r.messages) == 4]
    assert len(retries) == 2
    assert all("tie is not a verdict" in r.last_user and r.messages[2]["role"] == "assistant" for r in retries)
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and not verdict.split
    assert any("PARSE_ERROR:judge:no_winner" in r.getMessage() for r in caplog.records)


async def test_one_unusable_pass_gives_a_warned_low_confidence_verdict(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text="I refuse to answer in JSON."), proposer_first)
    # the swapped pass's letters are mapped back: its "Debater A" is the challenger, B
    srv.add_rule(Reply(text=verdict_json("A", evidence=['Round 1, Debater A: "synthetic"'])), challenger_first)

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and verdict.confidence == "low" and not verdict.split
    assert verdict.evidence == ('Round 1, Debater B: "synthetic"',)
    assert any("Only one of the two judge passes" in w for w in result.notices("warning"))


async def test_a_judge_of_a_debaters_family_is_said(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("A")), judging)

    shared = await run_debate(srv, make_spec("challenge", rounds=1))  # OpenAI debaters, an OpenAI judge

    verdict = shared.of(VerdictReached)[0].verdict
    assert verdict.judge_shares_family_with == ("A", "B")
    assert "same model family as debaters A and B" in verdict.family_note()
    assert any("same model family (OpenAI) as debaters A and B" in n for n in shared.notices())

    srv.reset()
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("A")), judging)
    apart = await run_debate(srv, judged_by_third_families(None), env=three_families(srv))
    verdict = apart.of(VerdictReached)[0].verdict
    assert verdict.judge_shares_family_with == () and verdict.family_note() == ""
    assert not any("same model family" in n for n in apart.notices())


async def test_no_model_or_vendor_name_in_judge_prompts(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("A")), judging)

    await run_debate(srv, make_spec("challenge", rounds=1))

    forbidden = re.compile(r"model-a|model-b|openai|anthropic|gemini|claude|gpt", re.IGNORECASE)
    passes = [r for r in srv.requests if judging(r)]
    assert len(passes) == 2
    for request in passes:
        assert all(not forbidden.search(m["content"]) for m in request.messages)

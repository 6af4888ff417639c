"""Every row of the failure policy, through the real engine and SDK against the loopback peer."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from orchestrator.debate.engine import ALL_TIMED_OUT, NOTHING_RECORDED
from orchestrator.events import DebateFailed, DebateFinished, TurnFailed, VerdictReached
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import verdict_json

SECRET = "sk-test-secret-0123456789"


def judging(r: RequestRecord) -> bool:
    return r.model == "judge" and "Decide who made the stronger case" in r.prompt_text


def round_of(role: str, round_no: int) -> Callable[[RequestRecord], bool]:
    return lambda r: f"You are the {role}, round {round_no} of" in r.last_user


async def test_proposer_failing_in_round_one_aborts(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(status=500), lambda r: r.model == "model-a")

    result = await run_debate(srv, make_spec("challenge"))

    assert result.outcome.status == "failed"
    assert result.outcome.error is not None
    assert result.outcome.error.startswith("The proposer (openai:model-a) failed in round 1")
    assert isinstance(result.events[-1], DebateFailed) and not result.of(VerdictReached)
    assert not any(r.model == "model-b" for r in srv.requests)


async def test_challenger_failing_in_round_one_leaves_the_position_uncontested(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(status=500), lambda r: r.model == "model-b")
    srv.add_rule(Reply(text="Use SQLite.\nRecommend: SQLite with WAL."), lambda r: r.model == "model-a")

    result = await run_debate(srv, make_spec("challenge"))

    assert result.outcome.status == "completed"
    warnings = result.notices("warning")
    assert any("challenger (openai:model-b) failed in round 1" in w and "uncontested" in w for w in warnings)
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "A" and "uncontested" in verdict.reasoning.lower()
    assert "SQLite with WAL" in verdict.recommendation
    assert not any(r.model == "judge" for r in srv.requests)  # the format decided; no judge call


async def test_a_later_failure_gives_a_verdict_over_completed_rounds(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(text=verdict_json("A")), judging)
    srv.add_rule(Reply(status=500), round_of("challenger", 2))
    srv.add_rule(Reply(text="ROUND-ONE-OPENING"), lambda r: "You open the debate" in r.last_user)
    srv.add_rule(Reply(text="ROUND-ONE-CHALLENGE"), lambda r: "You are the challenger. Start" in r.last_user)
    srv.add_rule(Reply(text="ROUND-TWO-DEFENSE"), round_of("proposer", 2))

    result = await run_debate(srv, make_spec("challenge", rounds=2))

    assert result.outcome.status == "completed" and result.outcome.rounds_completed == 1
    assert any("Round 2 is incomplete: the challenger failed" in w and "round 1" in w for w in result.outcome.warnings)
    assert len(result.of(TurnFailed)) == 1
    passes = [r for r in srv.requests if judging(r)]
    assert len(passes) == 2
    assert all("ROUND-ONE-CHALLENGE" in r.last_user and "ROUND-TWO-DEFENSE" not in r.last_user for r in passes)
    assert result.of(VerdictReached)


async def test_every_call_timing_out_fails_with_the_timeout_message(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(hang=True))

    result = await run_debate(srv, make_spec("challenge"), call_timeout=0.3)

    assert result.outcome.status == "failed"
    assert result.outcome.error == ALL_TIMED_OUT
    assert isinstance(result.events[-1], DebateFailed)


async def test_every_call_timing_out_in_consensus_too(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(hang=True))

    result = await run_debate(srv, make_spec("consensus"), call_timeout=0.3)

    assert result.outcome.error == ALL_TIMED_OUT
    assert len(srv.requests) == 3  # the distill call and both seed calls, the seed ones in parallel


async def test_nothing_recorded_fails_with_the_nothing_recorded_message(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(
        Reply(text='{"debatable": true, "stances": ["X is right.", "Y is right."]}'),
        lambda r: "Split this topic" in r.last_user,
    )
    srv.add_rule(Reply(text="not json, twice over"))  # every debater turn is unreadable, even when retried

    result = await run_debate(srv, make_spec("stances"))

    assert result.outcome.status == "failed"
    assert result.outcome.error == NOTHING_RECORDED
    assert not result.of(VerdictReached) and not result.of(DebateFinished)


async def test_parse_failures_leave_only_sanitized_metadata_in_the_log(
    llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    srv = llm_server
    raw = f"RAW-JUDGE-OUTPUT\x1b[31m with the key {SECRET} and no JSON"
    srv.add_rule(Reply(text=raw), judging)
    srv.add_rule(Reply(text="A sound argument with evidence."), lambda r: r.model in ("model-a", "model-b"))
    caplog.set_level(logging.DEBUG)

    # a backend sent no schema (OpenRouter here), where text that is not JSON reaches the reader (a strict schema's
    # provider refuses such an answer before it is text)
    result = await run_debate(srv, make_spec("challenge", rounds=1, judge="openrouter:judge"),
                              env={"OPENROUTER_API_KEY": "sk-or-test-0123", "OPENROUTER_BASE_URL": srv.openai_base_url})

    assert not result.of(VerdictReached)
    assert any("judge could not reach a verdict" in w for w in result.notices("warning"))
    parse = [r.getMessage() for r in caplog.records if "PARSE_ERROR" in r.getMessage()]
    assert len(parse) == 4  # two passes, each with its one retry
    for message in parse:
        assert len(message) <= 200
        assert message.endswith("PARSE_ERROR:judge:no_object")
    everything = "\n".join(r.getMessage() for r in caplog.records)
    assert "RAW-JUDGE-OUTPUT" not in everything
    assert SECRET not in everything and "\x1b" not in everything

"""The judge: two concurrent order-swapped passes, split detection, tie refusal with one retry, anonymity."""

from __future__ import annotations

import logging
import re

import pytest

from orchestrator.events import VerdictReached
from tests.debate_harness import make_spec, overlapping, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import verdict_json


def judging(r: RequestRecord) -> bool:
    return r.model == "judge" and "Decide who made the stronger case" in r.prompt_text


def proposer_first(r: RequestRecord) -> bool:
    return judging(r) and "- Debater A: proposer" in r.prompt_text


def challenger_first(r: RequestRecord) -> bool:
    return judging(r) and "- Debater A: challenger" in r.prompt_text


def script_debaters(srv: FakeLLMServer) -> None:
    srv.add_rule(Reply(text="PROPOSER: adopt it; the benchmark shows 2x."), lambda r: r.model == "model-a")
    srv.add_rule(Reply(text="CHALLENGER: the benchmark is synthetic."), lambda r: r.model == "model-b")


async def test_split_when_the_two_orders_disagree(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    # a judge that always prefers whoever is presented first: "A" is the proposer in one pass and
    # the challenger in the other
    srv.add_rule(Reply(text=verdict_json("A"), latency_s=0.1), proposer_first)
    srv.add_rule(Reply(text=verdict_json("A", reasoning="First shown wins."), latency_s=0.1), challenger_first)

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    passes = [r for r in srv.requests if judging(r)]
    assert len(passes) == 2 and overlapping(passes)
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.split is True
    assert verdict.winner == "A"  # the first pass (seating order) leads
    assert "Split verdict" in verdict.reasoning and "preferred B" in verdict.reasoning


async def test_agreeing_passes_are_not_split(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("B")), proposer_first)  # the challenger, shown second
    srv.add_rule(Reply(text=verdict_json("A")), challenger_first)  # the challenger, shown first

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.split is False and verdict.winner == "B"


async def test_a_tie_is_refused_and_retried_once(llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=verdict_json("both have merit")), lambda r: judging(r) and len(r.messages) == 2)
    srv.add_rule(Reply(text=verdict_json("B")), proposer_first)
    srv.add_rule(Reply(text=verdict_json("A")), challenger_first)
    caplog.set_level(logging.WARNING)

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    judge_calls = [r for r in srv.requests if judging(r)]
    assert len(judge_calls) == 4
    retries = [r for r in judge_calls if r.messages[-1]["role"] == "user" and len(r.messages) == 4]
    assert len(retries) == 2
    assert all("tie is not a verdict" in r.last_user and r.messages[2]["role"] == "assistant" for r in retries)
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and not verdict.split
    assert any("PARSE_ERROR:judge:no_winner" in r.getMessage() for r in caplog.records)


async def test_one_unusable_pass_gives_a_warned_verdict(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text="I refuse to answer in JSON."), challenger_first)
    srv.add_rule(Reply(text=verdict_json("A")), proposer_first)

    result = await run_debate(srv, make_spec("challenge", rounds=1))

    assert result.of(VerdictReached)[0].verdict.winner == "A"
    assert any("Only one of the two judge passes" in w for w in result.notices("warning"))


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

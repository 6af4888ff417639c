"""stances: split, anonymous parallel rounds of JSON envelopes, convergence, malformed replies, the judge."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from orchestrator.debate.formats.stance_envelope import (
    Envelope,
    EnvelopeError,
    EnvelopeTurn,
    converged,
    parse_envelope,
    parse_split,
    render_envelope,
)
from orchestrator.events import DebateFailed, DebateFinished, RoundStarted, TurnStarted, VerdictReached
from orchestrator.log import Store
from orchestrator.models import Seat, Turn
from tests.debate_harness import make_spec, overlapping, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.format_stances_harness import (
    JUDGE,
    MODELS,
    SECRET_GARBAGE,
    STANCES,
    TOPIC,
    debater,
    envelope,
    is_judge,
    is_split,
    script_judge,
    script_split,
)


async def test_end_to_end_anonymous_parallel_and_converging(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    srv = llm_server
    script_split(srv)
    script_judge(srv)
    for i, model in enumerate(MODELS):
        letter = "ABC"[i]
        srv.add_rule(
            Reply(text=envelope(STANCES[i], f"OPEN-{letter}: evidence from a 2019 study"), latency_s=0.15),
            debater(model, 1),
        )
        srv.add_rule(
            Reply(
                text=envelope(STANCES[i], rebuttals=({"target": "B", "point": f"REB-{letter}"},), done=True),
                latency_s=0.1,
            ),
            debater(model, 2),
        )

    spec = make_spec("stances", MODELS, judge=JUDGE, topic=TOPIC)
    result = await run_debate(srv, spec, db=tmp_path / "d.db")

    assert result.outcome.status == "completed", result.outcome.error
    assert result.outcome.rounds_completed == 2 and result.outcome.rounds_planned == 3
    assert [(e.round, e.total, e.title) for e in result.of(RoundStarted)] == [
        (1, 3, "Openings"),
        (2, 3, "Rebuttals 1 of 2"),
    ]
    assert any("Every debater reports no new points" in n for n in result.notices())
    assert any(n.startswith("Stances:") and STANCES[2] in n for n in result.notices())
    assert isinstance(result.events[-1], DebateFinished)
    assert "text_delta" not in result.types  # the raw JSON is never streamed to users

    openings = [r for r in srv.requests if "Round 1 of up to 3" in r.last_user]
    assert len(openings) == 3 and overlapping(openings)
    rebuttals = [r for r in srv.requests if "Round 2 of up to 3" in r.last_user]
    assert len(rebuttals) == 3 and overlapping(rebuttals)
    judges = [r for r in srv.requests if is_judge(r)]
    assert len(judges) == 2 and overlapping(judges)

    # each debater sees its own previous turn and the others', rendered, labelled, never raw JSON
    to_a = next(r for r in rebuttals if r.model == "alpha-7")
    assert "OPEN-A" in to_a.last_user and "OPEN-C" in to_a.last_user
    assert 'debater="B" role="debater" kind="opening">\n| **Stance:**' in to_a.last_user
    assert '{"stance"' not in to_a.last_user and '"arguments": [' not in to_a.last_user
    for turn in result.turns:
        assert turn.text.startswith("**Stance:**") and "{" not in turn.text

    # anonymity: no model or vendor name in any prompt the system wrote (debaters, split, judge)
    forbidden = re.compile(
        r"alpha-7|beta-9|gamma-3|omega-1|openai|anthropic|gemini|claude|gpt|ollama|openrouter", re.IGNORECASE
    )
    for request in srv.requests:
        for message in request.messages:
            assert not forbidden.search(message["content"]), (request.model, message["content"][:200])

    # the judge saw each debater's stance and returned the per-debater table
    assert all(STANCES[1] in r.last_user for r in judges)
    verdict = result.of(VerdictReached)[0].verdict
    assert [s.seat for s in verdict.scores] == ["A", "B", "C"]
    assert verdict.scores[0].fatal_weakness

    async with Store(tmp_path / "d.db") as store:
        record = await store.get_debate(spec.id)
    assert record is not None and record.status == "completed"
    assert len(record.turns) == 6 and all(t.status == "ok" for t in record.turns)
    assert all("REB-" in t.text for t in record.turns if t.round == 2)
    assert record.verdict is not None and record.verdict.winner == "B" and len(record.verdict.scores) == 3


async def test_malformed_envelopes_retry_once_then_empty_turn(
    llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    srv = llm_server
    script_split(srv)
    script_judge(srv, "A")
    srv.add_rule(Reply(text=SECRET_GARBAGE), debater(MODELS[1], 1), times=1)  # B: bad once, then fine
    srv.add_rule(Reply(text=SECRET_GARBAGE), debater(MODELS[2]))  # C: never readable
    for i, model in enumerate(MODELS[:2]):
        srv.add_rule(Reply(text=envelope(STANCES[i], f"ARG-{'AB'[i]}", done=True)), debater(model))

    caplog.set_level(logging.DEBUG)
    result = await run_debate(srv, make_spec("stances", MODELS, judge=JUDGE, topic=TOPIC))

    assert result.outcome.status == "completed"
    b_calls = [r for r in srv.requests if r.model == "beta-9" and "Round 1 of up to 3" in r.last_user]
    assert len(b_calls) == 2 and "could not be read" in b_calls[1].last_user
    opening_b = next(t for t in result.turns if t.seat == "B" and t.round == 1)
    assert opening_b.status == "ok" and "ARG-B" in opening_b.text
    assert opening_b.input_tokens > len(b_calls[0].last_user) // 4  # both calls are counted on the turn
    empty_c = [t for t in result.turns if t.seat == "C"]
    assert empty_c and all(t.status == "empty" and t.text == "" for t in empty_c)
    assert any("Debater C's round 1 turn is recorded empty" in w for w in result.notices("warning"))
    # C is empty, so round 2 never converges even though A and B report no new points
    assert not any("no new points" in n for n in result.notices())
    assert result.outcome.rounds_completed == 3
    to_a = next(r for r in srv.requests if r.model == "alpha-7" and "Round 2 of up to 3" in r.last_user)
    assert "Debater C:\n(no readable turn)" in to_a.last_user

    parse_logs = [r.getMessage() for r in caplog.records if "PARSE_ERROR" in r.getMessage()]
    assert parse_logs and all(len(m) <= 200 and "PARSE_ERROR:stances_envelope:" in m for m in parse_logs)
    everything = "\n".join(r.getMessage() for r in caplog.records)
    assert "RAW-MODEL-OUTPUT" not in everything and "sk-test-secret" not in everything


async def test_a_round_with_no_readable_turn_is_retried_once_and_never_converges(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_split(srv, STANCES[:2])
    script_judge(srv, "A")
    models = MODELS[:2]
    srv.add_rule(Reply(text=SECRET_GARBAGE), lambda r: "Round 1 of up to 3" in r.last_user, times=4)
    srv.add_rule(Reply(text=envelope("claim", "late but readable")), lambda r: "Round 1 of up to 3" in r.last_user)
    srv.add_rule(Reply(text='{"no_new_points": tru'), lambda r: "Round 2 of up to 3" in r.last_user)

    result = await run_debate(srv, make_spec("stances", models, judge=JUDGE, topic=TOPIC))

    assert result.outcome.status == "completed"
    assert result.outcome.rounds_completed == 1
    notices = result.notices()
    assert any("No debater gave a readable answer in round 1: running the round once more" in n for n in notices)
    assert any("No debater gave a readable answer in round 2" in n for n in notices)
    assert any("Round 2 produced no readable turn, even when run again" in n for n in notices)
    assert not any("no new points" in n for n in notices)
    assert len([r for r in srv.requests if "Round 2 of up to 3" in r.last_user]) == 8  # 2 debaters × 2 tries × 2
    assert result.of(VerdictReached)
    assert [(t.round, t.status) for t in result.turns].count((1, "ok")) == 2


async def test_not_debatable_topic_runs_no_debate(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(text='{"debatable": false, "stances": [], "reason": "It has one factual answer."}'), is_split)

    result = await run_debate(
        srv, make_spec("stances", MODELS[:2], judge=JUDGE, topic="What is the capital of France?")
    )

    assert result.outcome.status == "failed"
    error = result.outcome.error or ""
    assert error.startswith("This is not a debatable topic") and "It has one factual answer." in error
    assert "Ask it as a plain question instead" in error
    assert isinstance(result.events[-1], DebateFailed)
    assert len(srv.requests) == 1 and not result.of(TurnStarted)


async def test_more_stances_than_debaters_uses_the_smaller_number(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_split(srv)
    script_judge(srv, "A")
    srv.add_rule(Reply(text=envelope("mine", "an argument", done=True)), lambda r: r.model != "omega-1")

    result = await run_debate(srv, make_spec("stances", MODELS[:2], judge=JUDGE, topic=TOPIC))

    assert any("splits into 3 stances but only 2 debaters" in n and STANCES[2] in n for n in result.notices())
    systems = [r.messages[0]["content"] for r in srv.requests if r.model in ("alpha-7", "beta-9")]
    assert any(STANCES[0] in s for s in systems) and any(STANCES[1] in s for s in systems)
    assert not any(STANCES[2] in s for s in systems)
    assert result.outcome.rounds_completed == 2


# ---- pure functions ----


def test_parse_envelope_fenced_braces_and_failures() -> None:
    env = parse_envelope(
        'noise ```json\n{"stance": "S", "arguments": ["a1"], "rebuttals": '
        '[{"target": "b", "point": "wrong"}], "no_new_points": "true"}\n``` tail'
    )
    assert env == Envelope("S", ("a1",), ("Debater B: wrong",), True)
    assert parse_envelope('prefix {"arguments": ["x"]} suffix').arguments == ("x",)
    for text, code in [
        ("no braces", "no_object"),
        ("{bad json}", "invalid_json"),
        ('{"stance": "S"}', "missing_keys"),
        ('{"arguments": [], "rebuttals": []}', "empty_envelope"),
    ]:
        with pytest.raises(EnvelopeError) as info:
            parse_envelope(text)
        assert info.value.code == code


def test_render_envelope_is_readable_markdown() -> None:
    text = render_envelope(Envelope("S", ("a1", "a2"), ("Debater B: wrong",), True))
    assert text == (
        "**Stance:** S\n\n**Arguments**\n1. a1\n2. a2\n\n**Rebuttals**\n- Debater B: wrong\n\n"
        "_No new points: this debater considers its case complete._"
    )


def test_parse_split() -> None:
    split = parse_split('{"debatable": true, "stances": ["x", {"claim": "y"}, "X", "z", "w", "v"]}')
    assert split.debatable and split.stances == ("x", "y", "z", "w")
    assert not parse_split('{"debatable": true, "stances": ["only one"]}').debatable
    assert not parse_split('{"debatable": false, "stances": ["a", "b"], "reason": "r"}').debatable
    with pytest.raises(EnvelopeError):
        parse_split("not json")


def test_converged_needs_every_turn_readable_and_done() -> None:
    seat = Seat(label="A", role="debater", model="openai:x")
    turn = Turn(debate_id="d", round=2, seat="A", role="debater", kind="rebuttal", model="openai:x")
    done = EnvelopeTurn(seat, turn, Envelope("S", (), (), True))
    more = EnvelopeTurn(seat, turn, Envelope("S", ("new",), (), False))
    empty = EnvelopeTurn(seat, turn.model_copy(update={"status": "empty"}), None)
    assert converged([done, done])
    assert not converged([done, more])
    assert not converged([done, empty])
    assert not converged([empty, empty])
    assert not converged([])

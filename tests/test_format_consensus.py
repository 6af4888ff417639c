"""consensus: distilled question, parallel seed, exchange until the marker or the 4-round cap, summary."""

from __future__ import annotations

from pathlib import Path

from orchestrator.debate.formats.consensus import (
    MAX_ROUNDS,
    clean_question,
    consensus_status,
    elect_summarizer,
    has_marker,
    parse_status,
    status_completeness,
)
from orchestrator.events import (
    DebateFailed,
    DebateFinished,
    DebateStarted,
    RoundCompleted,
    RoundStarted,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log import Store
from tests.debate_harness import is_model, make_spec, model_and, overlapping, quoted, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import verdict_json

QUESTION = "Should a five-person team keep all of its services in one repository?"
FULL_STATUS = """
## Status
Consensus: one repository for the three core services
Key trade-offs: atomic changes against slower CI
Recommendation: adopt a monorepo with path-filtered CI
Open questions: how the mobile app fits in
"""
PARTIAL_STATUS = """
## Status
Consensus: none yet
Key trade-offs: atomic changes against slower CI
Recommendation: keep separate repositories
"""


def _script_judge(srv: FakeLLMServer) -> None:
    srv.add_rule(Reply(text=QUESTION), model_and("judge", "Rewrite it as one clear question"))
    srv.add_rule(Reply(text=verdict_json("A")), is_model("judge"))


def _script_summary(srv: FakeLLMServer) -> None:
    srv.add_rule(
        Reply(
            text="## Consensus\nOne repository.\n## Key trade-offs\nCI time.\n## Recommendation\nDo it.\n"
            "## Open questions\nMobile."
        ),
        lambda r: "write the joint summary" in r.last_user,
    )


def _ask(r: RequestRecord, model: str, round_no: int) -> bool:
    return r.model == model and f"round {round_no} of at most {MAX_ROUNDS}" in r.last_user


async def test_stops_at_round_two_on_marker_with_rows_and_events(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    srv = llm_server
    _script_judge(srv)
    _script_summary(srv)
    seed_a = "SEED-A: a monorepo gives atomic cross-service changes." + FULL_STATUS
    seed_b = "SEED-B: separate repositories keep ownership clear." + PARTIAL_STATUS
    srv.add_rule(Reply(text=seed_a, latency_s=0.15), lambda r: _ask(r, "model-a", 1))
    srv.add_rule(Reply(text=seed_b, latency_s=0.15), lambda r: _ask(r, "model-b", 1))
    srv.add_rule(Reply(text="R2-A: I still prefer one repository." + FULL_STATUS), lambda r: _ask(r, "model-a", 2))
    srv.add_rule(
        Reply(text="R2-B: your CI numbers convinced me." + FULL_STATUS + "\nCONSENSUS_REACHED"),
        lambda r: _ask(r, "model-b", 2),
    )

    result = await run_debate(srv, make_spec("consensus"), db=tmp_path / "d.db")

    assert result.outcome.status == "completed"
    assert result.outcome.rounds_completed == 2
    assert result.outcome.rounds_planned == MAX_ROUNDS
    assert result.outcome.input_tokens > 0 and result.outcome.output_tokens > 0
    assert isinstance(result.events[0], DebateStarted)
    assert isinstance(result.events[-1], DebateFinished)
    assert [(e.round, e.total) for e in result.of(RoundStarted)] == [(1, 4), (2, 4)]
    assert [e.round for e in result.of(RoundCompleted)] == [1, 2]
    assert any(QUESTION in n for n in result.notices())
    assert any("Debater B wrote CONSENSUS_REACHED in round 2" in n for n in result.notices())
    assert any(n.startswith("Consensus: yes") for n in result.notices())
    types = result.types
    assert types.index("verdict") > max(i for i, t in enumerate(types) if t == "turn_completed")
    assert not any(_ask(r, "model-a", 3) or _ask(r, "model-b", 3) for r in srv.requests)

    # both debaters got the distilled question; in round 2 each read the other's full latest response
    seeds = [r for r in srv.requests if "round 1 of at most" in r.last_user]
    assert len(seeds) == 2 and all(QUESTION in r.last_user for r in seeds)
    assert overlapping(seeds)
    round2_a = next(r for r in srv.requests if _ask(r, "model-a", 2))
    assert quoted(seed_b) in round2_a.last_user and quoted(seed_a) in round2_a.last_user

    # A's status section is complete, B's seed one was not: A is elected and writes the visible summary
    summary = [t for t in result.turns if t.kind == "summary"]
    assert [(t.seat, t.status) for t in summary] == [("A", "ok")]
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.consensus == "yes"
    judge_prompts = [r for r in srv.requests if r.model == "judge" and "Decide who made" in r.last_user]
    assert len(judge_prompts) == 2 and all("Consensus: yes" in r.last_user for r in judge_prompts)
    assert all("One repository." in r.last_user for r in judge_prompts)

    async with Store(tmp_path / "d.db") as store:
        record = await store.get_debate(result.events[0].debate_id)
    assert record is not None
    assert sorted((t.round, t.seat, t.kind, t.status) for t in record.turns) == [
        (1, "A", "opening", "ok"),
        (1, "B", "opening", "ok"),
        (2, "A", "response", "ok"),
        (2, "A", "summary", "ok"),
        (2, "B", "response", "ok"),
    ]
    assert record.verdict is not None and record.verdict.consensus == "yes"
    assert record.status == "completed"


async def test_runs_to_the_four_round_cap_and_reports_partial(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    _script_judge(srv)
    _script_summary(srv)
    for model in ("model-a", "model-b"):
        srv.add_rule(Reply(text=f"{model} holds its ground." + FULL_STATUS), is_model(model))

    result = await run_debate(srv, make_spec("consensus", rounds=5))

    assert result.outcome.rounds_completed == 4
    assert [(e.round, e.total) for e in result.of(RoundStarted)] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert any("No agreement marker after 4 rounds" in n for n in result.notices())
    debater_calls = [r for r in srv.requests if r.model != "judge" and "joint summary" not in r.last_user]
    assert len(debater_calls) == 8
    assert result.of(VerdictReached)[0].verdict.consensus == "partial"


async def test_one_debater_failing_in_the_seed_round_is_noted_and_the_other_continues(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    _script_judge(srv)
    _script_summary(srv)
    srv.add_rule(Reply(status=500), is_model("model-b"))
    srv.add_rule(Reply(text="A alone." + FULL_STATUS), is_model("model-a"))

    result = await run_debate(srv, make_spec("consensus"))

    assert result.outcome.status == "completed"
    warnings = result.notices("warning")
    assert any("Debater B (openai:model-b) failed in the seed round" in w for w in warnings)
    assert result.outcome.warnings
    assert [t.seat for t in result.turns if t.kind == "summary"] == ["A"]
    assert result.of(VerdictReached)[0].verdict.consensus == "no"
    assert not any(_ask(r, "model-a", 2) for r in srv.requests)


async def test_later_failure_ends_the_exchange_with_a_note(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    _script_judge(srv)
    _script_summary(srv)
    srv.add_rule(Reply(status=500), lambda r: _ask(r, "model-b", 2))
    for model in ("model-a", "model-b"):
        srv.add_rule(Reply(text=f"{model} answers." + FULL_STATUS), is_model(model))

    result = await run_debate(srv, make_spec("consensus"))

    assert result.outcome.status == "completed"
    assert result.outcome.rounds_completed == 1
    assert any("Round 2 is incomplete: Debater B" in w for w in result.notices("warning"))
    assert result.of(VerdictReached)


async def test_both_debaters_failing_the_seed_round_aborts(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    _script_judge(srv)
    srv.add_rule(Reply(status=500), lambda r: r.model in ("model-a", "model-b"))

    result = await run_debate(srv, make_spec("consensus"))

    assert result.outcome.status == "failed"
    assert result.outcome.error is not None and "Both debaters failed in the seed round" in result.outcome.error
    assert isinstance(result.events[-1], DebateFailed)
    assert not result.of(VerdictReached)


async def test_distill_failure_falls_back_to_the_topic(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(status=500), model_and("judge", "Rewrite it as one clear question"))
    srv.add_rule(Reply(text=verdict_json("B")), is_model("judge"))
    srv.add_rule(Reply(text="Agreed." + FULL_STATUS + "\nCONSENSUS_REACHED"), lambda r: r.model != "judge")
    spec = make_spec("consensus")

    result = await run_debate(srv, spec)

    assert any("could not be distilled" in n for n in result.notices())
    seeds = [r for r in srv.requests if "round 1 of at most" in r.last_user]
    assert all(spec.topic in r.last_user for r in seeds)
    assert result.outcome.rounds_completed == 2  # the marker in the seed round is not honoured
    assert len([e for e in result.of(TurnStarted) if e.kind != "summary"]) == 4


# ---- pure functions ----


def test_parse_status_reads_the_last_status_section_in_many_spellings() -> None:
    text = (
        "Recommendation: prose that is not the status\n\n## Status\n**Consensus:** we agree on X\n"
        "- Key tradeoffs: speed vs cost\nRecommendation:\n  use Postgres\n  with backups\n### Open questions\nnone\n"
        "CONSENSUS_REACHED\n"
    )
    assert parse_status(text) == {
        "consensus": "we agree on X",
        "key trade-offs": "speed vs cost",
        "recommendation": "use Postgres\n  with backups",
        "open questions": "none",
    }
    assert parse_status("Consensus is hard to reach on this.") == {}


def test_completeness_counts_filled_headings_then_length() -> None:
    assert status_completeness(FULL_STATUS).filled == 4
    assert status_completeness(PARTIAL_STATUS).filled == 3
    assert status_completeness("Status\nConsensus:\nRecommendation: go").filled == 1
    assert status_completeness("no status at all").filled == 0


def test_elect_summarizer_rule() -> None:
    assert elect_summarizer([("A", PARTIAL_STATUS), ("B", FULL_STATUS)]) == "B"  # more headings filled
    short = "Status\nConsensus: x\nKey trade-offs: y\nRecommendation: z\nOpen questions: w"
    assert elect_summarizer([("A", short), ("B", FULL_STATUS)]) == "B"  # same count: longer content wins
    assert elect_summarizer([("A", FULL_STATUS), ("B", FULL_STATUS)]) == "A"  # full tie: seating order
    assert elect_summarizer([("B", "nothing"), ("A", "nothing")]) == "B"
    assert elect_summarizer([("B", "only one left")]) == "B"


def test_consensus_status_rule() -> None:
    assert consensus_status(True, [PARTIAL_STATUS]) == "yes"
    assert consensus_status(False, [FULL_STATUS, FULL_STATUS]) == "partial"
    assert consensus_status(False, [FULL_STATUS, PARTIAL_STATUS]) == "no"  # "none yet" is not agreement
    assert consensus_status(False, [FULL_STATUS]) == "no"  # one debater left: nobody to agree with
    assert consensus_status(False, ["Status\nConsensus: N/A", FULL_STATUS]) == "no"


def test_marker_and_question_cleanup() -> None:
    assert has_marker("done\nCONSENSUS_REACHED")
    assert not has_marker("consensus reached")
    assert clean_question('Question: "Should we use Rust?"\nextra', "fallback") == ("Should we use Rust?", True)
    assert clean_question("", "the topic") == ("the topic", False)
    assert clean_question(None, "the topic") == ("the topic", False)
    assert clean_question("x" * 700, "the topic") == ("the topic", False)

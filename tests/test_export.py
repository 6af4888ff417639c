"""Export of a logged debate (logged on each backend): agentsys-compatible JSON that round-trips, and a
Markdown transcript."""

from __future__ import annotations

import json

import pytest

from orchestrator.export import ExportError, from_json, to_json, to_markdown
from orchestrator.log import DebateRecord
from orchestrator.models import DebateSpec, Outcome, Seat, StanceScore, Turn, Verdict, Vote
from tests.log_backends import LogBackend

AGENTSYS_KEYS = {
    "id", "topic", "proposer", "challenger", "effort", "rounds_completed", "max_rounds", "status",
    "exchanges", "verdict", "timestamp",
}  # fmt: skip
EXCHANGE_KEYS = {"round", "role", "tool", "response", "duration_ms"}
VERDICT_KEYS = {"winner", "reasoning", "agreements", "disagreements", "recommendation"}


async def logged_debate(log_backend: LogBackend, spec: DebateSpec) -> DebateRecord:
    async with log_backend.open() as store:
        await store.create_debate(spec, at=1_750_000_000.123456)
        for round in (1, 2):
            for seat in spec.seats:
                failed = round == 2 and seat.label == spec.seats[-1].label
                await store.add_turn(
                    Turn(
                        debate_id=spec.id,
                        round=round,
                        seat=seat.label,
                        role=seat.role,
                        kind="opening" if round == 1 else "rebuttal",
                        model=seat.model,
                        text="" if failed else f"Round {round} from {seat.label}: evidence in §{round}.",
                        duration_ms=1200 * round,
                        input_tokens=300,
                        output_tokens=150,
                        status="failed" if failed else "ok",
                        error="timed out after 240 s" if failed else None,
                    )
                )
        await store.add_notice(spec.id, "warning", "Round 2 is incomplete: B timed out.")
        await store.set_verdict(
            spec.id,
            Verdict(
                winner="A",
                split=True,
                reasoning="A cited the benchmark.",
                recommendation="Migrate module by module.",
                agreements=("Tests first",),
                disagreements=("Timeline",),
                unresolved=("Hiring?",),
                ratings={"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "low"},
                scores=(StanceScore(seat="A", stance="migrate", score=7.5),),
                consensus="partial",
            ),
        )
        await store.record_vote(Vote(debate_id=spec.id, user="u1", choice="agree"))
        await store.record_vote(Vote(debate_id=spec.id, user="u2", choice="side:B"))
        await store.finish_debate(
            spec.id, Outcome(status="completed", rounds_completed=2, warnings=("B missing in round 2",))
        )
        record = await store.get_debate(spec.id)
    assert record is not None
    return record


def challenge_spec() -> DebateSpec:
    return DebateSpec(
        topic="Rewrite billing in Rust?",
        seats=(
            Seat(label="A", role="proposer", model="anthropic:claude-sonnet-4-5"),
            Seat(label="B", role="challenger", model="openai:gpt-5"),
        ),
        judge="gemini:gemini-2.5-pro",
        effort="high",
        platform="slack",
        channel="C42",
        thread="1700.01",
        requested_by="U1",
    )


async def test_json_has_every_agentsys_key_and_round_trips(log_backend: LogBackend) -> None:
    record = await logged_debate(log_backend, challenge_spec())
    data = to_json(record)
    json.dumps(data)  # JSON-ready
    assert AGENTSYS_KEYS <= set(data)
    assert data["proposer"] == "anthropic:claude-sonnet-4-5" and data["challenger"] == "openai:gpt-5"
    assert (data["effort"], data["rounds_completed"], data["max_rounds"], data["status"]) == (
        "high", 2, 2, "completed")  # fmt: skip
    assert data["timestamp"].startswith("2025-06-15T")
    assert len(data["exchanges"]) == 4 and all(set(e) == EXCHANGE_KEYS for e in data["exchanges"])
    assert data["exchanges"][0] == {
        "round": 1, "role": "proposer", "tool": "anthropic:claude-sonnet-4-5",
        "response": "Round 1 from A: evidence in §1.", "duration_ms": 1200,
    }  # fmt: skip
    assert VERDICT_KEYS <= set(data["verdict"])
    assert data["verdict"]["winner"] == "anthropic:claude-sonnet-4-5"
    assert data["verdict"]["winner_label"] == "A" and data["verdict"]["split"] is True
    assert data["votes"] == {"counts": {"agree": 1, "side:B": 1}, "total": 2}
    assert data["tokens"] == {"input": 1200, "output": 600} and data["cost_usd"] > 0
    assert data["turns"][3]["status"] == "failed" and data["notices"][0]["level"] == "warning"

    again = from_json(json.loads(json.dumps(data)))
    assert again == record
    assert to_json(again) == data


async def test_consensus_uses_the_first_two_debaters(log_backend: LogBackend) -> None:
    spec = DebateSpec(
        topic="Adopt trunk-based development?",
        format="consensus",
        seats=(
            Seat(label="A", role="debater", model="ollama:qwen3"),
            Seat(label="B", role="debater", model="openai:gpt-5-mini"),
            Seat(label="C", role="debater", model="cli:claude"),
        ),
        judge="openai:gpt-5",
    )
    record = await logged_debate(log_backend, spec)
    data = to_json(record)
    assert (data["proposer"], data["challenger"]) == ("ollama:qwen3", "openai:gpt-5-mini")
    assert to_json(from_json(data)) == data


def test_from_json_rejects_foreign_documents() -> None:
    with pytest.raises(ExportError):
        from_json({"id": "x", "topic": "t"})
    with pytest.raises(ExportError, match="malformed"):
        from_json({"schema": "debate-bot/1", "id": "x"})


async def test_markdown_transcript(log_backend: LogBackend) -> None:
    record = await logged_debate(log_backend, challenge_spec())
    md = to_markdown(record)
    assert md.startswith("# Rewrite billing in Rust?\n")
    assert "challenge" in md and "`anthropic:claude-sonnet-4-5`" in md and "2025-06-15" in md
    assert md.index("## Round 1") < md.index("## Round 2") < md.index("## Verdict") < md.index("## Votes")
    assert "> Round 1 from A: evidence in §1." in md
    assert "FAILED" in md and "timed out after 240 s" in md
    assert "Winner: A (proposer" in md and "Split — low confidence" in md
    assert "Migrate module by module." in md and "A cited the benchmark." in md
    assert "evidence quality: medium" in md
    for item in ("Tests first", "Timeline", "Hiring?"):
        assert f"- {item}" in md
    assert "2 voter(s)" in md and "agree: 1" in md
    assert "1,200 in / 600 out" in md and "$" in md


def test_markdown_without_verdict_or_votes() -> None:
    record = DebateRecord(
        id="abc", topic="Empty one", format="challenge", status="failed", created_at=0.0,
        error="proposer failed in round 1", tally={"debate_id": "abc"},  # type: ignore[arg-type]
    )  # fmt: skip
    md = to_markdown(record)
    assert "No verdict was reached" in md and "No votes yet" in md and "proposer failed in round 1" in md
    assert "estimated cost unknown" in md
    assert to_json(record)["verdict"] is None

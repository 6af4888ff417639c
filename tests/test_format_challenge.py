"""challenge: proposer vs challenger end to end, and the round-3 summary that replaces round 1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from orchestrator.events import (
    DebateFinished,
    DebateStarted,
    RoundCompleted,
    RoundStarted,
    TurnCompleted,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log import Store
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import verdict_json

CONCESSION = "I concede that a shared cache adds a staleness risk of up to 30 seconds."


def opening(r: RequestRecord) -> bool:
    return "You open the debate as the proposer" in r.last_user


def challenge(r: RequestRecord) -> bool:
    return "You are the challenger. Start with" in r.last_user


def in_round(role: str, round_no: int, rounds: int) -> Callable[[RequestRecord], bool]:
    return lambda r: f"You are the {role}, round {round_no} of {rounds}" in r.last_user


async def test_end_to_end_events_and_rows(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    srv = llm_server
    srv.add_rule(Reply(text=verdict_json("B")), lambda r: r.model == "judge")
    srv.add_rule(Reply(text="OPENING: use a monorepo; CI data shows 12% fewer broken builds."), opening)
    srv.add_rule(Reply(text="CHALLENGE: the 12% figure is unsourced; try path-filtered CI."), challenge)
    srv.add_rule(
        Reply(text="DEFENSE: I concede the figure is internal; here is the trade-off."), in_round("proposer", 2, 2)
    )
    srv.add_rule(Reply(text="FOLLOW-UP: the trade-off holds only for small teams."), in_round("challenger", 2, 2))
    spec = make_spec("challenge")

    result = await run_debate(srv, spec, db=tmp_path / "d.db")

    assert result.outcome.status == "completed"
    assert result.outcome.rounds_completed == 2 and result.outcome.rounds_planned == 2
    assert isinstance(result.events[0], DebateStarted) and isinstance(result.events[-1], DebateFinished)
    flow = [
        (type(e).__name__, getattr(e, "round", None))
        for e in result.events
        if isinstance(e, RoundStarted | RoundCompleted | TurnStarted | TurnCompleted | VerdictReached)
    ]
    assert flow == [
        ("RoundStarted", 1),
        ("TurnStarted", 1),
        ("TurnCompleted", None),
        ("TurnStarted", 1),
        ("TurnCompleted", None),
        ("RoundCompleted", 1),
        ("RoundStarted", 2),
        ("TurnStarted", 2),
        ("TurnCompleted", None),
        ("TurnStarted", 2),
        ("TurnCompleted", None),
        ("RoundCompleted", 2),
        ("VerdictReached", None),
    ]
    assert [t.kind for t in result.turns] == ["opening", "challenge", "defense", "follow-up"]
    assert all(t.input_tokens > 0 and t.output_tokens > 0 for t in result.turns)
    challenge_prompt = next(r for r in srv.requests if challenge(r))
    assert "OPENING: use a monorepo" in challenge_prompt.last_user
    assert "text_delta" in result.types  # challenge turns stream

    async with Store(tmp_path / "d.db") as store:
        record = await store.get_debate(spec.id)
    assert record is not None and record.status == "completed"
    assert [(t.round, t.seat, t.kind) for t in record.turns] == [
        (1, "A", "opening"),
        (1, "B", "challenge"),
        (2, "A", "defense"),
        (2, "B", "follow-up"),
    ]
    assert record.verdict is not None and record.verdict.winner == "B"
    assert record.rounds_completed == 2


async def test_round_three_carries_the_summary_with_the_concession_verbatim(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(
        Reply(text=f'Core positions: …\nConcessions: Debater A, round 1: "{CONCESSION}"'),
        lambda r: r.model == "judge" and "Summarise the debate so far" in r.last_user,
    )
    srv.add_rule(Reply(text=verdict_json("A")), lambda r: r.model == "judge")
    srv.add_rule(Reply(text=f"ROUND1-PROPOSER-FULL-TEXT. {CONCESSION}"), opening)
    srv.add_rule(Reply(text="ROUND1-CHALLENGER-FULL-TEXT."), challenge)
    srv.add_rule(Reply(text="ROUND2-PROPOSER-TEXT."), in_round("proposer", 2, 3))
    srv.add_rule(Reply(text="ROUND2-CHALLENGER-TEXT."), in_round("challenger", 2, 3))
    srv.add_rule(Reply(text="ROUND3-PROPOSER-TEXT."), in_round("proposer", 3, 3))
    srv.add_rule(Reply(text="ROUND3-CHALLENGER-TEXT."), in_round("challenger", 3, 3))

    result = await run_debate(srv, make_spec("challenge", rounds=3))

    assert result.outcome.rounds_completed == 3
    summaries = [r for r in srv.requests if "Summarise the debate so far" in r.last_user]
    assert len(summaries) == 1 and "ROUND1-PROPOSER-FULL-TEXT" in summaries[0].last_user
    round3 = [r for r in srv.requests if "round 3 of 3" in r.last_user]
    assert len(round3) == 2
    for request in round3:
        assert CONCESSION in request.last_user
        assert "ROUND1-PROPOSER-FULL-TEXT" not in request.last_user
        assert "ROUND1-CHALLENGER-FULL-TEXT" not in request.last_user
        assert "ROUND2-" in request.last_user  # round N-1 stays in full
    round2 = [r for r in srv.requests if "round 2 of 3" in r.last_user]
    assert all("ROUND1-CHALLENGER-FULL-TEXT" in r.last_user for r in round2)  # rounds 1–2 carry full text

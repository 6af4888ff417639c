"""Scripted replies for the fake LLM server that several test modules share, and the scripts of the
team-in-the-loop tests that every platform runs (a debate held at its first call, a continuation whose
second verdict changes the winner)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from orchestrator.log import DebateRecord
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord


def is_judge(record: RequestRecord) -> bool:
    return bool(record.messages) and "impartial judge" in record.messages[0]["content"]


def verdict_json(winner: str = "A", **extra: object) -> str:
    """A judge's answer in a ```json block, evidence first; `extra` replaces any field (recommendation,
    scores, …) in place, or adds it at the end."""
    body: dict[str, object] = {
        "evidence": [f"Round 1, Debater {winner}: \"the benchmark shows 2x\" — the only measured claim"],
        "winner": winner,
        "reasoning": f"Debater {winner} backed its claims with specific evidence in round 1.",
        "ratings": {"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "high"},
        "agreements": ["Both accept the migration cost — the benchmark numbers cited in round 1"],
        "disagreements": ["Whether the team can staff it"],
        "unresolved": ["What the on-call load will be"],
        "recommendation": "Adopt it behind a feature flag for one quarter.",
        "scores": [{"seat": "A", "stance": "for", "strongest_point": "cost", "fatal_weakness": "staffing",
                    "score": 7}, {"seat": "B", "stance": "against", "strongest_point": "risk",
                                  "fatal_weakness": "no data", "score": 5}],
    }
    body.update(extra)
    return "Here is my verdict.\n```json\n" + json.dumps(body) + "\n```"


def swapped_pass(record: RequestRecord) -> bool:
    """A challenge debate's judge pass with the debaters' order swapped (the challenger shown first)."""
    return "- Debater A: challenger" in record.prompt_text


def script_judge(srv: FakeLLMServer, winner: str = "A", *, steady: bool = True, **extra: object) -> None:
    """A judge that picks seat `winner` (A or B). `steady`: in a challenge debate its order-swapped pass
    (the challenger shown first) answers the other letter, so both passes pick the same seat and agree;
    elsewhere, or with `steady=False`, it answers `winner`'s letter in every pass, which splits the passes of a
    two-debater debate (No clear winner without a tie-break judge)."""
    if steady and winner in ("A", "B"):
        other = "B" if winner == "A" else "A"
        srv.add_rule(Reply(text=verdict_json(other, **extra)),
                     match=lambda r: is_judge(r) and swapped_pass(r))
    srv.add_rule(Reply(text=verdict_json(winner, **extra)), match=is_judge)


def steady_rule(srv: FakeLLMServer, winner: str, match: Callable[[RequestRecord], bool], **extra: object) -> None:
    """Judge requests that `match` answer for seat `winner` (A or B of a challenge debate) in both
    order-swapped passes, so the passes agree."""
    other = "B" if winner == "A" else "A"
    srv.add_rule(Reply(text=verdict_json(other, **extra)), match=lambda r: match(r) and swapped_pass(r))
    srv.add_rule(Reply(text=verdict_json(winner, **extra)), match=match)


def steady_judge_json(srv: FakeLLMServer, body: dict[str, object], model: str) -> None:
    """A judge model answering `body` (its "winner" a seat of a challenge debate) in both order-swapped
    passes: the swapped pass names the other letter, so the passes agree."""
    other = "B" if body.get("winner") == "A" else "A"
    srv.add_rule(Reply(text=json.dumps({**body, "winner": other})),
                 match=lambda r: r.model == model and swapped_pass(r))
    srv.add_rule(Reply(text=json.dumps(body)), match=model)


def script_steady_judge(srv: FakeLLMServer, role: str = "challenger", **extra: object) -> None:
    """A judge that picks the debater of `role` whichever order it is shown in: its passes agree."""
    for first in ("proposer", "challenger"):
        letter = "A" if first == role else "B"
        srv.add_rule(Reply(text=verdict_json(letter, **extra)),
                     match=lambda r, f=first: is_judge(r) and f"- Debater A: {f}" in r.prompt_text)


# ---- the team in the loop: held debates and continuations

FIRST_RECOMMENDATION = "Build a queue of our own."
FACTS = "We already run a Kafka cluster owned by the platform team."
CHANGE_NOTE = "The Kafka cluster the team already runs removes Debater A's cost argument."


def continued_judge(record: RequestRecord) -> bool:
    """The judge asked again after a continuation: its prompt carries the verdict before."""
    return is_judge(record) and FIRST_RECOMMENDATION in record.prompt_text


def debater_requests(srv: FakeLLMServer, model: str) -> list[RequestRecord]:
    return [r for r in srv.requests if r.model == model and not is_judge(r)]


def script_held(srv: FakeLLMServer, gate: asyncio.Event) -> None:
    """A challenge debate of gpt-5 (proposer) and claude-sonnet-4-6 whose proposer's calls wait for `gate`;
    the judge picks A."""
    script_judge(srv, "A")
    srv.add_rule(Reply(text="Proposer: the benchmark shows 2x.", gate=gate), match="gpt-5")
    srv.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")


def script_continuation(srv: FakeLLMServer) -> None:
    """A debate whose first verdict picks A and recommends FIRST_RECOMMENDATION, and whose verdict after
    a continuation picks B, saying the winner changed (CHANGE_NOTE)."""
    for letter, swapped in (("A", True), ("B", False)):  # seat B in both order-swapped passes
        srv.add_rule(Reply(text=verdict_json(letter, changed=True, change_note=CHANGE_NOTE,
                                             recommendation="Use the existing Kafka cluster.")),
                     match=lambda r, s=swapped: continued_judge(r) and s == swapped_pass(r))
    script_judge(srv, "A", recommendation=FIRST_RECOMMENDATION)


def assert_continued_with_facts(record: DebateRecord | None, srv: FakeLLMServer, author: str) -> None:
    """A `script_continuation` debate continued once with FACTS by `author`, `srv`'s records cleared before:
    two verdicts (A, then B saying the winner changed), the facts kept as round 2's note, and each
    debater's one new turn given the facts and the verdict before."""
    assert record is not None and record.status == "completed" and record.segment == 2
    assert [v.winner for v in record.verdicts] == ["A", "B"]
    assert record.verdicts[1].changed is True and record.verdicts[1].change_note == CHANGE_NOTE
    (facts,) = record.interjections
    assert (facts.kind, facts.author, facts.round) == ("facts", author, 2)
    for model in ("gpt-5", "claude-sonnet-4-6"):
        (turn,) = debater_requests(srv, model)
        assert FACTS in turn.prompt_text and FIRST_RECOMMENDATION in turn.prompt_text

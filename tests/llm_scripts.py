"""Scripted replies for the fake LLM server that several test modules share."""

from __future__ import annotations

import json

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


def script_judge(srv: FakeLLMServer, winner: str = "A", **extra: object) -> None:
    srv.add_rule(Reply(text=verdict_json(winner, **extra)), match=is_judge)

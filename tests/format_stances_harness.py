"""What test_format_stances.py shares with other test modules, moved here so that no test module imports another:
`JUDGE`, `MODELS`, `SECRET_GARBAGE`, `STANCES`, `TOPIC`, `debater`, `envelope`, `is_split`, `script_judge`,
`script_split`."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import verdict_json

TOPIC = "Should a small team write its backend in a statically typed language?"


MODELS = ("openai:alpha-7", "openai:beta-9", "openai:gamma-3")


JUDGE = "openai:omega-1"


STANCES = [
    "Static typing lowers the defect rate enough to pay for itself within a year.",
    "Dynamic typing with strict tests ships features faster at equal quality.",
    "Gradual typing beats both: type the core, leave the edges dynamic.",
]


SECRET_GARBAGE = "RAW-MODEL-OUTPUT-7f3a not json at all sk-test-secret-0123456789"


def envelope(stance: str, *arguments: str, rebuttals: tuple = (), done: bool = False) -> str:
    body = {"stance": stance, "arguments": list(arguments), "rebuttals": list(rebuttals), "no_new_points": done}
    return f"Here it is.\n```json\n{json.dumps(body)}\n```"


def is_split(r: RequestRecord) -> bool:
    return "Split this topic" in r.last_user


def is_judge(r: RequestRecord) -> bool:
    return "Decide who made the stronger case" in r.last_user


def debater(model: str, round_no: int | None = None) -> Callable[[RequestRecord], bool]:
    name = model.split(":")[1]

    def match(r: RequestRecord) -> bool:
        return r.model == name and (round_no is None or f"Round {round_no} of up to 3" in r.last_user)

    return match


def script_split(srv: FakeLLMServer, stances: list[str] = STANCES) -> None:
    split = {"debatable": True, "stances": stances, "reason": "Three camps exist."}
    srv.add_rule(Reply(text=json.dumps(split)), is_split)


def script_judge(srv: FakeLLMServer, winner: str = "B") -> None:
    scores = [
        {"seat": s, "stance": "x", "strongest_point": f"point {s}", "fatal_weakness": f"flaw {s}", "score": 7}
        for s in "ABC"
    ]
    srv.add_rule(Reply(text=verdict_json(winner, scores=scores), latency_s=0.1), is_judge)

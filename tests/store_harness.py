"""What test_store.py shares with other test modules, moved here so that no test module imports another:
`make_spec`."""

from __future__ import annotations

from orchestrator.models import DebateSpec, Seat

PROPOSER = "anthropic:claude-sonnet-4-5"


CHALLENGER = "openai:gpt-5"


def make_spec(topic: str = "Should we rewrite the billing service in Rust?", **kw: object) -> DebateSpec:
    seats = (Seat(label="A", role="proposer", model=PROPOSER), Seat(label="B", role="challenger", model=CHALLENGER))
    return DebateSpec(topic=topic, seats=seats, judge=CHALLENGER, **kw)  # type: ignore[arg-type]

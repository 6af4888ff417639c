"""`DebateLog.debate_status`: the one column a start reads to see that its debate still runs (a sweep may have
ended it meanwhile), on SQLite and Postgres."""

from __future__ import annotations

from orchestrator.models import Outcome
from tests.debate_harness import make_spec
from tests.log_backends import LogBackend


async def test_a_debate_status_follows_the_log_and_is_none_for_an_unknown_id(log_backend: LogBackend) -> None:
    spec = make_spec("challenge")
    async with log_backend.open() as log:
        assert await log.debate_status(spec.id) is None
        await log.create_debate(spec)
        assert await log.debate_status(spec.id) == "running"
        await log.finish_debate(spec.id, Outcome(status="cancelled", rounds_completed=0))
        assert await log.debate_status(spec.id) == "cancelled"
        assert await log.debate_status(spec.id[:6]) is None  # an id, not a prefix: only get_debate resolves those

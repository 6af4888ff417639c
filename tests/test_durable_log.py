"""The log takes every write of a debate twice without a duplicate: a durable step may run again."""

from __future__ import annotations

from orchestrator.models import Outcome, Turn, Verdict
from tests.debate_harness import make_spec
from tests.log_backends import LogBackend


async def test_every_debate_write_is_idempotent(log_backend: LogBackend) -> None:
    spec = make_spec("challenge")
    turn = Turn(debate_id=spec.id, round=1, seat="A", role="proposer", kind="opening", model="openai:model-a",
                text="first run", started_at=1.0)
    verdict = Verdict(winner="A", reasoning="r", recommendation="do it")
    async with log_backend.open() as store:
        for attempt in range(2):
            await store.create_debate(spec, at=10.0 + attempt)
            first_id = await store.add_turn(turn)
            again_id = await store.add_turn(turn.model_copy(update={"text": "run again after a restart"}))
            assert again_id == first_id
            await store.add_notice(spec.id, "warning", "Round 2 is incomplete.", at=20.0 + attempt)
            await store.add_notice(spec.id, "info", "Round 2 is incomplete.", at=21.0)  # another level: another
            await store.set_verdict(spec.id, verdict, at=30.0 + attempt)
            await store.finish_debate(spec.id, Outcome(status="completed", rounds_completed=1), at=40.0 + attempt)
        record = await store.get_debate(spec.id)

    assert record is not None and record.status == "completed"
    assert [(t.seat, t.text) for t in record.turns] == [("A", "run again after a restart")]
    assert sorted((n.level, n.text) for n in record.notices) == [("info", "Round 2 is incomplete."),
                                                                 ("warning", "Round 2 is incomplete.")]
    counts = [log_backend.sql(f"select count(*) from {t} where debate_id = ?", [spec.id])[0][0]
              for t in ("seats", "turns", "notices", "verdicts")]
    assert counts == [2, 1, 2, 1]
    assert log_backend.turn_text_matches("restart") == 1  # the updated row's text is what search finds
    assert log_backend.turn_text_matches("first") == 0


async def test_a_stopped_debate_stays_stopped_whatever_finishes_after(log_backend: LogBackend) -> None:
    spec = make_spec("challenge")
    async with log_backend.open() as store:
        await store.create_debate(spec)
        await store.finish_debate(spec.id, Outcome(status="cancelled", error="Stopped on request."))
        await store.finish_debate(spec.id, Outcome(status="completed", rounds_completed=2))  # a late step
        record = await store.get_debate(spec.id)
    assert record is not None and (record.status, record.error) == ("cancelled", "Stopped on request.")

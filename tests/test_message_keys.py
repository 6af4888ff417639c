"""One scheme of keys: a thread's message key is the key of the event it shows plus its part number, and the
stored shapes stay what earlier versions wrote in `messages` rows (a resumed thread finds them)."""

from __future__ import annotations

from bots.thread.keys import (
    VERDICT,
    interjection_key,
    message_key,
    notice_key,
    round_key,
    turn_key,
    verdict_key,
)
from orchestrator.events import (
    Interjected,
    Notice,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
    VerdictReached,
)
from orchestrator.models import Interjection, Turn, Verdict
from tests.debate_harness import make_spec
from tests.log_backends import LogBackend

DEBATE = "d1"
RETRY = "Debater A's round 1 answer was not in the required JSON format; asking once more."


def _turn(round_: int, seat: str, kind: str) -> Turn:
    return Turn(debate_id=DEBATE, round=round_, seat=seat, role="debater", model="openai:model-a", kind=kind,
                text="x")


def _verdict() -> Verdict:
    return Verdict(winner="A", recommendation="Do it.")


def test_each_message_key_is_its_event_key_and_part() -> None:
    delta = TextDelta(debate_id=DEBATE, round=2, seat="A", kind="rebuttal", delta="x", take=1)
    started = TurnStarted(debate_id=DEBATE, round=2, seat="A", role="debater", kind="rebuttal", model="m", take=1)
    ended = TurnCompleted(debate_id=DEBATE, turn=_turn(2, "A", "rebuttal"), take=1)
    for part in (0, 3):
        assert turn_key(2, "A", "rebuttal", part, take=1) == message_key(delta.key, part)
        assert started.key == f"{delta.key}:start" and ended.key == f"{delta.key}:end"
        notice = Notice(debate_id=DEBATE, level="warning", text=RETRY)
        assert notice_key("warning", RETRY, part) == message_key(notice.key, part)
        note = Interjected(debate_id=DEBATE, interjection=Interjection(id="n7", debate_id=DEBATE, author="Dana",
                                                                       text="t", round=2))
        assert interjection_key("n7", part) == message_key(note.key, part)
    assert f"{round_key(2)}:start" == RoundStarted(debate_id=DEBATE, round=2, total=3).key
    assert f"{round_key(2)}:end" == RoundCompleted(debate_id=DEBATE, round=2, total=3).key
    assert verdict_key(1) == VERDICT == VerdictReached(debate_id=DEBATE, verdict=_verdict()).key
    assert verdict_key(3) == VerdictReached(debate_id=DEBATE, verdict=_verdict(), number=3).key


def test_the_stored_key_shapes_are_the_ones_earlier_versions_wrote() -> None:
    assert turn_key(1, "A", "opening", 0) == "turn:1:A:opening:0"
    assert turn_key(2, "B", "rebuttal", 1, take=1) == "turn:2:B:rebuttal:t1:1"
    assert notice_key("warning", RETRY, 0) == "notice:716b62e28f9a:0"  # sha1(level + text), 12 hex digits
    assert interjection_key("n7", 2) == "interjection:n7:2"
    assert (round_key(3), verdict_key(), verdict_key(2)) == ("round:3", "verdict", "verdict:2")


async def test_a_row_an_earlier_version_wrote_is_found_under_the_derived_key(log_backend: LogBackend) -> None:
    spec = make_spec("stances")
    async with log_backend.open() as log:
        await log.create_debate(spec)
        await log.set_message(spec.id, "notice:716b62e28f9a:0", "slack", "C1", "1700000000.000100", final=True)
        await log.set_message(spec.id, "turn:2:B:rebuttal:t1:1", "slack", "C1", "1700000000.000200", final=True)
        assert await log.get_message(spec.id, notice_key("warning", RETRY, 0)) == "1700000000.000100"
        assert await log.get_message(spec.id, turn_key(2, "B", "rebuttal", 1, take=1)) == "1700000000.000200"

"""`Recency`: keys in the order they last happened, forgotten oldest first."""

from __future__ import annotations

from bots.thread.recency import Recency


def test_a_key_noted_again_moves_behind_the_others_and_forgetting_stops_at_the_first_young_one() -> None:
    times = Recency()
    for at, key in enumerate("abcd"):
        times.note(key, float(at))
    times.note("a", 10.0)  # a changed again: now the youngest
    times.forget_before(2.5)
    assert len(times) == 2
    assert (times.get("a"), times.get("d"), times.get("b"), times.get("c")) == (10.0, 3.0, None, None)
    assert times.get("b", 7.0) == 7.0
    times.forget_before(3.0)  # nothing older than the horizon: nothing forgotten
    assert len(times) == 2
    times.forget_before(100.0)
    assert len(times) == 0

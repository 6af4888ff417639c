"""bench.pacing's floor: the earliest each first text can show at a channel's write limit, in the order the
models made them, around the posts the channel carried anyway (a debate's root, which its text follows)."""

from __future__ import annotations

import pytest

from bench.pacing_trace import floor


def test_first_texts_alone_go_one_window_apart_in_the_order_made() -> None:
    assert floor([0.0, 0.0, 0.1], 1, 1.0) == [0.0, 1.0, pytest.approx(1.9)]


def test_first_texts_go_around_the_writes_the_channel_carried_anyway() -> None:
    # a root went at -0.5 (the first text waits until 0.5) and another at 1.6 (the second cannot go at 1.5)
    assert floor([0.0, 0.0, 0.1], 1, 1.0, occupied=[1.6, -0.5]) == [0.5, pytest.approx(2.6), pytest.approx(3.5)]


def test_a_gap_between_carried_writes_is_used_when_it_is_a_window_wide() -> None:
    assert floor([0.0], 1, 1.0, occupied=[-0.2, 2.0]) == [pytest.approx(0.8)]
    assert floor([0.0], 1, 1.0, occupied=[-0.2, 1.5]) == [pytest.approx(2.5)]


def test_several_writes_per_window() -> None:
    assert floor([0.0] * 6 + [0.1], 5, 5.0) == [0.0] * 5 + [5.0, pytest.approx(4.9)]
    with pytest.raises(ValueError):
        floor([0.0], 5, 5.0, occupied=[1.0])

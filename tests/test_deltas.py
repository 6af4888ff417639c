"""DeltaBatcher: the first delta at once, then batches per interval; nothing is lost or reordered.
(Holding back what could be a secret is DebateRun.emit's job: tests/test_text_safety.py.)"""

from __future__ import annotations

from orchestrator.debate.deltas import DeltaBatcher, TextPace


def collector() -> tuple[list[str], object]:
    sent: list[str] = []

    async def emit(text: str) -> None:
        sent.append(text)

    return sent, emit


async def test_first_delta_goes_at_once_then_batches_and_flush_keeps_the_rest() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, pace=TextPace(interval=3600))  # nothing is due again within the test
    await batcher.add("Hel")
    assert sent == ["Hel"]
    for piece in ("lo", " big", " wide", " world"):
        await batcher.add(piece)
    assert sent == ["Hel"]
    await batcher.flush()
    assert sent == ["Hel", "lo big wide world"]
    await batcher.flush()
    assert len(sent) == 2, "an empty flush emits nothing"


async def test_every_delta_goes_when_the_interval_is_zero() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, pace=TextPace(interval=0))
    for piece in ("a", "b ", "c"):
        await batcher.add(piece)
    await batcher.flush()
    assert sent == ["a", "b ", "c"]


async def test_a_large_buffer_is_emitted_without_waiting_for_the_interval() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, pace=TextPace(interval=3600), max_chars=10)
    await batcher.add("a ")
    await batcher.add("01234")
    assert sent == ["a "]
    await batcher.add("56789")
    assert sent == ["a ", "0123456789"]


async def test_a_durable_streams_first_batch_waits_for_a_phrase_then_batches_per_interval() -> None:
    """A durable stream's first write is what a thread first shows: a phrase, not the first token alone."""
    sent, emit = collector()
    batcher = DeltaBatcher(emit, pace=TextPace(interval=3600, tail=False, first_words=3, first_wait=3600))
    for piece in ("One", " two", " three"):
        await batcher.add(piece)
    assert sent == []  # "three" may still be growing
    await batcher.add(" fo")
    assert sent == ["One two three fo"]
    await batcher.add("ur five")
    assert sent == ["One two three fo"]  # the next batch waits for the interval


async def test_a_slow_first_phrase_goes_when_its_wait_is_over() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, pace=TextPace(interval=3600, first_words=50, first_wait=0.0))
    await batcher.add("Hm")
    assert sent == ["Hm"]

"""DeltaBatcher: the first text goes out at once, later deltas coalesce, nothing is lost."""

from __future__ import annotations

from orchestrator.deltas import DeltaBatcher


async def test_first_delta_is_immediate_then_batched_and_flush_keeps_the_rest() -> None:
    sent: list[str] = []

    async def emit(text: str) -> None:
        sent.append(text)

    batcher = DeltaBatcher(emit, interval=3600)  # nothing is due again within the test
    await batcher.add("Hello")
    assert sent == ["Hello"]
    for word in (" big", " wide", " world"):
        await batcher.add(word)
    assert sent == ["Hello"]
    await batcher.flush()
    assert sent == ["Hello", " big wide world"]
    await batcher.flush()
    assert len(sent) == 2, "an empty flush emits nothing"


async def test_a_large_buffer_is_emitted_without_waiting_for_the_interval() -> None:
    sent: list[str] = []

    async def emit(text: str) -> None:
        sent.append(text)

    batcher = DeltaBatcher(emit, interval=3600, max_chars=10)
    await batcher.add("a")
    await batcher.add("0123456789")
    assert sent == ["a", "0123456789"]

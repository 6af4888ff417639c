"""DeltaBatcher: whole words only, batched, redacted; nothing is lost and no secret slips through."""

from __future__ import annotations

from orchestrator.debate.deltas import DeltaBatcher
from orchestrator.safety import make_redactor


def collector() -> tuple[list[str], object]:
    sent: list[str] = []

    async def emit(text: str) -> None:
        sent.append(text)

    return sent, emit


async def test_first_words_go_at_once_then_batches_and_flush_keeps_the_rest() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, interval=3600)  # nothing is due again within the test
    await batcher.add("Hello")
    assert sent == [], "a partial word waits"
    await batcher.add(" big")
    assert sent == ["Hello "]
    for word in (" wide", " world"):
        await batcher.add(word)
    assert sent == ["Hello "]
    await batcher.flush()
    assert "".join(sent) == "Hello big wide world"
    await batcher.flush()
    assert len(sent) == 2, "an empty flush emits nothing"


async def test_a_large_buffer_is_emitted_without_waiting_for_the_interval() -> None:
    sent, emit = collector()
    batcher = DeltaBatcher(emit, interval=3600, max_chars=10)
    await batcher.add("a ")
    await batcher.add("0123456789")
    assert sent == ["a ", "0123456789"]


async def test_a_secret_split_across_deltas_never_reaches_a_sink() -> None:
    secret = "sk-live-PRIVATE-0123456789abcdef"
    sent, emit = collector()
    batcher = DeltaBatcher(emit, interval=0, redact=make_redactor([secret]))
    for piece in ("The key is ", secret[:9], secret[9:20], secret[20:], " — do not share."):
        await batcher.add(piece)
    await batcher.flush()
    shown = "".join(sent)
    assert secret not in shown and secret[:9] not in shown
    assert shown == "The key is [redacted] — do not share."

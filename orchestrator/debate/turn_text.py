"""A model call's text as it streams: the first token's time noted, and the text scrubbed and sent as
TextDelta events (orchestrator/debate/run.py makes one per debater call)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from orchestrator.events import EventBus, TextDelta
from orchestrator.safety import Redactor, StreamRedactor


def noting_first(on_delta: Callable[[str], Any], clock: float, first: list[float]) -> Callable[[str], Any]:
    """`on_delta`, noting in `first` the seconds from `clock` to the first text that arrives."""

    def noted(text: str) -> Any:
        if not first and text:
            first.append(time.perf_counter() - clock)
        return on_delta(text)

    return noted


class TurnText:
    """One call's streamed text: scrubbed as it arrives (holding back what could be a secret), sent as
    TextDelta events tagged with this attempt and the characters of it already sent (`offset`)."""

    def __init__(self, bus: EventBus, redact: Redactor, debate_id: str, round: int, seat: str, kind: str) -> None:
        self._bus = bus
        self._where = dict(debate_id=debate_id, round=round, seat=seat, kind=kind)
        self._attempt = uuid.uuid4().hex[:12]  # drawn inside the step: a call run again is a new attempt
        self._offset = 0
        self._redactor: StreamRedactor = redact.stream()

    async def send(self, text: str) -> None:
        await self._emit(self._redactor.feed(text))

    async def finish(self) -> None:
        await self._emit(self._redactor.finish())

    async def _emit(self, shown: str) -> None:
        if not shown:
            return
        event = TextDelta(**self._where, delta=shown, attempt=self._attempt, offset=self._offset)  # type: ignore[arg-type]
        self._offset += len(shown)
        await self._bus.emit(event)

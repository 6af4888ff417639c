"""The size cap on one model call's text: a provider that ignores max_tokens cannot flood a thread,
the log or the next prompt.

The cap is the call's token budget (its effort's, or its own `max_tokens`) at six characters a token:
English runs about four to five, so an answer that honours its budget never reaches it. Past the cap
the stream is abandoned (closing the connection stops the generation) and the text ends with a visible
note; that cut text is what is stored, shown and given to later prompts. A turn the model itself ended at
its token limit (finish_reason `length`) gets a note saying so, the same way.
"""

from __future__ import annotations

import math

from orchestrator.providers import budget
from orchestrator.providers.base import Completion, DeltaCallback, ModelCall

CHARS_PER_TOKEN = 6


def call_char_limit(provider: str, call: ModelCall) -> int:
    """The most characters one call to `provider` may return."""
    return (call.max_tokens or budget(provider, call.effort)) * CHARS_PER_TOKEN


def cut_note(limit: int) -> str:
    return f"\n\n[cut: this turn passed the {limit:,}-character limit]"


def limit_note(tokens: int) -> str:
    return f"\n\n[cut: the model reached its {tokens:,}-token limit for this turn]"


class TextTooLong(Exception):
    """Raised from the delta callback to end a stream that has passed its cap."""


class SizeCap:
    """Wraps a delta callback: forwards text up to `limit` characters, then stops the stream."""

    def __init__(self, limit: int, on_delta: DeltaCallback | None = None) -> None:
        self.limit = limit
        self._on_delta = on_delta
        self._parts: list[str] = []
        self._size = 0

    async def add(self, delta: str) -> None:
        room = self.limit - self._size
        if len(delta) > room:
            await self._forward(delta[:room])
            raise TextTooLong
        await self._forward(delta)

    async def _forward(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._size += len(text)
        if self._on_delta is not None:
            await self._on_delta(text)

    async def cut(self, call: ModelCall, duration_ms: int) -> Completion:
        """The Completion of a stream stopped at the cap: the text so far and the note (streamed too).
        Usage is estimated, as for any stream that reports none (about four characters a token)."""
        note = cut_note(self.limit)
        if self._on_delta is not None:
            await self._on_delta(note)
        text = "".join(self._parts)
        prompt = sum(len(m.content) for m in call.messages)
        return Completion(text=text + note, input_tokens=math.ceil(prompt / 4),
                          output_tokens=math.ceil(len(text) / 4), duration_ms=duration_ms, tokens_estimated=True)

    def spent(self, call: ModelCall, duration_ms: int, reported: tuple[int, int] = (0, 0)) -> Completion | None:
        """What a call that failed had used, to be counted as any call is (a provider charges for what it
        streamed): the usage the server `reported` before failing, else an estimate from the prompt and
        the text streamed so far (marked so); None when it streamed nothing and reported nothing."""
        text = "".join(self._parts)
        if not text and not any(reported):
            return None
        prompt = sum(len(m.content) for m in call.messages)
        input_tokens = reported[0] or math.ceil(prompt / 4)
        output_tokens = reported[1] or math.ceil(len(text) / 4)
        return Completion(text="", input_tokens=input_tokens, output_tokens=output_tokens, duration_ms=duration_ms,
                          tokens_estimated=not (reported[0] and reported[1]))

    async def reached_limit(self, call: ModelCall, completion: Completion) -> Completion:
        """A turn the model stopped at its output-token limit, marked as cut (the note streamed too)."""
        note = limit_note(completion.output_tokens or call.max_tokens or 0)
        if self._on_delta is not None:
            await self._on_delta(note)
        return completion.model_copy(update={"text": completion.text + note})

    def check(self, completion: Completion) -> Completion:
        """A finished completion cut to the cap, for a backend that returned more than it streamed."""
        if len(completion.text) <= self.limit:
            return completion
        return completion.model_copy(update={"text": completion.text[: self.limit] + cut_note(self.limit)})

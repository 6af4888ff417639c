"""A model call that starts repeating itself is stopped while it streams: a degenerate loop (the same
line, sentence or block of words over and over) would otherwise run to the call's time limit, cost the
user every token of it, and fill the thread.

The test is on words, so line breaks and spacing do not hide a loop: the text's last words are a loop
when one block of `PERIODS` words is repeated back to back at least `repeats_needed(period)` times, and
the repeated stretch is long enough (`MIN_LOOP_WORDS`) that no honest answer writes it (an emphatic
"no, no, no", a short list of alike items, a refrain quoted a few times, is far shorter). Two sentences
of about 30 words, written 30 times over, are stopped after about ten copies. What the call wrote up to the end of the
block's first copy is kept; a note says what was dropped, in the text that is stored, shown and given to
later prompts, as the size cap's note does (limits.py).
"""

from __future__ import annotations

import math
import re

from orchestrator.providers.base import Completion, DeltaCallback, ModelCall

PERIODS = range(3, 201)  # the sizes of a repeated block, in words
MIN_LOOP_WORDS = 300  # the least a run of copies covers before it counts as a loop
MIN_REPEATS = 4  # however long the block, this many copies back to back
CHECK_EVERY = 400  # characters streamed between two checks
TAIL_CHARS = 8_000  # the end of the text a check reads: past the longest loop it must find (800 words)
_WORD = re.compile(r"\S+")


def repeats_needed(period: int) -> int:
    """How many back-to-back copies of a `period`-word block make a loop."""
    return max(MIN_REPEATS, math.ceil(MIN_LOOP_WORDS / period))


def repeat_note(dropped: int) -> str:
    return f"\n\n[cut: this turn began repeating itself; {dropped:,} repeated characters were dropped]"


def loop_start(text: str) -> int | None:
    """Where the repetition ending `text` begins (the character after the repeated block's first copy),
    or None when its last words are no loop."""
    tail = text[-TAIL_CHARS:]
    words = tail.split()
    count = len(words)
    for period in PERIODS:
        if period * repeats_needed(period) > count:
            break
        if words[-1] != words[-1 - period]:  # most periods fail here, at one comparison
            continue
        first = count - period  # the repeating stretch: words[first:] is periodic; grow it backwards
        while first > 0 and words[first - 1] == words[first - 1 + period]:
            first -= 1
        if count - first >= period * repeats_needed(period):
            ends = [m.end() for m in _WORD.finditer(tail)]  # the same words as split(), with their places
            return len(text) - len(tail) + ends[first + period - 1] if len(ends) == count else None
    return None


class Repeating(Exception):
    """Raised from the delta callback to end a stream that has started repeating itself."""


class RepeatGuard:
    """Wraps a delta callback: forwards the text, and stops the stream (raising `Repeating`) once its
    end is a loop; `cut` then gives the Completion of what came before the loop."""

    def __init__(self, on_delta: DeltaCallback | None = None) -> None:
        self._on_delta = on_delta
        self._parts: list[str] = []
        self._unchecked = 0
        self.kept: str | None = None  # the text before the loop, once one was found
        self.streamed = 0  # characters received

    async def add(self, delta: str) -> None:
        if not delta:
            return
        self._parts.append(delta)
        self.streamed += len(delta)
        self._unchecked += len(delta)
        if self._on_delta is not None:
            await self._on_delta(delta)
        if self._unchecked >= CHECK_EVERY:
            self._unchecked = 0
            text = "".join(self._parts)
            self._parts = [text]
            start = loop_start(text)
            if start is not None:
                self.kept = text[:start].rstrip()
                raise Repeating

    async def cut(self, call: ModelCall, duration_ms: int) -> Completion:
        """The Completion of a stream stopped at a loop: the text before it and the note (streamed too).
        Usage is estimated on everything streamed, as for any stream that reports none."""
        assert self.kept is not None
        text = "".join(self._parts)
        note = repeat_note(len(text) - len(self.kept))
        if self._on_delta is not None:
            await self._on_delta(note)
        prompt = sum(len(m.content) for m in call.messages)
        return Completion(text=self.kept + note, input_tokens=math.ceil(prompt / 4),
                          output_tokens=math.ceil(len(text) / 4), duration_ms=duration_ms)


def without_loop(completion: Completion) -> Completion:
    """A finished completion whose text ends in a loop (a backend that did not stream), cut before it."""
    start = loop_start(completion.text)
    if start is None:
        return completion
    kept = completion.text[:start].rstrip()
    return completion.model_copy(update={"text": kept + repeat_note(len(completion.text) - len(kept))})

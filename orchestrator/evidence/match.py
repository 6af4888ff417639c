"""Where a quote is in a text: both normalised (Unicode forms, case, whitespace, quote and dash characters),
then an exact search, then rapidfuzz's best partial alignment.

A quote is "found" when the alignment scores at least MATCH_THRESHOLD (0–100): high enough that a changed
word in a short quote fails, low enough that a dropped comma or a "the" → "a" passes. A quote of fewer
than FUZZY_MIN_WORDS words must be there exactly (normalised): a few characters match too much by chance.
Numbers are never fuzzy: a near match whose numbers differ from the quote's ("90 weeks" for "40 weeks") is
not found, however close the words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz import fuzz

MATCH_THRESHOLD = 90.0
FUZZY_MIN_WORDS = 4
_QUOTES = str.maketrans({c: '"' for c in "“”„‟«»″"} | {c: "'" for c in "‘’‚‛‹›′`´"}
                        | {c: "-" for c in "‐‑‒–—―−"} | {"…": "..."})
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def normalised(text: str) -> str:
    """`text` as matching compares it: NFKC, lower case, one kind of quote and dash, single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class Found:
    """A quote's best place in a text: its score (100: exact) and where it starts in the original text."""

    score: float
    start: int

    @property
    def found(self) -> bool:
        return self.score >= MATCH_THRESHOLD


@dataclass(frozen=True)
class Haystack:
    """A text made ready to search once (normalised, each character's place in the original), for many quotes."""

    text: str
    offsets: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Haystack:
        normal, offsets = _normalised_with_offsets(text)
        return cls(normal, tuple(offsets))


def find_quote(quote: str, text: str | Haystack) -> Found | None:
    """Where `quote` best matches `text` (None: an empty quote or text). `Found.found` says if it is there."""
    wanted = normalised(quote).strip(" .,;:'\"")
    ready = text if isinstance(text, Haystack) else Haystack.of(text)
    if not wanted or not ready.text:
        return None
    haystack, offsets = ready.text, ready.offsets
    at = haystack.find(wanted)
    if at >= 0:
        return Found(100.0, offsets[at])
    if len(wanted.split()) < FUZZY_MIN_WORDS:
        return Found(0.0, 0)
    aligned = fuzz.partial_ratio_alignment(wanted, haystack)
    if aligned is None:
        return Found(0.0, 0)
    start = min(aligned.dest_start, len(offsets) - 1) if offsets else 0
    score = aligned.score
    if _NUMBER.findall(wanted) != _NUMBER.findall(haystack[aligned.dest_start:aligned.dest_end]):
        score = min(score, MATCH_THRESHOLD - 1)  # the words are near, the figures are not
    return Found(score, offsets[start] if offsets else 0)


def _normalised_with_offsets(text: str) -> tuple[str, list[int]]:
    """`normalised(text)`, with each of its characters' position in `text` (for the anchor it was found in)."""
    out: list[str] = []
    offsets: list[int] = []
    space = True  # drops leading whitespace, and collapses runs
    for index, char in enumerate(text):
        piece = unicodedata.normalize("NFKC", char).translate(_QUOTES).lower()
        for c in piece:
            if c.isspace():
                if space:
                    continue
                space = True
                c = " "
            else:
                space = False
            out.append(c)
            offsets.append(index)
    while out and out[-1] == " ":
        out.pop()
        offsets.pop()
    return "".join(out), offsets

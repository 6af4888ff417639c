"""The citations a turn makes, in the forms debaters are asked for (orchestrator/prompts/brief.txt):
`[S2 §3 "exact words"]` (the anchor optional: `§3`, `p.14`, `p14`, `sec 3`) and `[https://… "exact words"]`.

Curly quotes are read as straight ones. Anything else in square brackets is not a citation, and whatever
a turn writes after one (a "[✓ verified]" of its own) is only text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUOTE_WORDS = 40  # what debaters are asked for; a longer quote is still checked
MAX_QUOTE_CHARS = 600  # past this a bracket is not read as a citation (the quote is a whole passage)
MAX_CITATIONS = 30  # per turn: a turn that cites more has the rest left unchecked

_QUOTE = r"[\"“”„]([^\"“”„\]]{1," + str(MAX_QUOTE_CHARS) + r"})[\"“”„]"
_ANCHOR = r"(?:§\s?\d+|p\.?\s?\d+|page\s?\d+|sec(?:tion)?\.?\s?\d+|s\d+)"
BRIEF_CITATION = re.compile(r"\[\s*(S\d{1,3})(?:\s*,?\s+(" + _ANCHOR + r"))?\s*,?\s*" + _QUOTE + r"\s*\]",
                            re.IGNORECASE)
WEB_CITATION = re.compile(r"\[\s*<?(https?://[^\s\"“”<>\]]+)>?\s*,?\s*" + _QUOTE + r"\s*\]", re.IGNORECASE)


@dataclass(frozen=True)
class Citation:
    """One citation: `source` is a brief label (`S2`) or a URL; `anchor` as cited (`§3`), or empty."""

    source: str
    quote: str
    anchor: str = ""

    @property
    def is_url(self) -> bool:
        return self.source.lower().startswith(("http://", "https://"))

    @property
    def cited_as(self) -> str:
        return f"{self.source} {self.anchor}" if self.anchor else self.source


def citation_spans(text: str) -> list[tuple[int, int, Citation]]:
    """Every citation in `text` with where it starts and ends, in the order written (repeats included)."""
    found: list[tuple[int, int, Citation]] = []
    for match in BRIEF_CITATION.finditer(text):
        found.append((match.start(), match.end(),
                      Citation(source=match.group(1).upper(), anchor=(match.group(2) or "").strip(),
                               quote=" ".join(match.group(3).split()))))
    for match in WEB_CITATION.finditer(text):
        found.append((match.start(), match.end(), Citation(source=match.group(1).rstrip(".,;"),
                                                           quote=" ".join(match.group(2).split()))))
    return sorted((f for f in found if f[2].quote), key=lambda f: f[0])


def citations(text: str) -> list[Citation]:
    """Every citation in `text`, in the order written, each (source, anchor, quote) once; at most MAX_CITATIONS."""
    seen: set[Citation] = set()
    ordered: list[Citation] = []
    for _, _, citation in citation_spans(text):
        if citation not in seen:
            seen.add(citation)
            ordered.append(citation)
    return ordered[:MAX_CITATIONS]

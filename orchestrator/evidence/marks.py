"""A turn's citations marked with what checking them found, for a judge's transcript.

The mark is a tag line fragment we write after the citation, `<check status="not found" detail="…"/>`,
inside the turn's quoted block (orchestrator/debate/quoting.py): a debater's own `<` is escaped there, so
no turn can write a mark of its own, and a "[✓ verified]" it writes stays its words.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.brief.fetch import shown_url
from orchestrator.evidence.citations import citation_spans
from orchestrator.models import EvidenceCheck

STATUS_WORDS = {"verified": "verified", "not_found": "not found", "unreachable": "unreachable",
                "not_checked": "not checked"}
MAX_DETAIL_CHARS = 80


def check_marks(text: str, checks: Sequence[EvidenceCheck]) -> list[tuple[int, str]]:
    """(position, mark) for each citation in `text` that one of `checks` (the same turn's) checked."""
    by_key = {(c.source, c.anchor, c.quote): c for c in checks}
    marks: list[tuple[int, str]] = []
    for _, end, citation in citation_spans(text):
        source = shown_url(citation.source) if citation.is_url else citation.source
        check = by_key.get((source, citation.anchor, citation.quote))
        if check is not None:
            marks.append((end, mark(check)))
    return marks


def mark(check: EvidenceCheck) -> str:
    """One check as its mark: `<check status="not found" detail="not in S1 (best match 62% &lt; 90%)"/>`."""
    shown = " ".join(check.detail.split())[:MAX_DETAIL_CHARS]
    for old, new in (("&", "&amp;"), ('"', "&quot;"), ("<", "&lt;"), (">", "&gt;")):
        shown = shown.replace(old, new)
    return f'<check status="{STATUS_WORDS[check.status]}"' + (f' detail="{shown}"' if shown else "") + "/>"

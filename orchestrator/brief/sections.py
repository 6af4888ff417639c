"""A source's text cut into citable sections: a PDF by its pages (`p.14`), anything else by its headings
and, where a stretch runs long, by paragraphs (`§1`, `§2`, … in reading order).

Sections are what a long brief is trimmed by (orchestrator/brief/select.py) and what a citation names,
so they are made once, when the source is read, and stored as spans of its text.
"""

from __future__ import annotations

import itertools
import re

from orchestrator.brief.models import Section

MAX_SECTION_CHARS = 3000  # a section past this is cut at paragraph breaks (a long page stays whole)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def by_pages(pages: list[str]) -> tuple[str, tuple[Section, ...]]:
    """The pages' texts joined by blank lines, and one section per page (`p.1`, …; empty pages skipped)."""
    text = ""
    sections: list[Section] = []
    for number, page in enumerate(pages, start=1):
        page = page.strip()
        if not page:
            continue
        if text:
            text += "\n\n"
        sections.append(Section(anchor=f"p.{number}", start=len(text), end=len(text) + len(page)))
        text += page
    return text, tuple(sections)


def by_headings(text: str) -> tuple[Section, ...]:
    """Sections of `text` at its Markdown headings, long ones cut at paragraph breaks, numbered §1, §2, …"""
    starts = [m.start() for m in _HEADING.finditer(text)]
    bounds = [*sorted({0, *starts}), len(text)]
    spans: list[tuple[int, int, str]] = []
    for start, end in itertools.pairwise(bounds):
        heading_match = _HEADING.match(text, start)
        heading = heading_match.group(2).strip() if heading_match else ""
        for piece_start, piece_end in _paragraph_pieces(text, start, end):
            spans.append((piece_start, piece_end, heading))
    sections = []
    for start, end, heading in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            sections.append(Section(anchor=f"§{len(sections) + 1}", start=start, end=end, heading=heading[:120]))
    return tuple(sections)


def _paragraph_pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """`text[start:end]` as pieces of at most MAX_SECTION_CHARS, cut at paragraph breaks where it can be
    (else at a line break, else hard)."""
    pieces: list[tuple[int, int]] = []
    while end - start > MAX_SECTION_CHARS:
        window = text[start:start + MAX_SECTION_CHARS]
        breaks = [m.end() for m in _PARAGRAPH_BREAK.finditer(window) if m.end() > MAX_SECTION_CHARS // 3]
        cut = breaks[-1] if breaks else (window.rfind("\n") + 1 or MAX_SECTION_CHARS)
        if cut <= MAX_SECTION_CHARS // 3:
            cut = MAX_SECTION_CHARS
        pieces.append((start, start + cut))
        start += cut
    pieces.append((start, end))
    return pieces


def cut_to(text: str, sections: tuple[Section, ...], chars: int) -> tuple[str, tuple[Section, ...]]:
    """The text of the sections that fit in `chars` (whole sections, in order), and those sections."""
    kept = tuple(s for s in sections if s.end <= chars)
    end = kept[-1].end if kept else 0
    return text[:end], kept

"""Which sections of a brief one prompt carries: all of them when they fit its budget, else the most relevant.

Relevance is full-text ranking (SQLite FTS5's bm25, in an in-memory database: the same ranking the log's
search uses, no model), of every section against what the round is about (the topic, the audience's notes
and the latest turns). The best sections are taken until the budget is spent and then put back in reading
order. The same inputs always choose the same sections, so a resumed debate's prompts are the ones it had.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from orchestrator.brief.models import Brief, Section, Source

PROMPT_CHARS = 24_000  # the brief's share of one prompt, in characters (about 6,000 tokens)
MAX_QUERY_WORDS = 200
_WORD = re.compile(r"\w{3,}", re.UNICODE)


@dataclass(frozen=True)
class Shown:
    """A section of the brief as one prompt shows it."""

    source: Source
    section: Section

    @property
    def cite(self) -> str:
        return f"{self.source.label} {self.section.anchor}"


@dataclass(frozen=True)
class Selection:
    """The sections one prompt shows, in reading order, and how many the brief has in all."""

    shown: tuple[Shown, ...]
    total: int

    @property
    def complete(self) -> bool:
        return len(self.shown) == self.total

    @property
    def chars(self) -> int:
        return sum(s.section.end - s.section.start for s in self.shown)


def all_sections(brief: Brief) -> list[Shown]:
    return [Shown(source, section) for source in brief.sources for section in source.sections]


def select(brief: Brief, about: str, budget: int = PROMPT_CHARS) -> Selection:
    """The sections of `brief` a prompt about `about` shows within `budget` characters."""
    every = all_sections(brief)
    if sum(s.section.end - s.section.start for s in every) <= budget:
        return Selection(tuple(every), len(every))
    order = _ranked(every, about)
    chosen: set[int] = set()
    used = 0
    for index in order:
        size = every[index].section.end - every[index].section.start
        if used + size <= budget:
            chosen.add(index)
            used += size
    return Selection(tuple(every[i] for i in sorted(chosen)), len(every))


def _ranked(every: list[Shown], about: str) -> list[int]:
    """Indexes of `every`, best match for `about` first (bm25), then the rest in reading order."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(about)))[:MAX_QUERY_WORDS]
    if not words:
        return list(range(len(every)))
    db = sqlite3.connect(":memory:")
    try:
        db.execute("create virtual table s using fts5(body, tokenize='unicode61 remove_diacritics 2')")
        db.executemany("insert into s (rowid, body) values (?, ?)",
                       [(i, s.source.section_text(s.section)) for i, s in enumerate(every)])
        query = " OR ".join(f'"{w}"' for w in words)
        ranked = [row[0] for row in db.execute("select rowid from s where s match ? order by bm25(s), rowid",
                                               (query,))]
    finally:
        db.close()
    rest = [i for i in range(len(every)) if i not in set(ranked)]
    return ranked + rest

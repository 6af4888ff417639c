"""What a brief is: numbered sources, each its text and the anchors that point into it.

A source's `text` is the truth: extracted once, secrets redacted, stored with the debate and quoted to
every seat. Its `sections` are spans of that text, each with the anchor a debater cites it by (`p.14`
for a PDF's page, `§3` for a heading's section or a stretch of plain text), so `[S2 p.14]` always names
the same characters: what a later check of a quote reads (`Source.section`, `Brief.source`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SourceKind = Literal["pdf", "html", "markdown", "text", "message", "thread"]
KINDS: tuple[str, ...] = ("pdf", "html", "markdown", "text", "message", "thread")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Section(Frozen):
    """One citable span of a source's text: `text[start:end]`, cited as `anchor` (`p.14`, `§3`)."""

    anchor: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    heading: str = ""  # the heading it starts under, when the source has headings


class Source(Frozen):
    """One document, page, file, message or thread of a brief, as every seat reads it (`S{number}`)."""

    number: int = Field(ge=1)
    title: str
    kind: SourceKind
    origin: str  # the file's name, the URL, or where in chat it came from (`slack:C123/1700000000.000100`)
    url: str | None = None  # the link a reader may follow (a fetched URL, a chat permalink), never a local path
    size: int = Field(ge=0)  # bytes as read (the file, the page, the message's text)
    sha256: str  # of those bytes
    text: str
    sections: tuple[Section, ...] = ()
    note: str = ""  # what was left out while reading (pages past the limit, text past the brief's)

    @property
    def label(self) -> str:
        return f"S{self.number}"

    def section(self, anchor: str) -> Section | None:
        """The section cited as `anchor` (`p.14`, `§3`; `p14` and `§ 3` read the same), or None."""
        wanted = normal_anchor(anchor)
        return next((s for s in self.sections if s.anchor == wanted), None)

    def section_text(self, section: Section) -> str:
        return self.text[section.start:section.end]


class Brief(Frozen):
    """A debate's sources in the order given; `notes` says, one line each, what could not be read."""

    sources: tuple[Source, ...] = ()
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.sources)

    @property
    def chars(self) -> int:
        return sum(len(s.text) for s in self.sources)

    def source(self, label: str) -> Source | None:
        """The source cited as `label` (`S2`, `s2`), or None."""
        label = label.strip().upper()
        return next((s for s in self.sources if s.label == label), None)

    def with_sources(self, added: Brief) -> Brief:
        """This brief and `added`'s sources after it, renumbered to follow on (a `continue` that adds)."""
        start = len(self.sources)
        more = tuple(s.model_copy(update={"number": start + i + 1}) for i, s in enumerate(added.sources))
        return Brief(sources=self.sources + more, notes=self.notes + added.notes)


def normal_anchor(anchor: str) -> str:
    """`p14`, `p. 14`, `page 14` → `p.14`; `§ 3`, `s3`, `sec 3` → `§3`."""
    text = anchor.strip().lower().replace(" ", "")
    for prefix in ("page", "p.", "p"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return f"p.{int(text[len(prefix):])}"
    for prefix in ("§", "section", "sec", "s"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return f"§{int(text[len(prefix):])}"
    return anchor.strip()


def size_text(size: int) -> str:
    """Bytes as a reader says them: 812 B, 14 KB, 2.3 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def source_line(source: Source) -> str:
    """One source as every listing shows it: `S1 · Title (pdf, 2.3 MB, 14 sections) · origin`."""
    count = len(source.sections)
    where = source.url or source.origin
    shown_where = f" · {where}" if where and where != source.title else ""
    return (f"{source.label} · {source.title} ({source.kind}, {size_text(source.size)}, {count} "
            f"section{'s' if count != 1 else ''}){shown_where}")

"""Reading a debate's materials into its brief, within the brief's limits.

A `Material` is one thing a user gave: a file (its bytes in hand), a URL (fetched through the one
fetcher, orchestrator/brief/fetch.py), or chat text (a message, a thread). `gather` reads each in order
and numbers the sources it could read S1, S2, …; what it could not read, or what a limit left out,
becomes a one-line note and the rest goes on. The limits, each named in its note: DEBATE_BRIEF_MAX_SOURCES
sources, DEBATE_BRIEF_MAX_CHARS characters of text in all (a source past it is cut at a section
boundary), and 20 MB per file. Text is redacted like user text (each page, or the whole text) before it
is cut into sections, so the anchors fit the text as kept.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from orchestrator.brief.extract import FILE_KINDS, ExtractError, PdfLimits, extract, kind_of
from orchestrator.brief.fetch import Fetcher, FetchError, FetchPolicy, shown_url
from orchestrator.brief.models import Brief, Source, SourceKind
from orchestrator.brief.sections import cut_to
from orchestrator.safety import scrub_user_text

MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_NOTE_CHARS = 200
PDF_LIMITS = PdfLimits()


class BriefInputError(Exception):
    """A source named on the command line that cannot be a source at all (no such file, a kind we do not
    read): bad usage, said in one line before anything starts."""


@dataclass(frozen=True)
class BriefLimits:
    max_sources: int = 5
    max_chars: int = 200_000
    max_file_bytes: int = MAX_FILE_BYTES

    @classmethod
    def from_settings(cls, settings: object) -> BriefLimits:
        return cls(max_sources=getattr(settings, "debate_brief_max_sources", 5),
                   max_chars=getattr(settings, "debate_brief_max_chars", 200_000))


class Material(BaseModel):
    """One thing to read into a brief: bytes in hand (`data`), or a URL to fetch (`fetch_url`)."""

    model_config = ConfigDict(frozen=True)

    origin: str  # what notes and the source call it: a file's name, the URL, where in chat
    name: str = ""  # a file name whose suffix says the kind
    media_type: str | None = None  # or a media type that does
    kind: SourceKind | None = None  # or the kind itself (a chat message or thread)
    title: str = ""
    url: str | None = None  # a link a reader may follow
    data: bytes | None = None
    fetch_url: str | None = None

    @classmethod
    def from_path(cls, path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Material:
        """A local file (the CLI's `--context FILE`), read now; BriefInputError if it cannot be a source."""
        path = Path(path)
        if kind_of(path.name) is None:
            raise BriefInputError(f"--context {path}: not a file kind the brief reads (use {FILE_KINDS} "
                                  "or an http(s) URL)")
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise BriefInputError(f"--context {path}: {size / 2**20:.1f} MB is past the "
                                      f"{max_bytes // 2**20} MB a file may be")
            data = path.read_bytes()
        except OSError as exc:
            raise BriefInputError(f"--context {path}: {exc.strerror or exc}") from None
        return cls(origin=path.name, name=path.name, data=data)

    @classmethod
    def from_url(cls, url: str) -> Material:
        return cls(origin=shown_url(url), name=url, url=url, fetch_url=url)

    @classmethod
    def from_text(cls, text: str, *, kind: SourceKind, origin: str, title: str = "",
                  url: str | None = None) -> Material:
        """Chat text (a message, a thread's replies) as a source."""
        return cls(origin=origin, kind=kind, title=title, url=url, data=text.encode("utf-8"))


def is_url(text: str) -> bool:
    return text.strip().lower().startswith(("http://", "https://"))


def material_for(argument: str) -> Material:
    """`--context`'s argument: a URL (fetched later) or a local file (read now)."""
    return Material.from_url(argument.strip()) if is_url(argument) else Material.from_path(argument)


async def gather(materials: list[Material], *, limits: BriefLimits = BriefLimits(),
                 fetcher: Fetcher | None = None, pdf: PdfLimits = PDF_LIMITS, first_number: int = 1,
                 chars_used: int = 0) -> Brief:
    """The brief `materials` make: each read in order, numbered from `first_number`; notes for the rest.
    `chars_used`: characters an earlier part of the brief holds already (a `continue` that adds)."""
    fetcher = fetcher or Fetcher(FetchPolicy())
    sources: list[Source] = []
    notes: list[str] = []
    chars = chars_used
    for material in materials:
        if first_number - 1 + len(sources) >= limits.max_sources:
            notes.append(_note(f"{material.origin}: not read: a brief holds at most {limits.max_sources} "
                               "sources (DEBATE_BRIEF_MAX_SOURCES)"))
            continue
        room = limits.max_chars - chars
        if room <= 0:
            notes.append(_note(f"{material.origin}: not read: the brief already holds "
                               f"{limits.max_chars:,} characters (DEBATE_BRIEF_MAX_CHARS)"))
            continue
        try:
            source = await _read(material, first_number + len(sources), limits, fetcher, pdf, room)
        except (FetchError, ExtractError) as exc:
            text = str(exc)
            notes.append(_note(text if text.startswith(material.origin) else f"{material.origin}: {text}"))
            continue
        if source.note:
            notes.append(_note(f"{source.label} {source.title}: {source.note}"))
        sources.append(source)
        chars += len(source.text)
    return Brief(sources=tuple(sources), notes=tuple(notes))


async def _read(material: Material, number: int, limits: BriefLimits, fetcher: Fetcher, pdf: PdfLimits,
                room: int) -> Source:
    data, media, charset, url = material.data, material.media_type, None, material.url
    if material.fetch_url is not None:
        fetched = await fetcher.fetch(material.fetch_url)
        data, media, charset, url = fetched.body, fetched.content_type, fetched.charset, material.fetch_url
    assert data is not None  # a Material holds bytes or a URL
    if len(data) > limits.max_file_bytes:
        raise ExtractError(f"{len(data) / 2**20:.1f} MB is past the {limits.max_file_bytes // 2**20} MB a file "
                           "may be")
    kind = material.kind or kind_of(material.name, media)
    if kind is None:
        raise ExtractError(f"not a kind the brief reads ({media or material.name or 'unknown'})")
    read_as: SourceKind = "text" if kind in ("message", "thread") else kind
    extracted = await extract(data, read_as, name=material.name, charset=charset, pdf=pdf, clean=scrub_user_text)
    text, sections, note = extracted.text, extracted.sections, extracted.note
    if len(text) > room:
        text, sections = cut_to(text, sections, room)
        if not sections:
            raise ExtractError(f"not read: {len(extracted.text):,} characters do not fit in what is left of "
                               f"the brief's {limits.max_chars:,} (DEBATE_BRIEF_MAX_CHARS)")
        cut = f"cut to {len(text):,} characters, the room left of the brief's {limits.max_chars:,} " \
              "(DEBATE_BRIEF_MAX_CHARS)"
        note = f"{note}; {cut}" if note else cut
    title = scrub_user_text(" ".join((material.title or extracted.title or material.origin).split()))[:200]
    return Source(number=number, title=title or material.origin, kind=kind, origin=scrub_user_text(material.origin),
                  url=url, size=len(data), sha256=hashlib.sha256(data).hexdigest(), text=text,
                  sections=sections, note=note)


def _note(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_NOTE_CHARS else text[: MAX_NOTE_CHARS - 1] + "…"


async def read_brief(materials: list[Material], settings: object, base: Brief | None = None) -> Brief:
    """`base` (a rematch's or a continuation's brief) with `materials` read after it, under the settings'
    limits (DEBATE_BRIEF_MAX_SOURCES, DEBATE_BRIEF_MAX_CHARS) and fetching rules (DEBATE_FETCH,
    DEBATE_FETCH_ALLOW_HOSTS)."""
    base = base or Brief()
    added = await gather(materials, limits=BriefLimits.from_settings(settings),
                         fetcher=Fetcher(FetchPolicy.from_settings(settings)), first_number=len(base.sources) + 1,
                         chars_used=base.chars)
    return base.with_sources(added) if base.sources else added

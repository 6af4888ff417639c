"""Checking a turn's citations: a brief quote against that source's stored text, a URL quote against the
page's text, fetched through the one fetch client under the operator's policy (DEBATE_FETCH,
DEBATE_FETCH_ALLOW_HOSTS, its size and time limits) and read at most once per debate (`EvidenceChecker`
keeps one per debate: the pages it read, and why the ones it could not read failed).

Each citation ends verified (with the anchor where the words were found), not_found (the source was read;
the words are not in it), unreachable (refused, failed or over a limit: the reason, one line) or
not_checked (fetching is off). A refused address is refused before any socket opens (fetch.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from orchestrator.brief.extract import ExtractError, extract, kind_of
from orchestrator.brief.fetch import Fetcher, FetchError, FetchRefused, shown_url
from orchestrator.brief.models import Brief, Source, normal_anchor
from orchestrator.evidence.citations import Citation, citations
from orchestrator.evidence.match import MATCH_THRESHOLD, Haystack, find_quote
from orchestrator.models import EvidenceCheck

MAX_PAGES = 20  # distinct URLs read per debate: a turn that cites more gets "unreachable" for the rest


@dataclass(frozen=True)
class Page:
    """A URL as read: its text made ready to search, or why it could not be read (`off`: fetching is off)."""

    text: Haystack | None = None
    error: str = ""
    off: bool = False


@dataclass
class EvidenceChecker:
    """One debate's checker: `brief` its sources, `fetcher` the client URLs are read through."""

    brief: Brief
    fetcher: Fetcher
    pages: dict[str, asyncio.Task[Page]] = field(default_factory=dict)
    sources: dict[str, Haystack] = field(default_factory=dict)  # each brief source's text, made ready once

    async def check_text(self, seat: str, round: int, text: str) -> list[EvidenceCheck]:
        """Every citation in `text` (a turn by `seat`), checked; the URLs read concurrently."""
        found = citations(text)
        return list(await asyncio.gather(*(self.check(seat, round, c) for c in found)))

    async def check(self, seat: str, round: int, citation: Citation) -> EvidenceCheck:
        base = EvidenceCheck(seat=seat, round=round, quote=citation.quote, source=citation.source,
                             anchor=citation.anchor)
        if citation.is_url:
            return await self._check_url(base, citation)
        return await self._check_brief(base, citation)

    async def _check_brief(self, base: EvidenceCheck, citation: Citation) -> EvidenceCheck:
        source = self.brief.source(citation.source)
        if source is None:
            return base.model_copy(update={"status": "not_found",
                                           "detail": f"the brief has no {citation.source}"})
        if source.label not in self.sources:  # a long source takes tens of ms: off the event loop
            self.sources[source.label] = await asyncio.to_thread(Haystack.of, source.text)
        found = await asyncio.to_thread(find_quote, citation.quote, self.sources[source.label])
        if found is None or not found.found:
            return base.model_copy(update={"status": "not_found",
                                           "detail": f"not in {source.label} ({_best(found)})"})
        where = _anchor_at(source, found.start)
        detail = f"found in {source.label} {where}".rstrip()
        if citation.anchor and where and where != normal_anchor(citation.anchor):
            detail += f" (cited as {citation.anchor})"
        return base.model_copy(update={"status": "verified", "detail": detail, "found_at": where})

    async def _check_url(self, base: EvidenceCheck, citation: Citation) -> EvidenceCheck:
        base = base.model_copy(update={"source": shown_url(citation.source)})
        page = await self._page(citation.source)
        if page.off:
            return base.model_copy(update={"status": "not_checked", "detail": page.error})
        if page.error or page.text is None:
            return base.model_copy(update={"status": "unreachable", "detail": page.error})
        found = await asyncio.to_thread(find_quote, citation.quote, page.text)
        if found is None or not found.found:
            return base.model_copy(update={"status": "not_found", "detail": f"not on the page ({_best(found)})"})
        return base.model_copy(update={"status": "verified", "detail": "found on the page"})

    def _page(self, url: str) -> asyncio.Task[Page]:
        """The page at `url`, read once per debate (a second citation of it waits for the first read)."""
        task = self.pages.get(url)
        if task is None:
            reading = self._read(url) if len(self.pages) < MAX_PAGES else self._too_many()
            task = self.pages[url] = asyncio.ensure_future(reading)
        return task

    async def _too_many(self) -> Page:
        return Page(error=f"not read: this debate already cited {MAX_PAGES} pages, the most it reads")

    async def _read(self, url: str) -> Page:
        if not self.fetcher.policy.enabled:
            return Page(error="not checked: fetching links is off here (DEBATE_FETCH=off)", off=True)
        try:
            fetched = await self.fetcher.fetch(url)
        except FetchRefused as exc:
            return Page(error=f"refused: {exc}")
        except FetchError as exc:
            return Page(error=str(exc))
        kind = kind_of(fetched.url, fetched.content_type) or "text"
        try:
            extracted = await extract(fetched.body, kind, name=fetched.url, charset=fetched.charset)
        except ExtractError as exc:
            return Page(error=f"{shown_url(url)}: {exc}")
        return Page(text=await asyncio.to_thread(Haystack.of, extracted.text))


def _anchor_at(source: Source, position: int) -> str:
    return next((s.anchor for s in source.sections if s.start <= position < s.end), "")


def _best(found: object) -> str:
    score = getattr(found, "score", 0.0)
    return f"best match {score:.0f}% < {MATCH_THRESHOLD:.0f}%"

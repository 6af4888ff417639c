"""A document's text and anchors, by kind: a PDF page by page (pypdf in a limited child process), a web
page's main text (trafilatura, as Markdown so its headings cut sections), Markdown and text as they are.

Nothing here decides what may be read (orchestrator/brief/gather.py does: limits, fetching); it only
turns bytes into text, and refuses with `ExtractError` (one line) what it cannot read.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from orchestrator.brief.models import Section, SourceKind
from orchestrator.brief.sections import by_headings, by_pages

PDF_MAX_PAGES = 200
PDF_TIMEOUT_S = 20.0
PDF_MEMORY_BYTES = 512 * 1024 * 1024
_SUFFIXES: dict[str, SourceKind] = {".pdf": "pdf", ".html": "html", ".htm": "html", ".md": "markdown",
                                    ".markdown": "markdown", ".txt": "text", ".text": "text"}
_MEDIA: dict[str, SourceKind] = {"application/pdf": "pdf", "text/html": "html", "text/markdown": "markdown",
                                 "text/x-markdown": "markdown", "text/plain": "text"}
_TITLE_LINE = re.compile(r"^\s*(?:#{1,6}\s+)?(.+?)\s*$", re.MULTILINE)
FILE_KINDS = ", ".join(sorted(_SUFFIXES))


class ExtractError(Exception):
    """A document whose text could not be read: one line naming why."""


@dataclass(frozen=True)
class PdfLimits:
    pages: int = PDF_MAX_PAGES
    timeout_s: float = PDF_TIMEOUT_S
    memory_bytes: int = PDF_MEMORY_BYTES


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str
    sections: tuple[Section, ...]
    note: str = ""


def kind_of(name: str = "", media_type: str | None = None) -> SourceKind | None:
    """The kind a file's name or a response's media type says, or None when it is none we read."""
    if media_type:
        kind = _MEDIA.get(media_type.split(";", 1)[0].strip().lower())
        if kind is not None:
            return kind
    return _SUFFIXES.get(PurePath(name.split("?", 1)[0]).suffix.lower()) if name else None


def _same(text: str) -> str:
    return text


async def extract(data: bytes, kind: SourceKind, *, name: str = "", charset: str | None = None,
                  pdf: PdfLimits = PdfLimits(), clean: Callable[[str], str] = _same) -> Extracted:
    """The text of `data` read as `kind`; `name` gives a title when the document has none. `clean` is
    applied to the text (a PDF's: each page) before it is cut into sections, so the anchors fit it."""
    if kind == "pdf":
        return await _pdf(data, name, pdf, clean)
    if kind == "html":
        return await asyncio.to_thread(_html, data, name, clean)
    text = clean(_decoded(data, charset))
    return Extracted(title=_first_line(text) or _stem(name), text=text, sections=by_headings(text))


def _decoded(data: bytes, charset: str | None) -> str:
    try:
        text = data.decode(charset or "utf-8")
    except (LookupError, UnicodeDecodeError):
        text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


async def _pdf(data: bytes, name: str, limits: PdfLimits, clean: Callable[[str], str]) -> Extracted:
    """pypdf in a child process (orchestrator/brief/pdf_child.py) under page, time and memory limits."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orchestrator.brief.pdf_child", str(limits.pages), str(limits.memory_bytes),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(limits.timeout_s):
            out, err = await process.communicate(data)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ExtractError(f"the PDF took longer than {limits.timeout_s:g} s to read") from None
    if process.returncode != 0:
        reason = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if reason[0] == "memory" or process.returncode in (-9, 137) or "MemoryError" in reason[0]:
            raise ExtractError(f"the PDF needs more than {limits.memory_bytes // 2**20} MiB to read")
        if process.returncode in (-24, 152):  # SIGXCPU
            raise ExtractError("the PDF took too much CPU time to read")
        what = reason[0].removeprefix("unreadable: ") or f"exit status {process.returncode}"
        raise ExtractError(f"not a readable PDF ({what})")
    answer = json.loads(out)
    pages = [clean(page) for page in answer["pages"]]
    text, sections = by_pages(pages)
    if not text:
        raise ExtractError("the PDF has no text to read (scanned pages need OCR, which is not done here)")
    count = int(answer["page_count"])
    note = f"read the first {limits.pages} of {count} pages" if count > limits.pages else ""
    title = " ".join(str(answer.get("title") or "").split()) or _stem(name) or _first_line(text)
    return Extracted(title=title, text=text, sections=sections, note=note)


def _html(data: bytes, name: str, clean: Callable[[str], str]) -> Extracted:
    """The page's main text as Markdown (trafilatura), falling back to all of its text."""
    import trafilatura

    text = trafilatura.extract(data, output_format="markdown", include_comments=False, include_tables=True,
                               include_links=False, include_images=False, favor_recall=True) or ""
    if not text.strip():
        text = trafilatura.html2txt(data) or ""
    text = clean(text.replace("\r\n", "\n").strip())
    if not text:
        raise ExtractError("the page has no text to read")
    metadata = trafilatura.extract_metadata(data)
    title = (metadata.title if metadata is not None and metadata.title else "") or _stem(name) or _first_line(text)
    return Extracted(title=" ".join(title.split()), text=text, sections=by_headings(text))


def _first_line(text: str) -> str:
    match = _TITLE_LINE.search(text)
    return match.group(1)[:120] if match else ""


def _stem(name: str) -> str:
    return PurePath(name.split("?", 1)[0]).name if name else ""

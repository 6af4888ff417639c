"""A debate's brief: the documents, links and threads every seat and judge reads, quoted as untrusted text.

The public face, for the rest of the product and for the evidence checks that hold citations against it:

- models: `Brief` (numbered `Source`s; `Brief.source("S2")`), `Source` (title, kind, origin, url, size,
  sha256, text and `Section`s; `Source.section("p.14")`, `Source.section_text(section)`), `normal_anchor`.
- fetch: `Fetcher` / `fetch_url` under a `FetchPolicy` — the one SSRF-safe client for any URL a user or a
  model names (`FetchRefused` before any socket opens, `FetchError` when the page could not be read).
- extract: `extract(bytes, kind)` (pypdf in a limited child process, trafilatura, Markdown and text).
- gather: `Material` (a file, a URL or chat text) and `read_brief` / `gather` (numbering, limits, notes).
- sections and select: the anchors a source is cut into, and the sections a prompt carries
  (`orchestrator.brief.select.select`; the module keeps its name here, as the bench sets its budget).
- prompt (imported as `orchestrator.brief.prompt`, not from here: it uses the debate's quoting, which uses
  `orchestrator.models`, which uses these models): the brief as a prompt quotes it.
"""

from importlib import import_module
from typing import Any

from orchestrator.brief.models import Brief, Section, Source, SourceKind, normal_anchor, source_line

# the rest on first use: fetching pulls in aiohttp and extracting its parsers, which a command that only
# reads the log (history, show, export, purge) never needs and would wait for at every start
_LAZY = {
    "ExtractError": "extract", "PdfLimits": "extract", "extract": "extract", "kind_of": "extract",
    "Fetched": "fetch", "Fetcher": "fetch", "FetchError": "fetch", "FetchPolicy": "fetch", "FetchRefused": "fetch",
    "fetch_url": "fetch", "BriefInputError": "gather", "BriefLimits": "gather", "Material": "gather",
    "gather": "gather", "material_for": "gather", "read_brief": "gather", "PROMPT_CHARS": "select",
    "Selection": "select", "Shown": "select",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"orchestrator.brief.{module}"), name)


__all__ = [
    "PROMPT_CHARS", "Brief", "BriefInputError", "BriefLimits", "ExtractError", "FetchError", "FetchPolicy",
    "FetchRefused", "Fetched", "Fetcher", "Material", "PdfLimits", "Section", "Selection", "Shown", "Source",
    "SourceKind", "extract", "fetch_url", "gather", "kind_of", "material_for", "normal_anchor", "read_brief",
    "source_line",
]

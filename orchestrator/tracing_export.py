"""What a span may carry out of the process, enforced where every span leaves it: the exporter.

Spans come from us and from libraries (the anthropic SDK makes one per HTTP call, DBOS its own), so the
rules hold whoever set the attribute: a URL keeps its scheme, host, port and path, never user info, a
query or a fragment (a `*_BASE_URL` may carry credentials or a key), and no span carries a prompt or a
model's text (an SDK's content mode, `ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content`). Imported
only when tracing is on (orchestrator/tracing.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

URL_ATTRIBUTES = frozenset({"url.full", "url.original", "http.url"})  # the last: older semantic conventions
PATH_ATTRIBUTES = frozenset({"url.path", "http.target"})
DROPPED = frozenset({
    "url.query", "url.fragment",
    # the GenAI conventions' content attributes: the prompt, the system prompt, the answer
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
    "gen_ai.prompt", "gen_ai.completion",
})


def safe_url(value: object) -> str | None:
    """`scheme://host[:port]/path` of a URL, or None when it is not one with a host."""
    try:
        parts = urlsplit(str(value))
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}{f':{port}' if port is not None else ''}{parts.path}"


def safe_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name, value in attributes.items():
        if name in DROPPED:
            continue
        if name in URL_ATTRIBUTES:
            if (url := safe_url(value)) is not None:
                kept[name] = url
        elif name in PATH_ATTRIBUTES:
            kept[name] = str(value).split("?", 1)[0].split("#", 1)[0]
        elif name == "server.address":
            kept[name] = str(value).rsplit("@", 1)[-1]
        else:
            kept[name] = value
    return kept


def safe_span(span: ReadableSpan) -> ReadableSpan:
    """`span` itself when it carries nothing to take out, else a copy with the attributes made safe."""
    attributes = dict(span.attributes or {})
    kept = safe_attributes(attributes)
    if kept == attributes:
        return span
    return ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                        attributes=kept, events=span.events, links=span.links, kind=span.kind, status=span.status,
                        start_time=span.start_time, end_time=span.end_time,
                        instrumentation_scope=span.instrumentation_scope)


class SafeSpanExporter(SpanExporter):
    """`inner` (the OTLP exporter), sent each span as `safe_span` makes it."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([safe_span(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

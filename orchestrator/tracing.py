"""Traces over OTLP/HTTP, when asked for: the `otel` extra installed and OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set; the other standard OTEL_* variables apply as the SDK reads them.

One trace per debate run in a process: a `debate` span, a `round N` span per round, a `chat {model}` span
per model call (the OpenTelemetry GenAI conventions: provider, model, token usage, `error.type`), and a
`judge {pass}` span per judge pass. Every span carries `gen_ai.conversation.id`, the debate id; none
carries the topic, a prompt, a user, a channel or a workspace, and a URL only as scheme, host and path (the
exporter enforces both on every span, a library's included: tracing_export.py). A front's platform writes
(bots/telemetry.py) are spans of their own, in the debate's trace when the write happens inside it (a
`debate serve` process), else each its own trace, found by the same `gen_ai.conversation.id`.

Off, nothing here imports OpenTelemetry and every helper returns at once: a span is a shared null
context, and each `note` a test for None.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
SERVICE = "debate-bot"
CONVERSATION = "gen_ai.conversation.id"
Attributes = Mapping[str, str | int | float | bool]

_OFF: AbstractContextManager[None] = nullcontext()
_tracer: Any = None  # an opentelemetry Tracer once configure_tracing found the exporter and an endpoint


def wanted() -> bool:
    """Whether the environment asks for traces (an OTLP endpoint is set)."""
    return any(os.environ.get(name) for name in ENDPOINT_VARS)


def enabled() -> bool:
    return _tracer is not None


def configure_tracing(role: str) -> bool:
    """Export this process's spans to the OTLP endpoint, when one is set and the extra is installed.
    The service is OTEL_SERVICE_NAME, else `debate-bot-<role>`; its resource also says `debate.role`."""
    global _tracer
    if _tracer is not None or not wanted():
        return _tracer is not None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from orchestrator.tracing_export import SafeSpanExporter
    except ImportError:
        log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the tracing packages are missing: "
                    "install them with pip install 'debate-bot[otel]', or unset the variable.")
        return False
    name = os.environ.get("OTEL_SERVICE_NAME") or f"{SERVICE}-{role}"
    provider = TracerProvider(resource=Resource.create({"service.name": name, "debate.role": role}))
    # flushed at exit by the provider
    provider.add_span_processor(BatchSpanProcessor(SafeSpanExporter(OTLPSpanExporter())))
    trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer(SERVICE)
    return True


def span(name: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """A child of the current span for the block (the block's own spans are its children); yields the span,
    or None when tracing is off. An exception leaving the block marks the span failed with its type."""
    return _OFF if _tracer is None else _current(name, attributes)


@contextmanager
def _current(name: str, attributes: Attributes) -> Iterator[Any]:
    # not the SDK's exception recording: an exception's text could quote what a span must not carry
    with _tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                       set_status_on_exception=False) as started:
        try:
            yield started
        except BaseException as exc:
            note(started, {}, error=type(exc).__name__)
            raise


def note(span: Any, attributes: Attributes, *, error: str = "") -> None:
    """Add `attributes` to `span` (None: tracing is off); `error`: the call failed, of this kind."""
    if span is None:
        return
    span.set_attributes({**attributes, "error.type": error} if error else attributes)
    if error:
        from opentelemetry.trace import StatusCode

        span.set_status(StatusCode.ERROR, error)


@dataclass(slots=True)
class Opened:
    """A span made the current one until `close`, for work that starts and ends in separate calls (a round)."""

    span: Any
    token: object


def open_span(name: str, attributes: Attributes) -> Opened | None:
    """Start a span and make it current in the caller's context, until `close(...)` in the same context."""
    if _tracer is None:
        return None
    from opentelemetry import context, trace

    started = _tracer.start_span(name, attributes=attributes)
    return Opened(started, context.attach(trace.set_span_in_context(started)))


def close(opened: Opened | None) -> None:
    if opened is None:
        return
    from opentelemetry import context

    context.detach(opened.token)
    opened.span.end()


def start_span(name: str, attributes: Attributes) -> Any:
    """A span that is not made current (a request's, ended by `end`); None when tracing is off."""
    return None if _tracer is None else _tracer.start_span(name, attributes=attributes)


def end(span: Any, attributes: Attributes, *, error: str = "") -> None:
    if span is None:
        return
    note(span, attributes, error=error)
    span.end()

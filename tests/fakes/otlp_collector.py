"""A loopback OpenTelemetry collector: OTLP/HTTP traces, as the SDK's exporter sends them.

    async with OTLPCollector() as collector:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.url      # the exporter posts to …/v1/traces
        ...                                                     # the process exits: its spans are flushed
        (debate,) = collector.spans_named("debate")

Speaks `POST /v1/traces` with a protobuf `ExportTraceServiceRequest` body (gzip or not, as the
exporter's OTEL_EXPORTER_OTLP_COMPRESSION says) and answers an empty `ExportTraceServiceResponse`.
Every span is kept, decoded into a `ReceivedSpan` with its resource's attributes.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class OTLPCollector:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._runner: web.AppRunner | None = None
        self._port = 0

    async def start(self) -> OTLPCollector:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> OTLPCollector:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); the exporter appends /v1/traces."""
        return f"http://127.0.0.1:{self._port}"

    def spans_named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]

    async def _traces(self, request: web.Request) -> web.Response:
        if request.content_type != PROTOBUF:
            return web.Response(status=415, text="OTLP/HTTP takes application/x-protobuf here")
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest.FromString(body)
        received = [
            ReceivedSpan(name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                         parent_id=span.parent_span_id.hex(), attributes=_attributes(span.attributes),
                         resource=_attributes(resource_spans.resource.attributes), status_code=span.status.code)
            for resource_spans in export.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        self.requests += 1
        self.spans.extend(received)
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF)

"""Helpers for the telemetry suites: a runtime whose spans land in memory, and a tiny
OTLP/HTTP receiver on 127.0.0.1 that decodes what an exporter sends."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.runtime.test_disclosure_e2e import make_runtime
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.telemetry.otel import OtelTelemetry
from thoughtline.testing import SimulatorServer

RUN_SPAN = "thoughtline run"


def traced_runtime(
    home: Path, sim_server: SimulatorServer, environ: dict[str, str], *, capture: bool
) -> tuple[Runtime, SQLiteStore, InMemorySpanExporter, OtelTelemetry]:
    """The disclosure suite's runtime, with spans recorded in memory (synchronously, so
    every span is there when the run returns)."""
    runtime, store = make_runtime(home, sim_server, environ)
    exporter = InMemorySpanExporter()
    telemetry = OtelTelemetry(
        SimpleSpanProcessor(exporter), capture_content=capture, redactor=runtime.redactor
    )
    runtime.telemetry = telemetry
    return runtime, store, exporter, telemetry


def spans_json(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> str:
    """Everything exported, as text (names, attributes, status, events, resource)."""
    return "\n".join(span.to_json() for span in spans)


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


# -- OTLP/HTTP receiver --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    name: str
    kind: int
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


def any_value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    if field == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if field == "kvlist_value":
        return {item.key: any_value(item.value) for item in value.kvlist_value.values}
    return None if field is None else getattr(value, field)


class OtlpReceiver:
    """Accepts ``POST /v1/traces`` (protobuf, optionally gzip/deflate) on 127.0.0.1."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list[Mapping[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._lock:
                    receiver.bodies.append(body)
                    receiver.requests.append(request)
                    receiver.headers.append(dict(self.headers.items()))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def traces_url(self) -> str:
        return f"{self.base_url}/v1/traces"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            requests = list(self.requests)
        return list(_flatten(requests))

    def raw(self) -> bytes:
        with self._lock:
            return b"".join(self.bodies)

    def text(self) -> str:
        """Every received attribute value as text (for leak checks on decoded data)."""
        return json.dumps(
            [[span.name, span.attributes, span.status_message] for span in self.spans()],
            ensure_ascii=False,
        )


def _flatten(requests: list[ExportTraceServiceRequest]) -> Iterator[ReceivedSpan]:
    for request in requests:
        for resource_spans in request.resource_spans:
            resource = {
                item.key: any_value(item.value) for item in resource_spans.resource.attributes
            }
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    yield ReceivedSpan(
                        name=span.name,
                        kind=span.kind,
                        trace_id=span.trace_id,
                        span_id=span.span_id,
                        parent_span_id=span.parent_span_id,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        status_code=span.status.code,
                        status_message=span.status.message,
                        attributes={item.key: any_value(item.value) for item in span.attributes},
                        resource=resource,
                    )

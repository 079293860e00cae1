"""A gateway call's run span names its client, and a hidden client's reasoning reaches
no span."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.gateway.conftest import StartGateway, mode_client
from tests.telemetry.support import RUN_SPAN, by_name, spans_json
from thoughtline.telemetry.otel import OtelTelemetry
from thoughtline.testing import SimReasoning, Simulator, Transcript


@pytest.mark.slow  # a daemon
def test_the_run_span_names_the_gateway_client(start_gateway: StartGateway, sim: Simulator) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    runtime = gateway.daemon.daemon.runtime
    exporter = InMemorySpanExporter()
    runtime.telemetry = OtelTelemetry(
        SimpleSpanProcessor(exporter), capture_content=True, redactor=runtime.redactor
    )
    canary = "CANARY-GATEWAY-SPAN-6b0e"
    sim.script(Transcript(reasoning=(SimReasoning(kind="raw", text=canary),), answer="Hi."))
    gateway.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
    )
    gateway.daemon.close()
    spans = exporter.get_finished_spans()
    (run_span,) = by_name(spans, RUN_SPAN)
    assert run_span.attributes is not None
    assert run_span.attributes["thoughtline.gateway.client"] == "app"
    assert canary not in spans_json(spans)

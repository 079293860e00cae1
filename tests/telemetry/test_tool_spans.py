"""An ``execute_tool {name}`` span per tool call, beside its task's ``chat`` spans under
the task's ``invoke_agent`` span; its arguments and result only with content capture on,
for a mode that records reasoning."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.runtime.test_tool_loop import FINAL, calling, one_task, tooled_runtime
from tests.telemetry.support import by_name
from thoughtline.telemetry.otel import OtelTelemetry
from thoughtline.testing import Simulator, SimulatorServer

pytestmark = pytest.mark.slow  # starts a tool server process


@pytest.mark.parametrize(("mode", "captured"), [("hidden", False), ("telemetry_only", True)])
async def test_each_tool_call_is_an_execute_tool_span(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
    captured: bool,
) -> None:
    sim.script(FINAL)
    sim.script(calling("repeat", {"text": "ab", "times": 2}), times=1)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    exporter = InMemorySpanExporter()
    runtime.telemetry = OtelTelemetry(
        SimpleSpanProcessor(exporter), capture_content=True, redactor=runtime.redactor
    )
    try:
        await runtime.run(one_task(), explicit_mode=mode)
    finally:
        await runtime.aclose()
        store.close()
    spans = exporter.get_finished_spans()
    (tool,) = by_name(spans, "execute_tool repeat")
    (agent,) = by_name(spans, "invoke_agent engineer")
    chats = by_name(spans, "chat claude-sonnet-4-6")
    assert len(chats) == 2
    for span in (tool, *chats):
        assert span.parent is not None and span.parent.span_id == agent.context.span_id
    attributes = dict(tool.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "repeat"
    assert attributes["gen_ai.tool.call.id"] == "call_1"
    assert attributes["thoughtline.tool.server"] == "probe"
    assert attributes["thoughtline.content_captured"] is captured
    assert ("gen_ai.tool.call.result" in attributes) is captured
    if captured:
        assert attributes["gen_ai.tool.call.result"] == "abab"

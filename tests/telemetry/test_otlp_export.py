"""Real OTLP/HTTP export to a receiver on 127.0.0.1, decoded with opentelemetry-proto:
from a runtime in this process, and from ``thoughtline run`` as a subprocess (spans must
arrive before the process exits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT, make_runtime
from tests.telemetry.support import RUN_SPAN, OtlpReceiver
from thoughtline.config import Config
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.telemetry import open_telemetry
from thoughtline.testing import Simulator, SimulatorServer

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_ERROR = 2


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as server:
        yield server


@pytest.fixture
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("clean_otel_env")
async def test_spans_reach_an_otlp_http_collector(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    receiver: OtlpReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.traces_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=thoughtline-tests")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "thoughtline-under-test")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    telemetry = open_telemetry(Config(path=None), redactor=runtime.redactor)
    assert telemetry is not None
    runtime.telemetry = telemetry
    spec = RunSpec(
        request="Explain.",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
            TaskSpec(name="g", role="engineer", provider="gemini", model="gemini-3-pro"),
        ),
    )
    run = await runtime.run(spec, explicit_mode="surface_and_telemetry")
    store.close()
    telemetry.shutdown()  # flushes the batch processor

    spans = receiver.spans()
    assert sorted(span.name for span in spans) == sorted(
        [RUN_SPAN, "chat claude-sonnet-4-6", "chat gemini-3-pro"]
    )
    (root,) = [span for span in spans if span.name == RUN_SPAN]
    assert root.kind == SPAN_KIND_INTERNAL
    assert root.parent_span_id == b""
    assert root.attributes["thoughtline.run.status"] == "completed"
    assert root.resource["service.name"] == "thoughtline-under-test"
    assert all(h.get("x-tenant") == "thoughtline-tests" for h in receiver.headers)
    for task in run.tasks:
        (span,) = [span for span in spans if span.name == f"chat {task.model}"]
        assert span.kind == SPAN_KIND_CLIENT
        assert span.parent_span_id == root.span_id
        assert span.trace_id == root.trace_id
        attributes = span.attributes
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == task.model
        assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
        assert attributes["gen_ai.usage.output_tokens"] == task.usage.output_tokens
        assert attributes["gen_ai.usage.reasoning.output_tokens"] == task.usage.reasoning_tokens
        assert attributes["thoughtline.reasoning_status"] == task.reasoning_status == "shown"
        assert attributes["thoughtline.chain_of_thought"] == "surface_and_telemetry"
        messages = json.loads(attributes["gen_ai.output.messages"])
        assert messages[0]["parts"][0]["type"] == "reasoning"
        assert CANARY in messages[0]["parts"][0]["content"]
    assert {span.attributes["gen_ai.provider.name"] for span in spans if span.name != RUN_SPAN} == {
        "anthropic",
        "gcp.gemini",
    }
    assert CANARY_KEY.encode() not in receiver.raw()


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "shows_canary"), [("telemetry_only", True), ("surface", False)])
def test_thoughtline_run_delivers_spans_before_it_exits(
    tmp_path: Path,
    sim: Simulator,
    environ: dict[str, str],
    receiver: OtlpReceiver,
    mode: str,
    shows_canary: bool,
) -> None:
    sim.script(TRANSCRIPT)
    home = tmp_path / "home"
    env = {
        key: value for key, value in cli_env(home, environ).items() if not key.startswith("OTEL_")
    }
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.traces_url
    env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "thoughtline.cli",
            "run",
            "Explain.",
            "--provider",
            "deepseek",
            "--chain-of-thought",
            mode,
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    # The process has exited: everything must already be at the collector.
    spans = receiver.spans()
    assert sorted(span.name for span in spans) == [
        "chat deepseek-reasoner",
        RUN_SPAN,
    ]
    (chat,) = [span for span in spans if span.name == "chat deepseek-reasoner"]
    (task,) = snapshot["tasks"]
    assert chat.attributes["thoughtline.task.id"] == task["id"]
    assert chat.attributes["thoughtline.chain_of_thought"] == mode
    assert chat.attributes["thoughtline.reasoning_status"] == task["reasoning_status"]
    assert chat.attributes["gen_ai.provider.name"] == "deepseek"
    assert chat.attributes["gen_ai.usage.reasoning.output_tokens"] == 64
    assert (CANARY in receiver.text()) is shows_canary
    assert (CANARY.encode() in receiver.raw()) is shows_canary
    assert CANARY_KEY.encode() not in receiver.raw()
    assert CANARY_KEY not in result.stdout + result.stderr

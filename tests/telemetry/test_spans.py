"""Spans from real runs against the provider simulator, recorded in memory: structure,
GenAI attributes per mode, and what may (and may never) reach telemetry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import (
    ANSWER,
    CANARY,
    ENDPOINTS,
    MODES,
    NEVER_RETURNS_TEXT,
    RECORDS,
    TRANSCRIPT,
)
from tests.telemetry.support import RUN_SPAN, by_name, spans_json, traced_runtime
from thoughtline.config import Config
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run, Task
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.telemetry.attributes import iso_to_ns
from thoughtline.telemetry.otel import OtelTelemetry
from thoughtline.testing import Fault, Simulator, SimulatorServer

PROVIDER_NAMES = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-chat": "openai-chat",  # a user-defined endpoint reports its own name
    "openrouter": "openrouter",
    "gemini": "gcp.gemini",
    "deepseek": "deepseek",
    "ollama": "ollama",
}


def every_endpoint(request: str = "Explain the decision.") -> RunSpec:
    return RunSpec(
        request=request,
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider=endpoint, model=model)
            for name, (endpoint, model) in ENDPOINTS.items()
        ),
    )


async def test_a_run_span_parents_one_client_span_per_task_with_real_times(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=False
    )
    spec = RunSpec(
        request="Explain.",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
            TaskSpec(name="d", role="reviewer", provider="deepseek", model="deepseek-reasoner"),
        ),
    )
    run = await runtime.run(spec, explicit_mode="surface")
    store.close()
    spans = exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == sorted(
        [RUN_SPAN, "chat claude-sonnet-4-6", "chat deepseek-reasoner"]
    )
    (root,) = by_name(spans, RUN_SPAN)
    assert root.kind is SpanKind.INTERNAL
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["thoughtline.run.id"] == run.id
    assert root.attributes["thoughtline.run.status"] == "completed"
    assert root.attributes["thoughtline.chain_of_thought"] == "surface"
    assert root.attributes["thoughtline.chain_of_thought.source"] == "explicit"
    assert root.status.status_code is StatusCode.UNSET
    assert root.context is not None
    for task in run.tasks:
        (span,) = by_name(spans, f"chat {task.model}")
        assert span.kind is SpanKind.CLIENT
        assert span.parent is not None
        assert span.parent.span_id == root.context.span_id
        assert span.context is not None
        assert span.context.trace_id == root.context.trace_id
        # The task's own recorded start and end.
        assert span.start_time == iso_to_ns(task.timings.started_at)
        assert span.end_time == iso_to_ns(task.timings.finished_at)
        assert root.start_time is not None and root.end_time is not None
        assert span.start_time is not None and span.end_time is not None
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time
    resource = dict(root.resource.attributes)
    assert resource["service.name"] == "thoughtline"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("capture", [False, True], ids=["capture-off", "capture-on"])
async def test_genai_attributes_and_content_per_mode(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
    capture: bool,
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=capture
    )
    run = await runtime.run(every_endpoint(), explicit_mode=mode)
    store.close()
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    spans = exporter.get_finished_spans()
    assert len(spans) == len(ENDPOINTS) + 1
    content_expected = capture and mode in RECORDS
    for task in run.tasks:
        endpoint, model = ENDPOINTS[task.name]
        (span,) = [
            s
            for s in by_name(spans, f"chat {model}")
            if s.attributes and s.attributes["thoughtline.task.id"] == task.id
        ]
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == PROVIDER_NAMES[endpoint]
        assert "gen_ai.system" not in attributes  # deprecated name, not emitted
        assert attributes["gen_ai.request.model"] == model
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes["gen_ai.request.stream"] is True
        assert isinstance(attributes["gen_ai.response.time_to_first_chunk"], float)
        assert 0 <= attributes["gen_ai.response.time_to_first_chunk"] < 60
        assert attributes["gen_ai.usage.input_tokens"] == task.usage.input_tokens
        assert attributes["gen_ai.usage.output_tokens"] == task.usage.output_tokens
        if task.usage.reasoning_tokens is None:
            assert "gen_ai.usage.reasoning.output_tokens" not in attributes
        else:
            assert attributes["gen_ai.usage.reasoning.output_tokens"] == task.usage.reasoning_tokens
        assert attributes["thoughtline.chain_of_thought"] == mode
        assert attributes["thoughtline.reasoning_status"] == task.reasoning_status
        assert attributes["thoughtline.reasoning_notice"] == task.reasoning_notice
        assert attributes["thoughtline.task.status"] == "done"
        assert "error.type" not in attributes
        assert span.status.status_code is StatusCode.UNSET
        assert attributes["thoughtline.content_captured"] is content_expected
        if not content_expected:
            assert "gen_ai.output.messages" not in attributes
            assert "gen_ai.input.messages" not in attributes
            continue
        messages = json.loads(str(attributes["gen_ai.output.messages"]))
        assert len(messages) == 1
        assert messages[0]["role"] == "assistant"
        assert messages[0]["finish_reason"] == "stop"
        parts = messages[0]["parts"]
        if task.name in NEVER_RETURNS_TEXT:  # recorded, but the API returned no text
            assert parts == [{"type": "text", "content": ANSWER}]
        else:
            assert [part["type"] for part in parts] == ["reasoning", "text"]
            assert CANARY in parts[0]["content"]
            assert parts[1] == {"type": "text", "content": ANSWER}
    # Most simulated endpoints report reasoning tokens: the attribute really is emitted.
    assert any(
        "gen_ai.usage.reasoning.output_tokens" in (span.attributes or {})
        for span in spans
        if span.name != RUN_SPAN
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("capture", [False, True], ids=["capture-off", "capture-on"])
async def test_no_leak_reasoning_only_when_recorded_and_captured_key_never(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
    capture: bool,
) -> None:
    sim.script(TRANSCRIPT)
    # One provider rejects the key and quotes it back in its error body.
    sim.inject(Fault.http_error(401, f"bad key {CANARY_KEY}"), profile="deepseek")
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=capture
    )
    run = await runtime.run(every_endpoint(), explicit_mode=mode)
    store.close()
    assert run.status == "completed_with_failures"
    failed = [task for task in run.tasks if task.status == "failed"]
    assert [task.name for task in failed] == ["deepseek"]
    assert failed[0].error is not None
    spans = exporter.get_finished_spans()
    (failed_span,) = by_name(spans, "chat deepseek-reasoner")
    assert failed_span.status.status_code is StatusCode.ERROR
    assert failed_span.attributes is not None
    assert failed_span.attributes["error.type"] == failed[0].error.code
    assert failed_span.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert failed_span.status.description is not None
    assert failed_span.status.description.startswith(failed[0].error.code)
    (root,) = by_name(spans, RUN_SPAN)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["error.type"] == "completed_with_failures"

    exported = spans_json(spans)
    assert (CANARY in exported) is (capture and mode in RECORDS)
    assert CANARY_KEY not in exported


async def test_the_redactor_cleans_what_the_provider_error_quotes(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # The telemetry's own redactor, given a secret the runtime does not know, removes it
    # from the status description: redaction happens here, not only upstream.
    extra_secret = "tl-telemetry-only-secret-77aa"
    sim.inject(Fault.http_error(401, f"bad key {extra_secret}"), profile="deepseek")
    home = tmp_path / "home"
    home.mkdir()
    exporter = InMemorySpanExporter()
    telemetry = OtelTelemetry(
        SimpleSpanProcessor(exporter), redactor=Redactor([CANARY_KEY, extra_secret])
    )
    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ=environ, telemetry=telemetry)
    run = await runtime.run(
        RunSpec(
            request="Go.",
            tasks=(TaskSpec(name="d", role="engineer", provider="deepseek", model="m1"),),
        )
    )
    store.close()
    (task,) = run.tasks
    assert task.status == "failed"
    assert task.error is not None
    assert extra_secret in task.error.message  # the provider's words reach the task error
    exported = spans_json(exporter.get_finished_spans())
    assert "[REDACTED]" in exported
    assert extra_secret not in exported
    assert CANARY_KEY not in exported


async def test_tasks_without_a_model_call_get_no_chat_span(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # Inline backend: prompts prepared, nothing called — only the run span.
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=True
    )
    run = await runtime.run(every_endpoint(), worker_backend="inline")
    store.close()
    assert run.status == "completed_prepare_only"
    assert [span.name for span in exporter.get_finished_spans()] == [RUN_SPAN]
    assert sim.requests == []


async def test_a_failing_hook_never_fails_the_run(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    class Broken:
        def run_started(self, run: Run) -> None:
            raise RuntimeError("boom")

        def task_finished(self, run: Run, task: Task, report: object) -> None:
            raise RuntimeError(f"boom {CANARY}")

        def run_finished(self, run: Run) -> None:
            raise RuntimeError("boom")

    sim.script(TRANSCRIPT)
    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ=environ, telemetry=Broken())
    run = await runtime.run(
        RunSpec(
            request="Go.",
            tasks=(TaskSpec(name="d", role="engineer", provider="deepseek", model="m1"),),
        ),
        explicit_mode="telemetry_only",
    )
    store.close()
    assert run.status == "completed"
    assert run.tasks[0].output == ANSWER

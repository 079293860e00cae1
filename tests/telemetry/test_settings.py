"""When export and content capture are on, from thoughtline.toml and the OTEL_* variables;
and the pure attribute mapping."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from thoughtline.config import Config
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run, Task, TaskError, TaskUsage
from thoughtline.runtime.engine.telemetry_hooks import CallReport
from thoughtline.telemetry import open_telemetry, resolve_settings
from thoughtline.telemetry.attributes import (
    finish_reason,
    iso_to_ns,
    output_messages,
    task_attributes,
)
from thoughtline.telemetry.otel import OtelTelemetry
from thoughtline.telemetry.settings import capture_from_env, traces_url

OTLP = Config(path=None, telemetry_exporter="otlp")
NONE = Config(path=None)


def test_off_by_default() -> None:
    settings = resolve_settings(NONE, {})
    assert not settings.enabled
    assert open_telemetry(NONE, environ={}) is None


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_an_endpoint_variable_turns_export_on(variable: str) -> None:
    settings = resolve_settings(NONE, {variable: "http://127.0.0.1:4318"})
    assert settings.enabled
    assert settings.reason == f"{variable} is set"
    assert settings.traces_endpoint is None  # the exporter reads the variable itself
    assert not settings.capture_content


def test_config_turns_export_on_and_its_endpoint_wins() -> None:
    config = Config(
        path=None, telemetry_exporter="otlp", telemetry_endpoint="http://collector:4318/"
    )
    settings = resolve_settings(config, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"})
    assert settings.enabled
    assert settings.traces_endpoint == "http://collector:4318/v1/traces"
    assert traces_url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_SDK_DISABLED": "true"},
        {"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
        {"OTEL_TRACES_EXPORTER": "none"},
    ],
)
def test_sdk_disabled_wins_over_everything(environ: dict[str, str]) -> None:
    assert not resolve_settings(OTLP, environ).enabled
    assert open_telemetry(OTLP, environ=environ) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        ("SPAN_ONLY", True),
        ("span_and_event", True),
        ("false", False),
        ("NO_CONTENT", False),
        ("EVENT_ONLY", False),  # thoughtline records content on spans only
        ("", False),
    ],
)
def test_capture_variable_values(value: str, expected: bool) -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value,
    }
    assert resolve_settings(NONE, environ).capture_content is expected


def test_a_bad_capture_value_warns_and_stays_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert capture_from_env("yes please") is False
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in caplog.text
    assert "stays off" in caplog.text


def test_config_capture_content_opts_in() -> None:
    config = Config(path=None, telemetry_exporter="otlp", telemetry_capture_content=True)
    assert resolve_settings(config, {}).capture_content
    assert not resolve_settings(OTLP, {}).capture_content


def test_a_grpc_protocol_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    settings = resolve_settings(OTLP, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert settings.enabled
    assert "OTLP/HTTP" in caplog.text


def test_open_telemetry_builds_an_otlp_exporter_and_shuts_down_once() -> None:
    telemetry = open_telemetry(
        Config(path=None, telemetry_exporter="otlp", telemetry_endpoint="http://127.0.0.1:9"),
        environ={},
    )
    assert isinstance(telemetry, OtelTelemetry)
    telemetry.shutdown()
    telemetry.shutdown()  # idempotent: atexit may call it again


# -- attributes ------------------------------------------------------------------------


def make_task(**changes: object) -> tuple[Run, Task]:
    task = Task(
        id="task_1",
        run_id="run_1",
        position=0,
        role="engineer",
        provider="gemini",
        model="gemini-3-pro",
        chain_of_thought="telemetry_only",
        chain_of_thought_source="explicit",
        status="done",
        output="answer",
        reasoning_status="recorded",
        reasoning_notice="Recorded to the trace only.",
        usage=TaskUsage(input_tokens=10, output_tokens=30, reasoning_tokens=None),
    )
    for key, value in changes.items():
        setattr(task, key, value)
    run = Run(
        id="run_1",
        request="r",
        chain_of_thought="telemetry_only",
        chain_of_thought_source="explicit",
        worker_backend="provider",
        tasks=[task],
    )
    return run, task


def test_finish_reasons_follow_the_conventions() -> None:
    assert finish_reason("stop") == "stop"
    assert finish_reason("tool_calls") == "tool_call"
    assert finish_reason("content_filter") == "content_filter"
    assert finish_reason(None) == "error"


def test_unreported_usage_is_left_out_not_zero() -> None:
    run, task = make_task()
    attributes = task_attributes(
        run, task, CallReport(recorded_reasoning=None), capture_content=True, redactor=Redactor()
    )
    assert attributes["gen_ai.provider.name"] == "gcp.gemini"
    assert attributes["gen_ai.usage.input_tokens"] == 10
    assert "gen_ai.usage.reasoning.output_tokens" not in attributes
    assert "gen_ai.usage.cache_read.input_tokens" not in attributes
    assert "gen_ai.response.time_to_first_chunk" not in attributes
    # Not recorded by the gate -> no content, capture or not.
    assert "gen_ai.output.messages" not in attributes
    assert attributes["thoughtline.content_captured"] is False


def test_content_is_redacted_and_shaped_as_output_messages() -> None:
    secret = "tl-secret-value-123456"
    run, task = make_task(
        output=f"the key is {secret}",
        status="failed",
        error=TaskError(code="PROVIDER_BAD_REQUEST", message=f"echo {secret}", retryable=False),
    )
    report = CallReport(
        recorded_reasoning=[
            {"kind": "summary", "text": f"thinking about {secret}", "provider_metadata": {}},
            {"kind": "encrypted", "text": "", "provider_metadata": {"signature": "opaque"}},
        ],
        finish_reason="length",
        time_to_first_chunk_ms=250.0,
    )
    attributes = task_attributes(
        run, task, report, capture_content=True, redactor=Redactor([secret])
    )
    assert secret not in json.dumps(attributes)
    assert attributes["error.type"] == "PROVIDER_BAD_REQUEST"
    assert attributes["gen_ai.response.time_to_first_chunk"] == 0.25
    messages = json.loads(str(attributes["gen_ai.output.messages"]))
    assert messages == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "thinking about [REDACTED]"},
                {"type": "text", "content": "the key is [REDACTED]"},
            ],
            "finish_reason": "length",
        }
    ]
    assert "opaque" not in json.dumps(attributes)  # opaque carriers stay in the trace


def test_nothing_to_show_attaches_no_message() -> None:
    assert output_messages([], None, None) is None


def test_iso_timestamps_to_nanoseconds() -> None:
    assert iso_to_ns("1970-01-01T00:00:01.250Z") == 1_250_000_000
    assert iso_to_ns(None) is None
    assert iso_to_ns("not a time") is None


@pytest.mark.slow
def test_without_the_otel_extra_the_guard_names_it() -> None:
    # A fresh interpreter where every opentelemetry import fails.
    script = """
import logging, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(name)
        return None
sys.meta_path.insert(0, Block())
logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
from thoughtline.config import Config
from thoughtline.errors import ThoughtlineError
from thoughtline.telemetry import open_telemetry
env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
print("env-only:", open_telemetry(Config(path=None), environ=env))
try:
    open_telemetry(Config(path=None, telemetry_exporter="otlp"), environ={})
except ThoughtlineError as exc:
    print("configured:", exc.code, exc.message)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "env-only: None" in result.stdout
    assert "Continuing without telemetry" in result.stdout
    assert "configured: TELEMETRY_UNAVAILABLE" in result.stdout
    assert "pip install 'thoughtline[otel]'" in result.stdout

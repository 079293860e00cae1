"""The attributes of one step's ``chat`` span, without a run: what a call did not report
is left out, content needs both the recording mode and capture, and every string passes
the redactor."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CANARY_KEY
from thoughtline.providers.redaction import REDACTED, Redactor
from thoughtline.records import ChainOfThought, Run, Task, TracedReasoningPart
from thoughtline.runtime.engine.telemetry_hooks import RequestedToolCall, StepReport
from thoughtline.telemetry.attributes import step_attributes

REDACTOR = Redactor([CANARY_KEY])


def run_and_task(mode: ChainOfThought) -> tuple[Run, Task]:
    run = Run(
        id="run_1",
        request="r",
        chain_of_thought=mode,
        chain_of_thought_source="explicit",
        worker_backend="provider",
    )
    task = Task(
        id="task_1",
        run_id=run.id,
        position=0,
        role="engineer",
        provider="anthropic",
        model="claude-sonnet-4-6",
        chain_of_thought=mode,
        chain_of_thought_source="explicit",
        tool_calls=[],
    )
    return run, task


def step(
    recorded: list[TracedReasoningPart] | None, *, arguments: str = '{"a": 1}', **fields: object
) -> StepReport:
    return StepReport(
        number=2,
        started_ns=1,
        ended_ns=2,
        recorded_reasoning=recorded,
        tool_calls=(RequestedToolCall(id="call_1", name="probe__repeat", arguments=arguments),),
        finish_reason="tool_calls",
        **fields,  # type: ignore[arg-type]
    )


def thought(text: str) -> TracedReasoningPart:
    return {"kind": "summary", "text": text, "complete": True, "provider_metadata": {}}


def test_counts_not_reported_are_left_out_and_the_step_is_named() -> None:
    run, task = run_and_task("hidden")
    attributes = step_attributes(
        run, task, step(None, input_tokens=7), capture_content=True, redactor=REDACTOR
    )
    assert attributes["thoughtline.step"] == 2
    assert attributes["gen_ai.usage.input_tokens"] == 7
    assert "gen_ai.usage.output_tokens" not in attributes
    assert "gen_ai.usage.reasoning.output_tokens" not in attributes
    assert attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    assert attributes["thoughtline.content_captured"] is False
    assert "gen_ai.output.messages" not in attributes


@pytest.mark.parametrize("capture", [True, False])
def test_content_needs_the_recording_mode_and_capture(capture: bool) -> None:
    run, task = run_and_task("telemetry_only")
    attributes = step_attributes(
        run, task, step([thought("because")]), capture_content=capture, redactor=REDACTOR
    )
    assert ("gen_ai.output.messages" in attributes) is capture
    assert attributes["thoughtline.content_captured"] is capture


def test_arguments_that_are_not_json_go_as_text_and_keys_are_redacted() -> None:
    run, task = run_and_task("surface_and_telemetry")
    report = step(
        [thought(f"the key is {CANARY_KEY}")],
        arguments=f"not json {CANARY_KEY}",
        error_code="PROVIDER_AUTH",
    )
    attributes = step_attributes(run, task, report, capture_content=True, redactor=REDACTOR)
    assert CANARY_KEY not in json.dumps(attributes)
    assert attributes["error.type"] == "PROVIDER_AUTH"
    messages = attributes["gen_ai.output.messages"]
    assert isinstance(messages, str)
    (message,) = json.loads(messages)
    assert message["parts"] == [
        {"type": "reasoning", "content": f"the key is {REDACTED}"},
        {
            "type": "tool_call",
            "id": "call_1",
            "name": "probe__repeat",
            "arguments": f"not json {REDACTED}",
        },
    ]

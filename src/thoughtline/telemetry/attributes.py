"""Span attributes for runs and model calls, following the OpenTelemetry GenAI semantic
conventions (client inference spans, agent and tool spans), plus ``thoughtline.*``
attributes for disclosure.

Pure functions over runs and tasks — no OpenTelemetry import — so the mapping is testable
on its own. Every string that could carry content or a credential passes the redactor
here, once, before anything is exported.

Attribute names follow the current GenAI conventions (the ``semantic-conventions-genai``
registry): ``gen_ai.provider.name`` (which replaced the deprecated ``gen_ai.system``; the
old name is not emitted), ``gen_ai.usage.reasoning.output_tokens``,
``gen_ai.response.time_to_first_chunk`` in seconds, and ``gen_ai.output.messages`` as a
JSON string of ``[{"role", "parts": [{"type": "reasoning"|"text", "content"} |
{"type": "tool_call", "id", "name", "arguments"}], "finish_reason"}]`` (span attributes
cannot hold structured values in the Python SDK).

A task that may call tools is an agent: an ``invoke_agent {role}`` span with the task's
outcome and its usage summed, and under it one ``chat {model}`` span per model call (the
step's own usage, response id and finish reason, and ``thoughtline.step``) and one
``execute_tool {name}`` span per tool call (``thoughtline.tool.step`` names the step that
asked for it). A task without tools keeps a single ``chat {model}`` span.

The ``chat`` spans are also OpenInference LLM spans (``openinference.span.kind``,
``llm.model_name``, ``llm.provider``, ``llm.token_count.*``): Phoenix prices a span from
those with its own price table (its ``llm.cost.*`` are not read back).

Cost goes on the ``chat`` spans only, one per model call, so a backend that sums a
trace's spans counts each call once: OpenInference's ``llm.cost.*`` (its convention;
``llm.cost.completion_details.reasoning`` is part of ``llm.cost.completion``) and
``gen_ai.usage.cost``, which Langfuse maps to an observation's total cost. Agent and
run spans carry ``thoughtline.cost.amount`` only. A cost that is unknown sends no figure
at all (never 0), and ``thoughtline.cost.unknown_reason`` says why; when some of its
calls' costs are known, ``thoughtline.cost.known_amount`` is what they came to and
``thoughtline.cost.unknown_part`` which are not (``step 2``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from thoughtline.providers.redaction import Redactor
from thoughtline.records import Cost, Run, Task, ToolCallRecord, TracedReasoningPart
from thoughtline.runtime import CallReport, RequestedToolCall, StepReport

AttributeValue: TypeAlias = str | bool | int | float | Sequence[str]
Attributes: TypeAlias = dict[str, AttributeValue]

OPERATION_CHAT = "chat"
OPERATION_INVOKE_AGENT = "invoke_agent"
OPERATION_EXECUTE_TOOL = "execute_tool"
RUN_SPAN_NAME = "thoughtline run"

# thoughtline endpoint name -> gen_ai.provider.name. The well-known values come from the
# conventions; other endpoints (openrouter, ollama, vllm, llamacpp, user-defined) report
# their endpoint name, which the conventions allow for providers they do not list.
PROVIDER_NAMES: Mapping[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gemini": "gcp.gemini",
    "deepseek": "deepseek",
}

# thoughtline's normalized finish reasons -> the conventions' FinishReason values
# (stop, length, content_filter, tool_call, error); the rest pass through as strings.
FINISH_REASONS: Mapping[str, str] = {"tool_calls": "tool_call"}

# Run statuses the run span reports as errors.
_FAILED_RUN_STATUSES = frozenset({"failed", "completed_with_failures"})


def provider_name(endpoint: str) -> str:
    return PROVIDER_NAMES.get(endpoint, endpoint)


def finish_reason(reason: str | None) -> str:
    """The convention's value; a call that ended without a finish reports ``error``."""
    if reason is None:
        return "error"
    return FINISH_REASONS.get(reason, reason)


def task_span_name(task: Task) -> str:
    return f"{OPERATION_CHAT} {task.model}"


def agent_span_name(task: Task) -> str:
    return f"{OPERATION_INVOKE_AGENT} {task.role}"


def tool_span_name(call: ToolCallRecord) -> str:
    return f"{OPERATION_EXECUTE_TOOL} {call.name}"


def is_agent(task: Task) -> bool:
    """Whether the task's spans take the agent shape: it was offered tools (whether or
    not its model called any), so the shape does not depend on what the model chose."""
    return task.tool_calls is not None


def run_attributes(run: Run) -> Attributes:
    """Attributes of the ``thoughtline run`` span, known when the run starts."""
    attributes: Attributes = {
        "thoughtline.run.id": run.id,
        "gen_ai.conversation.id": run.conversation_id or run.id,
        "thoughtline.chain_of_thought": run.chain_of_thought,
        "thoughtline.chain_of_thought.source": run.chain_of_thought_source,
        "thoughtline.worker_backend": run.worker_backend,
        "thoughtline.task.count": len(run.tasks),
    }
    if run.continues is not None:
        attributes["thoughtline.run.continues"] = run.continues
    if run.client is not None:
        attributes["thoughtline.gateway.client"] = run.client
    return attributes


def run_end_attributes(run: Run) -> Attributes:
    attributes: Attributes = {"thoughtline.run.status": run.status}
    if run.status in _FAILED_RUN_STATUSES:
        attributes["error.type"] = run.status
    _add_cost_summary(attributes, run.cost)
    return attributes


def call_cost_attributes(cost: Cost) -> Attributes:
    """What one model call cost, as Phoenix (OpenInference) and Langfuse read it."""
    attributes: Attributes = {}
    parts = cost.parts
    if cost.amount is not None and parts is not None:
        attributes.update(
            {
                "llm.cost.total": cost.amount,
                "llm.cost.prompt": round(parts.input + parts.cached_input + parts.cache_write, 10),
                "llm.cost.completion": parts.output,
                "llm.cost.prompt_details.cache_read": parts.cached_input,
                "llm.cost.prompt_details.cache_write": parts.cache_write,
                "llm.cost.completion_details.reasoning": parts.reasoning,
                "gen_ai.usage.cost": cost.amount,
            }
        )
    _add_cost_summary(attributes, cost)
    return attributes


def _add_cost_summary(attributes: Attributes, cost: Cost) -> None:
    if cost.amount is not None:
        attributes["thoughtline.cost.amount"] = cost.amount
    if cost.source:
        attributes["thoughtline.cost.source"] = cost.source
    if cost.unknown_reason:
        attributes["thoughtline.cost.unknown_reason"] = cost.unknown_reason
    if cost.known_amount is not None:  # the calls whose cost is known, of an unknown sum
        attributes["thoughtline.cost.known_amount"] = cost.known_amount
    if cost.unknown_part is not None:
        attributes["thoughtline.cost.unknown_part"] = cost.unknown_part


def run_failed(run: Run) -> bool:
    return run.status in _FAILED_RUN_STATUSES


def task_attributes(
    run: Run, task: Task, report: CallReport, *, capture_content: bool, redactor: Redactor
) -> Attributes:
    """Attributes of a ``chat {model}`` span. Message content is attached only when the
    gate recorded reasoning for this task (``report.recorded_reasoning`` is not ``None``)
    and content capture is on; it is redacted like every other string."""
    attributes: Attributes = {
        "gen_ai.operation.name": OPERATION_CHAT,
        **_task_context(run, task),
        "gen_ai.response.finish_reasons": [finish_reason(report.finish_reason)],
        "thoughtline.task.status": task.status,
    }
    _add_response(attributes, report)
    usage = task.usage
    _add_call_usage(
        attributes,
        task,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cached_input_tokens=report.cached_input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    _add_outcome(attributes, task)
    attributes.update(call_cost_attributes(task.cost))
    recorded = report.recorded_reasoning
    messages = None
    if capture_content and recorded is not None:
        messages = output_messages(recorded, task.output, report.finish_reason)
    attributes["thoughtline.content_captured"] = messages is not None
    if messages is not None:
        attributes["gen_ai.output.messages"] = messages
    return redact_attributes(attributes, redactor)


def _add_response(attributes: Attributes, call: CallReport | StepReport) -> None:
    """What one model call's response said of itself: streamed, model, id, first chunk."""
    if call.streamed:
        attributes["gen_ai.request.stream"] = True
    if call.response_model:
        attributes["gen_ai.response.model"] = call.response_model
    if call.response_id:
        attributes["gen_ai.response.id"] = call.response_id
    if call.time_to_first_chunk_ms is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = call.time_to_first_chunk_ms / 1000


def _add_outcome(attributes: Attributes, task: Task) -> None:
    """The task's reasoning status and notice, and its error code when it failed."""
    if task.reasoning_status is not None:
        attributes["thoughtline.reasoning_status"] = task.reasoning_status
    if task.reasoning_notice:
        attributes["thoughtline.reasoning_notice"] = task.reasoning_notice
    if task.error is not None and task.status == "failed":
        attributes["error.type"] = task.error.code


def agent_attributes(run: Run, task: Task, report: CallReport, *, redactor: Redactor) -> Attributes:
    """Attributes of an ``invoke_agent {role}`` span: the task's outcome and its usage
    summed over its model calls. It carries no message content: that is on each step's
    ``chat`` span, under the same rules as a single call."""
    attributes: Attributes = {
        "gen_ai.operation.name": OPERATION_INVOKE_AGENT,
        "gen_ai.agent.name": task.role,
        **_task_context(run, task),
        "gen_ai.response.finish_reasons": [finish_reason(report.finish_reason)],
        "thoughtline.task.status": task.status,
        "thoughtline.steps": len(report.steps),
    }
    if report.response_model:
        attributes["gen_ai.response.model"] = report.response_model
    usage = task.usage
    _add_usage(
        attributes,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cached_input_tokens=usage.cached_input_tokens,
    )
    _add_outcome(attributes, task)
    _add_cost_summary(attributes, task.cost)
    return redact_attributes(attributes, redactor)


def step_attributes(
    run: Run, task: Task, step: StepReport, *, capture_content: bool, redactor: Redactor
) -> Attributes:
    """Attributes of one step's ``chat {model}`` span: that call's own usage, response id
    and finish reason. Its messages (the step's recorded reasoning, its text and the tool
    calls it asked for) are attached only when the mode records reasoning
    (``step.recorded_reasoning`` is not ``None``) and content capture is on."""
    attributes: Attributes = {
        "gen_ai.operation.name": OPERATION_CHAT,
        **_task_context(run, task),
        "gen_ai.response.finish_reasons": [finish_reason(step.finish_reason)],
        "thoughtline.step": step.number,
    }
    _add_response(attributes, step)
    _add_call_usage(
        attributes,
        task,
        input_tokens=step.input_tokens,
        output_tokens=step.output_tokens,
        reasoning_tokens=step.reasoning_tokens,
        cached_input_tokens=step.cached_input_tokens,
    )
    if step.number <= len(task.step_costs):
        attributes.update(call_cost_attributes(task.step_costs[step.number - 1]))
    if step.error_code is not None:
        attributes["error.type"] = step.error_code
    elif step.cancelled:
        attributes["thoughtline.step.cancelled"] = True
    messages = None
    if capture_content and step.recorded_reasoning is not None:
        messages = output_messages(
            step.recorded_reasoning, step.output, step.finish_reason, step.tool_calls
        )
    attributes["thoughtline.content_captured"] = messages is not None
    if messages is not None:
        attributes["gen_ai.output.messages"] = messages
    return redact_attributes(attributes, redactor)


def tool_attributes(
    task: Task, call: ToolCallRecord, *, capture_content: bool, redactor: Redactor
) -> Attributes:
    """Attributes of an ``execute_tool {name}`` span. The arguments and the result are
    attached only with content capture on, and only for a task whose mode records
    reasoning (the same opt-in as message content); redacted like every other string."""
    attributes: Attributes = {
        "gen_ai.operation.name": OPERATION_EXECUTE_TOOL,
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "extension",
        "thoughtline.task.id": task.id,
        "thoughtline.tool.server": call.server or "",
        "thoughtline.tool.status": call.status,
        "thoughtline.tool.step": call.step,
    }
    if call.error:
        attributes["error.type"] = call.error
    captured = capture_content and task.chain_of_thought in (
        "telemetry_only",
        "surface_and_telemetry",
    )
    attributes["thoughtline.content_captured"] = captured
    if captured:
        attributes["gen_ai.tool.call.arguments"] = call.arguments
        attributes["gen_ai.tool.call.result"] = call.result or ""
    return redact_attributes(attributes, redactor)


def _task_context(run: Run, task: Task) -> Attributes:
    """What every span of a task says of it, so each can be found by task or mode."""
    return {
        "gen_ai.provider.name": provider_name(task.provider),
        "gen_ai.request.model": task.model,
        "gen_ai.conversation.id": run.conversation_id or run.id,
        "thoughtline.run.id": run.id,
        "thoughtline.task.id": task.id,
        "thoughtline.task.name": task.name or task.role,
        "thoughtline.role": task.role,
        "thoughtline.endpoint": task.provider,
        "thoughtline.effort": task.effort,
        "thoughtline.chain_of_thought": task.chain_of_thought,
        "thoughtline.chain_of_thought.source": task.chain_of_thought_source,
    }


# thoughtline endpoint name -> OpenInference's llm.provider (its well-known values);
# other endpoints report their endpoint name.
OPENINFERENCE_PROVIDERS: Mapping[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gemini": "google",
    "deepseek": "deepseek",
}


def _add_call_usage(
    attributes: Attributes,
    task: Task,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    reasoning_tokens: int | None,
    cached_input_tokens: int | None,
    cache_write_tokens: int | None = None,
) -> None:
    """One model call's token counts, as GenAI usage and as an OpenInference LLM span:
    Phoenix prices a span from the latter (model, provider, token counts; it does not
    read ``llm.cost.*``). Only ``chat`` spans carry them, so a trace's calls are each
    counted once. Counts not reported are left out, never sent as 0."""
    _add_usage(
        attributes,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning_tokens=reasoning_tokens,
        cached_input_tokens=cached_input_tokens,
    )
    attributes["openinference.span.kind"] = "LLM"
    attributes["llm.model_name"] = task.model
    attributes["llm.provider"] = OPENINFERENCE_PROVIDERS.get(task.provider, task.provider)
    for name, value in (
        ("llm.token_count.prompt", input_tokens),
        ("llm.token_count.completion", output_tokens),
        ("llm.token_count.prompt_details.cache_read", cached_input_tokens),
        ("llm.token_count.prompt_details.cache_write", cache_write_tokens),
        ("llm.token_count.completion_details.reasoning", reasoning_tokens),
    ):
        if value is not None:
            attributes[name] = value
    if input_tokens is not None and output_tokens is not None:
        attributes["llm.token_count.total"] = input_tokens + output_tokens


def _add_usage(
    attributes: Attributes,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    reasoning_tokens: int | None,
    cached_input_tokens: int | None,
) -> None:
    # None means "not reported": such counts are left out, never sent as 0.
    for name, value in (
        ("gen_ai.usage.input_tokens", input_tokens),
        ("gen_ai.usage.output_tokens", output_tokens),
        ("gen_ai.usage.reasoning.output_tokens", reasoning_tokens),
        ("gen_ai.usage.cache_read.input_tokens", cached_input_tokens),
    ):
        if value is not None:
            attributes[name] = value


def output_messages(
    recorded_reasoning: Sequence[TracedReasoningPart],
    output: str | None,
    reason: str | None,
    tool_calls: Sequence[RequestedToolCall] = (),
) -> str | None:
    """``gen_ai.output.messages`` as JSON: one assistant message (one choice) whose parts
    are the recorded reasoning (text only: signatures and encrypted carriers stay in the
    trace), the answer text, then the tool calls it asked for. ``None`` when the call
    produced none of them."""
    parts: list[dict[str, object]] = [
        {"type": "reasoning", "content": part["text"]}
        for part in recorded_reasoning
        if part["text"]
    ]
    if output:
        parts.append({"type": "text", "content": output})
    parts.extend(
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": _arguments(call)}
        for call in tool_calls
    )
    if not parts:
        return None
    message = {"role": "assistant", "parts": parts, "finish_reason": finish_reason(reason)}
    return json.dumps([message], ensure_ascii=False)


def _arguments(call: RequestedToolCall) -> object:
    """The call's arguments as JSON when they parse (the conventions' structured form),
    else the text as it came."""
    try:
        return json.loads(call.arguments) if call.arguments else {}
    except json.JSONDecodeError:
        return call.arguments


def error_description(task: Task, redactor: Redactor) -> str | None:
    if task.error is None:
        return None
    return redactor.text(f"{task.error.code}: {task.error.message}")


def redact_attributes(attributes: Attributes, redactor: Redactor) -> Attributes:
    """Every string (and string in a list) through the redactor, once."""
    redacted: Attributes = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            redacted[key] = redactor.text(value)
        elif isinstance(value, bool | int | float):
            redacted[key] = value
        else:
            redacted[key] = [redactor.text(item) for item in value]
    return redacted


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_to_ns(value: str | None) -> int | None:
    """A stored ``...Z`` timestamp as nanoseconds since the epoch (``None`` if absent or
    unreadable)."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return ((moment - _EPOCH) // timedelta(microseconds=1)) * 1000

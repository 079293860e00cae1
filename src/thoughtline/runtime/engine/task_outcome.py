"""A task's outcome, recorded once from all of its steps when it ends: its answer,
finish and error from the last step; usage, reasoning and timings over all of them; the
reasoning status and its notice; its thread; the trace row, the telemetry report, the
live event and the stored row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import StreamError
from thoughtline.records import TaskError, now_iso
from thoughtline.runtime.engine.steps import Steps
from thoughtline.runtime.engine.telemetry_hooks import CallReport, first_chunk_ms
from thoughtline.runtime.policy.status import derive_reasoning_status

if TYPE_CHECKING:
    from thoughtline.runtime.engine.task_call import TaskCall


async def complete(call: TaskCall, steps: Steps) -> None:
    """Record ``call``'s task outcome from its steps, once: the last step's answer,
    finish and error; usage, reasoning and timings over all of them."""
    task = call.task
    sink = call.sink
    last = steps.last
    response = last.response
    # Stopped between model calls (while the last step's tool calls ran): every call
    # ended whole, so the reasoning is judged as for a task that ended, and the
    # notice says where the task stopped.
    cancelled = last.cancelled or call.stopped
    between = call.stopped and not last.cancelled and bool(response.tool_calls)
    cut = cancelled and not between  # a model call was stopped: its reasoning is cut
    # Over several steps the status speaks of the task: reasoning that arrived in an
    # earlier step was shown or recorded even when the last step returned none (the
    # notice then accounts for each step). A stopped task speaks of its last step,
    # and names it.
    judged = last
    if not cut:
        judged = next(
            (
                step
                for step in reversed(list(steps))
                if any(part.text for part in step.response.reasoning_parts)
            ),
            last,
        )
    # A task that was not cut speaks of all its calls' reasoning tokens and their
    # cost, as its table and footer do; a cut one of the step it was cut in.
    whole = len(steps) > 1 and not cut
    counted = [
        tokens for step in steps if (tokens := step.response.usage.reasoning_tokens) is not None
    ]
    verdict = derive_reasoning_status(
        gate=call.gate,
        response=judged.response,
        endpoint=sink.client_for(task.provider).endpoint,
        capability=judged.capability,
        cancelled=cut,
        stopped_by=sink.stopped_by(),
        cost=task.cost if whole else call.step_cost(judged),
        step=judged.number if len(steps) > 1 else None,
        reasoning_tokens=sum(counted) if whole and counted else None,
    )
    task.output = last.captured.output
    task.reasoning = steps.task_text()
    task.reasoning_parts = steps.for_task()
    task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
    if len(steps) > 1 and task.reasoning_notice is not None:
        task.reasoning_notice += steps.reasoning_account(
            call.gate.displays, task.step_costs, stopped=last.number if cut else None
        )
    if between and task.reasoning_notice is not None:
        lead = sink.stopped_by() or "The task was cancelled"
        task.reasoning_notice += f" {lead} while the tool calls of step {last.number} ran."
    if task.reasoning_notice is not None:
        # Reasoning sent back that the provider left unread is part of the account.
        for step in steps:
            for warning in step.response.warnings:
                if warning.code == "PROVIDER_THINKING_DROPPED":
                    task.reasoning_notice += f" Step {step.number}: {warning.message}"
                elif warning.code == "TOOL_TURNS_AS_TEXT":  # the wire's own choice
                    task.reasoning_notice += f" {warning.message}"
    if call.budget_error is not None and task.reasoning_notice is not None:
        # The account of the reasoning says what the budget stopped, and at what spend.
        task.reasoning_notice += f" {call.budget_error.message}"
    note = None if task.history is None else task.history["note"]
    if note and task.reasoning_notice is not None:
        task.reasoning_notice += f" {note}"
    if call.prepared is not None:
        task.thread = call.thread(call.prepared, steps)
    if task.client_turns is not None:
        # The gate's parts, carriers byte for byte: the client's answer, and what the
        # gateway keeps in memory for the client's next call.
        task.reply = response
    task.usage = steps.usage()
    task.finish_reason = None if response.finish is None else response.finish.reason
    task.timings.first_reasoning_ms = steps.first_reasoning_ms()
    task.timings.first_answer_ms = steps.first_answer_ms()
    task.timings.total_ms = steps.total_ms()
    if not call.gate.requests_reasoning:
        # Hidden: reasoning a provider sent anyway was dropped, and so is when it came.
        task.timings.first_reasoning_ms = None
    error = (
        sink.stop_error
        if cancelled
        else task_error(
            response,
            last.captured.reasoned,
            # Tool calls are an answer where tools run here or the client runs them.
            runs_tools=call.tool_calls is not None or task.client_turns is not None,
        )
    )
    if error is None and call.budget_error is not None:
        error = call.budget_error
    if error is None and call.failure is not None:
        error = call.failure
    if error is None and call.limit_reached:
        error = TaskError(
            code="MAX_STEPS_REACHED",
            message=f"The model still called tools after {len(steps)} model calls, the "
            "task's max_steps; what arrived is kept (raise max_steps in the role, the "
            "plan, [orchestration] or --max-steps).",
            retryable=False,
        )
    if error is not None and last.overlapped and error.code in OVERLAP_SENSITIVE:
        error.message += (
            f" Another task called {task.provider} at the same time: a local server that "
            "serves one request at a time drops the stream it was serving when the next "
            f"arrives (set [providers.{task.provider}] max_concurrency = 1)."
        )
    for step in steps:
        answered = step.response
        if answered.model and any(w.code == "PROVIDER_MODEL_FALLBACK" for w in answered.warnings):
            task.model = answered.model  # the model that answered, not the one asked for
    status = sink.stop_status if cancelled else ("failed" if error else "done")
    task.status = status
    task.error = error
    task.timings.finished_at = now_iso()
    sink.add_trace(
        "worker.failed" if error else (f"task.{status}" if cancelled else "worker.completed"),
        task_id=task.id,
        metadata={
            "status": status,
            "reasoning_status": task.reasoning_status,
            "reasoning_notice": task.reasoning_notice,
            "usage": task.usage.to_dict(),
            "timings": task.timings.to_dict(),
            "finish": None
            if response.finish is None
            else {"reason": response.finish.reason, "raw": response.finish.raw_reason},
            "warnings": [
                {"code": w.code, "message": w.message}
                for step in steps
                for w in step.response.warnings
            ],
            "error": None if error is None else error.to_dict(),
            "output_chars": len(response.text),
        },
    )
    # Telemetry hook: reasoning goes to it ONLY as the gate handed it to the trace
    # (for_trace, None unless the mode records reasoning) — never from
    # response.reasoning_parts.
    exchange = last.exchange
    sink.report_call(
        task,
        CallReport(
            recorded_reasoning=steps.for_trace(),
            response_model=response.model,
            response_id=response.response_id,
            finish_reason=None if response.finish is None else response.finish.reason,
            cached_input_tokens=response.usage.cached_input_tokens,
            streamed=exchange is not None and exchange.streamed,
            time_to_first_chunk_ms=first_chunk_ms(exchange),
            steps=steps.reports(),
        ),
    )
    sink.emit_task_completed(task)
    await sink.persist(task=task)


OVERLAP_SENSITIVE = frozenset(
    {"PROVIDER_STREAM_INTERRUPTED", "PROVIDER_UNREACHABLE", "PROVIDER_SERVER_ERROR"}
)
"""Errors a server that serves one request at a time gives the call it drops."""


def task_error(response: ModelResponse, reasoned: bool, *, runs_tools: bool) -> TaskError | None:
    """The task's error for a response that ended without a usable answer, else None.
    ``reasoned``: reasoning text arrived (whether or not the mode let it through).
    Tool calls are an answer only for a task that ``runs_tools``: a model that calls a
    tool its turn does not offer (as models do after earlier tool turns) answered
    nothing."""
    error: StreamError | None = response.error
    if error is not None:
        return TaskError(
            code=error.code,
            message=error.message,
            retryable=error.retryable,
            retry_after_s=error.retry_after_s,
        )
    if response.finish is not None and response.finish.reason == "content_filter":
        return TaskError(
            code="PROVIDER_CONTENT_FILTERED",
            message="The provider's content filter stopped the answer.",
            retryable=False,
        )
    if response.text.strip():
        return None
    if response.tool_calls and not runs_tools:
        names = ", ".join(sorted({call.name for call in response.tool_calls}))
        return TaskError(
            code="PROVIDER_EMPTY_CONTENT",
            message=f"The model called {names}, which this turn does not offer, and gave "
            "no answer; give the task its tools again or ask again.",
            retryable=True,
        )
    if not response.tool_calls:
        if reasoned:
            return TaskError(
                code="PROVIDER_REASONING_ONLY",
                message="The model reasoned but gave no answer (often the output token "
                "limit was spent on reasoning). Raise max tokens or lower the effort.",
                retryable=True,
            )
        return TaskError(
            code="PROVIDER_EMPTY_CONTENT",
            message="The provider returned an empty answer.",
            retryable=True,
        )
    return None

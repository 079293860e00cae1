"""One task through its worker backend, with the disclosure gate applied to everything.

The provider backend streams the model's answer (and reasoning, when the task's mode asks
for it) through :class:`~thoughtline.runtime.disclosure.DisclosureGate`: live deltas reach
the run's observers only as the gate lets them through, and the task, the trace layers and
telemetry receive only the gate's cleaned copy of the response. The inline backend
prepares the prompts, records them and calls nothing.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from thoughtline.accumulator import ModelResponse
from thoughtline.events import ReasoningDelta, StreamError, StreamEvent, TextDelta
from thoughtline.providers.client import ProviderCall
from thoughtline.providers.exchange import Exchange
from thoughtline.records import Task, TaskError, TaskUsage, now_iso
from thoughtline.requests import Message, ModelRequest, ReasoningRequest
from thoughtline.runtime.clients import CallOverlap
from thoughtline.runtime.disclosure import DisclosureGate, LiveStream
from thoughtline.runtime.status import derive_reasoning_status, inline_verdict
from thoughtline.runtime.telemetry_hooks import CallReport, first_chunk_ms, notify

if TYPE_CHECKING:
    from thoughtline.runtime.execution import RunExecution


class TaskCall:
    """One task through its worker backend, with the gate applied to everything."""

    def __init__(self, execution: RunExecution, task: Task) -> None:
        self.execution = execution
        self.task = task
        self.runtime = execution.runtime
        self.gate = DisclosureGate(task.chain_of_thought, self.runtime.redactor)
        self.call_started = 0.0
        self.first_reasoning_at: float | None = None
        self.first_answer_at: float | None = None

    def saw(self, event: object) -> None:
        """Note when the first reasoning and the first answer text arrived."""
        kind = type(event)
        if kind is TextDelta:
            if self.first_answer_at is None:
                self.first_answer_at = time.perf_counter()
        elif kind is ReasoningDelta and self.first_reasoning_at is None:
            self.first_reasoning_at = time.perf_counter()

    def elapsed_ms(self, at: float | None) -> float | None:
        return None if at is None else round((at - self.call_started) * 1000.0, 3)

    async def go(self) -> None:
        task = self.task
        execution = self.execution
        task.status = "running"
        task.timings.started_at = now_iso()
        role = self.runtime.roles.get(task.role)
        prompt = execution.handoff(task)
        if execution.run.worker_backend == "inline":
            task.executor = "inline:prepared"
            await self.started()
            execution.trace.add(
                "worker.prepared",
                task_id=task.id,
                metadata={"system": role.prompt, "prompt": prompt, "model": task.model},
            )
            verdict = inline_verdict()
            task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
            await execution.finish_task(task, status="prepared")
            return
        task.executor = f"provider:{task.provider}:{task.model}"
        await self.started()
        client = execution.client_for(task.provider)
        generation = task.generation
        request = ModelRequest(
            model=task.model,
            system=role.prompt,
            messages=(Message(role="user", content=prompt),),
            reasoning=ReasoningRequest(
                enabled=self.gate.requests_reasoning,
                effort=task.effort,
            ),
            max_output_tokens=generation.max_output_tokens,
            temperature=generation.temperature,
        )
        call = client.call(request)
        execution.trace.add(
            "worker.requested",
            task_id=task.id,
            metadata={
                "endpoint": task.provider,
                "wire_api": client.endpoint.wire_api,
                "base_url": client.redactor.url(client.endpoint.base_url),
                "model": task.model,
                "reasoning_requested": self.gate.requests_reasoning,
                "effort": task.effort,
                "max_output_tokens": generation.max_output_tokens,
                "temperature": generation.temperature,
                "capability": call.context.capability.describe(),
            },
        )
        cancelled = False
        overlap = CallOverlap()
        # Timed here too: a cancelled call never builds its exchange (and its timings).
        self.call_started = time.perf_counter()
        try:
            # Waits here while the endpoint's max_concurrency calls are running.
            async with self.runtime.clients.calling(task.provider) as overlap:
                self.call_started = time.perf_counter()
                async with call:
                    async for batch in call.batches():
                        self.show(batch)
        except asyncio.CancelledError:
            cancelled = True
        await self.complete(call, cancelled=cancelled, overlapped=overlap.overlapped)
        if cancelled:
            raise asyncio.CancelledError

    def show(self, batch: list[StreamEvent]) -> None:
        """Hand what the gate releases of one network chunk to the live surfaces: one
        delta per stream per chunk, as text that arrived together is shown together (a
        fast or buffered stream brings hundreds of deltas at once, and each live event
        costs every surface, the event log and every subscriber)."""
        execution, task_id = self.execution, self.task.id
        stream: LiveStream = "answer"
        pieces: list[str] = []
        for event in batch:
            if self.first_answer_at is None:
                self.saw(event)
            live = self.gate.live(event)
            if live is None:
                continue
            if pieces and live[0] != stream:
                execution.emit_text(task_id, stream, "".join(pieces))
                pieces.clear()
            stream = live[0]
            pieces.append(live[1])
        if pieces:
            execution.emit_text(task_id, stream, "".join(pieces))

    async def started(self) -> None:
        task = self.task
        self.execution.trace.add(
            "task.started",
            task_id=task.id,
            metadata={
                "role": task.role,
                "executor": task.executor,
                "chain_of_thought": task.chain_of_thought,
                "chain_of_thought_source": task.chain_of_thought_source,
            },
        )
        self.execution.emit_task_started(task)
        await self.execution.persist(task=task)

    async def complete(self, call: ProviderCall, *, cancelled: bool, overlapped: bool) -> None:
        """Route the outcome through the gate, then record it (task, trace layers)."""
        task = self.task
        execution = self.execution
        for stream, text in self.gate.finish():  # tails held back as a possible credential
            execution.emit_text(task.id, stream, text)
        client = execution.client_for(task.provider)
        # From here on only the gate's cleaned copy of the response is read.
        captured = self.gate.capture(call.response)
        response = captured.response
        verdict = derive_reasoning_status(
            gate=self.gate,
            response=response,
            endpoint=client.endpoint,
            capability=call.context.capability,
            cancelled=cancelled,
            stopped_by=execution.stopped_by(),
        )
        task.output = captured.output
        task.reasoning = captured.task_text
        task.reasoning_parts = captured.for_task
        task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
        usage = response.usage
        task.usage = TaskUsage(
            input_tokens=_count(usage.input_tokens),
            output_tokens=_count(usage.output_tokens),
            reasoning_tokens=_count(usage.reasoning_tokens),
            cached_input_tokens=_count(usage.cached_input_tokens),
            cache_write_tokens=_count(usage.cache_write_tokens),
        )
        task.finish_reason = None if response.finish is None else response.finish.reason
        exchange = call.exchange
        if exchange is not None:
            task.timings.first_reasoning_ms = exchange.timings.first_reasoning_ms
            task.timings.first_answer_ms = exchange.timings.first_text_ms
            task.timings.total_ms = exchange.timings.total_ms
        else:  # cancelled mid-call: keep what this task saw happen
            task.timings.first_reasoning_ms = self.elapsed_ms(self.first_reasoning_at)
            task.timings.first_answer_ms = self.elapsed_ms(self.first_answer_at)
            task.timings.total_ms = self.elapsed_ms(time.perf_counter())
        if not self.gate.requests_reasoning:
            # Hidden: reasoning a provider sent anyway was dropped, and so is when it came.
            task.timings.first_reasoning_ms = None
        if captured.for_trace:  # recording mode and something arrived
            execution.trace.add(
                "worker.reasoning",
                layer="reasoning",
                task_id=task.id,
                metadata={"reasoning": captured.trace_text, "parts": captured.for_trace},
            )
        if exchange is not None and self.runtime.config.trace_provider_raw:
            execution.trace.add(
                "provider.exchange",
                layer="provider_raw",
                task_id=task.id,
                metadata=self.raw_exchange(exchange, response, captured.echoed_credential),
            )
        error = None if cancelled else task_error(response)
        if error is not None and overlapped and error.code in OVERLAP_SENSITIVE:
            error.message += (
                f" Another task called {task.provider} at the same time: a local server that "
                "serves one request at a time drops the stream it was serving when the next "
                f"arrives (set [providers.{task.provider}] max_concurrency = 1)."
            )
        if response.model and any(w.code == "PROVIDER_MODEL_FALLBACK" for w in response.warnings):
            task.model = response.model  # the model that answered, not the one asked for
        status = execution.stop_status if cancelled else ("failed" if error else "done")
        task.status = status
        task.error = error
        task.timings.finished_at = now_iso()
        execution.trace.add(
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
                "warnings": [{"code": w.code, "message": w.message} for w in response.warnings],
                "error": None if error is None else error.to_dict(),
                "output_chars": len(response.text),
            },
        )
        # Telemetry hook: reasoning goes to it ONLY as the gate handed it to the trace
        # (captured.for_trace, None unless the mode records reasoning) — never from
        # response.reasoning_parts.
        notify(
            self.runtime.telemetry,
            lambda hook: hook.task_finished(
                execution.run,
                task,
                CallReport(
                    recorded_reasoning=captured.for_trace,
                    response_model=response.model,
                    response_id=response.response_id,
                    finish_reason=None if response.finish is None else response.finish.reason,
                    cached_input_tokens=response.usage.cached_input_tokens,
                    streamed=exchange is not None and exchange.streamed,
                    time_to_first_chunk_ms=first_chunk_ms(exchange),
                ),
            ),
        )
        execution.emit_task_completed(task)
        await execution.persist(task=task)

    def raw_exchange(
        self, exchange: Exchange, response: ModelResponse, echoed_credential: bool
    ) -> dict[str, Any]:
        """The exchange for the provider_raw layer, reasoning scrubbed unless recorded.

        When the model echoed a loaded key, its pieces cut across the stream's strings are
        removed too (the transport redacted whole values only, as the chunks arrived)."""
        raw = exchange.to_dict()
        body = exchange.response_body
        if body is not None and echoed_credential:
            body = self.gate.redactor.split_pieces(body)
            raw["response_body"] = body.decode("utf-8", errors="replace")
        if not self.gate.requests_reasoning:  # hidden: no reasoning-derived timing either
            raw["timings"]["first_reasoning_ms"] = None
        if (
            not self.gate.records
            and body is not None
            and (exchange.status is None or exchange.status < 400)
        ):
            from thoughtline.runtime.scrub import scrub_reasoning

            client = self.execution.client_for(self.task.provider)
            scrubbed = scrub_reasoning(
                body,
                wire_api=exchange.wire_api,
                streamed=exchange.streamed,
                endpoint=client.endpoint,
            )
            raw["response_body"] = scrubbed.decode("utf-8", errors="replace")
            raw["reasoning_scrubbed"] = True
        else:
            raw["reasoning_scrubbed"] = False
        raw["token_diagnostics"] = {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "reasoning_tokens": response.usage.reasoning_tokens,
            "cached_input_tokens": response.usage.cached_input_tokens,
            "total_tokens": response.usage.total_tokens,
        }
        return raw


_MAX_COUNT = 2**53 - 1  # exact in every JSON reader, and storable by every store


def _count(value: int | None) -> int | None:
    """A token count as the provider reported it, or ``None`` (not reported) for one no
    real call can have: negative, or too large to store and read back exactly."""
    return value if value is None or 0 <= value <= _MAX_COUNT else None


OVERLAP_SENSITIVE = frozenset(
    {"PROVIDER_STREAM_INTERRUPTED", "PROVIDER_UNREACHABLE", "PROVIDER_SERVER_ERROR"}
)
"""Errors a server that serves one request at a time gives the call it drops."""


def task_error(response: ModelResponse) -> TaskError | None:
    """The task's error for a response that ended without a usable answer, else None."""
    error: StreamError | None = response.error
    if error is not None:
        return TaskError(code=error.code, message=error.message, retryable=error.retryable)
    if response.finish is not None and response.finish.reason == "content_filter":
        return TaskError(
            code="PROVIDER_CONTENT_FILTERED",
            message="The provider's content filter stopped the answer.",
            retryable=False,
        )
    if not response.text and not response.tool_calls:
        if any(part.text for part in response.reasoning_parts):
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

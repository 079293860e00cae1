"""OpenTelemetry spans for runs and model calls (the ``[otel]`` extra).

One ``thoughtline run`` span (INTERNAL) per run. Under it, a task without tools is one
``chat {model}`` span (CLIENT) with the task's real start and end times. A task that may
call tools is an agent, as the GenAI agent conventions draw it: an ``invoke_agent {role}``
span (INTERNAL) with the task's outcome, and under it, side by side in time order, one
``chat {model}`` span (CLIENT) per model call (step) and one ``execute_tool {name}`` span
(INTERNAL) per tool call, each with its own times. The spans go through the given span
processor — for export, a ``BatchSpanProcessor`` around the OTLP/HTTP exporter, which
reads the standard ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, compression,
TLS). The tracer provider is private to this object: thoughtline never replaces the
process's global provider.
"""

from __future__ import annotations

import logging
import threading
import time

from thoughtline.errors import ThoughtlineError
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run, Task, ToolCallRecord
from thoughtline.runtime import CallReport, StepReport
from thoughtline.telemetry.attributes import (
    RUN_SPAN_NAME,
    agent_attributes,
    agent_span_name,
    error_description,
    is_agent,
    iso_to_ns,
    run_attributes,
    run_end_attributes,
    run_failed,
    step_attributes,
    task_attributes,
    task_span_name,
    tool_attributes,
    tool_span_name,
)
from thoughtline.telemetry.settings import TelemetrySettings

try:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ThoughtlineError(
        "TELEMETRY_UNAVAILABLE",
        "OpenTelemetry export needs the otel extra: pip install 'thoughtline[otel]'.",
    ) from exc

logger = logging.getLogger(__name__)

INSTRUMENTATION_NAME = "thoughtline"
DEFAULT_SERVICE_NAME = "thoughtline"
FLUSH_TIMEOUT_MS = 30_000


class OtelTelemetry:
    """A :class:`~thoughtline.runtime.engine.telemetry_hooks.RunTelemetry` that records spans.

    ``capture_content`` opts in to ``gen_ai.output.messages``; it still applies only to
    tasks whose mode records reasoning. ``redactor`` should be the runtime's (the keys the
    process loaded); everything attached passes it.
    """

    def __init__(
        self,
        span_processor: SpanProcessor,
        *,
        capture_content: bool = False,
        redactor: Redactor | None = None,
        resource: Resource | None = None,
    ) -> None:
        self.capture_content = capture_content
        self.redactor = redactor or Redactor()
        self._provider = TracerProvider(
            resource=resource or default_resource(), shutdown_on_exit=False
        )
        self._provider.add_span_processor(span_processor)
        from thoughtline import __version__

        self._tracer = self._provider.get_tracer(INSTRUMENTATION_NAME, __version__)
        self._runs: dict[str, trace.Span] = {}
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def otlp(
        cls, settings: TelemetrySettings, *, redactor: Redactor | None = None
    ) -> OtelTelemetry:
        """Export over OTLP/HTTP in batches, configured by ``settings`` and ``OTEL_*``."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=settings.traces_endpoint)
        return cls(
            BatchSpanProcessor(exporter),
            capture_content=settings.capture_content,
            redactor=redactor,
        )

    # -- the hook ------------------------------------------------------------------
    def run_started(self, run: Run) -> None:
        self._run_span(run, start_ns=_now_ms_ns())

    def task_finished(self, run: Run, task: Task, report: CallReport) -> None:
        parent = self._run_span(run, start_ns=iso_to_ns(run.created_at))
        if is_agent(task):
            self._agent_spans(parent, run, task, report)
            return
        attributes = task_attributes(
            run, task, report, capture_content=self.capture_content, redactor=self.redactor
        )
        end_ns = iso_to_ns(task.timings.finished_at) or time.time_ns()
        start_ns = iso_to_ns(task.timings.started_at) or end_ns
        span = self._tracer.start_span(
            task_span_name(task),
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=start_ns,
        )
        if task.status == "failed":
            span.set_status(Status(StatusCode.ERROR, error_description(task, self.redactor)))
        span.end(end_time=max(end_ns, start_ns))

    def _agent_spans(self, parent: trace.Span, run: Run, task: Task, report: CallReport) -> None:
        """An ``invoke_agent`` span around the task's steps and tool calls. Its times
        cover every child's, as the stored task times are cut to the millisecond."""
        calls = list(task.tool_calls or ())
        tool_times = [self._tool_times(call) for call in calls]
        end_ns = iso_to_ns(task.timings.finished_at) or time.time_ns()
        start_ns = iso_to_ns(task.timings.started_at) or end_ns
        starts = [start_ns, *(step.started_ns for step in report.steps)]
        ends = [end_ns, *(step.ended_ns for step in report.steps)]
        starts.extend(start for start, _ in tool_times)
        ends.extend(end for _, end in tool_times)
        agent = self._tracer.start_span(
            agent_span_name(task),
            context=trace.set_span_in_context(parent),
            kind=SpanKind.INTERNAL,
            attributes=agent_attributes(run, task, report, redactor=self.redactor),
            start_time=min(starts),
        )
        context = trace.set_span_in_context(agent)
        calls_of: dict[int, list[int]] = {}
        for index, call in enumerate(calls):
            calls_of.setdefault(call.step, []).append(index)
        for step in report.steps:
            self._step_span(context, run, task, step)
            for index in calls_of.pop(step.number, ()):
                self._tool_span(context, task, calls[index], tool_times[index])
        for indexes in calls_of.values():  # calls of a step that reported nothing
            for index in indexes:
                self._tool_span(context, task, calls[index], tool_times[index])
        if task.status == "failed":
            agent.set_status(Status(StatusCode.ERROR, error_description(task, self.redactor)))
        agent.end(end_time=max(ends))

    def _step_span(self, context: Context, run: Run, task: Task, step: StepReport) -> None:
        """One ``chat {model}`` span per model call of an agent task."""
        span = self._tracer.start_span(
            task_span_name(task),
            context=context,
            kind=SpanKind.CLIENT,
            attributes=step_attributes(
                run, task, step, capture_content=self.capture_content, redactor=self.redactor
            ),
            start_time=step.started_ns,
        )
        if step.error_code is not None:
            span.set_status(Status(StatusCode.ERROR, step.error_code))
        span.end(end_time=step.ended_ns)

    def _tool_span(
        self, context: Context, task: Task, call: ToolCallRecord, times: tuple[int, int]
    ) -> None:
        """One ``execute_tool {name}`` span per tool call, beside the step that asked."""
        start_ns, end_ns = times
        span = self._tracer.start_span(
            tool_span_name(call),
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=tool_attributes(
                task, call, capture_content=self.capture_content, redactor=self.redactor
            ),
            start_time=start_ns,
        )
        if call.is_error:
            span.set_status(Status(StatusCode.ERROR, call.error or call.status))
        span.end(end_time=end_ns)

    @staticmethod
    def _tool_times(call: ToolCallRecord) -> tuple[int, int]:
        start_ns = iso_to_ns(call.started_at) or time.time_ns()
        return start_ns, start_ns + int((call.duration_ms or 0.0) * 1_000_000)

    def run_finished(self, run: Run) -> None:
        with self._lock:
            span = self._runs.pop(run.id, None)
        if span is None:  # the hook was attached after the run started
            span = self._start_run_span(run, iso_to_ns(run.created_at))
        span.set_attributes(run_end_attributes(run))
        if run_failed(run):
            span.set_status(Status(StatusCode.ERROR, f"run {run.status}"))
        span.end()

    # -- lifecycle -----------------------------------------------------------------
    def force_flush(self, timeout_millis: int = FLUSH_TIMEOUT_MS) -> bool:
        """Export every finished span now (blocking up to the timeout)."""
        return self._provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and stop (idempotent). Spans of runs still open are ended first, so a
        process that stops mid-run still reports what it did."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            open_spans, self._runs = list(self._runs.values()), {}
        for span in open_spans:
            span.set_attribute("thoughtline.run.status", "unfinished")
            span.end()
        self._provider.shutdown()

    # -- helpers -------------------------------------------------------------------
    def _run_span(self, run: Run, *, start_ns: int | None) -> trace.Span:
        with self._lock:
            span = self._runs.get(run.id)
            if span is None:
                span = self._start_run_span(run, start_ns)
                self._runs[run.id] = span
            return span

    def _start_run_span(self, run: Run, start_ns: int | None) -> trace.Span:
        return self._tracer.start_span(
            RUN_SPAN_NAME,
            kind=SpanKind.INTERNAL,
            attributes=run_attributes(run),
            start_time=start_ns,
        )


def default_resource() -> Resource:
    """The SDK's resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), with
    ``service.name = thoughtline`` when neither names the service."""
    resource = Resource.create({})
    name = resource.attributes.get(SERVICE_NAME)
    if not name or str(name).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def _now_ms_ns() -> int:
    """Now, truncated to the millisecond like the task timestamps it frames, so a run
    span never starts after its first task."""
    return time.time_ns() // 1_000_000 * 1_000_000

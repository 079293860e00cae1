"""A run's record as it happens: numbered live events for the observer, the trace, and
each transition queued as one durable write for the runtime's
:class:`~thoughtline.runtime.engine.store_writer.StoreWriter`.

:class:`~thoughtline.runtime.engine.execution.RunExecution` is a recorder that also runs the
tasks; this half only tells and writes, against :class:`RunServices` (what a run uses of
the runtime that started it), never the whole :class:`~thoughtline.runtime.engine.runner.Runtime`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from thoughtline.config.pricing import Pricer
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run, Task, ToolCallRecord, TraceLayer, now_iso
from thoughtline.records.event_log import to_records
from thoughtline.records.run_events import (
    ReasoningEdge,
    RunEvent,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
    TaskStepPriced,
    TaskToolCallCompleted,
    TaskToolCallStarted,
)
from thoughtline.runtime.engine.clients import SharedClients
from thoughtline.runtime.engine.store_writer import StoreWriter
from thoughtline.runtime.engine.telemetry_hooks import RunTelemetry
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.planning.run_tools import RunTools
from thoughtline.runtime.planning.toolbox import StartedTools
from thoughtline.runtime.policy.disclosure import LiveStream
from thoughtline.runtime.policy.trace import TraceWriter
from thoughtline.store.base import PreparedWrite, Store, StoreError
from thoughtline.tools.notices import Listener

RunObserver = Callable[[RunEvent], None]


class StartTools(Protocol):
    """Starts the tool servers a run's tasks may call
    (:meth:`~thoughtline.runtime.engine.runner.Runtime.start_tools`)."""

    def __call__(
        self,
        run: Run,
        *,
        tools: RunTools | None = None,
        check: bool = True,
        listener: Listener | None = None,
    ) -> Awaitable[StartedTools | None]: ...


@dataclass(frozen=True)
class RunServices:
    """What one run uses of the runtime that started it, and nothing more."""

    store: Store
    """Builds each write (``prepare``); the writer commits it."""
    writer: StoreWriter
    clients: SharedClients
    roles: RoleCatalog
    redactor: Redactor
    pricer: Pricer
    telemetry: RunTelemetry | None
    retention: dict[TraceLayer, int | None]
    max_concurrency: int
    tool_timeout_s: float
    trace_provider_raw: bool
    start_tools: StartTools


class RunRecorder:
    """Tells and writes what a run does: numbered live events (the observer hears them at
    once), trace events, and each transition as one queued write."""

    def __init__(self, services: RunServices, run: Run, observer: RunObserver | None) -> None:
        self.services = services
        self.run = run
        self.observer = observer
        self.trace = TraceWriter(run.id, services.retention)
        self.seq = 0
        self.pending_events: list[RunEvent] = []
        self.store_failure: StoreError | None = None

    def store_failed(self, error: StoreError) -> None:
        """A queued write failed; the execution stops the run
        (:meth:`~thoughtline.runtime.engine.execution.RunExecution.store_failed`)."""
        raise NotImplementedError

    def add_trace(
        self,
        type_: str,
        *,
        layer: TraceLayer = "answer",
        task_id: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> str:
        """A trace event, written with the next transition (:meth:`persist`); its id."""
        return self.trace.add(type_, layer=layer, task_id=task_id, metadata=metadata).id

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def emit(self, event: RunEvent, *, observed: bool = True) -> None:
        """Queue a numbered event (from :meth:`next_seq`) for the store's event log and
        tell the observer (unless ``observed`` is off: the run's end is told once it is
        written). Reasoning deltas only get here when the gate let them through."""
        if not self.pending_events:
            self.services.writer.want_live(self)
        self.pending_events.append(event)
        if observed and self.observer is not None:
            self.observer(event)

    def emit_text(self, task_id: str, stream: LiveStream, text: str) -> None:
        """A live delta of one task's answer or displayed reasoning."""
        self.seq = seq = self.seq + 1
        delta = TaskAnswerDelta if stream == "answer" else TaskReasoningDelta
        self.emit(delta(run_id=self.run.id, seq=seq, at=now_iso(), task_id=task_id, text=text))

    def emit_reasoning_edge(self, task_id: str, edge: ReasoningEdge) -> None:
        """A displayed reasoning part's start or end with its carriers, for the observer
        alone (a gateway task's client stream): an empty delta under the last number,
        never queued for the event log."""
        if self.observer is not None:
            self.observer(
                TaskReasoningDelta(
                    run_id=self.run.id,
                    seq=self.seq,
                    at=now_iso(),
                    task_id=task_id,
                    text="",
                    part_id=edge.part_id,
                    kind=edge.kind,
                    edge=edge,
                )
            )

    def emit_tool_call(self, task: Task, call: ToolCallRecord) -> None:
        """Tell the call live, and queue its row with that event and the trace before it
        (the writer batches them with the run's other writes)."""
        kind = TaskToolCallStarted if call.status == "running" else TaskToolCallCompleted
        self.emit(
            kind(
                run_id=self.run.id,
                seq=self.next_seq(),
                at=now_iso(),
                task_id=task.id,
                call=call.to_dict(),
            )
        )
        self._queue(tool_calls=[(task, _position(task, call))])

    def emit_task_started(self, task: Task) -> None:
        self.emit(
            TaskStarted(
                run_id=self.run.id,
                seq=self.next_seq(),
                at=now_iso(),
                task_id=task.id,
                task=task.to_dict(),
            )
        )

    def emit_step_priced(self, task: Task, step: int) -> None:
        self.emit(
            TaskStepPriced(
                run_id=self.run.id,
                seq=self.next_seq(),
                at=now_iso(),
                task_id=task.id,
                step=step,
                cost=task.cost.to_dict(),
            )
        )

    def emit_task_completed(self, task: Task) -> None:
        self.emit(
            TaskCompleted(
                run_id=self.run.id,
                seq=self.next_seq(),
                at=now_iso(),
                task_id=task.id,
                task=task.to_dict(),
            )
        )

    def take_live(self) -> PreparedWrite | None:
        """The live events since the last write, for the writer's periodic flush: other
        processes (and machines) follow the run through the event log."""
        events, self.pending_events = self.pending_events, []
        if not events or self.store_failure is not None:
            return None
        return self.services.store.prepare(events=to_records(events))

    async def persist(self, *, task: Task | None = None, run: bool = False) -> None:
        """Queue a transition — the live events so far, the task (or run) row and the
        trace events it produced — as one write, rows built now (so a row never says
        more than the event log written with it). The task moves on at once; the writer
        commits within milliseconds, and :meth:`go` waits for it before the run ends."""
        self._queue(task=task, run=run)

    def _queue(
        self,
        *,
        task: Task | None = None,
        run: bool = False,
        tool_calls: Sequence[tuple[Task, int]] = (),
    ) -> None:
        """Hand the writer the live and trace events so far with the rows named."""
        events, self.pending_events = self.pending_events, []
        trace = self.trace.take()
        if self.store_failure is not None:
            return
        self.services.writer.submit(
            self.services.store.prepare(
                events=to_records(events),
                run=self.run if run else None,
                tasks=[task] if task is not None else [],
                trace=trace,
                tool_calls=tool_calls,
            ),
            self.store_failed,
        )


def _position(task: Task, call: ToolCallRecord) -> int:
    """Where ``call`` is among the task's calls (looked for from the end: the calls in
    flight are the latest few)."""
    calls = task.tool_calls or []
    for position in range(len(calls) - 1, -1, -1):
        if calls[position] is call:
            return position
    raise ValueError(f"tool call {call.id!r} is not one of task {task.id!r}'s calls")

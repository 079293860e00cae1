"""The live events of a run: one closed union, and the one place each is named on the wire.

A run numbers its events from 1 (``seq``, the same number the store's event log keeps and
the SSE event id). The runtime emits them; the CLI live view, the daemon's hub and event
stream, MCP progress and ACP updates consume them with an exhaustive ``match``::

    match event:
        case RunStarted(): ...
        case TaskStarted() | TaskCompleted(): ...
        case TaskAnswerDelta() | TaskReasoningDelta(): ...
        case TaskToolCallStarted() | TaskToolCallCompleted(): ...
        case TaskStepPriced(): ...
        case ToolServerStart(): ...
        case RunCompleted() | RunFailed() | RunCancelled() | RunInterrupted(): ...
        case _:
            assert_never(event)

Each event has exactly one wire name (``wire_name``), used by the store's event log and by
the SSE ``event:`` line; :mod:`thoughtline.records.event_log` converts events to and from the
store's :class:`~thoughtline.records.RunEventRecord`, and :func:`sse_data` gives the JSON
of the SSE ``data:`` line. Nothing else spells an event's wire name.

``TaskReasoningDelta`` events exist only for tasks whose mode displays reasoning: the
disclosure gate filters before events are numbered, stored or sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias, assert_never

from thoughtline.model.events import ProviderMetadata, ReasoningKind, fast_init
from thoughtline.records import (
    CostSnapshot,
    RunSnapshot,
    RunStatus,
    TaskSnapshot,
    ToolCallSnapshot,
    ToolServerData,
    ToolServerError,
)

__all__ = [
    "MEMBERS",
    "ReasoningEdge",
    "RunCancelled",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunInterrupted",
    "RunStarted",
    "TaskAnswerDelta",
    "TaskCompleted",
    "TaskReasoningDelta",
    "TaskStarted",
    "TaskStepPriced",
    "TaskToolCall",
    "TaskToolCallCompleted",
    "TaskToolCallStarted",
    "ToolServerStart",
    "ToolServerState",
    "is_terminal",
    "run_finished",
    "sse_data",
    "tool_server_data",
    "tool_server_start",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted:
    """The run began executing; ``snapshot`` is the run as planned (``thoughtline.run/v1``)."""

    wire_name: ClassVar[Literal["run.started"]] = "run.started"
    run_id: str
    seq: int
    at: str
    snapshot: RunSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStarted:
    """A task began; ``task`` is the task as in the snapshot."""

    wire_name: ClassVar[Literal["task.started"]] = "task.started"
    run_id: str
    seq: int
    at: str
    task_id: str
    task: TaskSnapshot


@fast_init  # one per displayed delta: thousands a second
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskAnswerDelta:
    """Answer text of one task, as the disclosure gate released it."""

    wire_name: ClassVar[Literal["answer.delta"]] = "answer.delta"
    run_id: str
    seq: int
    at: str
    task_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningEdge:
    """Where a displayed reasoning part opens or closes, with its carriers as the
    provider sent them (``carriers``: the start's or the end's ``provider_metadata``:
    a signature, redacted data, an ``encrypted_content`` and item id). Only a gateway
    task's observer hears it (:class:`TaskReasoningDelta.edge`): a client whose mode
    shows reasoning gets each part's carriers where its API streams them."""

    edge: Literal["start", "end"]
    part_id: str
    kind: ReasoningKind
    carriers: ProviderMetadata


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskReasoningDelta:
    """Reasoning text of one task whose mode displays reasoning.

    ``part_id`` and ``kind`` name the reasoning part when the event log recorded them
    (recovery then rebuilds the parts); the runtime leaves them ``None``.

    ``edge`` is set on a live-only delta of no text that marks a reasoning part's start
    or end (:class:`ReasoningEdge`): told to the observer of a gateway task alone,
    never numbered, stored or sent to the daemon's other listeners."""

    wire_name: ClassVar[Literal["reasoning.delta"]] = "reasoning.delta"
    run_id: str
    seq: int
    at: str
    task_id: str
    text: str
    part_id: str | None = None
    kind: ReasoningKind | None = None
    edge: ReasoningEdge | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskCompleted:
    """A task ended (done, prepared, failed, cancelled or interrupted); ``task`` is the
    task in its final state."""

    wire_name: ClassVar[Literal["task.completed"]] = "task.completed"
    run_id: str
    seq: int
    at: str
    task_id: str
    task: TaskSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskToolCallStarted:
    """A task's model called a tool, which is now running; ``call`` is the call as in the
    snapshot's ``tool_calls`` (arguments with credential values redacted)."""

    wire_name: ClassVar[Literal["task.tool_call.started"]] = "task.tool_call.started"
    run_id: str
    seq: int
    at: str
    task_id: str
    call: ToolCallSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskToolCallCompleted:
    """A tool call ended (``done``, ``failed``, ``denied``, ``timed_out`` or
    ``cancelled``); ``call`` holds its result preview."""

    wire_name: ClassVar[Literal["task.tool_call.completed"]] = "task.tool_call.completed"
    run_id: str
    seq: int
    at: str
    task_id: str
    call: ToolCallSnapshot


TaskToolCall: TypeAlias = TaskToolCallStarted | TaskToolCallCompleted
"""The live events of one tool call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStepPriced:
    """A model call of a running task ended and was priced: ``cost`` is the task's cost
    so far (every step up to ``step``), so a view shows it while the task goes on."""

    wire_name: ClassVar[Literal["task.step.priced"]] = "task.step.priced"
    run_id: str
    seq: int
    at: str
    task_id: str
    step: int
    cost: CostSnapshot


ToolServerState: TypeAlias = Literal["starting", "ready", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolServerStart:
    """An MCP server the run needs is ``starting``, is ``ready`` (``duration_ms`` since it
    began, ``tools`` it lists) or ``failed`` (``duration_ms`` and ``error``). A run that
    starts its servers before it is stored (the CLI, the daemon, the library) numbers
    these before ``run.started``; servers offered from the tool list cache start once
    the first model request is on its way, after it."""

    wire_name: ClassVar[Literal["tool_server.start"]] = "tool_server.start"
    run_id: str
    seq: int
    at: str
    server: str
    state: ToolServerState
    duration_ms: int | None = None
    tools: int | None = None
    error: ToolServerError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCompleted:
    """The run ended ``completed``, ``completed_with_failures`` or
    ``completed_prepare_only`` (terminal); ``snapshot`` is the final run."""

    wire_name: ClassVar[Literal["run.completed"]] = "run.completed"
    run_id: str
    seq: int
    at: str
    snapshot: RunSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed:
    """The run ended ``failed`` (terminal); ``snapshot`` is the final run."""

    wire_name: ClassVar[Literal["run.failed"]] = "run.failed"
    run_id: str
    seq: int
    at: str
    snapshot: RunSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCancelled:
    """The run was cancelled (terminal); what arrived is kept in ``snapshot``."""

    wire_name: ClassVar[Literal["run.cancelled"]] = "run.cancelled"
    run_id: str
    seq: int
    at: str
    snapshot: RunSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInterrupted:
    """The run ended ``interrupted`` (terminal): its process shut down, or it was recovered
    after its process died."""

    wire_name: ClassVar[Literal["run.interrupted"]] = "run.interrupted"
    run_id: str
    seq: int
    at: str
    snapshot: RunSnapshot


RunFinished: TypeAlias = RunCompleted | RunFailed | RunCancelled | RunInterrupted
"""The terminal events: exactly one ends every run."""

RunEvent: TypeAlias = (
    RunStarted
    | TaskStarted
    | TaskAnswerDelta
    | TaskReasoningDelta
    | TaskToolCallStarted
    | TaskToolCallCompleted
    | TaskStepPriced
    | ToolServerStart
    | TaskCompleted
    | RunCompleted
    | RunFailed
    | RunCancelled
    | RunInterrupted
)
"""One live event of a run (the closed union)."""

MEMBERS: tuple[type[RunEvent], ...] = (
    ToolServerStart,
    RunStarted,
    TaskStarted,
    TaskAnswerDelta,
    TaskReasoningDelta,
    TaskToolCallStarted,
    TaskToolCallCompleted,
    TaskStepPriced,
    TaskCompleted,
    RunCompleted,
    RunFailed,
    RunCancelled,
    RunInterrupted,
)
"""Every member of :data:`RunEvent`, in the order a run emits them."""
_TERMINAL = (RunCompleted, RunFailed, RunCancelled, RunInterrupted)
TERMINAL_EVENT_TYPES = frozenset(kind.wire_name for kind in _TERMINAL)
"""The wire names of the events that end a run."""


def is_terminal(event: RunEvent) -> bool:
    """Whether ``event`` ends its run (and every stream of it)."""
    return isinstance(event, _TERMINAL)


def run_finished(
    status: RunStatus, *, run_id: str, seq: int, at: str, snapshot: RunSnapshot
) -> RunFinished:
    """The terminal event for a run that ended with ``status``."""
    if status == "cancelled":
        return RunCancelled(run_id=run_id, seq=seq, at=at, snapshot=snapshot)
    if status == "failed":
        return RunFailed(run_id=run_id, seq=seq, at=at, snapshot=snapshot)
    if status == "interrupted":
        return RunInterrupted(run_id=run_id, seq=seq, at=at, snapshot=snapshot)
    return RunCompleted(run_id=run_id, seq=seq, at=at, snapshot=snapshot)


def sse_data(event: RunEvent) -> Mapping[str, object]:
    """The JSON of the event's SSE ``data:`` line: deltas carry their ``task_id`` next to
    the text; task events carry the task dict, run events the run snapshot."""
    match event:
        case (
            TaskAnswerDelta(task_id=task_id, text=text)
            | TaskReasoningDelta(task_id=task_id, text=text)
        ):
            return {"task_id": task_id, "text": text}
        case TaskStarted(task=task) | TaskCompleted(task=task):
            return task
        case (
            TaskToolCallStarted(task_id=task_id, call=call)
            | TaskToolCallCompleted(task_id=task_id, call=call)
        ):
            return {"task_id": task_id, "call": call}
        case TaskStepPriced(task_id=task_id, step=step, cost=cost):
            return {"task_id": task_id, "step": step, "cost": cost}
        case ToolServerStart():
            return tool_server_data(event)
        case (
            RunStarted(snapshot=snapshot)
            | RunCompleted(snapshot=snapshot)
            | RunFailed(snapshot=snapshot)
            | RunCancelled(snapshot=snapshot)
            | RunInterrupted(snapshot=snapshot)
        ):
            return snapshot
        case _:
            assert_never(event)


def tool_server_data(event: ToolServerStart) -> ToolServerData:
    """The JSON of a :class:`ToolServerStart` (the SSE ``data:`` line, the event log's
    record): ``server``, ``state`` and, once known, ``duration_ms``, ``tools``,
    ``error``."""
    data: ToolServerData = {"server": event.server, "state": event.state}
    if event.duration_ms is not None:
        data["duration_ms"] = event.duration_ms
    if event.tools is not None:
        data["tools"] = event.tools
    if event.error is not None:
        data["error"] = event.error
    return data


_SERVER_STATES: tuple[ToolServerState, ...] = ("starting", "ready", "failed")


def tool_server_start(
    data: Mapping[str, object], *, run_id: str, seq: int, at: str
) -> ToolServerStart:
    """The :class:`ToolServerStart` of ``data`` (what :func:`tool_server_data` gives, or
    a server start's notice); a state it does not know is read as ``failed``."""
    state: ToolServerState = next(
        (state for state in _SERVER_STATES if state == data.get("state")), "failed"
    )
    server, duration_ms, tools = data.get("server"), data.get("duration_ms"), data.get("tools")
    error = data.get("error")
    return ToolServerStart(
        run_id=run_id,
        seq=seq,
        at=at,
        server=server if isinstance(server, str) else "",
        state=state,
        duration_ms=duration_ms if isinstance(duration_ms, int) else None,
        tools=tools if isinstance(tools, int) else None,
        error=_server_error(error),
    )


def _server_error(error: object) -> ToolServerError | None:
    if not isinstance(error, Mapping):
        return None
    code, message = error.get("code"), error.get("message")
    return {"code": str(code), "message": str(message)}

"""Crash recovery: which runs lost their owner, and what their tasks keep. The policy,
above any store; every store implementation is recovered by :func:`recover_interrupted`.

**Which runs.** A run records the process that owns it (host, pid, process start time,
boot id) and a heartbeat refreshed by every write. A run left ``planned``/``running`` is
orphaned when its owner on this host has exited (or its pid now names another process,
or the machine rebooted since), or — for an owner on another host, which cannot be
probed — when its heartbeat went silent: for :data:`HEARTBEAT_STALE_S` in a store that
is refreshed only by writes, or for :data:`LEASE_MISSED_BEATS` beats in a store whose
owners hold a lease (:class:`~thoughtline.store.base.LeasedStore`, e.g. PostgreSQL,
whose heartbeats are also compared on its own clock). Runs of live processes are never
touched.

**What a task keeps.** A task's row gets its output and reasoning when the task ends.
While it runs, what arrives goes to the run event log instead (``answer.delta``, and
``reasoning.delta`` only when the task's mode displays reasoning), flushed every fraction
of a second. When the process dies first (SIGKILL, out of memory, power loss), recovery
rebuilds each unfinished task from that log:

- ``output`` is the answer deltas that reached the log, in order: exactly what every
  surface had shown.
- ``reasoning`` comes back only where the task's mode displays reasoning and the log
  holds reasoning deltas for it. Hidden and telemetry_only tasks never have any (the
  disclosure gate filters before events are logged), and nothing here looks elsewhere
  for reasoning. When the reasoning retention already removed part of the run's log
  (the run's event numbers have gaps), none is rebuilt: a remainder would claim to be
  what arrived, and it would bring back text whose older part retention removed.
- ``reasoning_status``/``reasoning_notice`` say what was kept, in characters, and never
  claim reasoning that was not displayed.
- ``finished_at`` is when the last of its output arrived (recovery may notice much
  later), so the reasoning retention ages a rebuilt copy like the log it came from.

The decisions are pure functions over records; the store only reads and writes.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import cast

from thoughtline.records import (
    ReasoningPartView,
    ReasoningStatus,
    RunEventRecord,
    Task,
    TaskError,
    ToolCallRecord,
    ToolCallSnapshot,
    TraceEvent,
    new_id,
    now_iso,
    parse_epoch,
)
from thoughtline.records.event_log import from_records
from thoughtline.records.run_events import (
    TaskAnswerDelta,
    TaskReasoningDelta,
    TaskToolCallCompleted,
    TaskToolCallStarted,
)
from thoughtline.runtime.policy.disclosure import DisclosureGate
from thoughtline.store.base import LeasedStore, Store, StoreError, UnfinishedRun
from thoughtline.store.owner import ProcessIdentity, proc_stat

logger = logging.getLogger(__name__)

DELTA_WIRE_NAMES = (TaskAnswerDelta.wire_name, TaskReasoningDelta.wire_name)
RECOVERED_WIRE_NAMES = (
    *DELTA_WIRE_NAMES,
    TaskToolCallStarted.wire_name,
    TaskToolCallCompleted.wire_name,
)
"""The event log records recovery rebuilds an unfinished task from: its deltas and the
tool calls it told of (a call the store has no row of is kept from its events)."""

HEARTBEAT_STALE_S = 15 * 60
"""A run owned by another host is presumed dead after this long without a write."""
LEASE_MISSED_BEATS = 3
"""In a store with owner leases, a run owned by another host is presumed dead after this
many heartbeat intervals without a beat."""

UNFINISHED_TASK_STATUSES: tuple[str, ...] = ("queued", "running")
"""Statuses of tasks recovery rebuilds; every other status is final and left alone."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Why a run's owner is considered gone, and when recovery noticed."""

    reason: str
    """``owner_exited``, ``owner_pid_reused``, ``host_rebooted`` or ``heartbeat_stale``."""
    detail: str
    """For people, e.g. ``process 4242 that ran it has exited``."""
    at: str


def recover_interrupted(store: Store) -> list[str]:
    """Mark the runs of ``store`` whose owning process is gone as ``interrupted``, their
    unfinished tasks rebuilt from the run event log; returns their ids.

    A run written to since it was looked at (its owner is alive after all, or another
    process recovered it first) is left alone."""
    me = ProcessIdentity.current()
    if isinstance(store, LeasedStore):
        stale_after_s = LEASE_MISSED_BEATS * store.heartbeat_interval_s
        now = store.store_time()
    else:
        stale_after_s, now = HEARTBEAT_STALE_S, time.time()
    recovered: list[str] = []
    for seen in store.unfinished_runs():
        why = why_orphaned(seen, me, now, stale_after_s=stale_after_s)
        if why is None:
            continue
        stop = Stop(reason=why[0], detail=why[1], at=now_iso())
        run = store.get_run(seen.run_id)
        if run is None:
            continue
        unfinished = [task for task in run.tasks if task.status in UNFINISHED_TASK_STATUSES]
        deltas = store.run_events(seen.run_id, types=RECOVERED_WIRE_NAMES) if unfinished else []
        # A record may hold a batch of deltas: count the events, not the records.
        batched = sum(
            len(texts) - 1
            for record in deltas
            if isinstance(texts := record.data.get("texts"), list) and texts
        )
        complete = log_is_complete(seen.event_count + batched, seen.last_event_seq)
        rebuilt = [
            interrupted_task(task, deltas, stop, log_complete=complete) for task in unfinished
        ]
        event = TraceEvent(
            id=new_id("evt"),
            run_id=seen.run_id,
            task_id=None,
            type="run.interrupted",
            layer="answer",
            at=stop.at,
            metadata={
                "reason": stop.reason,
                "detail": stop.detail,
                "interrupted_tasks": [task.id for task in unfinished],
            },
            expires_at=None,
        )
        if store.interrupt_run(seen, finished_at=stop.at, tasks=rebuilt, event=event):
            recovered.append(seen.run_id)
    return recovered


def recover_on_open(store: Store) -> list[str]:
    """:func:`recover_interrupted` for a store just opened. A full disk must not hide
    what was written: the store stays open for reading (a warning is logged), and the
    next open with some free space marks the runs."""
    try:
        return recover_interrupted(store)
    except StoreError as exc:
        if exc.problem != "full":
            raise
        logger.warning("thoughtline: %s", exc.message)
        return []


def why_orphaned(
    run: UnfinishedRun,
    me: ProcessIdentity,
    now: float,
    *,
    stale_after_s: float = HEARTBEAT_STALE_S,
) -> tuple[str, str] | None:
    """(reason, detail) when the run's owner is gone, ``None`` while it may be alive;
    a remote owner is gone after ``stale_after_s`` without a heartbeat."""
    host, pid = run.owner_host, run.owner_pid
    if host == me.host and pid is not None:
        state = _local_owner_state(pid, run.owner_start_time, run.owner_boot_id, me)
        if state == "alive":
            return None
        if state != "unknown":
            details = {
                "owner_exited": f"process {pid} that ran it has exited",
                "owner_pid_reused": f"process {pid} that ran it has exited (pid reused)",
                "host_rebooted": f"the machine rebooted since process {pid} ran it",
            }
            return state, details[state]
    # Another machine's process cannot be probed; only its silence tells.
    last = run.heartbeat_at or run.created_at
    seen = parse_epoch(last)
    if seen is not None and now - seen > stale_after_s:
        return "heartbeat_stale", f"no write from process {pid} on {host} since {last}"
    return None


def _local_owner_state(
    pid: int, start_time: int | None, boot_id: str | None, me: ProcessIdentity
) -> str:
    """``alive``, ``unknown``, or why a process on this host is gone."""
    if boot_id is not None and me.boot_id is not None and boot_id != me.boot_id:
        return "host_rebooted"
    stat = proc_stat(pid)
    if stat is not None:
        if stat[0] in ("Z", "X"):  # exited, not yet reaped by its parent
            return "owner_exited"
        if start_time is not None and stat[1] != start_time:
            return "owner_pid_reused"
        return "alive"
    if os.name != "posix":
        # os.kill(pid, 0) would terminate the process on Windows; rely on the heartbeat.
        return "unknown"
    try:
        os.kill(pid, 0)  # signal 0 only checks existence (also where /proc hides pids)
    except ProcessLookupError:
        return "owner_exited"
    except PermissionError:
        return "alive"  # exists, owned by another user
    return "alive"


def log_is_complete(count: int, last_seq: int | None) -> bool:
    """True when a run's event log has every event it was written with: events are
    numbered from 1 without gaps, and only the reasoning retention deletes any."""
    return count == (last_seq or 0)


def interrupted_task(
    task: Task, events: Sequence[RunEventRecord], stop: Stop, *, log_complete: bool
) -> Task:
    """``task`` (queued or running when its process died) as recovery records it.

    ``events`` are the run's events; only this task's deltas are used, in ``seq``
    order. ``log_complete`` is :func:`log_is_complete` for the whole run.
    """
    gate = DisclosureGate(task.chain_of_thought)
    own = sorted(_own_deltas(task.id, events), key=lambda event: event.seq)
    answer = "".join(event.text for event in own if isinstance(event, TaskAnswerDelta))
    reasoning_events = [event for event in own if isinstance(event, TaskReasoningDelta)]

    reasoning: str | None = None
    parts: list[ReasoningPartView] | None = None
    if gate.displays:
        parts = []
        if reasoning_events and log_complete:
            reasoning, parts = _rebuild_reasoning(reasoning_events)

    never_started = task.status == "queued"
    if never_started:
        # What the store knows: the task's start was never written. So no model call is
        # on record, and nothing of it is kept (nor claimed to have been interrupted).
        notice = (
            f"The process running this run stopped ({stop.detail}) before this task started "
            "(the store has no record of it starting), so nothing of it is kept"
        )
        if not gate.requests_reasoning:
            notice += "; reasoning was not requested (chain_of_thought is hidden)"
    else:
        kept = (
            f"the {len(answer)} characters of answer that reached the store before it are kept"
            if answer
            else "no answer had arrived"
        )
        notice = f"The process running this task stopped ({stop.detail}); {kept}"
        notice += "; " + _reasoning_clause(
            gate,
            reasoning,
            bool(reasoning_events),
            answer_kept=bool(answer),
            log_complete=log_complete,
        )
    tool_calls = _recovered_calls(task, events)
    if tool_calls:
        finished = sum(call.status != "cancelled" for call in tool_calls)
        notice += (
            f"; {finished} of its {len(tool_calls)} tool calls had finished, the rest are "
            "marked cancelled"
        )
    status: ReasoningStatus
    if not gate.requests_reasoning:
        status = "not_requested"
    elif never_started:
        status = "not_applicable"
    else:
        status = "interrupted"
    return replace(
        task,
        status="interrupted",
        output=answer or task.output,
        reasoning=reasoning,
        reasoning_parts=parts,
        reasoning_status=status,
        reasoning_notice=notice + ".",
        tool_calls=tool_calls if task.tool_calls is not None else None,
        error=TaskError(
            code="RUN_INTERRUPTED",
            message=f"The process running this task stopped ({stop.detail}). Run it again.",
            retryable=True,
        ),
        timings=replace(
            task.timings, finished_at=task.timings.finished_at or (own[-1].at if own else stop.at)
        ),
    )


def _recovered_calls(task: Task, events: Sequence[RunEventRecord]) -> list[ToolCallRecord]:
    """The task's tool calls: those the store holds, in their order and as stored (each
    row is written with the event that told of it, so it is the last word on its call,
    even when calls share an id), then any the event log told of that the store lacks,
    each as last told; a call still running when the process died ends ``cancelled``.
    The interrupted task's calls are written back as rows of ``task_tool_calls``."""
    calls = list(task.tool_calls or ())
    stored = {call.id for call in calls}
    where: dict[str, int] = {}
    for event in events:
        if event.task_id == task.id and event.type in _TOOL_CALL_EVENTS:
            told = ToolCallRecord.from_dict(cast(ToolCallSnapshot, event.data))
            if told.id in stored:
                continue
            position = where.setdefault(told.id, len(calls))
            if position == len(calls):
                calls.append(told)
            else:
                calls[position] = told
    for call in calls:
        if call.status == "running":
            call.status, call.is_error, call.error = "cancelled", True, "TOOL_CANCELLED"
    return calls


_TOOL_CALL_EVENTS = frozenset({TaskToolCallStarted.wire_name, TaskToolCallCompleted.wire_name})


def _reasoning_clause(
    gate: DisclosureGate,
    reasoning: str | None,
    logged: bool,
    *,
    answer_kept: bool,
    log_complete: bool,
) -> str:
    if not gate.requests_reasoning:
        return "reasoning was not requested (chain_of_thought is hidden)"
    if not gate.displays:
        # telemetry_only: reasoning reaches the trace when a task ends, never the log.
        return "its reasoning was not recorded (the trace records reasoning when a task ends)"
    if reasoning is not None:
        if answer_kept:
            return (
                f"so are the {len(reasoning)} characters of reasoning that arrived, marked partial"
            )
        return f"the {len(reasoning)} characters of reasoning that arrived are kept, marked partial"
    if not log_complete:
        return (
            "no reasoning is shown, because the reasoning retention removed part of this "
            "run's event log"
        )
    if logged:  # deltas with empty text only
        return "no reasoning text had arrived"
    return "no reasoning had arrived"


def _rebuild_reasoning(
    events: Sequence[TaskReasoningDelta],
) -> tuple[str | None, list[ReasoningPartView]]:
    """The reasoning text as it was displayed, and its parts where the log names them.

    A delta that names its part (``part_id``) and ``kind`` extends that part; parts are
    joined like the runtime joins them. Deltas that do not name a kind are kept in the
    text only: a part's kind is never guessed.
    """
    if any(event.kind is None for event in events):
        text = "".join(event.text for event in events)
        return text or None, []
    parts: list[ReasoningPartView] = []
    last_key: tuple[object, object] | None = None
    for event in events:
        key = (event.part_id, event.kind)
        if parts and key == last_key:
            parts[-1].text += event.text
        elif event.kind is not None:
            parts.append(ReasoningPartView(kind=event.kind, text=event.text))
        last_key = key
    parts = [part for part in parts if part.text]
    text = "\n\n".join(part.text for part in parts)
    return text or None, parts


def _own_deltas(
    task_id: str, records: Sequence[RunEventRecord]
) -> Iterator[TaskAnswerDelta | TaskReasoningDelta]:
    """The answer and reasoning deltas of one task in the event log, typed (the log's
    other records carry no text recovery could use)."""
    own = [
        record
        for record in records
        if record.task_id == task_id and record.type in DELTA_WIRE_NAMES
    ]
    for event in from_records(own):
        if isinstance(event, TaskAnswerDelta | TaskReasoningDelta):
            yield event

"""The run event log's encoding: live run events to and from the store's records.

The store keeps a run's events as :class:`~thoughtline.records.RunEventRecord` rows, each
under its event's one wire name (``wire_name`` on the classes of
:mod:`thoughtline.records.run_events`). Two things keep the log small on long streams, and both
are undone when it is read, so a replay equals what was emitted:

- a run of consecutive deltas of one task and stream (what one network read usually
  carries: tens to hundreds) is one record, ``{"texts": [...]}``, numbered by its last
  delta and stamped once (:func:`to_records`; :func:`from_records` numbers them again
  and can start inside a batch, for ``Last-Event-ID`` resume);
- a task whose reasoning is exactly its parts joined logs that text once, as the parts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import assert_never, cast

from thoughtline.model.events import REASONING_KINDS, ReasoningKind
from thoughtline.records import (
    DeltaData,
    ReasoningPartSnapshot,
    RunEventData,
    RunEventRecord,
    RunSnapshot,
    StepPricedData,
    TaskSnapshot,
    ToolCallSnapshot,
)
from thoughtline.records.run_events import (
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
    TaskStepPriced,
    TaskToolCallCompleted,
    TaskToolCallStarted,
    ToolServerStart,
    tool_server_data,
    tool_server_start,
)

__all__ = ["UnknownRunEvent", "from_records", "from_wire", "to_records", "to_wire"]

logger = logging.getLogger(__name__)


class UnknownRunEvent(ValueError):
    """An event log record whose type is not a run event this version knows."""


def to_wire(event: RunEvent) -> RunEventRecord:
    """The event as the store's event log keeps it: deltas carry ``{"text": ...}`` (and
    the part's ``part_id``/``kind`` when known), task events the task dict, run events the
    run snapshot."""
    # The hot path first: nearly all of a run's events are deltas without a named part.
    if type(event) is TaskAnswerDelta or (
        type(event) is TaskReasoningDelta and event.part_id is None and event.kind is None
    ):
        return RunEventRecord(
            run_id=event.run_id,
            seq=event.seq,
            type=event.wire_name,
            task_id=event.task_id,
            at=event.at,
            data={"text": event.text},
        )
    data: RunEventData
    task_id: str | None
    match event:
        case TaskAnswerDelta(task_id=task_id, text=text):
            data = {"text": text}
        case TaskReasoningDelta(task_id=task_id, text=text, part_id=part_id, kind=kind):
            delta: DeltaData = {"text": text}
            if part_id is not None:
                delta["part_id"] = part_id
            if kind is not None:
                delta["kind"] = kind
            data = delta
        case TaskStarted(task_id=task_id, task=task) | TaskCompleted(task_id=task_id, task=task):
            data = _logged_task(task)
        case (
            TaskToolCallStarted(task_id=task_id, call=call)
            | TaskToolCallCompleted(task_id=task_id, call=call)
        ):
            data = call
        case TaskStepPriced(task_id=task_id, step=step, cost=cost):
            priced: StepPricedData = {"step": step, "cost": cost}
            data = priced
        case ToolServerStart():
            task_id = None
            data = tool_server_data(event)
        case (
            RunStarted(snapshot=snapshot)
            | RunCompleted(snapshot=snapshot)
            | RunFailed(snapshot=snapshot)
            | RunCancelled(snapshot=snapshot)
            | RunInterrupted(snapshot=snapshot)
        ):
            task_id = None
            logged = [_logged_task(task) for task in snapshot.get("tasks", [])]
            data = snapshot
            if any(a is not b for a, b in zip(logged, snapshot.get("tasks", []), strict=True)):
                data = snapshot.copy()
                data["tasks"] = logged
        case _:
            assert_never(event)
    return RunEventRecord(
        run_id=event.run_id,
        seq=event.seq,
        type=event.wire_name,
        task_id=task_id,
        at=event.at,
        data=data,
    )


def to_records(events: Sequence[RunEvent]) -> list[RunEventRecord]:
    """The events (in ``seq`` order, as a run emits them) as the event log keeps them:
    each run of consecutive answer or reasoning deltas of one task becomes one record
    (``{"texts": [...]}``, numbered by its last delta, stamped with its time); every
    other event one record (:func:`to_wire`)."""
    records: list[RunEventRecord] = []
    batch: list[TaskAnswerDelta | TaskReasoningDelta] = []

    def close_batch() -> None:
        if len(batch) == 1:
            records.append(to_wire(batch[0]))
        elif batch:
            last = batch[-1]
            records.append(
                RunEventRecord(
                    run_id=last.run_id,
                    seq=last.seq,
                    type=last.wire_name,
                    task_id=last.task_id,
                    at=last.at,
                    data={"texts": [delta.text for delta in batch]},
                )
            )
        batch.clear()

    for event in events:
        # Deltas that name their reasoning part stay single: the part is per delta.
        # (Exact type tests: one per displayed delta, and the delta classes are final.)
        if type(event) is TaskAnswerDelta or (
            type(event) is TaskReasoningDelta and event.part_id is None and event.kind is None
        ):
            if batch:
                last = batch[-1]
                if (
                    type(last) is not type(event)
                    or last.task_id != event.task_id
                    or last.seq + 1 != event.seq
                ):
                    close_batch()
            batch.append(event)
            continue
        close_batch()
        records.append(to_wire(event))
    close_batch()
    return records


def from_records(
    records: Iterable[RunEventRecord], after_seq: int = 0, *, joined: bool = False
) -> list[RunEvent]:
    """The typed events of event log records, in order, those numbered ``<= after_seq``
    left out (a batch read to resume after one of its deltas starts there).

    ``joined``: each batch of deltas as one delta of their text joined, numbered by the
    last (for folding onto a snapshot, where the text is all that counts: one event per
    record instead of one per delta of a long log).

    A record of a type this version does not know (one written by a newer version
    sharing the store) is left out, logged at debug level: a daemon one version behind
    the process running a run still follows it."""
    events: list[RunEvent] = []
    for record in records:
        texts = record.data.get("texts")
        if not isinstance(texts, list):
            if record.seq > after_seq:
                decode = _DECODERS.get(record.type)
                if decode is None:
                    _skipped(record)
                else:
                    events.append(decode(record))
            continue
        first = record.seq - len(texts) + 1
        delta = _BATCHED.get(record.type)
        if delta is None:
            if record.seq > after_seq:
                _skipped(record)
            continue
        if joined:
            kept = texts[max(after_seq - first + 1, 0) :]
            if kept:
                text = "".join(text for text in kept if isinstance(text, str))
                task_id = record.task_id or ""
                events.append(
                    delta(
                        run_id=record.run_id,
                        seq=record.seq,
                        at=record.at,
                        task_id=task_id,
                        text=text,
                    )
                )
            continue
        for offset, text in enumerate(texts):
            seq = first + offset
            if seq > after_seq and isinstance(text, str):
                events.append(
                    delta(
                        run_id=record.run_id,
                        seq=seq,
                        at=record.at,
                        task_id=record.task_id or "",
                        text=text,
                    )
                )
    return events


def _skipped(record: RunEventRecord) -> None:
    logger.debug(
        "run %s: event %d of type %r is not one this version knows; skipped",
        record.run_id,
        record.seq,
        record.type,
    )


def from_wire(record: RunEventRecord) -> RunEvent:
    """The typed event of a record that holds one event (read a log with
    :func:`from_records`, which also reads batches).

    Raises :class:`UnknownRunEvent` for a type this version does not know."""
    if "texts" in record.data:
        raise UnknownRunEvent(
            f"a batch of deltas up to seq {record.seq}: read it with from_records"
        )
    decode = _DECODERS.get(record.type)
    if decode is None:
        raise UnknownRunEvent(f"unknown run event type {record.type!r} (seq {record.seq})")
    return decode(record)


_JOINED = "reasoning_joined"
"""In the event log only: the task's ``reasoning`` is its ``reasoning_parts`` joined, and
is logged once, as the parts (a long reasoning is otherwise written twice per snapshot)."""


def _joined(parts: list[ReasoningPartSnapshot]) -> str:
    return "\n\n".join(part["text"] for part in parts if part["text"])  # as the runtime joins


def _logged_task(task: TaskSnapshot) -> TaskSnapshot:
    # .get: a dict from elsewhere (or an older log) may lack keys; it is logged as it is.
    parts, reasoning = task.get("reasoning_parts"), task.get("reasoning")
    if not parts or not reasoning or reasoning != _joined(parts):
        return task
    logged = task.copy()
    logged["reasoning"] = None
    return cast(TaskSnapshot, {**logged, _JOINED: True})


def _read_task(task: TaskSnapshot) -> TaskSnapshot:
    if _JOINED not in task:
        return task
    read = cast(TaskSnapshot, {key: value for key, value in task.items() if key != _JOINED})
    # Parts cleared by the reasoning retention leave no reasoning to rebuild.
    parts = read.get("reasoning_parts")
    if read.get("reasoning") is None and parts:
        read["reasoning"] = _joined(parts)
    return read


def _text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _kind(value: str | None) -> ReasoningKind | None:
    for kind in REASONING_KINDS:
        if value == kind:
            return kind
    return None


def _answer_delta(record: RunEventRecord) -> RunEvent:
    return TaskAnswerDelta(
        run_id=record.run_id,
        seq=record.seq,
        at=record.at,
        task_id=record.task_id or "",
        text=_text(record.data, "text") or "",
    )


def _reasoning_delta(record: RunEventRecord) -> RunEvent:
    return TaskReasoningDelta(
        run_id=record.run_id,
        seq=record.seq,
        at=record.at,
        task_id=record.task_id or "",
        text=_text(record.data, "text") or "",
        part_id=_text(record.data, "part_id"),
        kind=_kind(_text(record.data, "kind")),
    )


def _task_event(member: type[TaskStarted | TaskCompleted]) -> Callable[[RunEventRecord], RunEvent]:
    def decode(record: RunEventRecord) -> RunEvent:
        task_id = record.task_id or _text(record.data, "id") or ""
        return member(
            run_id=record.run_id,
            seq=record.seq,
            at=record.at,
            task_id=task_id,
            # The log holds what to_wire wrote for this type: the task's snapshot.
            task=_read_task(cast(TaskSnapshot, record.data)),
        )

    return decode


def _tool_call_event(
    member: type[TaskToolCallStarted | TaskToolCallCompleted],
) -> Callable[[RunEventRecord], RunEvent]:
    def decode(record: RunEventRecord) -> RunEvent:
        # The log holds what to_wire wrote for this type: the call's snapshot.
        return member(
            run_id=record.run_id,
            seq=record.seq,
            at=record.at,
            task_id=record.task_id or "",
            call=cast(ToolCallSnapshot, record.data),
        )

    return decode


def _step_priced(record: RunEventRecord) -> RunEvent:
    # The log holds what to_wire wrote for this type: the step and the task's cost.
    data = cast(StepPricedData, record.data)
    return TaskStepPriced(
        run_id=record.run_id,
        seq=record.seq,
        at=record.at,
        task_id=record.task_id or "",
        step=data["step"],
        cost=data["cost"],
    )


def _tool_server(record: RunEventRecord) -> RunEvent:
    # The log holds what to_wire wrote for this type (tool_server_data).
    return tool_server_start(record.data, run_id=record.run_id, seq=record.seq, at=record.at)


def _run_event(
    member: type[RunStarted | RunCompleted | RunFailed | RunCancelled | RunInterrupted],
) -> Callable[[RunEventRecord], RunEvent]:
    def decode(record: RunEventRecord) -> RunEvent:
        # The log holds what to_wire wrote for this type: the run's snapshot.
        snapshot = cast(RunSnapshot, record.data)
        if any(_JOINED in task for task in snapshot.get("tasks", [])):
            snapshot = snapshot.copy()
            snapshot["tasks"] = [_read_task(task) for task in snapshot["tasks"]]
        return member(run_id=record.run_id, seq=record.seq, at=record.at, snapshot=snapshot)

    return decode


_DECODERS: dict[str, Callable[[RunEventRecord], RunEvent]] = {
    RunStarted.wire_name: _run_event(RunStarted),
    TaskStarted.wire_name: _task_event(TaskStarted),
    TaskAnswerDelta.wire_name: _answer_delta,
    TaskReasoningDelta.wire_name: _reasoning_delta,
    TaskToolCallStarted.wire_name: _tool_call_event(TaskToolCallStarted),
    TaskToolCallCompleted.wire_name: _tool_call_event(TaskToolCallCompleted),
    TaskStepPriced.wire_name: _step_priced,
    ToolServerStart.wire_name: _tool_server,
    TaskCompleted.wire_name: _task_event(TaskCompleted),
    RunCompleted.wire_name: _run_event(RunCompleted),
    RunFailed.wire_name: _run_event(RunFailed),
    RunCancelled.wire_name: _run_event(RunCancelled),
    RunInterrupted.wire_name: _run_event(RunInterrupted),
}
"""Each wire name's decoder (one per union member; a test checks none is missing)."""

_BATCHED: dict[str, type[TaskAnswerDelta] | type[TaskReasoningDelta]] = {
    TaskAnswerDelta.wire_name: TaskAnswerDelta,
    TaskReasoningDelta.wire_name: TaskReasoningDelta,
}
"""The events the log keeps in batches (:func:`to_records`)."""

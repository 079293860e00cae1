"""Run events as SSE frames, and a run's snapshot folded from its events: each event
encoded once (:func:`event_frame`), and :class:`SnapshotFolder` keeping a snapshot up to
a given ``seq`` (the live hub's resyncs, other processes' runs, the frames that close a
stream)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

import orjson

from thoughtline.records import (
    CostSnapshot,
    RunSnapshot,
    RunStatus,
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
    sse_data,
)
from thoughtline.records.server_starts import with_server_start


def frame(seq: int, type_: str, data: Mapping[str, object]) -> bytes:
    """One SSE frame. orjson never emits a raw line break, so ``data`` is one line."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (seq, type_.encode(), orjson.dumps(data))


def event_frame(event: RunEvent) -> bytes:
    """The SSE frame of one run event."""
    return frame(event.seq, event.wire_name, sse_data(event))


class _FoldedTask:
    """One task of a folded snapshot: the last task dict an event carried, plus the text
    deltas since, kept as chunks so that a delta costs its own length, not the length of
    everything before it (a long reasoning stream stays linear)."""

    __slots__ = ("calls", "cost", "output", "reasoning", "task")

    def __init__(self, task: TaskSnapshot) -> None:
        self.task = task
        self.output: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[str, ToolCallSnapshot] = {}
        self.cost: CostSnapshot | None = None
        """The task's cost so far, as its last priced step told."""

    def view(self) -> TaskSnapshot:
        task = self.task.copy()
        if self.cost is not None:
            task["cost"] = self.cost
        if self.calls:
            # A call as last told replaces the one the task dict had, in its place.
            calls = {call["id"]: call for call in task.get("tool_calls", [])}
            calls.update(self.calls)
            task["tool_calls"] = list(calls.values())
        if self.output:
            task["output"] = (task["output"] or "") + "".join(self.output)
        if self.reasoning:
            task["reasoning"] = (task["reasoning"] or "") + "".join(self.reasoning)
        return task


class SnapshotFolder:
    """Folds a run's events onto its snapshot: task events replace the task, answer and
    reasoning deltas extend the running task's ``output``/``reasoning``, a tool server's
    start replaces that server's entry in ``tool_server_starts``, run events replace the
    whole snapshot.

    Reasoning only ever comes from reasoning deltas (which exist only when the task's
    mode displays reasoning) or from task dicts the runtime produced, so folding adds no
    disclosure logic of its own. Dicts from events are never changed (the runtime shares
    them with the records it writes to the store): :meth:`snapshot` builds new ones.
    """

    def __init__(self, snapshot: RunSnapshot, seq: int = 0) -> None:
        self.seq = seq
        self._run = snapshot
        self._tasks = {task["id"]: _FoldedTask(task) for task in snapshot["tasks"]}

    def apply(self, event: RunEvent) -> None:
        self.seq = max(self.seq, event.seq)
        match event:
            case TaskAnswerDelta(task_id=task_id, text=text):
                folded = self._tasks.get(task_id)
                if folded is not None:
                    folded.output.append(text)
            case TaskReasoningDelta(task_id=task_id, text=text):
                folded = self._tasks.get(task_id)
                if folded is not None:
                    folded.reasoning.append(text)
            case (
                TaskToolCallStarted(task_id=task_id, call=call)
                | TaskToolCallCompleted(task_id=task_id, call=call)
            ):
                folded = self._tasks.get(task_id)
                if folded is not None:
                    folded.calls[call["id"]] = call
            case TaskStepPriced(task_id=task_id, cost=cost):
                folded = self._tasks.get(task_id)
                if folded is not None:
                    folded.cost = cost
            case ToolServerStart():
                run = self._run.copy()
                run["tool_server_starts"] = with_server_start(
                    run.get("tool_server_starts", []), event
                )
                self._run = run
            case TaskStarted(task=task) | TaskCompleted(task=task):
                # A replaced task keeps its place: dicts keep first-insertion order.
                self._tasks[task["id"]] = _FoldedTask(task)
            case (
                RunStarted(snapshot=snapshot)
                | RunCompleted(snapshot=snapshot)
                | RunFailed(snapshot=snapshot)
                | RunCancelled(snapshot=snapshot)
                | RunInterrupted(snapshot=snapshot)
            ):
                self._run = snapshot
                self._tasks = {task["id"]: _FoldedTask(task) for task in snapshot["tasks"]}
            case _:
                assert_never(event)

    def status(self) -> RunStatus:
        """The run's status as folded so far."""
        return self._run["status"]

    def snapshot(self) -> RunSnapshot:
        """The folded snapshot (new dicts; tasks in their original order)."""
        run = self._run.copy()
        run["tasks"] = [folded.view() for folded in self._tasks.values()]
        return run


def fold(snapshot: RunSnapshot, events: list[RunEvent], upto: int) -> RunSnapshot:
    """``snapshot`` (the run as planned) with every event of ``seq <= upto`` applied."""
    folder = SnapshotFolder(snapshot)
    for event in events:
        if event.seq > upto:
            break
        folder.apply(event)
    return folder.snapshot()


def closing_frames(planned: RunSnapshot, events: list[RunEvent]) -> tuple[bytes, bytes]:
    """For a finished run: the snapshot just before the terminal event, then the event."""
    terminal = events[-1]
    upto = terminal.seq - 1
    return frame(upto, "snapshot", fold(planned, events, upto)), event_frame(terminal)

"""The live event hub: runs executing in this daemon fan their events out to SSE
subscribers, and any run's snapshot can be folded up to a given ``seq``.

Everything here runs on the daemon's event loop; nothing awaits while the hub's state
changes, so "take a snapshot at seq N and subscribe to everything after N" is atomic.

A subscriber's queue is bounded. Publishing never blocks and never waits for a reader:
a subscriber whose queue is full is marked *behind*, its queue is dropped, and its
reader sends a ``resync`` (the snapshot folded up to the current seq) before going on.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import assert_never

from thoughtline.records import RunSnapshot, RunStatus, TaskSnapshot
from thoughtline.run_events import (
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
    is_terminal,
)

DEFAULT_SUBSCRIBER_QUEUE = 1000


class _FoldedTask:
    """One task of a folded snapshot: the last task dict an event carried, plus the text
    deltas since, kept as chunks so that a delta costs its own length, not the length of
    everything before it (a long reasoning stream stays linear)."""

    __slots__ = ("output", "reasoning", "task")

    def __init__(self, task: TaskSnapshot) -> None:
        self.task = task
        self.output: list[str] = []
        self.reasoning: list[str] = []

    def view(self) -> TaskSnapshot:
        task = self.task.copy()
        if self.output:
            task["output"] = (task["output"] or "") + "".join(self.output)
        if self.reasoning:
            task["reasoning"] = (task["reasoning"] or "") + "".join(self.reasoning)
        return task


class SnapshotFolder:
    """Folds a run's events onto its snapshot: task events replace the task, answer and
    reasoning deltas extend the running task's ``output``/``reasoning``, run events
    replace the whole snapshot.

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


@dataclass(slots=True, eq=False)
class Subscriber:
    """One SSE reader of a live run: a bounded queue and a wake-up signal."""

    limit: int
    queue: deque[RunEvent] = field(default_factory=deque)
    behind: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, event: RunEvent) -> None:
        if self.behind:
            return
        if len(self.queue) >= self.limit:
            # Too far behind: drop what is queued; the reader resyncs from a snapshot.
            self.queue.clear()
            self.behind = True
        else:
            self.queue.append(event)
        self.wake.set()

    async def wait(self, timeout_s: float) -> bool:
        """Wait until something is queued (True) or ``timeout_s`` passed (False)."""
        if self.queue or self.behind:
            return True
        self.wake.clear()
        try:
            await asyncio.wait_for(self.wake.wait(), timeout_s)
        except TimeoutError:
            return False
        return True


class RunChannel:
    """A run executing in this daemon: its events so far, its folded snapshot and its
    subscribers."""

    def __init__(self, run_id: str, planned: RunSnapshot) -> None:
        self.run_id = run_id
        self.planned = planned
        self.events: list[RunEvent] = []
        self.folder = SnapshotFolder(planned)
        self.subscribers: set[Subscriber] = set()
        self.finished = False

    @property
    def seq(self) -> int:
        return self.folder.seq

    def publish(self, event: RunEvent) -> None:
        self.events.append(event)
        self.folder.apply(event)
        if is_terminal(event):
            self.finished = True
        for subscriber in self.subscribers:
            subscriber.offer(event)

    def subscribe(self, limit: int) -> Subscriber:
        subscriber = Subscriber(limit)
        self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    def after(self, seq: int) -> list[RunEvent]:
        """Events with ``seq`` greater than ``seq`` (events are numbered from 1 in order)."""
        return self.events[max(seq, 0) :]


class EventHub:
    """Channels of the runs executing in this daemon, fed by the runtime observer."""

    def __init__(self, subscriber_queue: int = DEFAULT_SUBSCRIBER_QUEUE) -> None:
        self.subscriber_queue = subscriber_queue
        self._channels: dict[str, RunChannel] = {}

    def open(self, run_id: str, planned: RunSnapshot) -> RunChannel:
        channel = RunChannel(run_id, planned)
        self._channels[run_id] = channel
        return channel

    def close(self, run_id: str) -> None:
        """Forget a run once everything it emitted is in the store."""
        self._channels.pop(run_id, None)

    def get(self, run_id: str) -> RunChannel | None:
        return self._channels.get(run_id)

    def observe(self, event: RunEvent) -> None:
        """The runtime observer: called synchronously on the loop for every event."""
        channel = self._channels.get(event.run_id)
        if channel is not None:
            channel.publish(event)

    def run_ids(self) -> list[str]:
        return list(self._channels)

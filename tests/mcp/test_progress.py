"""Progress notices of one orchestration_run call, from run events and a fake clock."""

from __future__ import annotations

import itertools
from typing import Any, cast

from thoughtline.integrations.mcp.progress import ProgressTracker
from thoughtline.records import TaskSnapshot
from thoughtline.records.run_events import (
    RunCompleted,
    RunEvent,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
)

AT = "2026-01-01T00:00:00.000Z"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def task(task_id: str, name: str, status: str, **extra: Any) -> TaskSnapshot:
    data = {"id": task_id, "name": name, "status": status, "executor": "provider:x:y", **extra}
    return cast(TaskSnapshot, data)


def started(task_id: str, name: str) -> TaskStarted:
    data = task(task_id, name, "running")
    return TaskStarted(run_id="run_1", seq=0, at=AT, task_id=task_id, task=data)


def answer(task_id: str, text: str) -> TaskAnswerDelta:
    return TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id=task_id, text=text)


def thought(task_id: str, text: str) -> TaskReasoningDelta:
    return TaskReasoningDelta(run_id="run_1", seq=0, at=AT, task_id=task_id, text=text)


def notices(
    tracker: ProgressTracker, clock: Clock, steps: list[tuple[float, RunEvent]]
) -> list[tuple[float, str]]:
    sent = []
    for advance, event in steps:
        clock.now += advance
        notice = tracker.update(event)
        if notice is not None:
            sent.append(notice)
    return sent


def test_streamed_characters_at_a_bounded_rate_between_steps() -> None:
    clock = Clock()
    tracker = ProgressTracker(2, interval_s=0.5, clock=clock)
    done = task("t1", "engineer", "done", reasoning_status="not_requested")
    snapshot = cast(Any, {"status": "completed"})
    sent = notices(
        tracker,
        clock,
        [
            (0, started("t1", "engineer")),
            (0, started("t2", "reviewer")),
            (0.1, answer("t1", "abc")),  # a task's first delta: at once
            (0.1, answer("t1", "defg")),  # too soon
            (0.1, answer("t2", "xy")),  # reviewer's first
            (0.1, answer("t1", "h")),  # too soon
            (0.5, answer("t1", "ij")),  # due
            (0, TaskCompleted(run_id="run_1", seq=0, at=AT, task_id="t1", task=done)),
            (0, RunCompleted(run_id="run_1", seq=0, at=AT, snapshot=snapshot)),
        ],
    )
    assert [message for _, message in sent] == [
        "engineer started (provider:x:y)",
        "reviewer started (provider:x:y)",
        "streaming: engineer 3 chars; reviewer 0 chars",
        "streaming: engineer 7 chars; reviewer 2 chars",
        "streaming: engineer 10 chars; reviewer 2 chars",
        "engineer done; reasoning not_requested; 10 chars streamed",
        "run completed",
    ]
    values = [value for value, _ in sent]
    assert values == sorted(set(values))  # strictly growing, as MCP requires
    assert values[:2] == [1, 2] and values[-2:] == [3, 4]
    assert all(2 < value < 3 for value in values[2:5])
    assert tracker.total == 5


def test_reasoning_counts_only_come_from_displayed_reasoning_events() -> None:
    clock = Clock()
    tracker = ProgressTracker(1, interval_s=0.5, clock=clock)
    sent = notices(
        tracker,
        clock,
        [
            (0, started("t1", "engineer")),
            (0, thought("t1", "Hmm, 1,000")),
            (1, answer("t1", "Yes")),
        ],
    )
    assert sent[1][1] == "streaming: engineer 0 chars (+10 reasoning chars)"
    assert sent[2][1] == "streaming: engineer 3 chars (+10 reasoning chars)"
    # Without reasoning events (a mode that does not display it), no reasoning is named.
    hidden = ProgressTracker(1, interval_s=0.5, clock=clock)
    sent = notices(hidden, clock, [(0, started("t1", "engineer")), (1, answer("t1", "Yes"))])
    assert all("reasoning" not in message for _, message in sent)


def test_many_notices_keep_growing_below_the_next_step() -> None:
    clock = Clock()
    tracker = ProgressTracker(1, interval_s=0.5, clock=clock)
    tracker.update(started("t1", "engineer"))
    values = []
    for _ in range(100_000):
        clock.now += 1
        notice = tracker.update(answer("t1", "x"))
        assert notice is not None
        values.append(notice[0])
    assert all(1 < earlier < later < 2 for earlier, later in itertools.pairwise(values))

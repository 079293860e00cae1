"""Progress notifications for one ``orchestration_run`` call: a step per task start and
completion and for the run's end, and between them, while the model writes, how many
characters each running task has streamed (at most every ``interval_s``), and each tool
call a task makes (its server, tool and status; never its arguments or result).

Reasoning characters are counted only from ``reasoning.delta`` events, which the
disclosure gate emits only for tasks whose mode displays reasoning: in other modes no
count of reasoning reaches the client. Counts, never text, go into the messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, assert_never

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
)

PROGRESS_INTERVAL_S: Final = 0.5
"""Least time between two streaming notices of one call (a task's first is sent at once)."""


@dataclass(slots=True)
class _Streamed:
    name: str
    answer_chars: int = 0
    reasoning_chars: int = 0
    running: bool = True
    reported: bool = False

    def describe(self) -> str:
        text = f"{self.name} {self.answer_chars:,} chars"
        if self.reasoning_chars:
            text += f" (+{self.reasoning_chars:,} reasoning chars)"
        return text


class ProgressTracker:
    """Turns a run's events into ``(progress, message)`` notices, or ``None`` for events
    not worth one.

    Steps (task starts, completions, the run's end) are whole numbers, so ``total`` is
    ``2 * tasks + 1``; the n-th streaming notice after step k is ``k + n / (n + 1)``: it
    grows strictly, as MCP requires, and never reaches the next step."""

    def __init__(
        self,
        task_count: int,
        *,
        interval_s: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = 2 * task_count + 1
        self.interval_s = interval_s
        self.clock = clock
        self.steps = 0
        self.notices_since_step = 0
        self.last_notice_at: float | None = None
        self.tasks: dict[str, _Streamed] = {}

    def update(self, event: RunEvent) -> tuple[float, str] | None:
        match event:
            case TaskStarted(task_id=task_id, task=data):
                self.tasks[task_id] = _Streamed(name=data["name"])
                return self._step(f"{data['name']} started ({data['executor']})")
            case TaskAnswerDelta(task_id=task_id, text=text):
                return self._streamed(task_id, answer=len(text))
            case TaskReasoningDelta(task_id=task_id, text=text):
                return self._streamed(task_id, reasoning=len(text))
            case TaskToolCallStarted(task_id=task_id, call=call):
                name = self.tasks[task_id].name if task_id in self.tasks else task_id
                return self._notice(f"{name} calls {call['server']}.{call['name']}")
            case TaskToolCallCompleted(task_id=task_id, call=call):
                name = self.tasks[task_id].name if task_id in self.tasks else task_id
                return self._notice(f"{name}: {call['server']}.{call['name']} {call['status']}")
            case TaskStepPriced():
                return None  # the tool's result carries the cost
            case ToolServerStart(server=server, state=state, duration_ms=duration_ms):
                if state == "starting":
                    return self._notice(f"starting MCP server {server}")
                took = "" if duration_ms is None else f" in {duration_ms / 1000:.1f} s"
                return self._notice(f"MCP server {server} {state}{took}")
            case TaskCompleted(task_id=task_id, task=data):
                message = f"{data['name']} {data['status']}"
                if data.get("reasoning_status"):
                    message += f"; reasoning {data['reasoning_status']}"
                streamed = self.tasks.get(task_id)
                if streamed is not None:
                    streamed.running = False
                    message += f"; {streamed.answer_chars:,} chars streamed"
                return self._step(message)
            case (
                RunCompleted(snapshot=data)
                | RunFailed(snapshot=data)
                | RunCancelled(snapshot=data)
                | RunInterrupted(snapshot=data)
            ):
                return self._step(f"run {data['status']}")
            case RunStarted():
                return None
            case _:
                assert_never(event)

    def _step(self, message: str) -> tuple[float, str]:
        self.steps += 1
        self.notices_since_step = 0
        return float(self.steps), message

    def _notice(self, message: str) -> tuple[float, str]:
        """A notice between two steps (a tool call): it grows, and never reaches the
        next step."""
        self.notices_since_step += 1
        count = self.notices_since_step
        return self.steps + count / (count + 1), message

    def _streamed(
        self, task_id: str, *, answer: int = 0, reasoning: int = 0
    ) -> tuple[float, str] | None:
        streamed = self.tasks.get(task_id)
        if streamed is None:  # a delta of a task started before this call listened
            return None
        streamed.answer_chars += answer
        streamed.reasoning_chars += reasoning
        now = self.clock()
        due = self.last_notice_at is None or now - self.last_notice_at >= self.interval_s
        if streamed.reported and not due:
            return None
        streamed.reported = True
        self.last_notice_at = now
        self.notices_since_step += 1
        count = self.notices_since_step
        running = "; ".join(task.describe() for task in self.tasks.values() if task.running)
        return self.steps + count / (count + 1), f"streaming: {running}"

"""A run for scripts: answers stream to stdout, progress goes to stderr.

stdout carries only what the model answered, written as it arrives, byte for byte (no
wrapping, no padding). With several tasks, one task's answer is written at a time, in
plan order, each after a ``==> name <==`` line (as ``head`` and ``tail`` separate files);
answers of later tasks wait in memory until the earlier ones end. Displayed reasoning
follows the same order on stderr, with one progress line per lifecycle event.

The answers on stdout keep the model's characters exactly: they are for programs. When
stderr is a terminal, what goes there (reasoning, and progress lines that quote task names
and error messages) is made visible first, never obeyed (see
:mod:`thoughtline.cli._terminal_text`).

When the reader of stdout goes away (``| head -1``), the view stops writing there and
calls ``on_closed`` once, so the command can stop the run and exit quietly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO, assert_never

from thoughtline.cli._render import tool_call_line
from thoughtline.cli._terminal_text import is_terminal, visible
from thoughtline.records import TaskSnapshot, short_run_id
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


@dataclass(slots=True)
class _Pending:
    """What a task streamed before its turn on stdout: (to stdout?, text) in order."""

    name: str
    pieces: list[tuple[bool, str]] = field(default_factory=list)
    ended: bool = False
    last_answer_char: str = "\n"
    reasoning_open: bool = False


class PipedRunView:
    def __init__(
        self, out: TextIO, err: TextIO, *, on_closed: Callable[[], None] | None = None
    ) -> None:
        self.out = out
        self.err = err
        self.on_closed = on_closed
        self.out_closed = False
        self.err_closed = False
        self.tasks: dict[str, _Pending] = {}
        self.order: list[str] = []
        self.turn = 0  # index in order of the task whose text goes straight out
        self.deferred: dict[str, str] = {}  # task id -> its end line, held back for order
        self.err_at_line_start = True
        # Decided once: a stream does not stop being a terminal during a run.
        self.out_terminal = is_terminal(out)
        self.err_terminal = is_terminal(err)

    def starting(self, servers: Sequence[str]) -> None:
        """Say which tool servers start before the run (it starts once they are up)."""
        if servers:
            self._progress(f"starting tool servers: {', '.join(servers)}…")

    def handle(self, event: RunEvent) -> None:
        match event:
            case TaskAnswerDelta(task_id=task_id, text=text):
                self._text(task_id, True, text)
            case TaskReasoningDelta(task_id=task_id, text=text):
                self._text(task_id, False, text)
            case RunStarted(run_id=run_id, snapshot=data):
                for task in data["tasks"]:
                    self.tasks[task["id"]] = _Pending(task["name"])
                    self.order.append(task["id"])
                self._progress(
                    f"run {short_run_id(run_id)} started: {len(data['tasks'])} task(s), "
                    f"chain_of_thought={data['chain_of_thought']} ({data['chain_of_thought_source']})"
                )
                if len(self.order) > 1:
                    self._begin(self.order[0])
            case TaskStarted(task=data):
                self._progress(
                    f"task {data['name']} started ({data['executor']}, "
                    f"chain_of_thought={data['chain_of_thought']})"
                )
            case (
                TaskToolCallStarted(task_id=task_id, call=call)
                | TaskToolCallCompleted(task_id=task_id, call=call)
            ):
                pending = self.tasks.get(task_id)
                name = pending.name if pending is not None else task_id
                self._progress(f"task {name}: {tool_call_line(call)}")
            case TaskStepPriced():
                pass  # the cost is said with the run's end
            case ToolServerStart():
                pass  # named once, first (starting()); a failure is the run's error
            case TaskCompleted(task_id=task_id, task=data):
                self._completed(task_id, data)
            case (
                RunCompleted(run_id=run_id, snapshot=data)
                | RunFailed(run_id=run_id, snapshot=data)
                | RunCancelled(run_id=run_id, snapshot=data)
                | RunInterrupted(run_id=run_id, snapshot=data)
            ):
                self._progress(f"run {short_run_id(run_id)} {data['status']}")
            case _:
                assert_never(event)

    # -- ordering --------------------------------------------------------------------
    def _text(self, task_id: str, answer: bool, text: str) -> None:
        pending = self.tasks.get(task_id)
        if pending is None or not text:
            return
        if self.turn < len(self.order) and self.order[self.turn] == task_id:
            self._emit(pending, answer, text)
        else:
            pending.pieces.append((answer, text))

    def _completed(self, task_id: str, data: TaskSnapshot) -> None:
        pending = self.tasks.get(task_id)
        line = f"task {data['name']} {data['status']}"
        error = data["error"]
        if error is not None:
            # Its message is said once, with the run's end (`thoughtline: task ...`).
            line += f": {error['code']} (below)"
        untold = error is not None and data["reasoning_status"] in (
            "not_requested",
            "not_applicable",
        )  # a failed task's "not requested" says nothing the failure does not
        if data.get("reasoning_notice") and not untold:
            line += f" — reasoning {data['reasoning_status']}: {data['reasoning_notice']}"
        if data.get("budget_notice"):
            line += f" — {data.get('budget_notice')}"
        if pending is None:
            self._progress(line)
            return
        pending.ended = True
        if self.order[self.turn] != task_id:
            self.deferred[task_id] = line  # said when its text is written, to keep order
            return
        self._end(pending, line)
        # Hand stdout to the next task, writing what it streamed while it waited.
        while self.turn + 1 < len(self.order):
            self.turn += 1
            upcoming_id = self.order[self.turn]
            upcoming = self.tasks[upcoming_id]
            self._begin(upcoming_id)
            for is_answer, text in upcoming.pieces:
                self._emit(upcoming, is_answer, text)
            upcoming.pieces.clear()
            if not upcoming.ended:
                break
            self._end(upcoming, self.deferred.pop(upcoming_id, ""))

    def _begin(self, task_id: str) -> None:
        if len(self.order) > 1:
            separator = "" if self.order[0] == task_id else "\n"
            self._write_out(f"{separator}==> {self.tasks[task_id].name} <==\n")

    def _end(self, pending: _Pending, line: str) -> None:
        if pending.last_answer_char != "\n":
            self._write_out("\n")  # every answer ends a line, so the next one starts clean
            pending.last_answer_char = "\n"
        pending.reasoning_open = False
        if line:
            self._progress(line)

    def _emit(self, pending: _Pending, answer: bool, text: str) -> None:
        if answer:
            if pending.reasoning_open and not self.err_at_line_start:
                # Shown on one terminal, the reasoning would run into the answer's line.
                self._write_err("\n")
            self._write_out(text)
            pending.last_answer_char = text[-1]
            return
        if not pending.reasoning_open:
            self._write_err(f"reasoning ({pending.name}):\n")
            pending.reasoning_open = True
        self._write_err(text)

    # -- writing ---------------------------------------------------------------------
    def _progress(self, text: str) -> None:
        # A progress line never continues a line of streamed reasoning.
        self._write_err(("" if self.err_at_line_start else "\n") + text + "\n")

    def _write_out(self, text: str) -> None:
        if self.out_closed:
            return
        try:
            self.out.write(visible(text) if self.out_terminal else text)
            self.out.flush()
        except BrokenPipeError:
            self.out_closed = True
            if self.on_closed is not None:
                self.on_closed()

    def _write_err(self, text: str) -> None:
        if self.err_closed:
            return
        try:
            self.err.write(visible(text) if self.err_terminal else text)
            self.err.flush()
            self.err_at_line_start = text.endswith("\n")
        except BrokenPipeError:
            self.err_closed = True  # progress is optional; the answer still goes to stdout

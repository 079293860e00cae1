"""The live view of a run on a terminal: a line per tool server while it starts, one
panel per task, redrawn at the refresh rate. The panels show at once, from the planned
run, while the run waits for its servers.

Events only update per-task state, in constant time: each delta is kept once (a chunk
list and a running length, for the counts) and in a bounded tail (what fits on screen).
Rich's refresh thread draws from that state 12 times a second, so a run of a million
deltas costs a million appends plus a bounded number of redraws, not a redraw per delta.

The view renders only what the runtime's events carry: reasoning appears only if the
runtime sent reasoning deltas, which it does only when the task's mode displays
reasoning. There is no mode logic here. Model and user text is printed as
:class:`~rich.text.Text`, never parsed as markup, and made visible, never obeyed by the
terminal (see :mod:`thoughtline.cli._terminal_text`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import assert_never

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from thoughtline.cli._render import STATUS_STYLE, tool_call_line
from thoughtline.cli._terminal_text import visible, visible_text
from thoughtline.records import RunSnapshot, TaskSnapshot, ToolCallSnapshot
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
    ToolServerState,
)

REFRESH_PER_SECOND = 12
# Characters kept for the screen per stream: more than the rows shown at any sane width.
TAIL_CHARS = 8192
_ANSWER_ROWS = 12
_REASONING_ROWS = 4
_TOOL_ROWS = 6  # the latest tool calls of a task


@dataclass(slots=True)
class TextStream:
    """One task's answer or reasoning as it streams: every chunk once, the running length,
    and a tail of at least :data:`TAIL_CHARS` characters for the screen."""

    chunks: list[str] = field(default_factory=list)
    length: int = 0
    tail: deque[str] = field(default_factory=deque)
    tail_length: int = 0

    def add(self, text: str) -> None:
        self.chunks.append(text)
        self.length += len(text)
        self.tail.append(text)
        self.tail_length += len(text)
        # Drop whole chunks from the left while the rest still fills the tail.
        while self.tail_length - len(self.tail[0]) >= TAIL_CHARS:
            self.tail_length -= len(self.tail.popleft())

    def last(self) -> str:
        return "".join(self.tail)[-TAIL_CHARS:]


@dataclass(slots=True)
class ServerLine:
    """One tool server of the run, as its ``tool_server.start`` events told it."""

    state: ToolServerState = "starting"
    began: float = field(default_factory=time.monotonic)
    duration_ms: int | None = None
    tools: int | None = None
    error: str | None = None
    spinner: Spinner = field(default_factory=lambda: Spinner("dots", style="yellow"))


@dataclass(slots=True)
class TaskState:
    data: TaskSnapshot
    answer: TextStream = field(default_factory=TextStream)
    reasoning: TextStream = field(default_factory=TextStream)
    started: float | None = None
    ended: float | None = None
    tool_calls: dict[str, ToolCallSnapshot] = field(default_factory=dict)
    """The task's tool calls by id, each as last told (started, then ended)."""
    # Created once: a spinner measures its frame from its own start time, so a new one
    # per redraw would stay on its first frame.
    spinner: Spinner = field(default_factory=lambda: Spinner("dots", style="yellow"))


class LiveRunView:
    """Panels per task: a spinner with elapsed time and streamed character counts, a dim
    reasoning tail while reasoning arrives (folded to one line once the answer streams),
    the answer's tail, then the reasoning notice and the error when the task ends. Above
    them, the run's tool servers from their ``tool_server.start`` events (``starting``:
    those named before the first). ``planned``: the run as planned, whose panels show
    before its first event.

    ``transient``: the panels are cleared when the view closes, for the caller to print
    each full answer and the closing table in their place."""

    def __init__(
        self,
        console: Console,
        *,
        transient: bool = True,
        starting: Sequence[str] = (),
        planned: RunSnapshot | None = None,
    ) -> None:
        self.console = console
        self.servers: dict[str, ServerLine] = {name: ServerLine() for name in starting}
        """The run's tool servers (those it starts named at once): a line each while it
        starts or when it failed, one compact note for those ready."""
        self.tasks: dict[str, TaskState] = {}
        self.order: list[str] = []
        if planned is not None:  # the panels show at once, before the run is stored
            for task in planned["tasks"]:
                self.tasks[task["id"]] = TaskState(task)
                self.order.append(task["id"])
        # handle() runs on the event loop's thread, render() on rich's refresh thread.
        self._lock = threading.Lock()
        self.live = Live(
            console=console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=transient,
            get_renderable=self.render,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def __enter__(self) -> LiveRunView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.__exit__(None, None, None)

    def handle(self, event: RunEvent) -> None:
        with self._lock:
            match event:
                case TaskAnswerDelta(task_id=task_id, text=text):
                    state = self.tasks.get(task_id)
                    if state is not None:
                        state.answer.add(text)
                case TaskReasoningDelta(task_id=task_id, text=text):
                    state = self.tasks.get(task_id)
                    if state is not None:
                        state.reasoning.add(text)
                case RunStarted(snapshot=snapshot):
                    for task in snapshot["tasks"]:
                        known = self.tasks.get(task["id"])
                        if known is not None:
                            known.data = task
                            continue
                        self.tasks[task["id"]] = TaskState(task)
                        self.order.append(task["id"])
                case ToolServerStart(server=server, state=state):
                    line = self.servers.setdefault(server, ServerLine())
                    if state == "starting":  # a start under way when the run joined it
                        line.began = time.monotonic() - (event.duration_ms or 0) / 1000
                    line.state = state
                    line.duration_ms = event.duration_ms
                    line.tools = event.tools
                    if event.error is not None:
                        line.error = f"{event.error['code']}: {event.error['message']}"
                case TaskStarted(task_id=task_id, task=task):
                    state = self.tasks.get(task_id)
                    if state is not None:
                        state.data = task
                        state.started = time.monotonic()
                case (
                    TaskToolCallStarted(task_id=task_id, call=call)
                    | TaskToolCallCompleted(task_id=task_id, call=call)
                ):
                    state = self.tasks.get(task_id)
                    if state is not None:
                        state.tool_calls[call["id"]] = call
                case TaskStepPriced():
                    pass  # the cost is shown when the task ends
                case TaskCompleted(task_id=task_id, task=task):
                    state = self.tasks.get(task_id)
                    if state is not None:
                        state.data = task
                        state.ended = time.monotonic()
                case RunCompleted() | RunFailed() | RunCancelled() | RunInterrupted():
                    pass  # the closing print says how the run ended
                case _:
                    assert_never(event)

    def render(self) -> RenderableType:
        with self._lock:
            states = [self.tasks[task_id] for task_id in self.order]
            now = time.monotonic()
            width = max(20, self.console.width - 4)
            lines = self._server_lines(width + 4, now)
            # Share the screen: fewer tail rows per task when several run at once.
            per_task = max(2, (self.console.height - len(lines)) // max(1, len(states)) - 8)
            panels = [
                self._panel(state, min(_ANSWER_ROWS, per_task), width, now) for state in states
            ]
        return Group(*lines, *panels)

    def _server_lines(self, width: int, now: float) -> list[RenderableType]:
        """A line per server starting (its spinner and time so far) or failed, and one
        compact note for the servers that are ready."""
        lines: list[RenderableType] = []
        ready: list[str] = []
        for name, line in self.servers.items():
            if line.state == "ready":
                took = "" if line.duration_ms is None else f" {line.duration_ms / 1000:.1f} s"
                ready.append(f"{name}{took}")
            elif line.state == "failed":
                took = "" if line.duration_ms is None else f" after {line.duration_ms / 1000:.1f} s"
                said = f"✗ MCP server {name} did not start{took}: {line.error or 'no reason given'}"
                lines.append(Text(head_row(visible(said), width), style="red"))
            else:
                grid = Table.grid(padding=(0, 1))
                said = f"starting MCP server {name}… {now - line.began:.1f} s"
                grid.add_row(line.spinner, Text(head_row(visible(said), width - 2), "yellow"))
                lines.append(grid)
        if ready:
            note = "MCP servers ready: " + ", ".join(ready)
            lines.insert(0, Text(head_row(visible(note), width), style="dim"))
        return lines

    def _panel(self, state: TaskState, rows: int, width: int, now: float) -> Panel:
        task = state.data
        status = task["status"]
        body: list[RenderableType] = [self._progress(state, now)]
        if state.reasoning.length and not state.answer.length:
            # Made visible before fitting: a shown control takes the columns it is counted for.
            reasoning = visible(state.reasoning.last())
            tail = fit_rows(reasoning, min(_REASONING_ROWS, rows), width)
            body.append(Text("reasoning ▸ " + tail, style="dim italic"))
        elif state.reasoning.length:
            # The answer streams: the reasoning folds to one line (printed whole at the end).
            body.append(
                Text(
                    f"reasoning ▸ {state.reasoning.length:,} characters, printed in full at the end",
                    style="dim italic",
                )
            )
        for call in list(state.tool_calls.values())[-_TOOL_ROWS:]:
            # Made visible before fitting, as the reasoning tail is.
            body.append(Text(fit_rows(visible(tool_call_line(call)), 1, width), style="magenta"))
        answer = state.answer.last() if state.answer.length else (task.get("output") or "")
        if answer:
            body.append(Text(fit_rows(visible(answer[-TAIL_CHARS:]), rows, width)))
        if task.get("reasoning_notice") and status not in ("queued", "running"):
            body.append(visible_text(f"ⓘ {task['reasoning_notice']}", "cyan"))
        if task.get("budget_notice") and status not in ("queued", "running"):
            body.append(visible_text(f"ⓘ {task['budget_notice']}", "cyan"))
        error = task["error"]
        if error is not None:
            body.append(visible_text(f"✗ {error['code']}: {error['message']}", "red"))
        title = Text.assemble(
            (visible(f" {task['name']} "), "bold"),
            (visible(f"{task['provider']}:{task['model']} · {task['chain_of_thought']} "), "dim"),
        )
        return Panel(
            Group(*body),
            title=title,
            title_align="left",
            subtitle=Text(status, style=STATUS_STYLE.get(status, "dim")),
            subtitle_align="right",
            border_style=STATUS_STYLE.get(status, "white"),
        )

    def _progress(self, state: TaskState, now: float) -> RenderableType:
        status = state.data["status"]
        parts: list[str] = [status]
        if state.started is not None:
            parts.append(f"{(state.ended or now) - state.started:.1f} s")
        if state.reasoning.length:
            parts.append(f"reasoning {state.reasoning.length:,} chars")
        if state.answer.length:
            parts.append(f"answer {state.answer.length:,} chars")
        line = Text(" · ".join(parts), style=STATUS_STYLE.get(status, "dim"))
        if status != "running":
            return line
        grid = Table.grid(padding=(0, 1))
        grid.add_row(state.spinner, line)
        return grid


def fit_rows(text: str, rows: int, width: int) -> str:
    """The end of ``text`` that fills at most ``rows`` screen rows of ``width`` columns
    (one character a column: a bound, not a layout; the live display crops the rest)."""
    kept: list[str] = []
    budget = rows
    for line in reversed(text.splitlines()):
        need = max(1, -(-len(line) // width))
        if need > budget:
            kept.append(line[-budget * width :])
            break
        kept.append(line)
        budget -= need
        if budget <= 0:
            break
    return "\n".join(reversed(kept))


def head_row(text: str, width: int) -> str:
    """The start of ``text``'s first line that fits one row of ``width`` columns (one
    character a column), ending in "…" when cut: what a status line says first."""
    line = text.split("\n", 1)[0]
    if len(line) <= width and "\n" not in text:
        return line
    return line[: max(1, width - 1)] + "…"

"""Rendering a run in the terminal: a live view on a TTY, plain lines otherwise.

Both render only what the runtime's events carry: reasoning appears only if the runtime
sent reasoning deltas, which it does only when the task's mode displays
reasoning. There is no mode logic here.

Everything a model or a user wrote (answers, reasoning, requests, names, models, error
messages) is printed as text, never parsed as rich markup: a model that writes
``[/INST]`` or ``[bold]`` must not break or restyle the output. Styling comes only from
:class:`~rich.text.Text` spans built here, on consoles from :func:`text_console`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO, assert_never

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

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
)

_TAIL_LINES = 12
_REASONING_TAIL_LINES = 4


def text_console(**options: Any) -> Console:
    """A console that prints strings as they are: no markup, emoji codes or highlighting
    (most of what thoughtline prints was written by a model or a user)."""
    return Console(markup=False, emoji=False, highlight=False, **options)


@dataclass(slots=True)
class _TaskView:
    data: dict[str, Any]
    answer: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


class LiveRunView:
    """Panels per task with a spinner, streamed answer, dim reasoning tail (only when it
    arrives), the reasoning notice at the end; a closing table of tokens and timings."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.tasks: dict[str, _TaskView] = {}
        self.order: list[str] = []
        self.live = Live(console=console, refresh_per_second=12, transient=False)

    def __enter__(self) -> LiveRunView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.update(self.render())
        self.live.__exit__(None, None, None)

    def handle(self, event: RunEvent) -> None:
        match event:
            case RunStarted(snapshot=snapshot):
                for task in snapshot["tasks"]:
                    self.tasks[task["id"]] = _TaskView(task)
                    self.order.append(task["id"])
            case (
                TaskStarted(task_id=task_id, task=task) | TaskCompleted(task_id=task_id, task=task)
            ):
                if task_id in self.tasks:
                    self.tasks[task_id].data = task
            case TaskAnswerDelta(task_id=task_id, text=text):
                if task_id in self.tasks:
                    self.tasks[task_id].answer.append(text)
            case TaskReasoningDelta(task_id=task_id, text=text):
                if task_id in self.tasks:
                    self.tasks[task_id].reasoning.append(text)
            case RunCompleted() | RunFailed() | RunCancelled() | RunInterrupted():
                pass  # the closing table says how the run ended
            case _:
                assert_never(event)
        self.live.update(self.render())

    def render(self) -> RenderableType:
        return Group(*(self._panel(self.tasks[task_id]) for task_id in self.order))

    def _panel(self, view: _TaskView) -> Panel:
        task = view.data
        status = task["status"]
        body: list[RenderableType] = []
        if view.reasoning:
            tail = "".join(view.reasoning).splitlines()[-_REASONING_TAIL_LINES:]
            body.append(Text("reasoning ▸ " + "\n".join(tail), style="dim italic"))
        answer = "".join(view.answer) or (task.get("output") or "")
        if answer:
            body.append(Text("\n".join(answer.splitlines()[-_TAIL_LINES:])))
        if task.get("reasoning_notice") and status not in ("queued", "running"):
            body.append(Text(f"ⓘ {task['reasoning_notice']}", style="cyan"))
        if task.get("error"):
            body.append(Text(f"✗ {task['error']['code']}: {task['error']['message']}", style="red"))
        title = Text.assemble(
            (f" {task['name']} ", "bold"),
            (f"{task['provider']}:{task['model']} · {task['chain_of_thought']} ", "dim"),
        )
        if status == "running":
            header: RenderableType = Spinner("dots", text=Text("running", style="yellow"))
            body.insert(0, header)
        return Panel(
            Group(*body) if body else Text(status, style="dim"),
            title=title,
            title_align="left",
            subtitle=_status_text(status),
            subtitle_align="right",
            border_style=_STATUS_STYLE.get(status, "white"),
        )


_STATUS_STYLE = {
    "done": "green",
    "prepared": "blue",
    "failed": "red",
    "cancelled": "yellow",
    "interrupted": "yellow",
    "running": "yellow",
}


def _status_text(status: str) -> Text:
    return Text(status, style=_STATUS_STYLE.get(status, "dim"))


class PlainRunView:
    """One line per lifecycle event, for logs and pipes (no deltas)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def handle(self, event: RunEvent) -> None:
        match event:
            case RunStarted(run_id=run_id, snapshot=data):
                self._line(
                    f"run {run_id} started: {len(data['tasks'])} task(s), chain_of_thought={data['chain_of_thought']} ({data['chain_of_thought_source']})"
                )
            case TaskStarted(task=data):
                self._line(
                    f"task {data['name']} started ({data['executor']}, chain_of_thought={data['chain_of_thought']})"
                )
            case TaskCompleted(task=data):
                line = f"task {data['name']} {data['status']}"
                if data.get("error"):
                    line += f": {data['error']['code']}: {data['error']['message']}"
                if data.get("reasoning_notice"):
                    line += f" — reasoning {data['reasoning_status']}: {data['reasoning_notice']}"
                self._line(line)
            case TaskAnswerDelta() | TaskReasoningDelta():
                pass  # no deltas in plain output
            case (
                RunCompleted(run_id=run_id, snapshot=data)
                | RunFailed(run_id=run_id, snapshot=data)
                | RunCancelled(run_id=run_id, snapshot=data)
                | RunInterrupted(run_id=run_id, snapshot=data)
            ):
                self._line(f"run {run_id} {data['status']}")
            case _:
                assert_never(event)

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def print_outputs(console: Console, snapshot: dict[str, Any]) -> None:
    """Each task's answer and, only when present in the snapshot, its reasoning."""
    for task in snapshot["tasks"]:
        console.rule(Text.assemble((task["name"], "bold"), " ", (task["executor"], "dim")))
        if task.get("reasoning"):
            console.print(Text("reasoning:\n" + task["reasoning"], style="dim italic"))
        if task.get("output"):
            console.print(Text(task["output"]))
        if task.get("reasoning_notice"):
            console.print(Text(f"ⓘ {task['reasoning_notice']}", style="cyan"))


def summary_table(snapshot: dict[str, Any]) -> Table:
    """Tokens (input/output/reasoning) and timings (first reasoning, first answer, total)."""
    table = Table(title=Text(f"run {snapshot['id']} · {snapshot['status']}"), title_justify="left")
    for column in (
        "task",
        "status",
        "reasoning",
        "input",
        "output",
        "reasoning tok.",
        "first reasoning",
        "first answer",
        "total",
    ):
        table.add_column(
            column, justify="right" if column not in ("task", "status", "reasoning") else "left"
        )
    for task in snapshot["tasks"]:
        usage, timings = task["usage"], task["timings"]
        table.add_row(
            Text(task["name"]),
            Text(task["status"]),
            Text(task["reasoning_status"] or "-"),
            _count(usage["input_tokens"]),
            _count(usage["output_tokens"]),
            _count(usage["reasoning_tokens"]),
            _ms(timings["first_reasoning_ms"]),
            _ms(timings["first_answer_ms"]),
            _ms(timings["total_ms"]),
        )
    return table


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"

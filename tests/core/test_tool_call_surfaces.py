"""The live events of a tool call on each surface: the piped CLI, the SSE snapshot
folder, MCP progress and ACP session updates."""

from __future__ import annotations

import io

from thoughtline.cli.piped_view import PipedRunView
from thoughtline.integrations.acp.render import TurnRenderer
from thoughtline.integrations.mcp.progress import ProgressTracker
from thoughtline.records import Run, Task, ToolCallSnapshot
from thoughtline.records.run_events import (
    RunEvent,
    RunStarted,
    TaskStarted,
    TaskToolCallCompleted,
    TaskToolCallStarted,
)
from thoughtline.server.events import SnapshotFolder

AT = "2026-01-01T00:00:00.000Z"
TASK = Task(
    id="task_1",
    run_id="run_1",
    position=0,
    role="reader",
    name="reader",
    provider="anthropic",
    model="claude-sonnet-4-6",
    chain_of_thought="hidden",
    chain_of_thought_source="default",
    tools=("time",),
    tool_calls=[],
)
RUN = Run(
    id="run_1",
    request="r",
    chain_of_thought="hidden",
    chain_of_thought_source="default",
    worker_backend="provider",
    tasks=[TASK],
)
CALL: ToolCallSnapshot = {
    "id": "call_1",
    "step": 1,
    "server": "time",
    "name": "get_current_time",
    "arguments": '{"timezone":"UTC"}',
    "status": "running",
    "is_error": False,
    "result": None,
    "result_truncated": False,
    "error": None,
    "started_at": AT,
    "duration_ms": None,
}
DONE: ToolCallSnapshot = {**CALL, "status": "done", "result": "12:00", "duration_ms": 3.0}


def events() -> list[RunEvent]:
    snapshot = RUN.snapshot()
    return [
        RunStarted(run_id="run_1", seq=1, at=AT, snapshot=snapshot),
        TaskStarted(run_id="run_1", seq=2, at=AT, task_id="task_1", task=TASK.to_dict()),
        TaskToolCallStarted(run_id="run_1", seq=3, at=AT, task_id="task_1", call=CALL),
        TaskToolCallCompleted(run_id="run_1", seq=4, at=AT, task_id="task_1", call=DONE),
    ]


def test_the_piped_cli_writes_a_line_per_call_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PipedRunView(out, err)
    for event in events():
        view.handle(event)
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert 'task reader: → time.get_current_time {"timezone":"UTC"}' in lines
    assert "task reader: ✓ time.get_current_time done, 3 ms" in lines


def test_the_sse_snapshot_folds_each_call_in_place() -> None:
    folder = SnapshotFolder(RUN.snapshot())
    for event in events()[:3]:
        folder.apply(event)
    assert folder.snapshot()["tasks"][0]["tool_calls"] == [CALL]
    folder.apply(events()[3])
    assert folder.snapshot()["tasks"][0]["tool_calls"] == [DONE]


def test_mcp_progress_names_the_tool_and_grows_between_steps() -> None:
    tracker = ProgressTracker(1, interval_s=0.5, clock=lambda: 0.0)
    notices = [tracker.update(event) for event in events()]
    assert notices[2] is not None and notices[3] is not None
    assert notices[2][1] == "reader calls time.get_current_time"
    assert notices[3][1] == "reader: time.get_current_time done"
    assert notices[1] is not None
    assert notices[1][0] < notices[2][0] < notices[3][0] < notices[1][0] + 1


def test_acp_shows_each_call_as_a_tool_call_and_its_update() -> None:
    renderer = TurnRenderer()
    updates = [update for event in events() for update in renderer.render(event)]
    started, ended = updates[-2], updates[-1]
    assert started.session_update == "tool_call"
    assert started.tool_call_id == "task_1/call_1"
    assert started.title == "time.get_current_time"
    assert ended.session_update == "tool_call_update"
    assert ended.status == "completed"
    assert ended.raw_output == dict(DONE)


def test_the_live_terminal_panel_shows_the_latest_calls_made_visible() -> None:
    from rich.console import Console

    from thoughtline.cli.live_view import LiveRunView

    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system=None)
    live = LiveRunView(console)
    hostile: ToolCallSnapshot = {**DONE, "id": "call_2", "name": "get\x1b]0;owned\x07time"}
    for event in [
        *events(),
        TaskToolCallCompleted(run_id="run_1", seq=5, at=AT, task_id="task_1", call=hostile),
    ]:
        live.handle(event)
    console.print(live.render())
    screen = console.file.getvalue()  # type: ignore[attr-defined]
    assert "✓ time.get_current_time done, 3 ms" in screen
    assert "\x1b]0;owned" not in screen  # a control sequence in a tool name is shown, not obeyed

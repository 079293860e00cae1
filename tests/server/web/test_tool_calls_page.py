"""A task's tool calls on the page, from the live events: one collapsible row per call,
its arguments and result shown as text, updated in place when the call ends."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.server.web.support import (
    FAKE_ORIGIN,
    FakeDaemon,
    fulfill_json,
    snapshot,
    sse_frames,
    task,
)

RUN = "run_fake"
CALL: dict[str, Any] = {
    "id": "call_1",
    "step": 1,
    "server": "git",
    "name": "git_log",
    "arguments": '{"repo_path": "<b>repo</b>"}',
    "status": "running",
    "is_error": False,
    "result": None,
    "result_truncated": False,
    "error": None,
    "started_at": "2025-01-01T12:00:01.000Z",
    "duration_ms": None,
}


def test_each_tool_call_shows_its_arguments_and_result(page: Page, fake_daemon: FakeDaemon) -> None:
    planned = snapshot(tasks=[task(status="running", tool_calls=[], steps=1)])
    done = {**CALL, "status": "done", "result": "commit 1 <script>x</script>", "duration_ms": 12.0}
    failed = {
        **CALL,
        "id": "call_2",
        "step": 2,
        "status": "timed_out",
        "is_error": True,
        "error": "TOOL_TIMEOUT",
    }
    frames = [
        (1, "snapshot", planned),
        (2, "task.tool_call.started", {"task_id": "task_fake", "call": CALL}),
        (3, "task.tool_call.completed", {"task_id": "task_fake", "call": done}),
        (4, "task.tool_call.completed", {"task_id": "task_fake", "call": failed}),
    ]
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [planned])
    fake_daemon.routes[f"GET /v1/runs/{RUN}/events"] = lambda route, _: route.fulfill(
        status=200, body=sse_frames(frames), headers={"content-type": "text/event-stream"}
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    calls = page.get_by_test_id("tool-call")
    expect(calls).to_have_count(2)
    first = calls.nth(0)
    expect(first.locator("summary")).to_have_text("step 1 · git.git_log · done · 12 ms")
    first.locator("summary").click()
    expect(first.get_by_test_id("tool-arguments")).to_have_text('{"repo_path": "<b>repo</b>"}')
    expect(first.get_by_test_id("tool-result")).to_have_text("commit 1 <script>x</script>")
    assert first.locator("b, script").count() == 0
    expect(calls.nth(1).locator("summary")).to_have_text(
        "step 2 · git.git_log · timed_out (TOOL_TIMEOUT)"
    )

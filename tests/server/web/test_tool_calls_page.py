"""A task's tool calls on the page, from the live events: one collapsible row per call,
its arguments and result shown as text, updated in place when the call ends."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.server.web.support import (
    FAKE_ORIGIN,
    FakeDaemon,
    fulfill_json,
    snapshot,
    sse_frames,
    task,
)

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

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


def test_the_reasoning_of_each_step_is_labelled_with_its_step(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    parts = [
        {"kind": "summary", "text": "Look it up <b>first</b>.", "step": 1},
        {"kind": "summary", "text": "Then answer.", "step": 2},
    ]
    two_steps = task(
        status="done",
        steps=2,
        tool_calls=[{**CALL, "status": "done", "result": "commit 1", "duration_ms": 12.0}],
        reasoning="Look it up <b>first</b>.\n\nThen answer.",
        reasoning_parts=parts,
        reasoning_status="shown",
        output="One commit.",
    )
    one_step = task(
        "task_one",
        name="reviewer",
        status="done",
        steps=1,
        tool_calls=[],
        reasoning="Nothing to call.",
        reasoning_parts=[{"kind": "summary", "text": "Nothing to call."}],
        reasoning_status="shown",
        output="Fine.",
    )
    done = snapshot(status="completed", tasks=[two_steps, one_step])
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [done])
    fake_daemon.routes[f"GET /v1/runs/{RUN}/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", done)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    reasoning = page.get_by_test_id("task-reasoning")
    expect(reasoning).to_have_count(2)
    reasoning.nth(0).get_by_test_id("task-reasoning-summary").click()
    steps = reasoning.nth(0).get_by_test_id("reasoning-step")
    expect(steps).to_have_count(2)
    expect(steps.get_by_test_id("reasoning-step-label")).to_have_text(["step 1", "step 2"])
    expect(steps.nth(0)).to_contain_text("Look it up <b>first</b>.")
    expect(steps.nth(1)).to_contain_text("Then answer.")
    assert reasoning.nth(0).locator("b").count() == 0
    # A task of one step: its reasoning is one text, with no label.
    expect(reasoning.nth(1).get_by_test_id("task-reasoning-text")).to_have_text("Nothing to call.")
    expect(reasoning.nth(1).get_by_test_id("reasoning-step")).to_have_count(0)

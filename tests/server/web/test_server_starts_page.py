"""A daemon run's tool servers starting, on the page (a real daemon, Chromium): a run
started from the form shows at once with a line per server still starting, ticking, and
a note for those ready with their time and tool count; a page opened on a run whose
server is starting shows it from the snapshot, then its failure, as text; markup in a
server's name or error (a canned daemon) stays text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.server.conftest import StartDaemon
from tests.server.test_server_starts import (
    DONE,
    failing_after,
    gated,
    serving,
    start_async,
    wait_for_starts,
)
from tests.server.web.support import (
    FAKE_ORIGIN,
    FakeDaemon,
    fulfill_json,
    screenshot,
    snapshot,
    sse_frames,
    task,
)
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.testing import Simulator
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # chromium driving a daemon's page, tool server processes

SECONDS = r"\d+\.\d s"
RUN = "run_fake"


def test_a_run_from_the_form_shows_its_servers_starting_then_ready(
    page: Page, start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    quick = McpServerSettings(name="quick", command=sys.executable, args=(TEST_SERVER,))
    daemon = serving(start_daemon, gated("slow", gate), quick)
    sim.script(DONE)
    page.goto(f"{daemon.url}/")
    page.get_by_test_id("form-request").fill("Look it up.")
    page.get_by_test_id("form-tool-slow").check()
    page.get_by_test_id("form-tool-quick").check()
    page.get_by_test_id("form-submit").click()

    ready = page.get_by_test_id("servers-ready")
    expect(ready).to_have_text(re.compile(rf"^MCP servers ready: quick {SECONDS} \(\d+ tools\)$"))
    starting = page.get_by_test_id("server-starting")
    expect(starting).to_have_text(re.compile(rf"^starting MCP server slow… {SECONDS}$"))
    expect(page.get_by_test_id("task-stats")).to_contain_text("queued")
    shown = starting.text_content()
    expect(starting).not_to_have_text(shown or "")  # its time goes on
    screenshot(page, "server-starts")
    assert sim.requests == []

    gate.touch()
    expect(starting).to_have_count(0)
    expect(ready).to_have_text(
        re.compile(
            rf"^MCP servers ready: quick {SECONDS} \(\d+ tools\), slow {SECONDS} \(\d+ tools\)$"
        )
    )
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(page.get_by_test_id("task-answer")).to_contain_text("Done.")


def test_a_page_opened_while_a_server_starts_shows_it_then_its_failure_as_text(
    page: Page, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    gate, launches = tmp_path / "gate", tmp_path / "launches"
    daemon = serving(start_daemon, failing_after(gate, launches))
    client = daemon.client()
    run_id = start_async(client, ["broken"])
    wait_for_starts(client, run_id, lambda starts: "broken" in starts)

    page.goto(f"{daemon.url}/#/runs/{run_id}")
    expect(page.get_by_test_id("server-starting")).to_have_text(
        re.compile(rf"^starting MCP server broken… {SECONDS}$")
    )
    gate.touch()
    failed = page.get_by_test_id("server-failed")
    expect(failed).to_contain_text(
        re.compile(
            rf"^✗ MCP server broken did not start after {SECONDS}: TOOL_SERVER_UNAVAILABLE: "
        )
    )
    expect(failed).to_contain_text("no <b>database</b> here")
    assert page.get_by_test_id("server-starts").locator("b").count() == 0
    expect(page.get_by_test_id("server-starting")).to_have_count(0)
    expect(page.get_by_test_id("run-status")).to_have_text("failed")


def test_hostile_server_names_and_errors_are_shown_as_text(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    """A snapshot and events whose names and messages hold markup: shown as text, and a
    ``tool_server.start`` that follows the snapshot replaces that server's line."""
    hostile = '<img src=x onerror="window.pwned=1">'
    planned = snapshot(tasks=[task(status="queued")])
    planned["tool_server_starts"] = [
        {"server": hostile, "state": "starting", "started_at": "2025-01-01T12:00:00.000Z"},
        {"server": "git", "state": "starting", "started_at": "2025-01-01T12:00:00.000Z"},
    ]
    failed = {
        "server": "git",
        "state": "failed",
        "duration_ms": 400,
        "error": {"code": "<b>TOOL_SERVER_UNAVAILABLE</b>", "message": "<script>x()</script>"},
    }
    ready = {"server": hostile, "state": "ready", "duration_ms": 1200, "tools": 1}
    frames = [(1, "snapshot", planned), (2, "tool_server.start", failed)]
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [planned])
    fake_daemon.routes[f"GET /v1/runs/{RUN}/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([*frames, (3, "tool_server.start", ready)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    starts = page.get_by_test_id("server-starts")
    expect(starts.get_by_test_id("servers-ready")).to_have_text(
        f"MCP servers ready: {hostile} 1.2 s (1 tool)"
    )
    expect(starts.get_by_test_id("server-failed")).to_have_text(
        "✗ MCP server git did not start after 0.4 s: <b>TOOL_SERVER_UNAVAILABLE</b>: "
        "<script>x()</script>"
    )
    expect(starts.get_by_test_id("server-starting")).to_have_count(0)
    assert starts.locator("img, b, script").count() == 0
    assert page.evaluate("window.pwned") is None

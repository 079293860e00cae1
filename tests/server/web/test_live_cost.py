"""The page's cost while a run goes on, against the real daemon (``thoughtline serve`` in
a subprocess), the provider simulator and a real MCP tool server over stdio, in Chromium
at 1280x800: after step 1 of a tool loop is priced, the task's and the run's cost show
what it cost ("$0.0031 so far", not "pending" or "$0" until the end); cancelled during
step 2, the run keeps step 1's cost and marks only step 2 unknown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.cli.test_cancel_costs import CONFIG, STEP_1  # $0.0031 for step 1
from tests.conftest import CANARY_KEY, KEY_VARIABLES
from tests.server.web.support import screenshot
from tests.server.web.test_live_daemon import (
    ACCESS_TOKEN,
    _wait_for_url,
    _wait_until_answering,
    with_token,
)
from tests.support import start_process
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

STEP_2 = Transcript(
    reasoning=(SimReasoning(kind="summary", text="slow thought " * 40),),
    answer="slow answer " * 200,
    chunk_chars=4,
)


@pytest.fixture
def daemon_url(tmp_path: Path, sim_server: SimulatorServer) -> Iterator[str]:
    """``thoughtline serve --port 0`` with the prices and the tool server above."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "thoughtline.toml").write_text(CONFIG)  # the working directory's config
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.pop("THOUGHTLINE_CONFIG", None)
    env.update(sim_server.environ())
    env.update({variable: CANARY_KEY for variable in KEY_VARIABLES})
    env.update(THOUGHTLINE_HOME=str(home), THOUGHTLINE_TOKEN=ACCESS_TOKEN, PYTHONUNBUFFERED="1")
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _wait_for_url(process)
        _wait_until_answering(url)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def small_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def post(url: str, body: dict[str, object] | None = None) -> dict[str, object]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body or {}).encode(),
        headers={"Authorization": f"Bearer {ACCESS_TOKEN}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def test_the_page_shows_what_each_priced_step_cost_while_the_run_goes_on(
    small_page: Page, daemon_url: str, sim: Simulator
) -> None:
    page = small_page
    sim.script_turns(STEP_1, STEP_2)
    sim.pace_s = 0.05  # step 2 streams for many seconds: the run is still going on
    started = post(
        f"{daemon_url}/v1/runs",
        {
            "request": "Use the tool.",
            "provider": "openai",
            "model": "o4-mini",
            "tools": ["probe"],
        },
    )
    run_id = str(started["id"])
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon_url}/#/runs/{run_id}")
    expect(page.get_by_test_id("task-answer")).not_to_be_empty()  # step 2 is streaming
    expect(page.get_by_test_id("run-status")).to_have_text("running")
    expect(page.get_by_test_id("task-cost")).to_have_text("$0.0031 so far")
    expect(page.get_by_test_id("run-cost")).to_have_text("$0.0031 so far")
    screenshot(page, "live-cost-during-step-2", full_page=False)
    post(f"{daemon_url}/v1/runs/{run_id}/cancel")
    expect(page.get_by_test_id("run-status")).to_have_text("cancelled")
    expect(page.get_by_test_id("task-cost")).to_have_text("$0.0031 + step 2 unknown")
    expect(page.get_by_test_id("run-cost")).to_have_text("$0.0031 + task assistant step 2 unknown")

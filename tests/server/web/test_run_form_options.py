"""The page's new-run form asks for what every surface can ask for: tools (from the MCP
servers configured on the daemon, listed by ``GET /v1/tools``), a step limit and a
budget. In Chromium against the real daemon, the simulator and the demo MCP server."""

from __future__ import annotations

import json
import sys

import pytest
from playwright.sync_api import Page, expect

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon
from tests.server.web.support import screenshot
from thoughtline.config import Config
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow

DEMO = McpServerSettings(
    name="demo", command=sys.executable, args=("-m", "thoughtline.testing.demo_tools")
)


@pytest.fixture
def served(start_daemon: StartDaemon) -> LiveDaemon:
    return start_daemon(
        config=Config(path=None, trace_provider_raw=True, mcp_servers={"demo": DEMO})
    )


def test_the_form_starts_a_tool_run_with_a_step_limit_and_a_budget(
    page: Page, served: LiveDaemon, sim: Simulator
) -> None:
    call = SimToolCall(
        call_id="call_1", name="demo__calculate", arguments=json.dumps({"expression": "6*7"})
    )
    sim.script_turns(Transcript(tool_calls=(call,)), Transcript(answer="It is 42."))
    page.goto(served.url)
    form = page.get_by_test_id("run-form")
    form.get_by_test_id("form-request").fill("What is 6*7?")
    form.get_by_test_id("form-tool-demo").check()
    form.get_by_test_id("form-max-steps").fill("3")
    form.get_by_test_id("form-max-output-tokens").fill("1000")
    form.get_by_test_id("form-max-cost").fill("0.5")
    screenshot(page, "run-form-tools", full_page=False)
    form.get_by_test_id("form-submit").click()
    expect(page.get_by_test_id("tool-call")).to_have_count(1)
    expect(page.get_by_test_id("tool-call").locator("summary")).to_contain_text(
        "demo.calculate · done"
    )
    page.wait_for_url("**/#/runs/run_*")
    run_id = page.url.rsplit("/", 1)[-1]
    stored = served.daemon.store.get_run(run_id)
    assert stored is not None
    (task,) = stored.tasks
    assert task.tools == ("demo",) and task.max_steps == 3
    assert stored.max_cost == 0.5
    offered = sim.requests[0].body["tools"]
    assert "demo__calculate" in json.dumps(offered)


def test_a_bad_step_limit_is_refused_in_the_daemons_words(
    page: Page, served: LiveDaemon, sim: Simulator
) -> None:
    page.goto(served.url)
    form = page.get_by_test_id("run-form")
    expect(form.get_by_test_id("form-tool-demo")).to_be_visible()
    form.get_by_test_id("form-request").fill("What is 6*7?")
    form.get_by_test_id("form-max-steps").fill("0")
    form.get_by_test_id("form-submit").click()
    error = form.get_by_test_id("form-error")
    expect(error).to_contain_text("max_steps")
    expect(error).to_contain_text("(REQUEST_INVALID)")
    expect(error).not_to_contain_text("--max-steps")
    assert sim.requests == []
    assert served.daemon.store.list_runs(5) == []


def test_the_tools_route_lists_the_configured_servers_by_name_only(served: LiveDaemon) -> None:
    answer = served.client().get("/v1/tools")
    assert answer.status_code == 200
    assert answer.json() == {"servers": [{"name": "demo", "tools": None}]}
    assert sys.executable not in answer.text

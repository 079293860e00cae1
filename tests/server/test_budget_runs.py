"""Budgets through the daemon's JSON API: ``max_cost`` in ``POST /v1/runs`` stops a tool
loop (a real MCP server over stdio) before the call that could overspend, and the
snapshot shows the failed task with what it cost; a bad budget is a 422."""

from __future__ import annotations

import sys
from decimal import Decimal

import pytest

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.config import Config
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.model.requests import GenerationSettings
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings

# $0 input, $10 output per million tokens: each 1,000-token step costs $0.01, and so
# does the worst case of a call capped at 1,000 output tokens.
PRICES = {"openai/o4-mini": ConfiguredPrice(input=Decimal(0), output=Decimal(10))}


@pytest.mark.slow
def test_max_cost_stops_a_tool_loop_and_the_snapshot_shows_what_it_cost(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    daemon = start_daemon(
        config=Config(
            path=None,
            mcp_servers={"probe": probe},
            prices=PRICES,
            default_generation=GenerationSettings(max_output_tokens=1_000),
        )
    )
    call = SimToolCall(call_id="c1", name="probe__repeat", arguments='{"text": "z", "times": 3}')
    sim.script(Transcript(tool_calls=(call,), output_tokens=1_000))  # it never stops itself
    client = daemon.client()
    run_id = start_run(
        client,
        provider="openai",
        model="o4-mini",
        tools=["probe"],
        max_steps=10,
        max_cost=0.022,
    )
    run = wait_for_status(client, run_id, {"failed"})
    assert run["max_cost"] == 0.022
    (task,) = run["tasks"]
    assert task["status"] == "failed"
    assert task["error"]["code"] == "BUDGET_EXCEEDED"
    assert "spent $0.020 of the run's $0.022 budget after 2 model calls" in task["error"]["message"]
    assert task["steps"] == 2 and len(sim.requests) == 2
    assert task["cost"]["amount"] == pytest.approx(0.02, abs=1e-12)
    assert run["cost"]["amount"] == pytest.approx(0.02, abs=1e-12)
    assert [c["status"] for c in task["tool_calls"]] == ["done", "done"]


@pytest.mark.parametrize("value", [-1, "cheap", 2_000_000])
def test_a_bad_max_cost_is_refused(daemon: LiveDaemon, sim: Simulator, value: object) -> None:
    response = daemon.client().post("/v1/runs", json={"request": "Hi", "max_cost": value})
    assert response.status_code == 422, response.text
    assert "max_cost" in response.text
    assert sim.requests == []

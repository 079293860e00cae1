"""Tools through the daemon's JSON API: a request names servers the daemon's config
defines (never a command), its calls reach the snapshot and the event stream."""

from __future__ import annotations

import json
import sys

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.config import Config
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings


def test_a_run_calls_a_configured_server(start_daemon: StartDaemon, sim: Simulator) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    daemon = start_daemon(config=Config(path=None, mcp_servers={"probe": probe}))
    sim.script(Transcript(answer="Done."))
    call = SimToolCall(call_id="c1", name="probe__repeat", arguments='{"text": "z", "times": 3}')
    sim.script(Transcript(tool_calls=(call,)), times=1)
    client = daemon.client()
    run_id = start_run(client, tools=["probe.repeat"], max_steps=3)
    run = wait_for_status(client, run_id, {"completed"})
    (task,) = run["tasks"]
    assert task["steps"] == 2
    assert [(c["name"], c["status"], c["result"]) for c in task["tool_calls"]] == [
        ("repeat", "done", "zzz")
    ]
    assert "zzz" in json.dumps(sim.requests[1].body)


def test_a_request_may_not_name_a_server_the_daemon_lacks(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    client = daemon.client()
    response = client.post("/v1/runs", json={"request": "Hi", "tools": ["nosuch"]})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "TOOL_SERVER_UNKNOWN"
    shaped = client.post(
        "/v1/runs", json={"request": "Hi", "tools": [{"command": "rm", "args": ["-rf", "/"]}]}
    )
    assert shaped.status_code == 422, shaped.text
    assert sim.requests == []

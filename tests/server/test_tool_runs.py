"""Tools through the daemon's JSON API: a request names servers the daemon's config
defines (never a command), its calls reach the snapshot and the event stream."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, read_all, start_run, wait_for_status
from tests.support import all_bytes_under
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.config import Config
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings, load_mcp_json


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
    # The library API's Python callables are no server a request can reach.
    python = client.post("/v1/runs", json={"request": "Hi", "tools": ["python.eval"]})
    assert python.status_code == 400, python.text
    assert python.json()["error"]["code"] == "TOOL_SERVER_UNKNOWN"
    assert "only through the library API" in python.json()["error"]["message"]
    assert sim.requests == []


def test_hidden_carriers_reach_the_provider_and_no_event_row_or_file(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    daemon = start_daemon(
        config=Config(path=None, mcp_servers={"probe": probe}, trace_provider_raw=True)
    )
    canary = "CANARY-DAEMON-LOOP-91ab"
    thought = (SimReasoning(kind="raw", text=f"thinking {canary}", signature=f"sig-{canary}"),)
    sim.script(Transcript(reasoning=thought, answer="Done."))
    call = SimToolCall(call_id="c1", name="probe__repeat", arguments='{"text": "z", "times": 3}')
    sim.script(Transcript(reasoning=thought, tool_calls=(call,)), times=1)
    client = daemon.client()
    # DeepSeek's thinking mode: its reasoning text must go back on the next request.
    run_id = start_run(
        client,
        provider="deepseek",
        model="deepseek-v4-pro",
        tools=["probe"],
        chain_of_thought="hidden",
    )
    events = read_all(client, run_id)
    assert events[-1].type == "run.completed"
    assert canary in json.dumps(sim.requests[1].body)  # the provider got it back
    assert canary not in json.dumps([event.data for event in events])
    for layer in ("answer", "reasoning", "provider_raw"):
        trace = client.get(f"/v1/runs/{run_id}/trace", params={"layer": layer}).json()
        assert canary not in json.dumps(trace), layer
    daemon.close()
    stored = all_bytes_under(daemon.home)
    assert canary.encode() not in stored


def test_a_tool_the_server_lacks_or_a_server_that_does_not_start_is_refused_unstored(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    broken = McpServerSettings(
        name="broken",
        command=sys.executable,
        args=("-c", "import sys; sys.stderr.write('no index here\\n'); sys.exit(3)"),
    )
    daemon = start_daemon(config=Config(path=None, mcp_servers={"probe": probe, "broken": broken}))
    client = daemon.client()
    missing = client.post("/v1/runs", json={"request": "Hi", "tools": ["probe.nosuch"]})
    assert missing.status_code == 400, missing.text
    error = missing.json()["error"]
    assert error["code"] == "TOOL_NOT_FOUND"
    assert "The MCP server probe has no tool 'nosuch'" in error["message"]
    down = client.post("/v1/runs", json={"request": "Hi", "tools": ["broken"]})
    assert down.status_code == 503, down.text
    assert down.json()["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert "no index here" in down.json()["error"]["message"]
    assert client.get("/v1/runs").json()["runs"] == []
    assert sim.requests == []


def test_a_follow_up_starts_its_runs_mcp_json_server_again_or_is_refused_410(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps({"mcpServers": {"probe": {"command": sys.executable, "args": [TEST_SERVER]}}})
    )
    first = start_daemon(config=Config(path=None, mcp_servers=load_mcp_json(mcp_json)))
    call = SimToolCall(call_id="c1", name="probe__repeat", arguments='{"text": "z", "times": 3}')
    sim.script_turns(Transcript(tool_calls=(call,)), Transcript(answer="Done."))
    run_id = start_run(first.client(), tools=["probe.repeat"], max_steps=3)
    wait_for_status(first.client(), run_id, {"completed"})

    # A daemon whose config has no such server: the run's record starts it again.
    client = start_daemon(config=Config(path=None)).client()
    again = SimToolCall(call_id="c2", name="probe__repeat", arguments='{"text": "y", "times": 2}')
    sim.script_turns(Transcript(tool_calls=(again,)), Transcript(answer="Again."))
    response = client.post("/v1/runs", json={"request": "Again.", "continues": run_id})
    assert response.status_code == 202, response.text
    follow_up = wait_for_status(client, response.json()["id"], {"completed"})
    assert [c["result"] for c in follow_up["tasks"][0]["tool_calls"]] == ["yy"]

    mcp_json.unlink()
    gone = client.post("/v1/runs", json={"request": "Once more.", "continues": run_id})
    assert gone.status_code == 410, gone.text
    error = gone.json()["error"]
    assert error["code"] == "TOOL_SERVER_GONE"
    assert (
        f"used the MCP server 'probe' from {mcp_json}, which no longer reads" in (error["message"])
    )
    assert len(client.get("/v1/runs").json()["runs"]) == 2

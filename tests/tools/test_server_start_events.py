"""A run's tool servers starting, as every front end shows it: the terminal's live view
shows the run at once with a line per server while it starts, the library's events and
the daemon's stream (``tests/server/test_warm_servers.py``) carry each start (``tool_server.start``: starting, then ready or
failed, with its time), numbered before ``run.started`` when the run waits for them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_conversations_cli import Terminal, query
from tests.cli.test_run_cli import cli_env, thoughtline
from tests.support import daemon_url, start_process, wait_for_running_event
from tests.tools.test_mcp_tools import TEST_SERVER, _config, broken_server
from thoughtline import RunCompleted, RunStarted, ToolServerStart, stream
from thoughtline.config import Config
from thoughtline.testing import Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # thoughtline, daemons and MCP servers in child processes


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def gated_servers(home: Path, gate: Path) -> None:
    """``slow`` starts once ``gate`` exists; ``quick`` at once."""
    _config(
        home,
        f"[mcp_servers.slow]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(TEST_SERVER)}, 'gate', {json.dumps(str(gate))}]\n"
        f"[mcp_servers.quick]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(TEST_SERVER)}]\n",
    )


def test_the_live_view_shows_the_run_at_once_and_a_line_per_server_while_they_start(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    """A cold start (no kept tool list): the run waits for its servers, and meanwhile
    the terminal shows the task's panel and each server starting; a server that is up
    turns into a compact note with its start time."""
    gate = tmp_path / "gate"
    gated_servers(home, gate)
    sim.script(Transcript(answer="Done after the slow start."))
    terminal = Terminal(home, environ, "run", "Hello", "--tool", "slow", "--tool", "quick")
    try:
        terminal.expect(r"starting MCP server slow… \d+\.\d s", timeout_s=60)
        terminal.expect(r"assistant .*\n(.*\n)*.*queued")  # the task's panel, waiting
        terminal.expect(r"MCP servers ready: quick \d+\.\d s")
        assert "Done after the slow start." not in terminal.text
        assert sim.requests == []  # the run waits for slow
        gate.touch()
        terminal.expect(r"MCP servers ready: (quick \d+\.\d s, slow|slow \d+\.\d s, quick)")
        terminal.expect("Done after the slow start.")
        assert terminal.finish() == 0, terminal.text[-3000:]
        assert "starting tool servers" not in terminal.text
    finally:
        terminal.close()


def test_a_server_that_does_not_start_is_shown_failed_then_the_run_is_refused(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    broken_server(home, "import sys; print('no database here', file=sys.stderr); sys.exit(3)")
    terminal = Terminal(home, environ, "run", "Hello", "--tool", "broken")
    try:
        terminal.expect(
            r"✗ MCP server broken did not start after \d+\.\d s: TOOL_SERVER_UNAVAILABLE",
            timeout_s=60,
        )
        assert terminal.finish() == 2, terminal.text[-3000:]
        assert "no database here" in terminal.text
        assert sim.requests == []
    finally:
        terminal.close()


def test_the_library_stream_tells_each_start_before_the_run_starts(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    config = Config(path=None, mcp_servers={"probe": probe})
    env = {**environ, "THOUGHTLINE_HOME": str(home), "PATH": os.environ["PATH"]}
    sim.script(Transcript(answer="Fine."))
    with stream("Hi.", tools=["probe.repeat"], config=config, environ=env) as events:
        seen = list(events)
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    starting, ready = seen[0], seen[1]
    assert isinstance(starting, ToolServerStart) and isinstance(ready, ToolServerStart)
    assert (starting.server, starting.state, starting.duration_ms) == ("probe", "starting", None)
    assert (ready.server, ready.state, ready.error) == ("probe", "ready", None)
    assert ready.duration_ms is not None and ready.duration_ms >= 0
    assert ready.tools is not None and ready.tools > 5
    assert seen[2].wire_name == "run.started"
    assert not any(isinstance(event, ToolServerStart) for event in seen[3:])
    # The run's snapshots hold each start by the event's names, from run.started to its end.
    started, ended = seen[2], seen[-1]
    assert isinstance(started, RunStarted) and isinstance(ended, RunCompleted)
    (folded,) = ended.snapshot["tool_server_starts"]
    assert folded == {
        "server": "probe",
        "state": "ready",
        "started_at": folded["started_at"],
        "duration_ms": ready.duration_ms,
        "tools": ready.tools,
    }
    assert folded["started_at"] <= ready.at
    assert started.snapshot["tool_server_starts"] == [folded]


def logged_starts(home: Path) -> list[list[tuple[str, str | None]]]:
    """Each stored run's events in its log, oldest run first: (type, the server's state
    for a ``tool_server.start``)."""
    runs = [row["id"] for row in query(home, "select id from runs order by created_at, rowid")]
    logged = []
    for run_id in runs:
        rows = query(
            home, f"select type, data_json from run_events where run_id = '{run_id}' order by seq"
        )
        logged.append(
            [
                (row["type"], json.loads(row["data_json"]).get("state"))
                if row["type"] == "tool_server.start"
                else (row["type"], None)
                for row in rows
            ]
        )
    return logged


def test_a_cold_start_is_logged_before_the_run_starts_and_a_warm_one_after(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    """Without a kept tool list the run waits for the server, whose start comes first;
    with one, the run starts at once and the server starts with its first model call."""
    _config(
        home,
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(TEST_SERVER)}]\n",
    )
    for _ in range(2):
        sim.script(Transcript(answer="Done."))
        result = thoughtline(home, environ, "run", "Hi.", "--tool", "probe")
        assert result.returncode == 0, result.stderr
    cold, warm = logged_starts(home)
    starting, ready = ("tool_server.start", "starting"), ("tool_server.start", "ready")
    assert cold[:3] == [starting, ready, ("run.started", None)]
    assert cold.count(starting) == 1 and cold.count(ready) == 1
    assert warm[0] == ("run.started", None)
    assert warm.count(starting) == 1 and warm.count(ready) == 1
    assert warm.index(starting) < warm.index(ready)


def test_a_run_whose_daemon_died_while_a_server_started_keeps_that_start(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    """Each start is written with the run's row as it happens: a run recovered as
    ``interrupted`` after its daemon was killed shows the start it was waiting for."""
    gate = tmp_path / "gate"
    gated_servers(home, gate)
    daemon = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    try:
        with httpx2.Client(base_url=daemon_url(daemon), timeout=30) as client:
            created = client.post(
                "/v1/runs",
                json={"request": "Go.", "tools": ["slow"]},
                headers={"Prefer": "respond-async"},
            )
            assert created.status_code == 202, created.text
            run_id = created.json()["id"]
        assert wait_for_running_event(home / "thoughtline.db", "tool_server.start") == run_id
        daemon.send_signal(signal.SIGKILL)
        daemon.communicate(timeout=30)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate(timeout=30)
        gate.touch()  # the orphaned server serves, finds its stdin closed and exits

    result = thoughtline(home, environ, "status", run_id, "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["status"] == "interrupted"
    (slow,) = snapshot["tool_server_starts"]
    assert (slow["server"], slow["state"]) == ("slow", "starting")
    assert sim.requests == []

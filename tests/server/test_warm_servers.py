"""The daemon keeps each configured MCP server's session open across runs: the second run
reuses the first's server process, concurrent runs share one session, a server killed
between runs is started again (and the run that found it dead says so in its trace), an
idle session closes after ``idle_s``, and no server outlives the daemon."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.conftest import CANARY_KEY
from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.support import alive, daemon_url, run_events_from_start, start_process
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.config import Config
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # tool server processes, daemons in child processes

PROBE = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
DONE = Transcript(answer="Done.")


def calling(tool: str, arguments: dict[str, object] | None = None) -> Transcript:
    call = SimToolCall(call_id="c1", name=f"probe__{tool}", arguments=json.dumps(arguments or {}))
    return Transcript(tool_calls=(call,))


def probe_daemon(start_daemon: StartDaemon, **settings: Any) -> LiveDaemon:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,), **settings)
    return start_daemon(config=Config(path=None, mcp_servers={"probe": probe}))


def tool_run(client: httpx2.Client, sim: Simulator, tool: str = "pid") -> dict[str, Any]:
    """A completed run that called ``probe.TOOL`` once."""
    sim.script_turns(calling(tool), DONE)
    run_id = start_run(client, tools=[f"probe.{tool}"], max_steps=3)
    return wait_for_status(client, run_id, {"completed"})


def result_of(run: dict[str, Any]) -> str:
    (task,) = run["tasks"]
    (call,) = task["tool_calls"]
    assert call["status"] == "done", call
    return str(call["result"])


def trace_types(client: httpx2.Client, run_id: str) -> list[dict[str, Any]]:
    trace = client.get(f"/v1/runs/{run_id}/trace", params={"layer": "answer"}).json()
    return [event for event in trace if event["type"] == "tool.server_restarted"]


def gone_within(pid: int, seconds: float = 20.0) -> bool:
    """Whether ``pid`` is reaped within ``seconds``: every thread ended, its files closed
    (its main thread shows ``Z`` while the others may still hold them)."""
    deadline = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # not to leave it to the next test
        return False
    return True


def test_a_second_run_reuses_the_first_runs_server_process(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon).client()
    first = tool_run(client, sim)
    second = tool_run(client, sim)
    assert result_of(first) == result_of(second)
    assert alive(int(result_of(first)))
    assert trace_types(client, second["id"]) == []


def test_concurrent_runs_share_one_session_and_both_complete(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    """``meet`` answers ``met`` only when two calls are in flight in one server process
    at once: two sessions, or calls sent one after the other, never meet."""
    client = probe_daemon(start_daemon).client()
    sim.script(DONE)
    sim.script(calling("meet", {"count": 2, "within_s": 20}), times=2)
    first = start_run(client, tools=["probe.meet"], max_steps=3)
    second = start_run(client, tools=["probe.meet"], max_steps=3)
    runs = [wait_for_status(client, run_id, {"completed"}) for run_id in (first, second)]
    assert [result_of(run) for run in runs] == ["met", "met"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_server_killed_between_runs_is_started_again_and_the_next_run_says_so(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon).client()
    first = tool_run(client, sim)
    killed = int(result_of(first))
    os.kill(killed, signal.SIGKILL)
    assert gone_within(killed)
    second = tool_run(client, sim)
    assert int(result_of(second)) != killed
    assert alive(int(result_of(second)))
    (restarted,) = trace_types(client, second["id"])
    assert restarted["metadata"] == {"server": "probe", "reason": "it exited"}
    assert trace_types(client, first["id"]) == []
    third = tool_run(client, sim)  # the new session is kept in turn
    assert result_of(third) == result_of(second)
    assert trace_types(client, third["id"]) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_server_that_dies_mid_call_fails_that_call_and_the_next_call_starts_it_again(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon).client()
    sim.script_turns(calling("die"), DONE)
    died_run = wait_for_status(
        client, start_run(client, tools=["probe"], max_steps=3), {"completed"}
    )
    (call,) = died_run["tasks"][0]["tool_calls"]
    assert (call["status"], call["error"]) == ("failed", "TOOL_SERVER_UNAVAILABLE")
    after = tool_run(client, sim)
    assert alive(int(result_of(after)))
    (restarted,) = trace_types(client, after["id"])
    assert restarted["metadata"]["server"] == "probe"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_an_idle_session_closes_after_idle_s_and_the_next_run_starts_it_afresh(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon, idle_s=3).client()
    first = int(result_of(tool_run(client, sim)))
    assert int(result_of(tool_run(client, sim))) == first  # used again within idle_s
    assert gone_within(first)  # then closed, with no run using it
    later = tool_run(client, sim)
    assert int(result_of(later)) != first
    assert trace_types(client, later["id"]) == []  # nothing died


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_closing_the_daemon_stops_its_pooled_servers(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    daemon = probe_daemon(start_daemon)
    pid = int(result_of(tool_run(daemon.client(), sim)))
    assert alive(pid)
    daemon.close()
    assert not alive(pid)  # stopped by the daemon before it returned, not left to a lifeline


def test_a_pooled_server_never_sees_a_provider_key(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon, env={"PROBE_MARK": "its own"}).client()
    tool_run(client, sim)  # the session is open before the next run uses it
    run = tool_run(client, sim, "environment")
    sent = json.dumps(sim.requests[-1].body)  # the whole result went back to the model
    assert "PROBE_MARK" in sent  # the server's whole environment is there
    assert CANARY_KEY not in sent
    assert CANARY_KEY not in json.dumps(run)


@pytest.fixture
def served(tmp_path: Path, environ: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``thoughtline serve`` with ``probe`` configured, as a child process."""
    (tmp_path / "thoughtline.toml").write_text(
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(TEST_SERVER)}]\n"
    )
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(tmp_path / "home", environ),
        cwd=tmp_path,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_no_pooled_server_outlives_serve_after_sigterm(
    served: subprocess.Popen[str], sim: Simulator
) -> None:
    with httpx2.Client(base_url=daemon_url(served), timeout=20) as client:
        # Two runs at once: each takes the one session (meet proves it is one).
        sim.script(DONE)
        sim.script(calling("meet", {"count": 2, "within_s": 20}), times=2)
        with ThreadPoolExecutor(2) as threads:
            ids = list(
                threads.map(lambda _: start_run(client, tools=["probe.meet"], max_steps=3), [0, 1])
            )
        for run_id in ids:
            wait_for_status(client, run_id, {"completed"})
        pid = int(result_of(tool_run(client, sim)))
    assert alive(pid)
    served.send_signal(signal.SIGTERM)
    served.wait(timeout=60)
    assert not alive(pid)  # stopped by the daemon before it exited, not left to a lifeline


@pytest.mark.parametrize("value", ["0", "-1", "1e9", "nan", '"5m"', "true"])
def test_a_bad_idle_s_names_the_file_and_the_key_and_serve_does_not_start(
    tmp_path: Path, environ: dict[str, str], value: str
) -> None:
    config = tmp_path / "thoughtline.toml"
    config.write_text(
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\nidle_s = {value}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "home", environ),
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"thoughtline: {config}: mcp_servers.probe.idle_s: must be a number")
    assert "at most 86400" in line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_pooled_servers_stderr_file_stays_bounded_across_runs(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    client = probe_daemon(start_daemon).client()
    pid = int(result_of(tool_run(client, sim)))
    sim.script_turns(calling("shout", {"megabytes": 3}), DONE)
    shouted = wait_for_status(
        client, start_run(client, tools=["probe.shout"], max_steps=3), {"completed"}
    )
    assert result_of(shouted) == "shouted"
    stderr = Path(f"/proc/{pid}/fd/2")
    assert stderr.stat().st_size > 3_000_000  # the server's stderr is that file
    assert int(result_of(tool_run(client, sim))) == pid  # the next call trims it first
    assert stderr.stat().st_size < 1_100_000
    assert "the end of the shout" in stderr.read_text()  # its tail is kept


def logged_events(client: httpx2.Client, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A finished run's events as the daemon's stream replays them from the log."""
    return run_events_from_start(client, run_id)


def test_the_daemon_tells_the_start_of_a_server_it_keeps_open_once(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    """The first run starts the daemon's session of the server: its events say so, with
    the start time; the second run takes the open session and has none."""
    client = probe_daemon(start_daemon).client()
    runs = []
    for _ in range(2):
        sim.script(DONE)
        run_id = start_run(client, tools=["probe.repeat"], max_steps=3)
        wait_for_status(client, run_id, {"completed"})
        runs.append(logged_events(client, run_id))
    first, second = runs
    names = [name for name, _ in first]
    assert names[:3] == ["tool_server.start", "tool_server.start", "run.started"]
    assert first[0][1] == {"server": "probe", "state": "starting"}
    ready = first[1][1]
    assert (ready["server"], ready["state"]) == ("probe", "ready")
    assert isinstance(ready["duration_ms"], int) and ready["tools"] > 5
    assert [name for name, _ in second if name == "tool_server.start"] == []
    assert second[0][0] == "run.started"

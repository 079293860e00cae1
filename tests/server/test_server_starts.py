"""A daemon run's tool servers starting, followed over HTTP: with ``Prefer:
respond-async`` the run is answered once stored and starts its servers itself, its
snapshot (``GET /v1/runs/{id}``, the list, the stream's) holds each server's start as
its ``tool_server.start`` events tell it, and a run that leases a server another run is
still starting is told of that start as its own."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.cli.test_run_cli import thoughtline
from tests.conftest import CANARY_KEY
from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, wait_for_status
from tests.support import alive, all_bytes_under, run_events_from_start
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.config import Config
from thoughtline.records import parse_epoch
from thoughtline.testing import Simulator, Transcript
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # tool server processes

DONE = Transcript(answer="Done.")
ASYNC = {"Prefer": "respond-async"}


def gate_waiters(gate: Path) -> list[int]:
    """The live processes whose command line names ``gate`` (Linux: ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(gate).encode() in command and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def gated(name: str, gate: Path) -> McpServerSettings:
    """A server that serves once ``gate`` exists."""
    return McpServerSettings(
        name=name, command=sys.executable, args=(TEST_SERVER, "gate", str(gate))
    )


def failing_after(gate: Path, launches: Path) -> McpServerSettings:
    """A server that, once ``gate`` exists, says why on stderr and exits 3; each launch
    adds a line to ``launches``."""
    script = (
        "import os, sys, time\n"
        f"open({str(launches)!r}, 'a').write('launched\\n')\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.05)\n"
        "print('no <b>database</b> here', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    return McpServerSettings(name="broken", command=sys.executable, args=("-c", script))


def serving(start_daemon: StartDaemon, *servers: McpServerSettings) -> LiveDaemon:
    return start_daemon(
        config=Config(path=None, mcp_servers={server.name: server for server in servers})
    )


def start_async(client: httpx2.Client, tools: list[str]) -> str:
    response = client.post("/v1/runs", json={"request": "Go.", "tools": tools}, headers=ASYNC)
    assert response.status_code == 202, response.text
    assert response.headers["Preference-Applied"] == "respond-async"
    run_id: str = response.json()["id"]
    return run_id


def starts_of(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {start["server"]: start for start in snapshot.get("tool_server_starts", [])}


def wait_for_starts(
    client: httpx2.Client, run_id: str, seen: Callable[[dict[str, dict[str, Any]]], bool]
) -> dict[str, Any]:
    """Poll the run's snapshot until its server starts are ``seen`` (bounded)."""
    snapshot: dict[str, Any] = {}
    for _ in range(400):
        snapshot = client.get(f"/v1/runs/{run_id}").json()
        if seen(starts_of(snapshot)):
            return snapshot
        time.sleep(0.05)
    raise AssertionError(f"run {run_id}'s server starts never showed: {snapshot}")


def logged_starts(client: httpx2.Client, run_id: str) -> list[dict[str, Any]]:
    return [
        data for name, data in run_events_from_start(client, run_id) if name == "tool_server.start"
    ]


def test_a_run_answered_before_its_servers_start_shows_each_start_in_its_snapshot(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    quick = McpServerSettings(name="quick", command=sys.executable, args=(TEST_SERVER,))
    client = serving(start_daemon, gated("slow", gate), quick).client()
    sim.script(DONE)
    run_id = start_async(client, ["slow", "quick"])

    snapshot = wait_for_starts(
        client, run_id, lambda starts: starts.get("quick", {}).get("state") == "ready"
    )
    assert snapshot["status"] == "running"
    assert sim.requests == []  # the run waits for slow
    slow, ready = starts_of(snapshot)["slow"], starts_of(snapshot)["quick"]
    assert slow == {"server": "slow", "state": "starting", "started_at": slow["started_at"]}
    assert parse_epoch(slow["started_at"]) is not None
    assert ready["tools"] > 5 and isinstance(ready["duration_ms"], int)
    # Every view of the run agrees: the list, and the stream's first snapshot.
    (listed,) = [run for run in client.get("/v1/runs").json()["runs"] if run["id"] == run_id]
    assert starts_of(listed) == starts_of(snapshot)

    gate.touch()
    wait_for_status(client, run_id, {"completed"})
    events = run_events_from_start(client, run_id)
    name, done = events[-1]  # the final snapshot, as the run's end told it
    assert name == "run.completed"
    assert {name: start["state"] for name, start in starts_of(done).items()} == {
        "slow": "ready",
        "quick": "ready",
    }
    assert starts_of(done)["slow"]["started_at"] == slow["started_at"]
    logged = [data for name, data in events if name == "tool_server.start"]
    assert sorted((start["server"], start["state"]) for start in logged) == [
        ("quick", "ready"),
        ("quick", "starting"),
        ("slow", "ready"),
        ("slow", "starting"),
    ]
    # The snapshot's entries are the events' fields, by the same names.
    (slow_ready,) = [
        start for start in logged if start == {**start, "server": "slow", "state": "ready"}
    ]
    assert {key: starts_of(done)["slow"][key] for key in slow_ready} == slow_ready


def test_a_finished_run_read_back_from_the_store_keeps_its_server_starts(
    start_daemon: StartDaemon, sim: Simulator, home: Path, environ: dict[str, str]
) -> None:
    """Once the hub let the run go, every surface reads it from the store: the API, the
    list, and the CLI's ``status``, ``runs`` and ``export`` show the starts its last
    live snapshot showed."""
    quick = McpServerSettings(name="quick", command=sys.executable, args=(TEST_SERVER,))
    live = serving(start_daemon, quick)
    client = live.client()
    sim.script(DONE)
    run_id = start_async(client, ["quick"])
    wait_for_status(client, run_id, {"completed"})
    name, done = run_events_from_start(client, run_id)[-1]
    assert name == "run.completed"
    told = done["tool_server_starts"]
    assert [(start["server"], start["state"]) for start in told] == [("quick", "ready")]
    for _ in range(400):
        if live.daemon.hub.get(run_id) is None:
            break
        time.sleep(0.05)
    assert live.daemon.hub.get(run_id) is None

    stored = client.get(f"/v1/runs/{run_id}").json()
    (listed,) = [run for run in client.get("/v1/runs").json()["runs"] if run["id"] == run_id]
    shown = [
        json.loads(thoughtline(home, environ, *args).stdout)
        for args in (
            ("status", run_id, "--json"),
            ("export", run_id, "--format", "json"),
        )
    ]
    (in_runs,) = json.loads(thoughtline(home, environ, "runs", "--json").stdout)
    for snapshot in (stored, listed, *shown, in_runs):
        assert snapshot["tool_server_starts"] == told
    assert stored == done


def test_a_server_that_does_not_start_fails_the_run_and_its_snapshot_says_why(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate, launches = tmp_path / "gate", tmp_path / "launches"
    gate.touch()
    client = serving(start_daemon, failing_after(gate, launches)).client()
    run_id = start_async(client, ["broken"])
    wait_for_status(client, run_id, {"failed"})
    name, done = run_events_from_start(client, run_id)[-1]
    assert name == "run.failed"
    broken = starts_of(done)["broken"]
    assert broken["state"] == "failed"
    assert broken["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert "no <b>database</b> here" in broken["error"]["message"]
    (task,) = done["tasks"]
    assert task["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert sim.requests == []


def test_a_start_error_that_echoes_a_key_is_kept_and_shown_without_it(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    """A server that fails saying a provider key (it got it some other way) on stderr:
    the start's error in the snapshot, the event log and the stored row never holds it."""
    script = f"import sys\nprint('bad key {CANARY_KEY}', file=sys.stderr)\nsys.exit(3)\n"
    leaky = McpServerSettings(name="leaky", command=sys.executable, args=("-c", script))
    daemon = serving(start_daemon, leaky)
    client = daemon.client()
    run_id = start_async(client, ["leaky"])
    wait_for_status(client, run_id, {"failed"})
    events = run_events_from_start(client, run_id)
    stored = client.get(f"/v1/runs/{run_id}")
    assert starts_of(stored.json())["leaky"]["state"] == "failed"
    assert "bad key" in starts_of(stored.json())["leaky"]["error"]["message"]
    assert CANARY_KEY not in stored.text
    assert CANARY_KEY not in json.dumps(events)
    daemon.close()
    assert CANARY_KEY.encode() not in all_bytes_under(daemon.home)


def test_without_respond_async_the_run_is_answered_once_its_servers_are_up(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    """Another preference, or none, changes nothing: a server that does not start is
    still a 503 and nothing is stored."""
    gate, launches = tmp_path / "gate", tmp_path / "launches"
    gate.touch()
    client = serving(start_daemon, failing_after(gate, launches)).client()
    response = client.post(
        "/v1/runs",
        json={"request": "Go.", "tools": ["broken"]},
        headers={"Prefer": "wait=5, respond-asynchronously"},
    )
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert "Preference-Applied" not in response.headers
    assert client.get("/v1/runs").json()["runs"] == []


def test_a_run_waiting_on_a_start_another_run_gave_up_gets_its_server(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    client = serving(start_daemon, gated("slow", gate)).client()
    sim.script(DONE)
    first = start_async(client, ["slow"])
    wait_for_starts(client, first, lambda starts: "slow" in starts)
    second = start_async(client, ["slow"])
    wait_for_starts(client, second, lambda starts: "slow" in starts)
    assert client.post(f"/v1/runs/{first}/cancel").status_code == 202
    assert wait_for_status(client, first, {"cancelled", "completed", "failed"})["status"] == (
        "cancelled"
    )
    gate.touch()
    done = wait_for_status(client, second, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed", done
    assert starts_of(done)["slow"]["state"] == "ready"


def test_a_run_that_leases_a_server_another_run_is_starting_is_told_of_that_start(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    client = serving(start_daemon, gated("slow", gate)).client()
    sim.script(DONE, times=2)
    first = start_async(client, ["slow"])
    wait_for_starts(client, first, lambda starts: "slow" in starts)
    second = start_async(client, ["slow"])
    joined = wait_for_starts(client, second, lambda starts: "slow" in starts)
    (own,) = joined["tool_server_starts"]
    assert own["state"] == "starting"
    # When the start it waits for began: before this run was asked for.
    began, created = parse_epoch(own["started_at"]), parse_epoch(joined["created_at"])
    assert began is not None and created is not None and began < created

    gate.touch()
    for run_id in (first, second):
        wait_for_status(client, run_id, {"completed"})
    first_starts, second_starts = (logged_starts(client, run_id) for run_id in (first, second))
    assert [start["state"] for start in first_starts] == ["starting", "ready"]
    assert [start["state"] for start in second_starts] == ["starting", "ready"]
    assert isinstance(second_starts[0]["duration_ms"], int)
    assert second_starts[1]["tools"] == first_starts[1]["tools"] > 5
    # One start for both: the second run's took the time since the first's began.
    assert second_starts[1]["duration_ms"] == first_starts[1]["duration_ms"]


def test_runs_waiting_for_a_start_that_fails_each_fail_with_its_error(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    gate, launches = tmp_path / "gate", tmp_path / "launches"
    client = serving(start_daemon, failing_after(gate, launches)).client()
    first = start_async(client, ["broken"])
    wait_for_starts(client, first, lambda starts: "broken" in starts)
    second = start_async(client, ["broken"])
    wait_for_starts(client, second, lambda starts: "broken" in starts)
    gate.touch()
    for run_id in (first, second):
        wait_for_status(client, run_id, {"failed"})
    logged = [logged_starts(client, run_id) for run_id in (first, second)]
    assert [[start["state"] for start in starts] for starts in logged] == [
        ["starting", "failed"],
        ["starting", "failed"],
    ]
    errors = [starts[-1]["error"] for starts in logged]
    assert errors[0] == errors[1]
    assert "no <b>database</b> here" in errors[0]["message"]
    assert launches.read_text() == "launched\n"  # the waiting run started none of its own


def test_a_tool_its_server_does_not_offer_fails_the_task_of_a_run_answered_at_once(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    quick = McpServerSettings(name="quick", command=sys.executable, args=(TEST_SERVER,))
    client = serving(start_daemon, quick).client()
    run_id = start_async(client, ["quick.no_such_tool"])
    done = wait_for_status(client, run_id, {"failed"})
    (task,) = done["tasks"]
    assert task["error"]["code"] == "TOOL_NOT_FOUND"
    assert "no_such_tool" in task["error"]["message"]
    assert sim.requests == []


def test_a_run_cancelled_while_its_server_starts_ends_cancelled_without_waiting_for_it(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    """A cancel does not wait for a start that may hang until its timeout; the server
    starts again for the next run that asks for it."""
    gate = tmp_path / "gate"
    client = serving(start_daemon, gated("slow", gate)).client()
    run_id = start_async(client, ["slow"])
    wait_for_starts(client, run_id, lambda starts: "slow" in starts)
    cancelled = client.post(f"/v1/runs/{run_id}/cancel")
    assert cancelled.status_code == 202, cancelled.text
    # The gate stays shut: the start would only end at its 30 s timeout.
    done = wait_for_status(client, run_id, {"cancelled"})  # about 20 s at most
    assert [task["status"] for task in done["tasks"]] == ["cancelled"]
    assert sim.requests == []
    # The start given up stopped its process too.
    for _ in range(200):
        if not gate_waiters(gate):
            break
        time.sleep(0.05)
    assert not gate_waiters(gate)
    gate.touch()
    again = start_async(client, ["slow"])
    assert wait_for_status(client, again, {"completed", "failed"})["status"] == "completed"

"""A tool run's servers start side by side, and with their tool lists cached under the
home the first model call goes out while they start: through the real CLI, with
servers that log when they are asked to start and when they answer
(``rendezvous_mcp_server.py``), so each point is shown by the order of events."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_run_cli import start_thoughtline, thoughtline
from tests.support import alive, all_bytes_under
from tests.tools.test_mcp_tools import _config
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.list_cache import CACHE_DIR, FORMAT, definition_key
from thoughtline.tools.server_start import ServerStart
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # every test starts thoughtline and server processes

SERVER = str(Path(__file__).with_name("rendezvous_mcp_server.py"))
FINAL = Transcript(answer="Done.")
WAIT_S = 30.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def section(name: str, log: Path, **env: str) -> str:
    table = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    return f"""
[mcp_servers.{name}]
command = {json.dumps(sys.executable)}
args = [{json.dumps(SERVER)}, {json.dumps(str(log))}, "{name}"]
env = {{ {table} }}
"""


def logged(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def wait_for(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def calling(name: str, text: str) -> Transcript:
    return Transcript(
        tool_calls=(SimToolCall(call_id="call_1", name=name, arguments=json.dumps({"text": text})),)
    )


def offered(body: object) -> list[str]:
    assert isinstance(body, dict)
    return sorted(tool["name"] for tool in body.get("tools", []))


def cache_files(home: Path) -> list[Path]:
    return sorted((home / CACHE_DIR).glob("*.json"))


def warm(home: Path, environ: dict[str, str], sim: Simulator, *tools: str) -> None:
    """A first run: the servers start cold and their lists are cached."""
    sim.script(FINAL)
    args = [item for tool in tools for item in ("--tool", tool)]
    first = thoughtline(home, environ, "run", "Warm up.", *args)
    assert first.returncode == 0, first.stderr
    assert cache_files(home)
    sim.reset()


def warm_then_gated(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> tuple[Path, Path]:
    """``probe`` with its list cached by a first run; from now on it answers initialize
    only once the gate exists (absent now) and logs afresh. Returns the log and the gate."""
    log, gate = tmp_path / "log", tmp_path / "gate"
    _config(home, section("probe", log, PROBE_GATE=str(gate)))
    gate.touch()
    warm(home, environ, sim, "probe")
    gate.unlink()
    log.unlink()
    return log, gate


def test_a_runs_servers_start_side_by_side(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    # Each answers initialize only once the other was asked to start (or after 10 s):
    # started one after the other, the first would answer before the second was asked.
    _config(
        home,
        section("a", log, PROBE_WAIT_FOR="b") + section("b", log, PROBE_WAIT_FOR="a"),
    )
    sim.script(FINAL)
    result = thoughtline(home, environ, "run", "Hi.", "--tool", "a", "--tool", "b")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == "starting tool servers: a, b…"
    events = logged(log)
    assert sorted(events[:2]) == ["a initialize-received", "b initialize-received"], events
    # Both lists are cached for the next run.
    assert len(cache_files(home)) == 2


def test_thoughtline_tools_starts_the_servers_side_by_side(
    home: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    _config(
        home,
        section("a", log, PROBE_WAIT_FOR="b") + section("b", log, PROBE_WAIT_FOR="a"),
    )
    result = thoughtline(home, environ, "tools", "--json")
    assert result.returncode == 0, result.stderr
    listed = {server["name"]: server["tools"] for server in json.loads(result.stdout)["servers"]}
    assert {name: [tool["name"] for tool in tools] for name, tools in listed.items()} == {
        "a": ["echo"],
        "b": ["echo"],
    }
    events = logged(log)
    assert sorted(events[:2]) == ["a initialize-received", "b initialize-received"], events
    # What they listed is cached: the next run offers it while they start.
    assert len(cache_files(home)) == 2


def test_with_a_cached_list_the_first_request_goes_out_before_the_server_is_up(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log, gate = warm_then_gated(home, environ, sim, tmp_path)
    # The server now answers initialize only once the gate exists, which this test
    # creates once the model was asked.
    sim.script(FINAL)
    process = start_thoughtline(home, environ, "run", "Hi.", "--tool", "probe")
    try:
        wait_for(lambda: sim.requests, "the first model request")
        assert "probe initialize-answered" not in logged(log)
        assert offered(sim.requests[0].body) == ["probe__echo"]
    finally:
        gate.touch()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert out.strip() == "Done."
    assert err.splitlines()[0] == "starting tool servers: probe…"
    # The answer was taken once the server's live list was checked.
    assert logged(log)[-1] == "probe initialize-answered"


def test_a_call_to_a_server_still_starting_waits_for_it(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log, gate = warm_then_gated(home, environ, sim, tmp_path)
    sim.script(FINAL)
    sim.script(calling("probe__echo", "hello"), times=1)
    process = start_thoughtline(home, environ, "run", "Echo hello.", "--tool", "probe")
    try:
        wait_for(lambda: sim.requests, "the first model request")
        assert logged(log) in ([], ["probe initialize-received"])
    finally:
        gate.touch()
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert logged(log)[-2:] == ["probe initialize-answered", "probe call echo"]
    # The call's result reached the model's next step.
    assert len(sim.requests) == 2
    assert "echo:hello" in json.dumps(sim.requests[1].body)


def test_a_changed_list_redoes_the_step_with_the_live_list_and_the_trace_says_so(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    _config(home, section("probe", log, PROBE_TOOLS="echo"))
    warm(home, environ, sim, "probe")
    # The same definition (the env's names, not its values, make the key) now lists one
    # more tool: the cached list is stale.
    _config(home, section("probe", log, PROBE_TOOLS="echo,shout"))
    sim.script(FINAL)
    result = thoughtline(home, environ, "run", "Shout.", "--tool", "probe", "--json")
    assert result.returncode == 0, result.stderr
    assert [offered(request.body) for request in sim.requests] == [
        ["probe__echo"],
        ["probe__echo", "probe__shout"],
    ]
    (task,) = json.loads(result.stdout)["tasks"]
    assert (task["status"], task["steps"]) == ("done", 2)  # the step redone is kept
    trace = json.loads(thoughtline(home, environ, "trace", "--json").stdout)
    (changed,) = [event for event in trace if event["type"] == "tools.changed"]
    assert changed["metadata"] == {
        "step": 1,
        "redone": True,
        "added": ["probe__shout"],
        "removed": [],
        "changed": [],
    }
    assert changed["task_id"] == task["id"]
    shown = thoughtline(home, environ, "trace")
    assert "step 1 redone: the live tool list added probe__shout" in shown.stdout
    # The cache holds the live list: the next run offers it from its first request.
    sim.reset()
    sim.script(FINAL)
    again = thoughtline(home, environ, "run", "Shout.", "--tool", "probe")
    assert again.returncode == 0, again.stderr
    assert [offered(request.body) for request in sim.requests] == [["probe__echo", "probe__shout"]]


def test_a_server_that_fails_after_the_call_went_out_fails_the_run_and_keeps_it(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    _config(home, section("probe", log, PROBE_FAIL=""))
    warm(home, environ, sim, "probe")
    _config(home, section("probe", log, PROBE_FAIL="probe: the database is gone"))
    sim.script(FINAL)
    result = thoughtline(home, environ, "run", "Hi.", "--tool", "probe")
    assert result.returncode == 1
    assert len(sim.requests) == 1  # the call went out with the cached list
    assert "TOOL_SERVER_UNAVAILABLE" in result.stderr
    assert "probe: the database is gone" in result.stderr
    shown = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    (task,) = shown["tasks"]
    assert (shown["status"], task["status"]) == ("failed", "failed")
    assert task["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert "probe: the database is gone" in task["error"]["message"]
    assert task["steps"] is None or task["steps"] == 1


@pytest.mark.parametrize(
    ("kept", "trusted"),
    [
        pytest.param("damaged", False, id="a damaged file"),
        pytest.param("other definition", False, id="a file of another definition"),
        pytest.param("own definition", True, id="a file of this definition"),
    ],
)
def test_a_cache_file_is_used_only_for_its_own_definition(
    home: Path,
    environ: dict[str, str],
    sim: Simulator,
    tmp_path: Path,
    kept: str,
    trusted: bool,
) -> None:
    log = tmp_path / "log"
    _config(home, section("probe", log))
    warm(home, environ, sim, "probe")
    (path,) = cache_files(home)
    settings = McpServerSettings(
        name="probe",
        command=sys.executable,
        args=(SERVER, str(log), "probe"),
        env={"PROBE_TOOLS": "echo"},
    )
    body = {
        "format": FORMAT,
        "key": json.loads(path.read_text())["key"],
        "tools": [
            {
                "name": "ghost",
                "description": "A tool the server does not list.",
                "input_schema": {"type": "object"},
                "read_only": False,
                "destructive": False,
            }
        ],
    }
    if kept == "damaged":
        path.write_bytes(b'{"format": 1, "key": "')
    else:
        if kept == "other definition":
            body["key"] = definition_key(settings, {"PATH": os.environ.get("PATH", "")})
        path.write_text(json.dumps(body))
    sim.script(FINAL)
    result = thoughtline(home, environ, "run", "Hi.", "--tool", "probe.ghost")
    assert "probe has no tool 'ghost' (it lists: echo)" in result.stderr
    if trusted:
        # Offered from the cache, then refused once the live list came: a stored run.
        assert result.returncode == 1
        assert offered(sim.requests[0].body) == ["probe__ghost"]
        (task,) = json.loads(thoughtline(home, environ, "status", "--json").stdout)["tasks"]
        assert task["error"]["code"] == "TOOL_NOT_FOUND"
    else:
        # Checked against the live list before anything was stored or sent.
        assert result.returncode == 2
        assert sim.requests == []
        # The live list replaced what was there.
        assert [tool["name"] for tool in json.loads(path.read_text())["tools"]] == ["echo"]


def test_the_cache_holds_no_secret_and_is_private(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    secret = "tool-secret-canary-5f0c2d"
    env = {**environ, "PROBE_SECRET": secret}
    _config(home, section("probe", log, PROBE_TOKEN="${PROBE_SECRET}", PROBE_TOOLS="echo"))
    sim.script(FINAL)
    result = thoughtline(home, env, "run", "Hi.", "--tool", "probe")
    assert result.returncode == 0, result.stderr
    (path,) = cache_files(home)
    written = b"".join(path.read_bytes() for path in (home / CACHE_DIR).rglob("*"))
    assert secret.encode() not in written
    assert environ["ANTHROPIC_API_KEY"].encode() not in written
    assert secret.encode() not in all_bytes_under(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / CACHE_DIR).stat().st_mode) == 0o700


def test_a_changed_list_on_the_last_step_allowed_is_not_redone(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    _config(home, section("probe", log, PROBE_TOOLS="echo"))
    warm(home, environ, sim, "probe")
    _config(home, section("probe", log, PROBE_TOOLS="echo,shout"))
    sim.script(FINAL)
    result = thoughtline(
        home, environ, "run", "Shout.", "--tool", "probe", "--max-steps", "1", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert len(sim.requests) == 1  # max_steps bounds the model calls, a redo included
    (task,) = json.loads(result.stdout)["tasks"]
    assert (task["status"], task["output"]) == ("done", "Done.")
    trace = json.loads(thoughtline(home, environ, "trace", "--json").stdout)
    (changed,) = [event for event in trace if event["type"] == "tools.changed"]
    assert (changed["metadata"]["step"], changed["metadata"]["redone"]) == (1, False)


@pytest.mark.parametrize("waits_at", ["initialize", "list"])
async def test_a_start_stopped_before_the_server_answered_leaves_no_process(
    tmp_path: Path, waits_at: str
) -> None:
    log, gate, pidfile = tmp_path / "log", tmp_path / "gate", tmp_path / "pid"
    settings = McpServerSettings(
        name="probe",
        command=sys.executable,
        args=(SERVER, str(log), "probe"),
        env={
            "PROBE_GATE" if waits_at == "initialize" else "PROBE_LIST_GATE": str(gate),
            "PROBE_PIDFILE": str(pidfile),
        },
    )
    # A run that ends while its server is starting: it does not answer initialize, or
    # tools/list, here.
    start = ServerStart(settings, environ=dict(os.environ), secrets=())
    deadline = time.monotonic() + WAIT_S
    while f"probe {waits_at}-received" not in logged(log):
        assert time.monotonic() < deadline, "the server was never asked to start"
        await asyncio.sleep(0.02)
    pid = int(pidfile.read_text())
    await start.aclose()
    assert not alive(pid)
    assert not start.started

"""What a tool server can reach of the ``thoughtline`` process that started it, and how
long it lives: a server reading its parent's ``/proc/PID/environ`` finds no key, and a
server (with its own children) ends when thoughtline is killed mid-call. Real processes
throughout; the model is simulated."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.server.support import start_run
from tests.support import alive, daemon_url, start_process
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # every test starts thoughtline and server processes

PROBE = f"""
[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
"""
FINAL = Transcript(answer="Done.")


def calling(name: str, arguments: dict[str, object]) -> Transcript:
    return Transcript(
        tool_calls=(SimToolCall(call_id="call_1", name=name, arguments=json.dumps(arguments)),)
    )


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A working directory every user may enter (pytest's own are the runner's alone),
    owned by ``nobody`` when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="thoughtline-processes-"))
    try:
        path.chmod(0o755)
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _as_a_user_who_is_not_root() -> list[str]:
    """The command prefix that runs a command as a user who is not root: ``nobody`` when
    the tests run as root (root may read any process's files), else nothing (the tests'
    own user). As ``nobody`` the command keeps ``CAP_DAC_READ_SEARCH``, only to reach an
    interpreter under ``/root``: reading another process's environment or memory takes
    ``CAP_SYS_PTRACE``, which it does not have."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is not installed to run as nobody")
    nobody = pwd.getpwnam("nobody")
    return [
        setpriv,
        f"--reuid={nobody.pw_uid}",
        f"--regid={nobody.pw_gid}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
        "--",
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_tool_server_cannot_read_the_provider_keys_from_thoughtlines_environment(
    workdir: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    (workdir / "thoughtline.toml").write_text(PROBE)
    env = {**cli_env(workdir / "home", environ), "HOME": str(workdir)}
    sim.script_turns(calling("probe__ancestors", {}), FINAL)
    process = start_process(
        [
            *_as_a_user_who_is_not_root(),
            sys.executable,
            "-m",
            "thoughtline.cli",
            *("run", "Hi", "--tool", "probe", "--json"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workdir,
    )
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    (call,) = json.loads(stdout)["tasks"][0]["tool_calls"]
    chain = json.loads(call["result"])
    (thoughtline,) = [entry for entry in chain if entry["pid"] == process.pid]
    assert thoughtline["command"].endswith("-m thoughtline.cli")
    # Readable, it held all seven *_API_KEY variables; now it cannot be read at all.
    assert thoughtline.get("keys") is None, thoughtline
    assert thoughtline["error"].startswith("PermissionError"), thoughtline


LIBRARY_SCRIPT = """
import ctypes, json, sys
from thoughtline import run
from thoughtline.config import Config
from thoughtline.tools.settings import McpServerSettings

def dumpable():
    return ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE

imported = dumpable()
probe = McpServerSettings(name="probe", command=sys.executable, args=(sys.argv[1],))
done = run("Hi", tools=["probe"], config=Config(path=None, mcp_servers={"probe": probe}))
(call,) = done.tasks[0].tool_calls
print(json.dumps({"imported": imported, "after": dumpable(), "result": call.result}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_library_user_process_is_closed_to_its_tool_servers_once_it_starts_one(
    workdir: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    env = {**cli_env(workdir / "home", environ), "HOME": str(workdir)}
    sim.script_turns(calling("probe__ancestors", {}), FINAL)
    process = start_process(
        [*_as_a_user_who_is_not_root(), sys.executable, "-c", LIBRARY_SCRIPT, TEST_SERVER],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workdir,
    )
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    seen = json.loads(stdout)
    assert (seen["imported"], seen["after"]) == (1, 0)  # importing changes nothing
    (library,) = [entry for entry in json.loads(seen["result"]) if entry["pid"] == process.pid]
    assert library.get("keys") is None, library
    assert library["error"].startswith("PermissionError"), library


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid`` (children, theirs, ...): its command line."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: dict[int, str] = {}
    below = {pid}
    while below:
        below = {child for child, parent in parents.items() if parent in below}
        for child in below:
            try:
                found[child] = (
                    Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
                ).decode()
            except OSError:
                continue
    return found


def _busy_processes(pid: int) -> dict[int, str]:
    """The processes below ``pid`` once the busy tool's child runs (at most 20 s)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = _descendants(pid)
        if any("thoughtline-busy-child" in command for command in found.values()):
            return found
        time.sleep(0.05)
    raise AssertionError(f"the busy tool's child never started: {_descendants(pid)}")


def _all_gone(processes: dict[int, str]) -> None:
    """Every one of ``processes`` ends within 20 s."""
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: command for pid, command in processes.items() if alive(pid)}
    for pid in left:  # not to leave them to the next test
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, left


def _killed_mid_call_leaves_nothing(process: subprocess.Popen[Any]) -> None:
    """SIGKILL ``process`` once its busy tool's child runs: the server and the child
    its tool started end too."""
    try:
        started = _busy_processes(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert len(started) >= 2, started  # the server and the child its tool started
    _all_gone(started)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_busy_server_and_its_child_end_when_thoughtline_run_is_killed_mid_call(
    workdir: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    (workdir / "thoughtline.toml").write_text(PROBE)
    sim.script_turns(calling("probe__busy", {"seconds": 300}), FINAL)
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "run", "Hi", "--tool", "probe"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=cli_env(workdir / "home", environ),
        cwd=workdir,
    )
    _killed_mid_call_leaves_nothing(process)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_busy_server_and_its_child_end_when_the_daemon_is_killed_mid_call(
    workdir: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    (workdir / "thoughtline.toml").write_text(PROBE)
    sim.script_turns(calling("probe__busy", {"seconds": 300}), FINAL)
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env(workdir / "home", environ),
        cwd=workdir,
    )
    try:
        with httpx2.Client(base_url=daemon_url(process), timeout=20) as client:
            start_run(client, request="Hi", tools=["probe"])
    except BaseException:
        process.kill()
        process.wait(timeout=30)
        raise
    _killed_mid_call_leaves_nothing(process)

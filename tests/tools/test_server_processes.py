"""What a tool server can reach of the ``thoughtline`` process that started it, and how
long it lives: a server reading its parent's ``/proc/PID/environ`` finds no key, and a
server (with its own children) ends when thoughtline is killed mid-call. Real processes
throughout; the model is simulated."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env
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
    process = subprocess.Popen(
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
    process = subprocess.Popen(
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

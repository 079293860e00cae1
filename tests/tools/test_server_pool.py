"""The pool's own view of a server's death, through the Python API: a server killed a
moment before a call, with no turn of the event loop between (so nothing has read the end
of its output yet), is started again for that call, not sent a request no one reads."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.tools.pool import SERVER_RESTARTED, ServerPool
from thoughtline.tools.settings import McpServerSettings

pytestmark = [
    pytest.mark.slow,  # starts tool server processes
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)"),
]

PROBE = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))


def reaped(pid: int) -> bool:
    """The process is gone, reaped by its supervisor: every thread has ended, so its files
    (its stdout included) are closed. (Its main thread shows ``Z`` while other threads,
    and the files they share, may still be going.)"""
    return not Path(f"/proc/{pid}").exists()


def kill_and_wait_blocking(pid: int) -> None:
    """SIGKILL, then wait without letting the event loop run."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while not reaped(pid):
        assert time.monotonic() < deadline, f"process {pid} outlived SIGKILL"
        time.sleep(0.01)


async def test_a_server_killed_just_before_a_call_is_started_again_for_it() -> None:
    pool = ServerPool(environ=dict(os.environ))
    try:
        lease = await pool.lease(PROBE)
        notices: list[tuple[str, dict[str, object]]] = []  # its server starts too
        lease.listen(lambda kind, metadata: notices.append((kind, metadata)))
        killed = int((await lease.call("pid", {}, timeout_s=30)).text)
        kill_and_wait_blocking(killed)
        again = await lease.call("pid", {}, timeout_s=30)
        assert not again.is_error, again.text
        assert int(again.text) != killed
        restarts = [notice for notice in notices if notice[0] == SERVER_RESTARTED]
        assert restarts == [(SERVER_RESTARTED, {"server": "probe", "reason": "it exited"})]
        await lease.release()
    finally:
        await pool.aclose()


async def test_a_lease_taken_just_after_the_server_was_killed_starts_it_again() -> None:
    pool = ServerPool(environ=dict(os.environ))
    try:
        first = await pool.lease(PROBE)
        killed = int((await first.call("pid", {}, timeout_s=30)).text)
        await first.release()
        kill_and_wait_blocking(killed)
        second = await pool.lease(PROBE)
        notices: list[tuple[str, dict[str, object]]] = []
        second.listen(lambda kind, metadata: notices.append((kind, metadata)))
        assert [kind for kind, _ in notices if kind == SERVER_RESTARTED] == [SERVER_RESTARTED]
        assert int((await second.call("pid", {}, timeout_s=30)).text) != killed
        await second.release()
    finally:
        await pool.aclose()

"""Starting a stdio tool server's process, with nothing of the MCP client loaded.

The ``mcp`` client's modules take about half a second to import, and a server about as
long to start: :class:`~thoughtline.tools.mcp_client.McpConnection` starts the process
first (:func:`spawn_server`, which needs only ``anyio``), loads the client while the
server starts, and hands the process to
:func:`~thoughtline.tools.stdio_transport.stdio_transport`, which then owns it (stops it
with its block). A process never handed over is stopped by :func:`discard`.

A server starts in a session of its own, under a small supervisor
(:mod:`thoughtline.tools.server_supervisor`) that ends its process group when this
process is gone, SIGKILL included.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import anyio
from anyio.abc import Process

from thoughtline._undumpable import make_undumpable

SUPERVISOR: Final = str(Path(__file__).with_name("server_supervisor.py"))
"""The script each server runs under (:mod:`thoughtline.tools.server_supervisor`): it ends
the server's process group when this process is gone, however it went."""
_DISCARD_WAIT_S: Final = 2.0
"""How long a server never handed over gets to exit once its stdin and lifeline close."""


@dataclass(slots=True)
class SpawnedServer:
    """A started server process, and the write end of its lifeline (closing it ends the
    server's process group). ``owned``: a transport took it over, and stops it."""

    process: Process
    lifeline_end: int
    owned: bool = False


async def spawn_server(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: IO[str],
) -> SpawnedServer:
    """Start ``command`` with exactly the environment ``env``
    (:func:`~thoughtline.tools.environment.server_environment`), its stderr to
    ``errlog``, under the supervisor."""
    make_undumpable()  # the server, a process of the same user, cannot read our keys
    # The lifeline: the supervisor holds the read end, only this process the write end
    # (not inherited: os.pipe's ends close on exec), which ends with this process.
    lifeline, lifeline_end = os.pipe()
    try:
        lc_ctype = "=" + env["LC_CTYPE"] if "LC_CTYPE" in env else "-"
        supervisor = [sys.executable, "-I", "-S", SUPERVISOR, str(lifeline), lc_ctype]
        # An embedding with no interpreter to run (sys.executable empty) starts the
        # server itself; it then ends with this process only if it reads its stdin.
        process = await anyio.open_process(
            [*(supervisor if sys.executable else ()), command, *args],
            env=dict(env),
            cwd=cwd,
            stderr=errlog,
            start_new_session=True,
            pass_fds=(lifeline,) if sys.executable else (),
        )
    except BaseException:
        os.close(lifeline_end)
        raise
    finally:
        os.close(lifeline)
    return SpawnedServer(process=process, lifeline_end=lifeline_end)


async def discard(spawned: SpawnedServer) -> None:
    """Stop a server no transport took over (the client failed to load, or the start
    was cancelled first): stdin and lifeline closed, so the supervisor ends its group;
    killed when it outlives :data:`_DISCARD_WAIT_S`."""
    if spawned.owned:
        return
    spawned.owned = True
    process = spawned.process
    with anyio.CancelScope(shield=True):
        try:
            if process.stdin is not None:
                with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await process.stdin.aclose()
        finally:
            os.close(spawned.lifeline_end)
        with anyio.move_on_after(_DISCARD_WAIT_S):
            while process.returncode is None:  # noqa: ASYNC110 (wait() also waits for pipes)
                await anyio.sleep(0.01)
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.aclose()

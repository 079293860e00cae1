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
import select
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
    """A started server process, the read end of its stdout (``output``, non-blocking;
    ``-1`` once closed) and the write end of its lifeline (closing it ends the server's
    process group). ``owned``: a transport took it over, and stops it."""

    process: Process
    output: int
    lifeline_end: int
    owned: bool = False

    def hung_up(self) -> bool:
        """Whether nothing can write to the server's stdout any more: the server exited
        (or closed it), though what it wrote before may not have been read yet. Asked of
        the kernel, so it is true the moment the server is gone, before the reader has
        got to the end of its output."""
        if self.output < 0 or not hasattr(select, "poll"):
            return False
        poller = select.poll()
        poller.register(self.output, select.POLLIN)
        return any(events & select.POLLHUP for _fd, events in poller.poll(0))

    def close_output(self) -> None:
        output, self.output = self.output, -1
        if output >= 0:
            os.close(output)


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
    # The server's stdout is a pipe of our own (not the event loop's transport): its read
    # end can be asked whether the server is gone (SpawnedServer.hung_up).
    output, output_write = os.pipe()
    os.set_blocking(output, False)
    try:
        lc_ctype = "=" + env["LC_CTYPE"] if "LC_CTYPE" in env else "-"
        supervisor = [sys.executable, "-I", "-S", SUPERVISOR, str(lifeline), lc_ctype]
        # An embedding with no interpreter to run (sys.executable empty) starts the
        # server itself; it then ends with this process only if it reads its stdin.
        process = await anyio.open_process(
            [*(supervisor if sys.executable else ()), command, *args],
            env=dict(env),
            cwd=cwd,
            stdout=output_write,
            stderr=errlog,
            start_new_session=True,
            pass_fds=(lifeline,) if sys.executable else (),
        )
    except BaseException:
        os.close(lifeline_end)
        os.close(output)
        raise
    finally:
        os.close(lifeline)
        os.close(output_write)
    return SpawnedServer(process=process, output=output, lifeline_end=lifeline_end)


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
        spawned.close_output()

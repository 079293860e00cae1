"""Serving the agent: on given streams (``serve``) or on this process's stdin/stdout
(``run_stdio_agent``), with stdout reserved for protocol frames."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import cast

from acp import stdio_streams
from acp.core import AgentSideConnection
from acp.interfaces import Agent

from thoughtline.integrations.acp.agent import PERMISSION_TIMEOUT_S, ThoughtlineAcpAgent
from thoughtline.integrations.acp.settings import SessionSettings
from thoughtline.runtime import Runtime

STDIO_BUFFER_LIMIT = 50 * 1024 * 1024  # one JSON-RPC frame per line; prompts can be large


async def serve(
    runtime: Runtime,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    defaults: SessionSettings | None = None,
    stop: asyncio.Event | None = None,
    permission_timeout_s: float = PERMISSION_TIMEOUT_S,
) -> None:
    """Serve one client on the given streams until it disconnects or ``stop`` is set."""
    agent = ThoughtlineAcpAgent(runtime, defaults, permission_timeout_s=permission_timeout_s)
    # The agent implements the methods it supports; the router answers -32601 for the
    # rest (session/list, session/resume, ...), which the capabilities do not advertise.
    # session/close is stable in ACP's schema but routed only with the SDK's "unstable"
    # flag, which lets through nothing else this agent implements.
    connection = AgentSideConnection(
        cast(Agent, agent), writer, reader, listening=False, use_unstable_protocol=True
    )
    listening = asyncio.ensure_future(connection.listen())
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    try:
        await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
        await agent.shutdown()
    finally:
        stopping.cancel()
        listening.cancel()
        await asyncio.gather(listening, stopping, return_exceptions=True)
        await connection.close()


async def _protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin/stdout as asyncio streams, with stdout reserved for protocol frames."""
    if os.name == "nt":  # no pipe transports for the console there: the package's helper
        return await stdio_streams(limit=STDIO_BUFFER_LIMIT)
    loop = asyncio.get_running_loop()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray writes to fd 1 reach stderr
    sys.stdout = sys.stderr
    reader = asyncio.StreamReader(limit=STDIO_BUFFER_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, protocol_out
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def _serve_stdio(
    runtime: Runtime, defaults: SessionSettings | None, permission_timeout_s: float
) -> None:
    reader, writer = await _protocol_streams()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal support
            loop.add_signal_handler(signum, stop.set)
    await serve(
        runtime,
        reader,
        writer,
        defaults=defaults,
        stop=stop,
        permission_timeout_s=permission_timeout_s,
    )


def run_stdio_agent(
    runtime: Runtime,
    defaults: SessionSettings | None = None,
    *,
    permission_timeout_s: float = PERMISSION_TIMEOUT_S,
) -> None:
    """Run the agent on this process's stdin/stdout until the client disconnects. Takes
    over the process's stdout (see the package docstring)."""
    asyncio.run(_serve_stdio(runtime, defaults, permission_timeout_s))

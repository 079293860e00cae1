"""The stdio transport thoughtline talks to MCP servers through: it never holds more than
a bounded part of one message.

The ``mcp`` SDK's stdio client keeps a server's whole output line in memory, and joins it
again for every chunk it reads, before anything can cut it: a tool answering 50 MB took
105 s and 540 MB there. This transport reads bytes, splits the lines itself and keeps at
most ``max_message_bytes`` of each (and its last few bytes). Of a longer line:

- an answer to ``tools/call`` becomes a result holding the start of its first text, with
  ``_meta`` saying how many bytes the server sent (:data:`CUT_META_KEY`);
- an answer to any other request becomes an error answer to it;
- anything else (a notification) is dropped, and logged.

Bytes that are not UTF-8 become U+FFFD. A server starts in a session of its own, under a
small supervisor (:mod:`thoughtline.tools.server_supervisor`) that ends its process group
when this process is gone, SIGKILL included; it stops as the SDK stops one: stdin closed,
then SIGTERM to its process group, then SIGKILL.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import IO, Final

import anyio
import anyio.lowlevel
import mcp_types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from thoughtline.tools.stdio_spawn import SUPERVISOR, SpawnedServer, spawn_server

logger = logging.getLogger(__name__)

CUT_META_KEY: Final = "thoughtline/cut_bytes"
"""In a result's ``_meta``: the size in bytes of the answer the server sent, when this
transport cut it."""
DEFAULT_MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024

_TAIL_BYTES: Final = 256  # where a server that writes "id" last puts it
_EXIT_WAIT_S: Final = 2.0  # after stdin closes, as the SDK waits
_KILL_WAIT_S: Final = 2.0  # after SIGTERM to the group, before SIGKILL
_READ_BYTES: Final = 65536  # per read of the server's stdout
# An id is a number or a short string; {0,200} keeps the match small on any input.
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,30}|"[^"\\]{0,200}")'
)
_TRAILING_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,30}|"[^"\\]{0,200}")\s*\}\s*$')
_FIRST_TEXT = re.compile(rb'"text"\s*:\s*"')


class LineCutter:
    """Newline-delimited messages from chunks of bytes, each kept to ``limit`` bytes:
    :meth:`feed` yields ``(head, tail, size)`` per line it completes, ``head`` being the
    whole line when ``size <= limit`` (sans-IO, linear in the bytes fed)."""

    __slots__ = ("_head", "_size", "_tail", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._head = bytearray()
        self._tail = b""
        self._size = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, bytes, int]]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(chunk[start:] if end < 0 else chunk[start:end])
            if end < 0:
                return
            yield bytes(self._head), self._tail, self._size
            self._head.clear()
            self._tail, self._size = b"", 0
            start = end + 1

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        room = self.limit - len(self._head)
        if room > 0:
            self._head += piece[:room]
        if self._size > self.limit:
            self._tail = (self._tail + piece[-_TAIL_BYTES:])[-_TAIL_BYTES:]


def cut_message(
    head: bytes, tail: bytes, size: int, *, limit: int, methods: Mapping[object, str]
) -> SessionMessage | Exception:
    """What stands for a line of ``size`` bytes over ``limit``: the answer to its request
    (cut, or an error), or an exception the session logs when it answers none."""
    request_id = _request_id(head, tail)
    method = None if request_id is None else methods.get(request_id)
    if request_id is None or method is None:
        return ValueError(f"the server sent a message of {size:,} bytes (over {limit:,}); dropped")
    if method == "tools/call":
        result = {
            "content": [{"type": "text", "text": first_text(head)}],
            # An error result, so that the client does not hold a cut result to the
            # tool's output schema; McpConnection reads it as a cut result.
            "isError": True,
            "_meta": {CUT_META_KEY: size},
            "resultType": "complete",
        }
        return SessionMessage(
            mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        )
    return SessionMessage(
        mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=mcp_types.ErrorData(
                code=-32603,
                message=f"The server's answer to {method} was {size:,} bytes, over the "
                f"limit of {limit:,}.",
            ),
        )
    )


def first_text(head: bytes) -> str:
    """The first ``"text"`` string of a cut message, as far as it arrived."""
    found = _FIRST_TEXT.search(head)
    if found is None:
        return ""
    body = head[found.end() : _string_end(head, found.end())]
    for cut in range(8):  # the cut may fall inside an escape such as \u00e9
        try:
            text = json.loads(b'"' + body[: len(body) - cut] + b'"')
        except ValueError:
            continue
        return str(text)
    return ""


def _string_end(data: bytes, start: int) -> int:
    """Where the JSON string whose body starts at ``start`` ends (its closing quote), or
    the end of ``data``. A scan, not a regex: an alternation repeated over megabytes
    costs the regex engine hundreds of megabytes."""
    position = start
    while (quote := data.find(b'"', position)) >= 0:
        backslashes = quote
        while backslashes > start and data[backslashes - 1] == 0x5C:
            backslashes -= 1
        if (quote - backslashes) % 2 == 0:
            return quote
        position = quote + 1
    return len(data)


def _request_id(head: bytes, tail: bytes) -> int | str | None:
    found = _LEADING_ID.match(head) or _TRAILING_ID.search(tail)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: IO[str],
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    spawned: SpawnedServer | None = None,
    on_end: Callable[[], None] | None = None,
) -> AsyncIterator[TransportStreams]:
    """Start ``command`` with exactly the environment ``env``
    (:func:`~thoughtline.tools.environment.server_environment`), or take over the
    ``spawned`` process (:mod:`~thoughtline.tools.stdio_spawn`), and yield the streams an
    ``mcp.Client`` takes; the server stops when the block ends, even when it is
    cancelled. ``on_end`` is called once the server's output has ended (it exited, or
    closed its stdout) while the block still runs: a session kept open learns at once
    that its server is gone."""
    if spawned is None:
        spawned = await spawn_server(command, args, env=env, cwd=cwd, errlog=errlog)
    spawned.owned = True
    process, lifeline_end = spawned.process, spawned.lifeline_end
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    methods: dict[object, str] = {}  # requests sent and not answered yet: id -> method

    async def read() -> None:
        cutter = LineCutter(max_message_bytes)
        session_gone = False
        async with to_session:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for chunk in _chunks(spawned):
                    for head, tail, size in cutter.feed(chunk):
                        if session_gone:
                            continue  # drained, so a server writing a long answer can exit
                        item = _message(head, tail, size, max_message_bytes, methods)
                        try:
                            await to_session.send(item)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            session_gone = True
        if on_end is not None:
            on_end()

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for session_message in from_session:
                    message = session_message.message
                    if isinstance(message, mcp_types.JSONRPCRequest):
                        methods[message.id] = message.method
                    line = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the server is gone: no request waits forever

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield from_server, to_server
            finally:
                with anyio.CancelScope(shield=True):
                    from_server.close()
                    to_server.close()
                    try:
                        await _stop(process)
                    finally:
                        os.close(lifeline_end)  # what is left of the group ends with it
                group.cancel_scope.cancel()
    finally:
        spawned.close_output()  # once the reader has stopped waiting on it


def _message(
    head: bytes, tail: bytes, size: int, limit: int, methods: dict[object, str]
) -> SessionMessage | Exception:
    if size > limit:
        item = cut_message(head, tail, size, limit=limit, methods=methods)
    else:
        try:
            item = SessionMessage(
                mcp_types.jsonrpc_message_adapter.validate_json(
                    head.decode("utf-8", "replace"), by_name=False
                )
            )
        except ValueError as exc:
            logger.debug("an MCP server wrote a line that is not JSON-RPC: %s", exc)
            return exc
    if isinstance(item, SessionMessage) and isinstance(
        item.message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError
    ):
        methods.pop(item.message.id, None)
    return item


async def _chunks(spawned: SpawnedServer) -> AsyncIterator[bytes]:
    """What the server writes to its stdout, as it comes, until it ends."""
    output = spawned.output
    while True:
        try:
            chunk = os.read(output, _READ_BYTES)
        except BlockingIOError:
            await anyio.wait_readable(output)
            continue
        if not chunk:
            return
        yield chunk


async def _stop(process: Process) -> None:
    """Close stdin, give the server time to exit, then end its whole process group."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, _EXIT_WAIT_S):
        await terminate_posix_process_tree(process, _KILL_WAIT_S)
        await _exited(process, _KILL_WAIT_S)


async def _exited(process: Process, within_s: float) -> bool:
    with anyio.move_on_after(within_s):
        # Polled: process.wait() also waits for the pipes' end, which a grandchild holding
        # them would put off.
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return process.returncode is not None


__all__ = [
    "CUT_META_KEY",
    "SUPERVISOR",
    "LineCutter",
    "cut_message",
    "first_text",
    "stdio_transport",
]

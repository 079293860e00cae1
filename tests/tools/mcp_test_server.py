"""A small MCP server for the tests, built with the official ``mcp`` SDK.

``python mcp_test_server.py`` serves over stdio; ``python mcp_test_server.py http PORT
TOKEN`` serves Streamable HTTP on 127.0.0.1:PORT at ``/mcp``, answering only requests
that carry ``Authorization: Bearer TOKEN`` (or ``Authorization: TOKEN`` when TOKEN holds
a space, such as ``Basic ...``). ``python mcp_test_server.py gate PATH`` serves over
stdio once the file PATH exists (a start as slow as the test wants: at most
:data:`GATE_LIMIT_S`, then it exits 3 without serving).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer("thoughtline-test-server")


@server.tool()
def environment() -> str:
    """The server's whole environment, as JSON."""
    return json.dumps(dict(os.environ))


@server.tool()
def ancestors() -> str:
    """For each process above this one (its parent, that one's parent, ... to pid 1): the
        names of the ``*_API_KEY`` variables read from its ``/proc/PID/environ``, or why that
        could not be read, as JSON ``[{"pid", "command", "keys" | "error"}]`` (short: a stored
    result is cut)."""
    found: list[dict[str, object]] = []
    pid = os.getppid()
    while pid > 1 and len(found) < 16:
        entry: dict[str, object] = {"pid": pid}
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:  # its first three words
                entry["command"] = b" ".join(cmdline.read().split(b"\0")[:3]).decode()[-100:]
            with open(f"/proc/{pid}/environ", "rb") as environ:
                names = [item.split(b"=", 1)[0].decode() for item in environ.read().split(b"\0")]
            entry["keys"] = sorted(name for name in names if name.endswith("_API_KEY"))
        except OSError as exc:
            entry["error"] = f"{type(exc).__name__}: {exc.strerror}"
        found.append(entry)
        with open(f"/proc/{pid}/stat") as stat:  # "pid (comm) state ppid ...": comm may hold ") "
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    return json.dumps(found)


@server.tool()
def repeat(text: str, times: int) -> str:
    """``text`` repeated ``times`` times."""
    return text * times


@server.tool()
async def sleep(seconds: float) -> str:
    """Answer after ``seconds``."""
    import anyio

    await anyio.sleep(seconds)
    return "slept"


_meeting: dict[str, Any] = {"waiting": 0}


@server.tool()
async def meet(count: int, within_s: float = 30.0) -> str:
    """``met`` once ``count`` calls of it are in flight at the same time, or ``alone``
    when they were not within ``within_s``: calls the client sent one after the other never
    meet."""
    import anyio

    if "event" not in _meeting:
        _meeting["event"] = anyio.Event()
    event = _meeting["event"]
    _meeting["waiting"] += 1
    if _meeting["waiting"] >= count:
        event.set()
    with anyio.move_on_after(within_s):
        await event.wait()
        return "met"
    return "alone"


@server.tool()
async def hang() -> str:
    """Never answer."""
    import anyio

    await anyio.sleep_forever()
    return "never"


@server.tool()
def busy(seconds: float) -> str:
    """Start a child process that sleeps ``seconds`` (marked ``thoughtline-busy-child`` on
    its command line) and wait for it: the server stays busy, and never reads its stdin."""
    mark = "thoughtline-busy-child"
    subprocess.run([sys.executable, "-c", f"import time; time.sleep({seconds})", mark], check=False)
    return "done"


@server.tool()
def big(megabytes: int) -> str:
    """A text of ``megabytes`` MB (``x`` after a first line)."""
    return "the start of a big result\n" + "x" * (megabytes * 1_000_000)


@server.tool()
def shout(megabytes: int) -> str:
    """Write ``megabytes`` MB to stderr (lines of ``x``, then ``the end of the shout``)."""
    line = "x" * 1023 + "\n"
    for _ in range(megabytes * 1024):
        sys.stderr.write(line)
    sys.stderr.write("the end of the shout\n")
    sys.stderr.flush()
    return "shouted"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def echo(text: str) -> str:
    """``text`` as given."""
    return text


@server.tool()
def refuse(code: int, message: str) -> str:
    """Answer the call with the JSON-RPC error ``code`` and ``message``, not a result."""
    raise MCPError(code=code, message=message)


@server.tool()
def die() -> str:
    """Exit at once, mid-call."""
    os._exit(3)


def _guarded(app: Any, token: str) -> Any:
    expected = (token if " " in token else f"Bearer {token}").encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


GATE_LIMIT_S = 60.0


def _wait_for_gate(path: str) -> None:
    waited = 0.0
    while not os.path.exists(path):
        if waited >= GATE_LIMIT_S:
            sys.exit(3)
        time.sleep(0.05)
        waited += 0.05


if __name__ == "__main__":
    if sys.argv[1:2] == ["gate"]:
        _wait_for_gate(sys.argv[2])
        server.run()
    elif sys.argv[1:2] == ["http"]:
        import uvicorn

        port, token = int(sys.argv[2]), sys.argv[3]
        uvicorn.run(
            _guarded(server.streamable_http_app(), token),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    else:
        server.run()

"""An MCP server by hand over stdio that says when it was asked to start and when it
answered, so tests show how servers start by the order of events, not by time.

``python rendezvous_mcp_server.py LOG NAME`` appends ``NAME initialize-received`` to the
file LOG when ``initialize`` arrives and ``NAME initialize-answered`` when it answers it;
``NAME call TOOL`` for each tool call. Before answering ``initialize`` it waits (at most
:data:`WAIT_S`) for:

- ``PROBE_WAIT_FOR`` (names, comma-separated): every one of them to have logged
  ``initialize-received``;
- ``PROBE_GATE`` (a path): that file to exist.

``PROBE_PIDFILE``: a file it writes its process id to when it starts.
``PROBE_LIST_GATE`` (a path): ``tools/list`` is answered once that file exists (at most
:data:`WAIT_S`), after ``NAME list-received`` is logged (only then).
``PROBE_TOOLS`` (comma-separated, default ``echo``) are the tools it lists: ``echo``
answers ``echo:TEXT``, any other ``NAME:TEXT``. With ``PROBE_FAIL`` set it writes it to
stderr and exits 3 when ``initialize`` arrives.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

WAIT_S = 10.0

log, name = Path(sys.argv[1]), sys.argv[2]
if os.environ.get("PROBE_PIDFILE"):
    Path(os.environ["PROBE_PIDFILE"]).write_text(str(os.getpid()))
tools = [tool for tool in os.environ.get("PROBE_TOOLS", "echo").split(",") if tool]


def note(what: str) -> None:
    with log.open("a", encoding="utf-8") as file:  # one short line per write: appended whole
        file.write(f"{name} {what}\n")


def ready() -> bool:
    waited = [other for other in os.environ.get("PROBE_WAIT_FOR", "").split(",") if other]
    seen = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    gate = os.environ.get("PROBE_GATE")
    return all(f"{other} initialize-received" in seen for other in waited) and (
        not gate or Path(gate).exists()
    )


out = sys.stdout
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    method = message["method"]
    result: dict[str, object]
    if method == "initialize":
        note("initialize-received")
        if os.environ.get("PROBE_FAIL"):
            sys.stderr.write(os.environ["PROBE_FAIL"] + "\n")
            sys.exit(3)
        deadline = time.monotonic() + WAIT_S
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"},
        }
        note("initialize-answered")
    elif method == "tools/list":
        list_gate = os.environ.get("PROBE_LIST_GATE")
        if list_gate:
            note("list-received")
            deadline = time.monotonic() + WAIT_S
            while not Path(list_gate).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        result = {
            "tools": [
                {
                    "name": tool,
                    "description": f"The {tool} tool.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                }
                for tool in tools
            ]
        }
    elif method == "tools/call":
        tool = message["params"]["name"]
        note(f"call {tool}")
        text = message["params"].get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": f"{tool}:{text}"}], "isError": False}
    else:
        result = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    out.flush()

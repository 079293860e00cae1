"""An MCP server written by hand over stdio, for what the SDK's server never sends: a tool
result and stderr that are not UTF-8, and a result that is not a tool result at all.

It answers ``initialize`` and ``tools/list`` (two tools, ``latin1`` and ``malformed``),
and answers a ``tools/call`` of ``latin1`` with a text holding the bytes ``caf\\xe9``
(Latin-1, not UTF-8) and a terminal escape sequence, of ``malformed`` with a result whose
``content`` is not a list. It writes ``\\xff\\xfe`` to stderr when it starts.
"""

from __future__ import annotations

import json
import sys

sys.stderr.buffer.write(b"raw server \xff\xfe starting\n")
sys.stderr.flush()
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    method, request_id = message["method"], json.dumps(message["id"]).encode()
    if method == "initialize":
        result = json.dumps(
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        ).encode()
    elif method == "tools/list":
        result = json.dumps(
            {
                "tools": [
                    {"name": name, "inputSchema": {"type": "object", "properties": {}}}
                    for name in ("latin1", "malformed")
                ]
            }
        ).encode()
    elif method == "tools/call" and message["params"]["name"] == "malformed":
        result = b'{"content":"not a list","isError":false}'
    elif method == "tools/call":
        # Built by hand: a JSON string holding raw bytes that are not UTF-8.
        result = (
            b'{"content":[{"type":"text","text":"caf\xe9 \\u001b[31mred\\u001b[0m [bold]b[/bold]"}],'
            b'"isError":false}'
        )
    else:
        result = b"{}"
    out.write(b'{"jsonrpc":"2.0","id":' + request_id + b',"result":' + result + b"}\n")
    out.flush()

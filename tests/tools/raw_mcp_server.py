"""An MCP server written by hand over stdio, for what the SDK's server never sends: a tool
result and stderr that are not UTF-8.

It answers ``initialize`` and ``tools/list`` (one tool, ``latin1``), and answers every
``tools/call`` with a text holding the bytes ``caf\\xe9`` (Latin-1, not UTF-8) and a
terminal escape sequence. It writes ``\\xff\\xfe`` to stderr when it starts.
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
            {"tools": [{"name": "latin1", "inputSchema": {"type": "object", "properties": {}}}]}
        ).encode()
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

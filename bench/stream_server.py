"""A loopback server for the benchmarks: answers each request with the bytes of the
file named for its path, written as fast as the socket takes them, then closes.

    python bench/stream_server.py /v1/messages=BODY_FILE [/v1/responses=BODY_FILE ...]

Prints its port on the first line of stdout, then serves until killed. The benchmarks
run it in a process of its own, so its CPU is never counted as a contender's.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"request-id: req_bench\r\nconnection: close\r\n\r\n"
)


def _serve(conn: socket.socket, bodies: dict[bytes, bytes]) -> None:
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        header, _, rest = data.partition(b"\r\n\r\n")
        path = header.split(b" ", 2)[1]
        length = 0
        for line in header.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += conn.recv(65536)
        conn.sendall(HEAD + bodies[path])


def start(bodies: dict[str, Path]) -> tuple[subprocess.Popen[str], str]:
    """This server in a process of its own, and its base URL."""
    server = subprocess.Popen(
        [sys.executable, __file__, *(f"{path}={file}" for path, file in bodies.items())],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, f"http://127.0.0.1:{int(server.stdout.readline())}"


def main() -> None:
    bodies = {}
    for argument in sys.argv[1:]:
        path, _, file = argument.partition("=")
        bodies[path.encode()] = Path(file).read_bytes()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(conn, bodies), daemon=True).start()


if __name__ == "__main__":
    main()

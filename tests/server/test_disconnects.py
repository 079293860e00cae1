"""SSE subscribers that vanish: ``thoughtline serve`` (a real process) keeps a readable
log when many clients drop their connections abruptly mid-stream."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import httpx2
import pytest

from tests.server.support import wait_for_status
from tests.server.test_processes import _serve
from tests.support import daemon_url
from thoughtline.testing import Simulator, Transcript

SUBSCRIBERS = 50
TOKEN = "disconnects-test-token-0123456789abcdef"


def _subscribe(host: str, port: int, run_id: str) -> socket.socket:
    """A raw SSE client that reads the response head and then stops reading."""
    sock = socket.create_connection((host, port), timeout=10)
    # A small receive buffer: the daemon's writes back up, as with a stalled client.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.sendall(
        f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = sock.recv(1024)
    assert head.startswith(b"HTTP/1.1 200 "), head
    return sock


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a killed client or a dropped link does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.slow
def test_many_subscribers_dropping_mid_stream_leave_a_quiet_log(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="z" * 20000, chunk_chars=2))
    sim.pace_s = 0.0005
    process = _serve(home, {**environ, "THOUGHTLINE_TOKEN": TOKEN}, "--port", "0")
    try:
        url = daemon_url(process)
        host, port = url.removeprefix("http://").rsplit(":", 1)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx2.Client(base_url=url, headers=auth, timeout=20) as client:
            run_id = client.post("/v1/runs", json={"request": "x", "provider": "deepseek"}).json()[
                "id"
            ]
            subscribers = [_subscribe(host, int(port), run_id) for _ in range(SUBSCRIBERS)]
            # Let their unread events pile up in the daemon's send buffers.
            for _ in range(400):
                output = client.get(f"/v1/runs/{run_id}").json()["tasks"][0]["output"] or ""
                if len(output) >= 2000:
                    break
                time.sleep(0.05)
            assert len(output) >= 2000
            for sock in subscribers:
                _reset(sock)
            # The daemon still serves, and the run is unaffected.
            snapshot = wait_for_status(client, run_id, {"completed"})
            assert snapshot["tasks"][0]["output"] == "z" * 20000
        process.terminate()
        _stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "socket.send() raised exception" not in stderr
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) <= 2, stderr

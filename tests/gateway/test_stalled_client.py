"""A gateway client that stops reading its stream (a half-open connection) while the
model streams a long answer: the daemon does not hold the answer's deltas for it without
bound. The run is cancelled with GATEWAY_CLIENT_STALLED, the connection closed, and the
client's max_active place freed."""

from __future__ import annotations

import json
import socket

import pytest

from tests.gateway.conftest import StartGateway
from tests.server.support import wait_for_status
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon, a 50,000-delta answer

DELTAS = 50_000
CHUNK = 100
ANSWER = "".join(chr(ord("a") + n % 26) * CHUNK for n in range(DELTAS))
BACKLOG = 8


def open_stream(url: str, token: str, path: str, body: dict[str, object]) -> socket.socket:
    """A raw client that sends its request, reads the response head, then stops reading."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    # A small receive buffer: the daemon's writes back up at once.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    data = json.dumps(body).encode()
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"x-api-key: {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    head = b""
    for _ in range(100):  # the head, and no more than the first read brings with it
        head += sock.recv(1024)
        if b"\r\n\r\n" in head:
            break
    assert head.startswith(b"HTTP/1.1 200 "), head
    return sock


def read_to_end(sock: socket.socket) -> int:
    """Read what the daemon still sends until it closes the connection; the bytes read."""
    total = 0
    try:
        for _ in range(100_000):
            chunk = sock.recv(65536)
            if not chunk:
                break
            total += len(chunk)
        else:
            raise AssertionError("the daemon never closed the connection")
    except ConnectionResetError:
        pass  # closed at once, what was unsent dropped
    finally:
        sock.close()
    return total


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/openai/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
        ("/openai/v1/responses", {"input": "Hi"}),
        (
            "/anthropic/v1/messages",
            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 60_000},
        ),
    ],
    ids=["chat_completions", "responses", "messages"],
)
def test_a_client_that_stops_reading_is_cut_off_and_its_run_says_why(
    start_gateway: StartGateway, sim: Simulator, path: str, body: dict[str, object]
) -> None:
    gateway = start_gateway(clients={"app": {"max_active": 1}}, stream_backlog_max=BACKLOG)
    sim.script(Transcript(answer=ANSWER, chunk_chars=CHUNK))
    asked = {"model": "deepseek/deepseek-v4-pro", "stream": True, **body}
    sock = open_stream(gateway.daemon.url, gateway.tokens["app"], path, asked)
    head = sock.recv(0)  # nothing more is read until the run has ended
    assert head == b""
    client = gateway.daemon.client()
    (listed,) = client.get("/v1/runs", params={"client": "app"}).json()["runs"]
    run = wait_for_status(client, listed["id"], {"completed", "failed", "cancelled"})
    assert run["status"] == "cancelled"
    (task,) = run["tasks"]
    assert task["error"]["code"] == "GATEWAY_CLIENT_STALLED"
    assert "stopped reading" in task["error"]["message"]
    assert task["output"] and ANSWER.startswith(task["output"])  # what arrived is kept
    assert len(task["output"]) < len(ANSWER)
    # The connection was closed: what the client reads now is what the sockets held.
    assert read_to_end(sock) < len(ANSWER)
    sim.script(Transcript(answer="Again."))
    again = gateway.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
    )
    assert again.choices[0].message.content == "Again."

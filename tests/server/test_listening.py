"""The daemon's listener (server/listening.py): a burst of connections waiting in the
kernel's queue is accepted in one turn of the event loop, on asyncio's loop and on
uvloop alike (libuv accepts one connection per turn: on a busy daemon, subscribers
connecting as their run started were accepted only after it had ended)."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

import pytest

from tests.server.conftest import StartDaemon
from tests.server.test_connections import HEALTH, read_response

pytestmark = pytest.mark.slow  # a daemon per loop, its loop held while clients connect

BURST = 64


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_burst_of_connections_is_accepted_in_one_turn_of_the_loop(
    start_daemon: StartDaemon, loop: str
) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    live = start_daemon(loop=loop)
    server = live.server
    event_loop = server.loop
    assert event_loop is not None
    assert type(event_loop).__module__.startswith(loop)
    # Which turn of the loop each connection was made in: a callback that schedules itself
    # runs once per turn; the limiter counts every connection in as it is made.
    turn = 0
    made: list[int] = []
    admit = server.connections.admit

    def counted(connection: object, now: float) -> bool:
        made.append(turn)
        return admit(connection, now)  # type: ignore[arg-type]

    def tick() -> None:
        nonlocal turn
        turn += 1
        if len(made) < BURST and turn < 100_000:
            event_loop.call_soon(tick)

    server.connections.admit = counted  # type: ignore[method-assign]
    # Hold the loop while the clients connect: the kernel completes their handshakes and
    # queues them, as it does while a busy daemon's turn lasts.
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(30)
        event_loop.call_soon(tick)

    event_loop.call_soon_threadsafe(hold)
    assert held.wait(30)
    port = urlsplit(live.url).port
    clients: list[socket.socket] = []
    try:
        for _ in range(BURST):
            client = socket.create_connection(("127.0.0.1", port), timeout=30)
            clients.append(client)
            client.sendall(HEALTH)
        release.set()
        for client in clients:
            assert read_response(client).startswith(b"HTTP/1.1 200 ")
    finally:
        release.set()
        for client in clients:
            client.close()
    assert len(made) == BURST
    assert len(set(made)) == 1, f"the {BURST} connections were made over turns {sorted(set(made))}"


def test_the_daemon_runs_on_uvloop_where_it_is_installed(start_daemon: StartDaemon) -> None:
    pytest.importorskip("uvloop")
    live = start_daemon()
    assert type(live.server.loop).__module__.startswith("uvloop")
    assert live.client().get("/v1/health").json()["status"] == "ok"

"""The daemon's bounds on connections (server/connections.py): half-open and idle
connections are closed after ``[server] header_timeout_s`` and ``keep_alive_timeout_s``,
a request being served (a live event stream) is never cut by either, and at
``max_connections`` a newcomer takes the place of the connection that waited longest, or
is refused with a 503 when every one is being served; under a low open-file limit
``accept()`` never runs out, so health checks and authenticated clients are answered
while unauthenticated half-open sockets pile up."""

from __future__ import annotations

import json
import secrets
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, open_stream, read_all, start_run
from tests.support import daemon_url, start_process
from thoughtline.config import Config
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # timeouts waited out, a daemon under a low ulimit

PARTIAL_HEAD = b"GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the blank line never comes
HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def connect(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if data:
        sock.sendall(data)
    return sock


def read_to_end(sock: socket.socket, wait_s: float = 30.0) -> bytes:
    """Everything the daemon sends until it closes the connection; fails when it keeps
    it open (and silent) for ``wait_s``."""
    sock.settimeout(wait_s)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            raise AssertionError(f"the daemon kept the connection open: {received!r}") from None
        if not chunk:
            return received
        received += chunk


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length, leaving the connection open."""
    sock.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, data
        body += chunk
    return head + b"\r\n\r\n" + body


def still_open(sock: socket.socket) -> bool:
    """Whether the daemon has neither closed nor written to the connection."""
    readable, _, _ = select.select([sock], [], [], 0)
    return not readable


def error_in(answer: bytes, status: bytes) -> dict[str, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + status + b" "), answer
    assert b"\r\nconnection: close" in head.lower(), answer
    error: dict[str, str] = json.loads(body)["error"]
    return error


# -- the header and keep-alive timeouts --------------------------------------------


def test_a_request_head_not_finished_in_time_is_answered_408_and_closed(
    start_daemon: StartDaemon,
) -> None:
    live = start_daemon(config=Config(path=None, header_timeout_s=1, keep_alive_timeout_s=30))
    port = port_of(live.url)
    partial = connect(port, PARTIAL_HEAD)
    silent = connect(port)
    answer = read_to_end(partial)
    assert b"\r\nx-frame-options: DENY\r\n" in answer  # the page's headers, as everywhere
    error = error_in(answer, b"408")
    assert error == {
        "code": "REQUEST_TIMEOUT",
        "message": "The daemon waited 1 s for the request's head (server.header_timeout_s); "
        "send the whole request without pausing.",
    }
    assert read_to_end(silent) == b""  # nothing asked, nothing answered


def test_a_head_sent_a_byte_at_a_time_gains_no_time(start_daemon: StartDaemon) -> None:
    """Each byte arrives well within the timeout; the head as a whole does not."""
    live = start_daemon(config=Config(path=None, header_timeout_s=1, keep_alive_timeout_s=30))
    sock = connect(port_of(live.url))
    head = PARTIAL_HEAD + b"X-Padding: " + b"p" * 400 + b"\r\n\r\n"
    sent = 0
    try:
        for byte in head:  # about 40 s at this pace: far past the timeout
            sock.sendall(bytes([byte]))
            sent += 1
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert sent < len(head)
    assert error_in(read_to_end(sock), b"408")["code"] == "REQUEST_TIMEOUT"


def test_an_idle_connection_closes_after_the_keep_alive_timeout_and_a_late_head_gets_a_408(
    start_daemon: StartDaemon,
) -> None:
    live = start_daemon(config=Config(path=None, header_timeout_s=1, keep_alive_timeout_s=6))
    port = port_of(live.url)
    idle = connect(port, HEALTH)
    assert read_response(idle).startswith(b"HTTP/1.1 200 ")
    # Bytes of a second request on a kept-alive connection: the head's timeout applies
    # (a byte used to stop every timer on such a connection, leaving it open for ever).
    late = connect(port, HEALTH)
    assert read_response(late).startswith(b"HTTP/1.1 200 ")
    late.sendall(b"GET /v1/he")
    assert error_in(read_to_end(late), b"408")["code"] == "REQUEST_TIMEOUT"
    # The idle one is waited for longer (keep_alive_timeout_s), then closed without a word.
    assert still_open(idle)
    assert read_to_end(idle) == b""


def test_stray_bytes_between_requests_do_not_keep_a_connection_open(
    start_daemon: StartDaemon,
) -> None:
    live = start_daemon(config=Config(path=None, header_timeout_s=1, keep_alive_timeout_s=1))
    sock = connect(port_of(live.url), HEALTH)
    assert read_response(sock).startswith(b"HTTP/1.1 200 ")
    sock.settimeout(30)
    closed = False
    for _ in range(200):  # a blank line every 0.2 s: 40 s if nothing ends it
        try:
            sock.sendall(b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        readable, _, _ = select.select([sock], [], [], 0.2)
        if readable:
            closed = True
            break
    assert closed
    answer = read_to_end(sock)
    assert answer == b"" or error_in(answer, b"408")["code"] == "REQUEST_TIMEOUT"


def test_a_live_event_stream_outlasts_both_timeouts(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    live = start_daemon(config=Config(path=None, header_timeout_s=1, keep_alive_timeout_s=1))
    sim.script(Transcript(answer="abcdefghij" * 8, chunk_chars=2))
    sim.pace_s = 0.08  # about 3 s of answer: past both timeouts
    client = live.client()
    run_id = start_run(client, provider="deepseek")
    events = read_all(live.client(), run_id)
    assert events[-1].type == "run.completed"
    assert events[-1].data["tasks"][0]["output"] == "abcdefghij" * 8


# -- the cap -----------------------------------------------------------------------


def test_at_the_cap_a_newcomer_takes_the_place_of_the_longest_waiting_connection(
    start_daemon: StartDaemon,
) -> None:
    live = start_daemon(config=Config(path=None, max_connections=3, header_timeout_s=60))
    port = port_of(live.url)
    oldest, *others = [connect(port, PARTIAL_HEAD) for _ in range(3)]
    with httpx2.Client(base_url=live.url, timeout=10) as client:
        assert client.get("/v1/health").json()["status"] == "ok"
    assert read_to_end(oldest, wait_s=10) == b""  # closed for the health check, no answer
    assert all(still_open(sock) for sock in others)


@contextmanager
def streams(live: LiveDaemon, run_id: str, count: int) -> Iterator[None]:
    """``count`` subscribers of the run, each past its first event (being served)."""
    with ExitStack() as stack:
        subscribers = [
            stack.enter_context(open_stream(live.client(), run_id)) for _ in range(count)
        ]
        # (kept: a stream whose iterator is collected closes its connection)
        assert [next(events).type for events in subscribers] == ["snapshot"] * count
        yield


def test_at_the_cap_with_every_connection_served_a_newcomer_gets_a_503(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    live = start_daemon(config=Config(path=None, max_connections=3))
    sim.script(Transcript(answer="z" * 2000, chunk_chars=2))
    sim.pace_s = 0.02  # 20 s: the streams outlive the test
    with httpx2.Client(base_url=live.url, timeout=10) as client:
        run_id = start_run(client, provider="deepseek")
    with streams(live, run_id, 3):
        refused = connect(port_of(live.url), HEALTH)
        answer = read_to_end(refused)
    assert error_in(answer, b"503") == {
        "code": "SERVER_AT_CAPACITY",
        "message": "This daemon has 3 connections open, each serving a request "
        "(server.max_connections); try again later.",
    }
    assert b"\r\nretry-after: 5\r\n" in answer.lower()


# -- a low open-file limit ---------------------------------------------------------


def _serve_with_file_limit(
    home: Path, environ: dict[str, str], limit: int, token: str
) -> subprocess.Popen[str]:
    return start_process(
        ["sh", "-c", f'ulimit -n {limit} && exec "$0" -m thoughtline.cli serve --port 0',
         sys.executable],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(home, environ), "THOUGHTLINE_TOKEN": token},
        cwd=home.parent,
    )  # fmt: skip


def _stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()[1]


def test_half_open_connections_past_the_file_limit_leave_health_and_clients_answered(
    home: Path, environ: dict[str, str]
) -> None:
    """300 unauthenticated half-open connections to a daemon allowed 256 open files (at
    most about 144 connections): health and an authenticated client are answered, and
    every half-open connection is closed: for a newcomer, or after its header timeout."""
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[server]\nheader_timeout_s = 5\n", encoding="utf-8")
    token = secrets.token_urlsafe(32)
    process = _serve_with_file_limit(home, environ, 256, token)
    sockets: list[socket.socket] = []
    try:
        url = daemon_url(process)
        sockets = [connect(port_of(url), PARTIAL_HEAD) for _ in range(300)]
        with httpx2.Client(base_url=url, timeout=10) as client:
            health = client.get("/v1/health")
            runs = client.get("/v1/runs", headers={"Authorization": f"Bearer {token}"})
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        assert (runs.status_code, runs.json()["runs"]) == (200, [])
        answers = [read_to_end(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
        stderr = _stop(process)
    timed_out = [answer for answer in answers if answer]
    assert timed_out, "no connection waited for its header timeout"
    assert len(timed_out) < len(answers), "no connection made room for a newer one"
    assert {error_in(answer, b"408")["code"] for answer in timed_out} == {"REQUEST_TIMEOUT"}
    assert "out of system resource" not in stderr  # accept() never failed (EMFILE)
    assert token not in stderr


def test_an_open_file_limit_too_low_to_serve_is_one_sentence(
    home: Path, environ: dict[str, str]
) -> None:
    process = _serve_with_file_limit(home, environ, 100, secrets.token_urlsafe(32))
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr == (
        "thoughtline: The open-file limit (ulimit -n) is 100, too low to serve: the daemon "
        "keeps 64 files for its store and providers and needs room for at least 16 "
        "connections; raise it to at least 112 (ulimit -n).\n"
    )

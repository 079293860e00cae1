"""Helpers shared by the test suite."""

from __future__ import annotations

import dataclasses
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import httpx2

from thoughtline.model.events import StreamEvent
from thoughtline.providers.base import CallContext, StreamDecoder
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings
from thoughtline.records.run_events import RunEvent, TaskAnswerDelta, TaskReasoningDelta
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.transcript import SimRequest, Transcript

HOSTILE_MODEL_IDS = (
    "../../../evil",
    "x/../../v1/files?q=",
    "m:other#frag",
    "%2e%2e/x",
    "../../../anthropic/v1/messages#",
    "./gemini-3-pro",
    "//v1/files",
    "gemini-3-pro/",
    "a//b",
    "a\nb",
    "a b",
    "a\\b",
    "m" * 300,
)
"""Model ids that would move a request off a wire's model path (or out of a log line),
refused with ``MODEL_ID_INVALID`` on every surface before any request is sent."""


CHILD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals a child started by the tests always gets at their default disposition."""


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Stands in for an ignored signal while children start (a handler, unlike an
    ignored disposition, is not inherited across exec)."""


@contextmanager
def default_signals_in_children() -> Iterator[None]:
    """Every process started within gets SIGINT and SIGTERM at their defaults.

    A child inherits an ignored signal: a shell starts a background job (``cmd &``
    without job control) with SIGINT ignored, and so would every child the tests start
    from it, which then shrugs off a test's Ctrl-C. A signal the parent *handles* is
    reset to its default at exec, so for the time of the start an ignored signal gets a
    handler here that ignores it too (the parent's behaviour is unchanged), and is
    ignored again after."""
    swapped: dict[signal.Signals, Any] = {}
    for number in CHILD_SIGNALS:
        if signal.getsignal(number) != signal.SIG_IGN:
            continue  # default or handled: a child starts with the default
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                f"{number.name} is ignored in this process and only the main thread can "
                "reset it for a child: start the child from the main thread"
            )
        swapped[number] = signal.signal(number, _ignore)
    try:
        yield
    finally:
        for number, previous in swapped.items():
            signal.signal(number, previous)


def start_process(
    args: Sequence[str | Path], *, new_session: bool = False, **options: Any
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **options)`` for a child a test may signal (SIGINT,
    SIGTERM, SIGKILL) or leave running: it starts with SIGINT and SIGTERM at their
    defaults however the tests were started (foreground, background job, ``nohup``, no
    terminal), and with ``new_session`` in a session and process group of its own (for
    a terminal of its own, or to signal the group). Every test starts its long-lived
    children here (``tests/core/test_child_processes.py`` keeps it so)."""
    with default_signals_in_children():
        return subprocess.Popen(args, start_new_session=new_session, **options)


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (Linux: reads ``/proc``); a zombie, dead and
    waiting for its parent to reap it, does not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def decode_in_pieces(
    new_decoder: Callable[[], StreamDecoder], data: bytes, cuts: Sequence[int] = ()
) -> list[StreamEvent]:
    """Feed ``data`` to a fresh decoder split at the given byte offsets, then close it."""
    decoder = new_decoder()
    events: list[StreamEvent] = []
    start = 0
    for cut in sorted(set(cuts)):
        if 0 < cut < len(data):
            events.extend(decoder.feed(data[start:cut]))
            start = cut
    events.extend(decoder.feed(data[start:]))
    events.extend(decoder.close())
    return events


def byte_by_byte(new_decoder: Callable[[], StreamDecoder], data: bytes) -> list[StreamEvent]:
    return decode_in_pieces(new_decoder, data, range(1, len(data)))


def call_context(
    endpoint: str,
    model: str,
    *,
    environ: Mapping[str, str] | None = None,
    settings: Mapping[str, EndpointSettings] | None = None,
    capability_endpoint: str | None = None,
) -> CallContext:
    """The context an adapter gets for ``model`` on a built-in (or configured) endpoint,
    capability looked up as the transport does (optionally under another endpoint name)."""
    resolved = EndpointRegistry(settings, environ=environ or {}).resolve(endpoint)
    capability = builtin_capabilities().lookup(capability_endpoint or endpoint, model)
    return CallContext(endpoint=resolved, capability=capability)


def daemon_url(process: subprocess.Popen[str]) -> str:
    """The URL a ``thoughtline serve --port 0`` child announces, once its socket accepts.

    The line is printed just before uvicorn accepts, so the readiness poll is bounded."""
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("thoughtline: serving on http://127.0.0.1:"), line
    url = line.split()[3]
    for _ in range(200):
        try:
            if httpx2.get(f"{url}/openapi.json", timeout=5).status_code == 200:
                return url
        except httpx2.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the daemon at {url} never accepted a connection")


def untimed_deltas(events: Sequence[RunEvent]) -> list[RunEvent]:
    """``events`` with the time of each delta blanked: the event log stamps a batch of
    deltas once, so a replay equals the live events but for those stamps."""
    return [
        dataclasses.replace(event, at="")
        if isinstance(event, TaskAnswerDelta | TaskReasoningDelta)
        else event
        for event in events
    ]


def anthropic_stream(transcript: Transcript, model: str) -> bytes:
    """The whole Anthropic Messages stream of ``transcript``, as the simulator sends it."""
    request = SimRequest(
        method="POST",
        path="/v1/messages",
        query={},
        headers={},
        body={"model": model, "stream": True, "thinking": {"type": "adaptive"}},
        profile="anthropic",
        model=model,
        stream=True,
    )
    return b"".join(frame.data for frame in AnthropicRenderer().stream_frames(transcript, request))


def files_under(home: Path) -> Iterator[tuple[Path, bytes]]:
    """Every file under ``home`` and its bytes, for a canary scan of all that was written.

    SQLite removes its ``-wal`` and ``-shm`` files when the database's last connection
    closes, which may come after the listing: such a file is passed over (its WAL's
    pages are in the database file by then, which is read)."""
    for path in sorted(home.rglob("*")):
        try:
            yield path, path.read_bytes()
        except (IsADirectoryError, FileNotFoundError):
            continue


def all_bytes_under(home: Path) -> bytes:
    """The bytes of every file under ``home``, joined (see :func:`files_under`)."""
    return b"".join(data for _path, data in files_under(home))


def assert_refusal_stdout(stdout: str, stderr: str, args: Sequence[str]) -> None:
    """A refused command's stdout: empty, or with ``--json`` the refusal as JSON, its
    message the sentence stderr ends with."""
    if "--json" not in args:
        assert stdout == "", args
        return
    error = json.loads(stdout)["error"]
    assert set(error) == {"code", "message"}, args
    assert stderr.rstrip("\n").endswith(error["message"]), args


def refusal_lines(stderr: str, *servers: str) -> list[str]:
    """A refused tool run's stderr lines after the progress line naming the ``servers``
    it was starting (piped, ``run`` says so first)."""
    lines = stderr.strip().splitlines()
    if servers:
        assert lines[0] == f"starting tool servers: {', '.join(servers)}…", stderr
        return lines[1:]
    return lines


def wait_for_running_event(database: Path, event_type: str, timeout_s: float = 30.0) -> str:
    """The id of the running run once an event of ``event_type`` (``answer.delta``,
    ``reasoning.delta``) reached its event log: bounded polling, never a fixed sleep,
    which was too short on a loaded machine."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if database.exists():
            try:
                with sqlite3.connect(database, timeout=5) as connection:
                    row = connection.execute(
                        "select runs.id from runs join run_events on run_id = runs.id "
                        "where status = 'running' and type = ? limit 1",
                        (event_type,),
                    ).fetchone()
            except sqlite3.Error:
                row = None
            if row:
                return str(row[0])
        time.sleep(0.05)
    raise AssertionError(f"no {event_type} of a running run reached the event log")


def run_events_from_start(client: httpx2.Client, run_id: str) -> list[tuple[str, Any]]:
    """A run's events as (name, data), read from its SSE stream from the first event (the
    log replayed) until the run's end."""
    events: list[tuple[str, Any]] = []
    with client.stream(
        "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"}
    ) as response:
        assert response.status_code == 200
        name = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line[len("data:") :])))
                if name.startswith("run.") and name != "run.started":
                    break
    return events


def daemon_run_events(
    env: Mapping[str, str], cwd: Path, body: Mapping[str, Any]
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Start ``thoughtline serve`` (no token), POST ``body`` to /v1/runs, read the run's
    SSE stream from its first event until it ends, and stop the daemon: the events as
    (name, data) and the run's snapshot."""
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
        cwd=cwd,
    )
    events: list[tuple[str, Any]] = []
    try:
        with httpx2.Client(base_url=daemon_url(process), timeout=120) as client:
            created = client.post("/v1/runs", json=dict(body))
            assert created.status_code == 202, created.text
            run_id = created.json()["id"]
            events = run_events_from_start(client, run_id)
            snapshot: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
    finally:
        process.terminate()
        process.communicate(timeout=30)
    return events, snapshot

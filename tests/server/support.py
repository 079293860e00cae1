"""Helpers of the daemon tests: HTTP clients and an SSE reader over real sockets."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from thoughtline.server.app import DaemonServer
from thoughtline.server.daemon import Daemon
from thoughtline.wire.frames import SSEDecoder, SSEFrame

TERMINAL = {"run.completed", "run.failed", "run.cancelled", "run.interrupted"}


@dataclass
class Event:
    """A decoded SSE frame: id (the run event's seq), type and parsed data."""

    seq: int
    type: str
    data: dict[str, Any]

    @classmethod
    def of(cls, frame: SSEFrame) -> Event:
        assert frame.id is not None, frame
        return cls(int(frame.id), frame.event, json.loads(frame.data))


@dataclass
class LiveDaemon:
    server: DaemonServer
    daemon: Daemon
    home: Path
    clients: list[httpx2.Client] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, token: str | None = None) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx2.Client(base_url=self.url, headers=headers, timeout=20.0)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.server.stop()


def start_run(client: httpx2.Client, **body: Any) -> str:
    body.setdefault("request", "Explain the decision.")
    response = client.post("/v1/runs", json=body)
    assert response.status_code == 202, response.text
    run_id: str = response.json()["id"]
    return run_id


@contextmanager
def open_stream(
    client: httpx2.Client, run_id: str, headers: dict[str, str] | None = None, query: str = ""
) -> Iterator[Iterator[Event]]:
    """The run's SSE stream as an iterator of events (comments skipped)."""
    with client.stream(
        "GET", f"/v1/runs/{run_id}/events{query}", headers=headers or {}
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")

        def events() -> Iterator[Event]:
            decoder = SSEDecoder()
            for chunk in response.iter_bytes():
                for frame in decoder.feed(chunk):
                    yield Event.of(frame)
            for frame in decoder.flush():
                yield Event.of(frame)

        yield events()


def read_all(
    client: httpx2.Client,
    run_id: str,
    headers: dict[str, str] | None = None,
    query: str = "",
    stop: Callable[[list[Event]], bool] | None = None,
) -> list[Event]:
    """Every event until the server closes the stream (or ``stop`` says so)."""
    events: list[Event] = []
    with open_stream(client, run_id, headers, query) as stream:
        for event in stream:
            events.append(event)
            if stop is not None and stop(events):
                break
    return events


def wait_for_status(client: httpx2.Client, run_id: str, statuses: set[str]) -> dict[str, Any]:
    """Poll the snapshot until its status is one of ``statuses`` (bounded)."""
    snapshot: dict[str, Any] = {}
    for _ in range(400):
        snapshot = client.get(f"/v1/runs/{run_id}").json()
        if snapshot.get("status") in statuses:
            return snapshot
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {statuses}: {snapshot}")

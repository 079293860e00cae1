"""``GET /v1/health`` for a load balancer: no token needed and no run shown; ``ok`` while
the daemon serves and its store answers, 503 with one sentence when the store fails, does
not answer within its wait, or is damaged, and while the daemon shuts down."""

from __future__ import annotations

import threading
import time

import httpx2
import pytest

from tests.server.conftest import StartDaemon
from thoughtline.store.base import StoreError


def test_a_serving_daemon_is_ok_without_a_token_and_shows_no_run(
    start_daemon: StartDaemon,
) -> None:
    live = start_daemon(token="s3cret-token")
    with live.client() as anonymous:
        assert anonymous.get("/v1/runs").status_code == 401  # the rest still needs it
        answer = anonymous.get("/v1/health")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "store": "ok"}
    with live.client("s3cret-token") as client:
        document = client.get("/openapi.json").json()
    assert "/v1/health" in document["paths"]


@pytest.mark.slow  # waits out a store that hangs
def test_a_store_that_fails_or_hangs_is_a_503_in_one_sentence(
    start_daemon: StartDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = start_daemon()
    store = live.daemon.store

    def failing(key: str) -> str | None:
        raise StoreError("unavailable", "The store at db:5432/thoughtline cannot be reached.")

    monkeypatch.setattr(store, "get_meta", failing)
    with live.client() as client:
        answer = client.get("/v1/health")
    assert answer.status_code == 503
    assert answer.json() == {
        "status": "unavailable",
        "store": "The store at db:5432/thoughtline cannot be reached.",
    }

    released = threading.Event()

    def hanging(key: str) -> str | None:
        released.wait(10)
        return None

    monkeypatch.setattr(store, "get_meta", hanging)
    started = time.monotonic()
    try:
        with live.client() as client:
            answer = client.get("/v1/health")
    finally:
        released.set()
    assert answer.status_code == 503
    assert answer.json()["store"] == "The store did not answer a read within 2 s."
    assert time.monotonic() - started < 9  # answered, not held until the read ended


def test_a_damaged_store_or_a_daemon_shutting_down_is_a_503(start_daemon: StartDaemon) -> None:
    live = start_daemon()
    live.daemon.note_store_error(StoreError("damaged", "The database disk image is malformed."))
    with live.client() as client:
        answer = client.get("/v1/health")
    assert (answer.status_code, answer.json()["status"]) == (503, "unavailable")
    assert "malformed" in answer.json()["store"]

    fine = start_daemon()
    fine.daemon.closing.set()
    try:
        with fine.client() as client:
            answer = client.get("/v1/health")
    except httpx2.HTTPError:  # a server already closing may refuse the connection
        return
    assert (answer.status_code, answer.json()["status"]) == (503, "shutting_down")

"""Hostile and odd input through the real daemon: every case is a 4xx with the error
shape, a stable code and one sentence, never a 500, and the daemon keeps answering."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest

from tests.server.support import read_all
from thoughtline.config import Config
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.server.app import DaemonServer
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.store.sqlite import SQLiteStore


@dataclass
class Served:
    url: str
    run_id: str  # a finished run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One daemon for the module (no provider needed: inline runs, no keys)."""
    home = tmp_path_factory.mktemp("bad-input")
    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ={})
    daemon = Daemon(runtime=runtime, store=store, settings=ServerSettings(port=0))
    server = DaemonServer(daemon).start()
    try:
        with httpx2.Client(base_url=server.url, timeout=20) as client:
            created = client.post("/v1/runs", json={"request": "x", "worker_backend": "inline"})
            run_id = created.json()["id"]
            assert read_all(client, run_id)[-1].type == "run.completed"
        yield Served(server.url, run_id)
    finally:
        server.stop()


def refused(served: Served, status: int, method: str, path: str, **options: object) -> str:
    """Send on a fresh connection; assert the error and that the daemon still answers.
    Returns the error code."""
    with httpx2.Client(base_url=served.url, timeout=20) as client:
        response = client.request(method, path.format(run=served.run_id), **options)  # type: ignore[arg-type]
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        message = error["message"]
        assert message.endswith(".") and "\n" not in message and len(message) < 400, message
        assert client.get("/v1/runs?limit=1").status_code == 200
    code: str = error["code"]
    return code


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    "body",
    [
        rb'{"request": "\ud800"}',
        rb'{"request": "fine \udfff"}',
        rb'{"request": "x", "roles": ["\ud800"]}',
        rb'{"request": "x", "provider": "\ud800"}',
        rb'{"request": "x", "model": "\udc00", "worker_backend": "inline"}',
        rb'{"request": "x", "chain_of_thought": "\ud800"}',
        rb'{"request": "x", "\ud800": 1}',
        rb'{"\ud800": "x"}',
    ],
)
def test_lone_surrogates_are_refused(served: Served, body: bytes) -> None:
    assert refused(served, 422, "POST", "/v1/runs", content=body, headers=JSON) == (
        "REQUEST_INVALID"
    )


@pytest.mark.parametrize(
    "body",
    [
        {"request": ""},
        {"request": "   "},
        {"request": "\n\t "},
        {"request": "x", "roles": [""]},
        {"request": "x", "roles": ["engineer", "  "]},
        {"request": "x", "provider": ""},
        {"request": "x", "chain_of_thought": ""},
        {"request": "x", "roles": ["r" * 201]},
    ],
)
def test_blank_or_oversized_fields_are_refused(served: Served, body: dict[str, object]) -> None:
    code = refused(served, 422, "POST", "/v1/runs", json={**body, "worker_backend": "inline"})
    assert code == "REQUEST_INVALID"


@pytest.mark.parametrize("model", ["", " ", "m" * 257])
def test_a_blank_or_oversized_model_id_is_refused_as_every_surface_refuses_it(
    served: Served, model: str
) -> None:
    body = {"request": "x", "model": model, "worker_backend": "inline"}
    assert refused(served, 400, "POST", "/v1/runs", json=body) == "MODEL_ID_INVALID"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"[]", 422, "REQUEST_INVALID"),
        (b"null", 422, "REQUEST_INVALID"),
        (b'"x"', 422, "REQUEST_INVALID"),
        (b"\xff\xfe", 400, "JSON_INVALID"),
        (b'{"request": 1e999}', 422, "REQUEST_INVALID"),
        (b'{"a":' * 3000 + b"1" + b"}" * 3000, 400, "JSON_INVALID"),
        (b'{"request": "x", "roles": ["astronaut\\u0000"]}', 400, "ROLE_"),
    ],
)
def test_malformed_bodies_are_refused(served: Served, body: bytes, status: int, code: str) -> None:
    assert refused(served, status, "POST", "/v1/runs", content=body, headers=JSON).startswith(code)


@pytest.mark.parametrize(
    "value",
    [
        "9" * 20,
        "9223372036854775808",  # one past the largest event id
        "-1",
        "abc",
        "1_0",
        "+5",
        "1e3",
        "0x10",
        b"\xd9\xa3",  # an Arabic-Indic digit: int() would take it
    ],
)
def test_absurd_last_event_ids_are_refused(served: Served, value: str | bytes) -> None:
    headers = {"Last-Event-ID": value}
    code = refused(served, 400, "GET", "/v1/runs/{run}/events", headers=headers)
    assert code == "REQUEST_INVALID"


def test_the_largest_event_id_resumes_after_everything(served: Served) -> None:
    with httpx2.Client(base_url=served.url, timeout=20) as client:
        events = read_all(client, served.run_id, headers={"Last-Event-ID": str(2**63 - 1)})
        assert events == []


@pytest.mark.parametrize(
    "query",
    [
        "?last_event_id=" + "9" * 20,
        "?last_event_id=9223372036854775808",
        "?last_event_id=-1",
        "?last_event_id=x",
    ],
)
def test_absurd_last_event_id_queries_are_refused(served: Served, query: str) -> None:
    assert refused(served, 422, "GET", "/v1/runs/{run}/events" + query) == "REQUEST_INVALID"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/runs?limit=abc",
        "/v1/runs?limit=0",
        "/v1/runs?limit=501",
        "/v1/runs?limit=" + "9" * 25,
        "/v1/runs?limit=%ED%A0%80",
        "/v1/runs/{run}/trace?layer=secrets",
        "/v1/runs/{run}/trace?layer=",
        "/v1/runs/{run}/trace?layer=%ED%A0%80",
    ],
)
def test_bad_query_parameters_are_refused(served: Served, path: str) -> None:
    assert refused(served, 422, "GET", path) == "REQUEST_INVALID"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/runs/%ED%A0%80",
        "/v1/runs/%00",
        "/v1/runs/" + "a" * 5000,
        "/v1/runs/%ED%A0%80/events",
        "/v1/runs/%ED%A0%80/trace?layer=answer",
    ],
)
def test_odd_run_ids_are_not_found(served: Served, path: str) -> None:
    assert refused(served, 404, "GET", path) == "RUN_NOT_FOUND"


def test_cancelling_an_odd_run_id_is_not_found(served: Served) -> None:
    assert refused(served, 404, "POST", "/v1/runs/%ED%A0%80/cancel") == "RUN_NOT_FOUND"

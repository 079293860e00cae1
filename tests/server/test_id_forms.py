"""Every id the daemon takes, in every form a person types it: a run's short id, a
unique start of it and ``latest`` name the run (and, for ``conversation=``, its
conversation) as its whole id does, and a start two runs share is refused with both,
400 ``RUN_ID_AMBIGUOUS``, on every route.

The table is read from the app itself: every path parameter, every query parameter and
every field of a request body is either an id (and then checked here, through real
HTTP) or plainly not one, so a new route or field that takes an id without the one
resolver fails here."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import pytest

from tests.server.support import LiveDaemon, read_all, start_run, wait_for_status
from tests.store.builders import make_run
from thoughtline.records import short_run_id
from thoughtline.testing import Simulator, Transcript

ENDED = {"completed"}
TWINS = ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002")
AMBIGUOUS = "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."
NOT_IDS = {"limit", "layer", "last_event_id"}
"""Parameters whose names look like ids but are not run ids (an event id, say)."""
ID_LIKE = re.compile(r"(^|_)(ids?|runs?|conversation|continues|session)(_|$)")


def takes_run_ids(description: str | None) -> bool:
    """Whether a parameter says it takes a run id (in every form: "…, short id, …")."""
    return "short id" in (description or "")


def operations(client: httpx2.Client) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every route the daemon's OpenAPI document lists."""
    document = client.get("/openapi.json").json()
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def id_routes(client: httpx2.Client) -> list[tuple[str, str]]:
    """(method, path) of every route with a path parameter, each of them a run id."""
    routes: list[tuple[str, str]] = []
    for method, path, operation in operations(client):
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        assert set(names) <= {"run_id"}, f"{path}: what ids does {names} take?"
        if names:
            routes.append((method, path))
    return routes


def id_query_params(client: httpx2.Client) -> list[tuple[str, str]]:
    """(path, name) of every query parameter that takes a run id; the others must not
    look like one."""
    found: list[tuple[str, str]] = []
    for _, path, operation in operations(client):
        for param in operation.get("parameters", []):
            if param["in"] != "query":
                continue
            if takes_run_ids(param.get("description")):
                found.append((path, param["name"]))
            else:
                assert param["name"] in NOT_IDS or not ID_LIKE.search(param["name"]), (
                    f"{path}?{param['name']}= looks like an id: resolve it and say so"
                )
    return found


def id_body_fields(client: httpx2.Client) -> list[str]:
    """The fields of every request body that take a run id; the others must not look
    like one."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    found: list[str] = []
    for _, path, operation in operations(client):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is None:
            continue
        schema = schemas[body["schema"]["$ref"].rpartition("/")[2]]
        for name, field in schema["properties"].items():
            if takes_run_ids(field.get("description")):
                found.append(name)
            else:
                assert not ID_LIKE.search(name), f"{path} {name!r} looks like an id"
    return found


def call(client: httpx2.Client, method: str, path: str, run_id: str) -> tuple[int, str]:
    """The status and the start of the body (an event stream: its first frames)."""
    url = path.replace("{run_id}", run_id)
    with client.stream(method, url) as response:
        text = ""
        for chunk in response.iter_text():
            text += chunk
            if len(text) > 2000:
                break
    return response.status_code, text


@pytest.mark.slow  # eight runs through the daemon, every route called five ways
def test_every_route_and_field_takes_every_form_of_a_run_id(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    sim.script(Transcript(answer="One."))
    client = daemon.client()
    store = daemon.daemon.store
    for twin in TWINS:  # older than the runs below: `latest` is never one of them
        store.create_run(make_run(twin, status="completed", created_at="2026-01-01T00:00:00.000Z"))
    first = start_run(client, request="First turn.", provider="deepseek")
    wait_for_status(client, first, ENDED)
    second = start_run(client, request="Second turn.", continues=first)
    wait_for_status(client, second, ENDED)
    short = short_run_id(second)
    forms = {"short id": short, "prefix": short[:5], "latest": "latest", "whole": second}

    routes = id_routes(client)
    assert {path for _, path in routes} >= {
        "/v1/runs/{run_id}",
        "/v1/runs/{run_id}/cancel",
        "/v1/runs/{run_id}/trace",
        "/v1/runs/{run_id}/events",
    }
    for method, path in routes:
        for form, given in forms.items():
            status, text = call(client, method, path, given)
            assert status not in (400, 404), (method, path, form, text)
            assert second in text, (method, path, form, text)
        status, text = call(client, method, path, "kq3x")
        assert status == 400, (method, path, text)
        error = httpx2.Response(400, text=text).json()["error"]
        assert error == {"code": "RUN_ID_AMBIGUOUS", "message": AMBIGUOUS}, (method, path)

    params = id_query_params(client)
    assert params == [("/v1/runs", "conversation")]
    for path, name in params:
        for form, given in {**forms, "first": short_run_id(first)}.items():
            response = client.get(path, params={name: given})
            assert response.status_code == 200, (form, response.text)
            assert [run["id"] for run in response.json()["runs"]] == [first, second], form
        response = client.get(path, params={name: "kq3x"})
        assert response.status_code == 400, response.text
        assert response.json()["error"] == {"code": "RUN_ID_AMBIGUOUS", "message": AMBIGUOUS}

    fields = id_body_fields(client)
    assert fields == ["continues"]
    for name in fields:
        response = client.post("/v1/runs", json={"request": "Again.", name: "kq3x"})
        assert response.status_code == 400, response.text
        assert response.json()["error"] == {"code": "RUN_ID_AMBIGUOUS", "message": AMBIGUOUS}
        continued = second
        for form in ("short id", "prefix", "latest"):
            given = short_run_id(continued)[:5] if form == "prefix" else short_run_id(continued)
            given = "latest" if form == "latest" else given
            run_id = start_run(client, request=f"By {form}.", **{name: given})
            snapshot: dict[str, Any] = wait_for_status(client, run_id, ENDED)
            assert (snapshot[name], snapshot["conversation_id"]) == (continued, first), form
            continued = run_id


def test_the_event_stream_of_a_running_run_by_its_short_id_and_by_latest(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    sim.script(Transcript(answer="x" * 60, chunk_chars=2))
    sim.pace_s = 0.01
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    live = read_all(client, short_run_id(run_id))  # opened while the answer streams
    assert live[0].type == "snapshot" and live[0].data["id"] == run_id
    assert "".join(event.data["text"] for event in live if event.type == "answer.delta")
    ended = read_all(client, "latest")  # the run has ended: its snapshot, then its end
    for events in (live, ended):
        assert events[0].data["id"] == run_id
        assert events[-1].type == "run.completed"
        assert events[-1].data["tasks"][0]["output"] == "x" * 60

"""The JSON API over real HTTP: runs, cancel, errors, auth, limits, static page."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, read_all, start_run, wait_for_status
from tests.store.builders import make_run
from thoughtline.records import short_run_id
from thoughtline.testing import Simulator, Transcript

SLOW = Transcript(answer="x" * 400, chunk_chars=2)


def error_of(response: httpx2.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, str] = response.json()["error"]
    assert error["code"] and error["message"]
    return error


def test_create_get_list(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(Transcript(answer="All good."))
    client = daemon.client()
    response = client.post("/v1/runs", json={"request": "Check.", "provider": "deepseek"})
    assert response.status_code == 202
    body = response.json()
    run_id = body["id"]
    assert body == {
        "id": run_id,
        "short_id": short_run_id(run_id),
        "status": "planned",
        "links": {
            "self": f"/v1/runs/{run_id}",
            "events": f"/v1/runs/{run_id}/events",
            "cancel": f"/v1/runs/{run_id}/cancel",
            "trace": f"/v1/runs/{run_id}/trace",
        },
    }
    snapshot = wait_for_status(client, run_id, {"completed"})
    assert snapshot["schema"] == "thoughtline.run/v1"
    assert snapshot["short_id"] == body["short_id"]
    assert snapshot["tasks"][0]["output"] == "All good."
    assert snapshot["tasks"][0]["role"] == "assistant"
    second = start_run(client, worker_backend="inline", roles=["architect"])
    wait_for_status(client, second, {"completed_prepare_only"})
    runs = client.get("/v1/runs", params={"limit": 10}).json()["runs"]
    assert [run["id"] for run in runs] == [second, run_id]
    assert [run["id"] for run in client.get("/v1/runs?limit=1").json()["runs"]] == [second]
    error = error_of(client.get("/v1/runs/run_missing"), 404)
    assert error["code"] == "RUN_NOT_FOUND"
    trace = client.get(f"/v1/runs/{run_id}/trace", params={"layer": "answer"}).json()
    assert trace and {event["layer"] for event in trace} == {"answer"}
    assert trace[0]["type"] == "run.started"


def test_short_ids_name_runs_in_every_route(daemon: LiveDaemon, sim: Simulator) -> None:
    """The id a person copies from the page, the CLI or MCP works in the API too."""
    sim.script(Transcript(answer="All good."))
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    snapshot = wait_for_status(client, run_id, {"completed"})
    short = snapshot["short_id"]
    assert run_id.startswith(f"run_{short}") and len(short) == 8
    assert client.get(f"/v1/runs/{short}").json()["id"] == run_id
    assert client.get(f"/v1/runs/{short[:5]}").json()["id"] == run_id
    trace = client.get(f"/v1/runs/{short}/trace", params={"layer": "answer"}).json()
    assert {event["run_id"] for event in trace} == {run_id}
    events = read_all(client, short)
    assert events[-1].type == "run.completed"
    error = error_of(client.post(f"/v1/runs/{short}/cancel"), 409)
    assert error["code"] == "RUN_FINISHED"
    listed = client.get("/v1/runs", params={"limit": 1}).json()["runs"]
    assert listed[0]["short_id"] == short
    # A start too short to tell two runs apart is refused, naming them.
    for other in ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002"):
        daemon.daemon.store.create_run(make_run(other, status="completed"))
    error = error_of(client.get("/v1/runs/kq3x"), 400)
    assert error["code"] == "RUN_ID_AMBIGUOUS"
    assert error["message"] == "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."
    assert client.get("/v1/runs/kq3x7").json()["short_id"] == "kq3x7h4b"


def test_live_snapshot_has_partial_output(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    sim.pace_s = 0.01
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    for _ in range(400):
        output = client.get(f"/v1/runs/{run_id}").json()["tasks"][0]["output"]
        if output:
            break
    assert output and set(output) == {"x"}
    client.post(f"/v1/runs/{run_id}/cancel")


def test_cancel(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    sim.pace_s = 0.02
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    events = read_all(client, run_id, stop=lambda seen: seen[-1].type == "answer.delta")
    response = client.post(f"/v1/runs/{run_id}/cancel")
    assert response.status_code == 202
    assert response.json() == {"id": run_id, "status": "cancelling"}
    rest = read_all(client, run_id, headers={"Last-Event-ID": str(events[-1].seq)})
    assert rest[-1].type == "run.cancelled"
    assert rest[-1].data["status"] == "cancelled"
    task = rest[-1].data["tasks"][0]
    assert task["status"] == "cancelled"
    assert task["output"] and len(task["output"]) < len(SLOW.answer)
    assert wait_for_status(client, run_id, {"cancelled"})["status"] == "cancelled"
    assert error_of(client.post(f"/v1/runs/{run_id}/cancel"), 409)["code"] == "RUN_FINISHED"
    assert error_of(client.post("/v1/runs/run_nope/cancel"), 404)["code"] == "RUN_NOT_FOUND"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"request": "x", "chain_of_thought": "loud"}, 400, "CHAIN_OF_THOUGHT_UNKNOWN"),
        ({"request": "x", "roles": ["astronaut"]}, 400, "ROLE_UNKNOWN"),
        ({"request": "x", "provider": "nowhere"}, 400, "ENDPOINT_UNKNOWN"),
        (
            {"request": "x", "provider": "deepseek", "model": "m", "extra": 1},
            422,
            "REQUEST_INVALID",
        ),
        ({"request": 5}, 422, "REQUEST_INVALID"),
        ({"request": "x", "roles": "engineer"}, 422, "REQUEST_INVALID"),
        ({"request": "x", "effort": "enormous"}, 400, "EFFORT_UNKNOWN"),
        ({"request": "x", "worker_backend": "cloud"}, 400, "WORKER_BACKEND_UNKNOWN"),
        ({}, 422, "REQUEST_INVALID"),
    ],
)
def test_bad_input_is_a_4xx_json_error_with_a_code(
    daemon: LiveDaemon, body: dict[str, object], status: int, code: str
) -> None:
    error = error_of(daemon.client().post("/v1/runs", json=body), status)
    assert error["code"] == code


def test_missing_key_malformed_json_routes_and_methods(
    start_daemon: StartDaemon, environ: dict[str, str]
) -> None:
    without_keys = {key: value for key, value in environ.items() if not key.endswith("_API_KEY")}
    daemon = start_daemon(env=without_keys)
    client = daemon.client()
    error = error_of(client.post("/v1/runs", json={"request": "x", "provider": "deepseek"}), 400)
    assert error["code"] == "PROVIDER_KEY_MISSING"
    assert "DEEPSEEK_API_KEY" in error["message"]
    malformed = client.post(
        "/v1/runs", content=b'{"request": ', headers={"Content-Type": "application/json"}
    )
    assert error_of(malformed, 400)["code"] == "JSON_INVALID"
    assert error_of(client.get("/v1/nothing-here"), 404)["code"] == "NOT_FOUND"
    assert error_of(client.delete("/v1/runs"), 405)["code"] == "METHOD_NOT_ALLOWED"
    assert error_of(client.get("/v1/runs?limit=0"), 422)["code"] == "REQUEST_INVALID"
    bad_layer = client.get("/v1/runs/run_x/trace?layer=secrets")
    assert error_of(bad_layer, 422)["code"] == "REQUEST_INVALID"
    assert error_of(client.get("/v1/runs/run_x/trace"), 404)["code"] == "RUN_NOT_FOUND"


def test_body_limit(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(max_body_bytes=1024)
    client = daemon.client()
    big = {"request": "x" * 2000}
    assert error_of(client.post("/v1/runs", json=big), 413)["code"] == "REQUEST_TOO_LARGE"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts what arrives
        yield b'{"request": "'
        for _ in range(10):
            yield b"y" * 200
        yield b'"}'

    streamed = client.post(
        "/v1/runs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert error_of(streamed, 413)["code"] == "REQUEST_TOO_LARGE"
    small = client.post("/v1/runs", json={"request": "y", "worker_backend": "inline"})
    assert small.status_code == 202


def test_default_body_limit_is_256_kib(daemon: LiveDaemon) -> None:
    client = daemon.client()
    response = client.post("/v1/runs", json={"request": "z" * (256 * 1024 + 1)})
    assert error_of(response, 413)["code"] == "REQUEST_TOO_LARGE"


def test_auth(start_daemon: StartDaemon, sim: Simulator) -> None:
    sim.script(Transcript(answer="fine"))
    daemon = start_daemon(token="access-token-1", operator_token="operator-token-2")
    anonymous, wrong = daemon.client(), daemon.client("nope")
    access, operator = daemon.client("access-token-1"), daemon.client("operator-token-2")
    for client in (anonymous, wrong):
        for method, path in (
            ("GET", "/v1/runs"),
            ("POST", "/v1/runs"),
            ("GET", "/v1/runs/run_x"),
            ("GET", "/v1/runs/run_x/events"),
            ("POST", "/v1/runs/run_x/cancel"),
            ("GET", "/v1/runs/run_x/trace"),
        ):
            response = client.request(method, path, json={"request": "x"})
            assert error_of(response, 401)["code"] == "UNAUTHORIZED"
            assert response.headers["www-authenticate"] == "Bearer"
    run_id = start_run(access, provider="deepseek", worker_backend="inline")
    assert operator.get(f"/v1/runs/{run_id}").status_code == 200
    read_all(access, run_id)
    assert access.get(f"/v1/runs/{run_id}/trace?layer=answer").status_code == 200
    for query in ("?layer=reasoning", "?layer=provider_raw", ""):
        denied = access.get(f"/v1/runs/{run_id}/trace{query}")
        assert error_of(denied, 403)["code"] == "OPERATOR_TOKEN_REQUIRED"
        assert operator.get(f"/v1/runs/{run_id}/trace{query}").status_code == 200
    # The page and the OpenAPI document hold no data and stay public.
    assert anonymous.get("/").status_code == 200
    assert anonymous.get("/openapi.json").status_code == 200


def test_page_openapi_and_no_cors_by_default(daemon: LiveDaemon) -> None:
    client = daemon.client()
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert client.get("/static/index.html").status_code == 200
    document = client.get("/openapi.json").json()
    paths = document["paths"]
    assert set(paths) == {
        "/v1/runs",
        "/v1/runs/{run_id}",
        "/v1/runs/{run_id}/cancel",
        "/v1/runs/{run_id}/trace",
        "/v1/runs/{run_id}/events",
        "/v1/tools",
        "/v1/health",
    }
    created = paths["/v1/runs"]["post"]["responses"]["202"]["content"]["application/json"]
    assert created["schema"]["$ref"].endswith("/RunCreated")
    assert (
        "text/event-stream"
        in paths["/v1/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]
    )
    preflight = client.options(
        "/v1/runs",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    plain = client.get("/v1/runs", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in plain.headers


def test_cors_when_configured(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(cors_origins=("http://app.localhost",))
    client = daemon.client()
    allowed = client.get("/v1/runs", headers={"Origin": "http://app.localhost"})
    assert allowed.headers["access-control-allow-origin"] == "http://app.localhost"
    other = client.get("/v1/runs", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_an_allowed_origin_may_ask_for_respond_async_and_read_that_it_was(
    start_daemon: StartDaemon,
) -> None:
    daemon = start_daemon(cors_origins=("http://app.localhost",))
    client = daemon.client()
    origin = {"Origin": "http://app.localhost"}
    preflight = client.options(
        "/v1/runs",
        headers={
            **origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, prefer",
        },
    )
    assert preflight.status_code == 200, preflight.text
    assert "prefer" in preflight.headers["access-control-allow-headers"].lower()
    created = client.post(
        "/v1/runs",
        json={"request": "Hi.", "worker_backend": "inline"},
        headers={**origin, "Prefer": "respond-async"},
    )
    assert created.status_code == 202, created.text
    assert created.headers["preference-applied"] == "respond-async"
    assert "preference-applied" in created.headers["access-control-expose-headers"].lower()


def test_retention_is_applied_at_start(daemon: LiveDaemon) -> None:
    from thoughtline.runtime.policy.retention import purge_due
    from thoughtline.store.sqlite import SQLiteStore

    with SQLiteStore(daemon.home / "thoughtline.db") as store:
        assert purge_due(store) is False  # the daemon purged (and recorded it) on start


def test_docs_is_an_offline_page_of_the_daemon_naming_every_route(daemon: LiveDaemon) -> None:
    response = daemon.client().get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    page = response.text
    assert "href='/openapi.json'" in page
    for route in ("POST /v1/runs", "GET /v1/runs/{run_id}/events", "POST /v1/runs/{run_id}/cancel"):
        assert route in page
    # Nothing is loaded from elsewhere: no scripts, no external stylesheets or images.
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_system_gives_the_persona_and_no_role_gives_none(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    client = daemon.client()
    plain = start_run(client)
    plain_snapshot = wait_for_status(client, plain, {"completed"})
    inline = start_run(client, system="You are terse.")
    inline_snapshot = wait_for_status(client, inline, {"completed"})
    refused = client.post(
        "/v1/runs", json={"request": "x", "system": "You are terse.", "roles": ["reviewer"]}
    )
    error = error_of(refused, 400)
    assert error["code"] == "REQUEST_INVALID"
    assert "system and roles (reviewer) both give the persona" in error["message"]
    first, second = sim.requests
    assert first.body is not None and second.body is not None
    assert "system" not in first.body
    assert second.body["system"] == "You are terse."
    assert plain_snapshot["tasks"][0]["persona"] == {"role": "assistant", "source": "default"}
    assert inline_snapshot["tasks"][0]["persona"] == {
        "role": "assistant",
        "source": "system",
        "system": "You are terse.",
    }

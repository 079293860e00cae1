"""The request guard over real HTTP: a Host the daemon is not served under is refused
before any route runs (DNS rebinding), and state-changing requests from another origin
or with a non-JSON body are refused; the daemon's own page and plain clients pass."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx2
import pytest

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.server.test_api import error_of
from tests.server.test_processes import _serve
from tests.support import daemon_url
from thoughtline.config import Config
from thoughtline.errors import ThoughtlineError
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.server.app import DaemonServer, bind_socket
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator, Transcript

INLINE = {"request": "Guard me.", "worker_backend": "inline"}
# Every kind of route: the page, static files, the OpenAPI document, the API and SSE.
ROUTES = [
    ("GET", "/"),
    ("GET", "/static/app.js"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/runs/run_x"),
    ("GET", "/v1/runs/run_x/events"),
    ("GET", "/v1/runs/run_x/trace"),
    ("POST", "/v1/runs"),
    ("POST", "/v1/runs/run_x/cancel"),
    ("OPTIONS", "/v1/runs"),
]


def port_of(daemon: LiveDaemon) -> int:
    return int(daemon.url.rsplit(":", 1)[1])


def runs_in(daemon: LiveDaemon) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = daemon.client().get("/v1/runs").json()["runs"]
    return runs


def assert_refused_host(response: httpx2.Response) -> None:
    error = error_of(response, 421)
    assert error["code"] == "HOST_NOT_ALLOWED"
    assert "--allowed-host" in error["message"]
    assert error["message"].endswith(".") and "\n" not in error["message"]


@pytest.mark.parametrize(
    "host",
    [
        "rebound.example",
        "rebound.example:{port}",
        "127.0.0.1.rebound.example",
        "localhost.rebound.example:{port}",
        "localhost.",
        "0.0.0.0:{port}",
        "[::]:{port}",
        "192.168.1.20",
        "localhost:notaport",
        "user@localhost",
        "",
    ],
)
def test_a_foreign_host_is_refused_on_every_route(daemon: LiveDaemon, host: str) -> None:
    client = daemon.client()
    headers = {"Host": host.format(port=port_of(daemon))}
    for method, path in ROUTES:
        response = client.request(method, path, headers=headers, json=INLINE)
        assert_refused_host(response)
    assert runs_in(daemon) == []  # the POST never reached the route


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:{port}",
        "LocalHost:{port}",
        "127.0.0.1",
        "127.0.0.1:{port}",
        "127.8.9.10:{port}",
        "[::1]:{port}",
    ],
)
def test_loopback_names_are_answered(daemon: LiveDaemon, host: str) -> None:
    client = daemon.client()
    headers = {"Host": host.format(port=port_of(daemon))}
    for path in ("/", "/static/app.js", "/openapi.json", "/v1/runs"):
        assert client.get(path, headers=headers).status_code == 200, path
    created = client.post("/v1/runs", json=INLINE, headers=headers)
    assert created.status_code == 202, created.text


def test_a_request_without_host_is_refused(daemon: LiveDaemon) -> None:
    port = port_of(daemon)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /v1/runs HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert b'"code":"HOST_MISSING"' in answer


def test_allowed_hosts_extend_the_list(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(allowed_hosts=("thoughtline.lan", "10.1.2.3"))
    client = daemon.client()
    for host in ("thoughtline.lan", "THOUGHTLINE.lan:8080", "10.1.2.3:80", "localhost"):
        assert client.get("/v1/runs", headers={"Host": host}).status_code == 200, host
    for host in ("other.lan", "sub.thoughtline.lan", "10.1.2.4"):
        assert_refused_host(client.get("/v1/runs", headers={"Host": host}))


def _wildcard_daemon(home: Path, **settings: object) -> DaemonServer:
    """Configured as bound to 0.0.0.0, but listening on 127.0.0.1 only."""
    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ={})
    options = ServerSettings(host="0.0.0.0", port=0, **settings)  # type: ignore[arg-type]
    daemon = Daemon(runtime=runtime, store=store, settings=options)
    return DaemonServer(daemon, bind_socket("127.0.0.1", 0)).start()


def test_on_every_address_the_token_protects_and_any_host_is_answered(home: Path) -> None:
    server = _wildcard_daemon(home, token="wildcard-token-1-Xq7Lp2Vz9Rk4Tm8Nb3Hc6Gf0")
    try:
        with httpx2.Client(base_url=server.url, timeout=20) as client:
            auth = {"Authorization": "Bearer wildcard-token-1-Xq7Lp2Vz9Rk4Tm8Nb3Hc6Gf0"}
            for host in ("thoughtline.lan", "192.168.1.20:8765", "rebound.example"):
                ok = client.get("/v1/runs", headers={**auth, "Host": host})
                assert ok.status_code == 200, host
                # The rebinding page has no token.
                anonymous = client.get("/v1/runs", headers={"Host": host})
                assert error_of(anonymous, 401)["code"] == "UNAUTHORIZED"
    finally:
        server.stop()


def test_on_every_address_an_embedded_daemon_refuses_a_weak_token(home: Path) -> None:
    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ={})
    options = ServerSettings(host="0.0.0.0", port=0, token="wildcard-token-1")
    daemon = Daemon(runtime=runtime, store=store, settings=options)
    try:
        with pytest.raises(ThoughtlineError) as refused:
            DaemonServer(daemon)  # refused before it binds a socket
    finally:
        store.close()
    assert refused.value.code == "SERVE_TOKEN_WEAK"
    assert "wildcard-token-1" not in refused.value.message


def test_on_every_address_allowed_hosts_turn_the_list_on(home: Path) -> None:
    server = _wildcard_daemon(
        home, token="wildcard-token-2-Xq7Lp2Vz9Rk4Tm8Nb3Hc6Gf0", allowed_hosts=("thoughtline.lan",)
    )
    try:
        with httpx2.Client(base_url=server.url, timeout=20) as client:
            auth = {"Authorization": "Bearer wildcard-token-2-Xq7Lp2Vz9Rk4Tm8Nb3Hc6Gf0"}
            ok = client.get("/v1/runs", headers={**auth, "Host": "thoughtline.lan"})
            assert ok.status_code == 200
            refused = client.get("/v1/runs", headers={**auth, "Host": "rebound.example"})
            assert_refused_host(refused)
    finally:
        server.stop()


@pytest.mark.slow
def test_serve_takes_allowed_hosts_from_flags_and_the_environment(
    home: Path, environ: dict[str, str]
) -> None:
    env = {**environ, "THOUGHTLINE_ALLOWED_HOSTS": "one.lan, two.lan"}
    process = _serve(home, env, "--port", "0", "--no-token", "--allowed-host", "three.lan")
    try:
        with httpx2.Client(base_url=daemon_url(process), timeout=20) as client:
            for host in ("one.lan", "two.lan:8765", "three.lan"):
                assert client.get("/v1/runs", headers={"Host": host}).status_code == 200, host
            assert_refused_host(client.get("/v1/runs", headers={"Host": "four.lan"}))
    finally:
        process.terminate()
        process.communicate(timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("value", ["http://thoughtline.lan/", "thoughtline.lan/runs", "a b", ":"])
def test_serve_refuses_an_allowed_host_that_is_not_a_name(
    home: Path, environ: dict[str, str], value: str
) -> None:
    process = _serve(home, environ, "--port", "0", "--allowed-host", value)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr.strip().count("\n") == 0
    assert "--allowed-host takes a host name" in stderr


# -- cross-site state changes --------------------------------------------------------


def assert_cross_site(response: httpx2.Response) -> None:
    error = error_of(response, 403)
    assert error["code"] == "CROSS_SITE_REQUEST"
    assert error["message"].endswith(".") and "\n" not in error["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1"},  # another port of the same host
        {"Origin": "http://127.0.0.1:{other}"},
        {"Origin": "http://localhost:{port}"},  # not the Host the request names
        {"Origin": "http://127.0.0.1:{port}.evil.example"},
        {"Origin": "not a url"},
    ],
)
def test_state_changes_from_another_origin_are_refused(
    daemon: LiveDaemon, sim: Simulator, headers: dict[str, str]
) -> None:
    port = port_of(daemon)
    filled = {key: value.format(port=port, other=port + 1) for key, value in headers.items()}
    client = daemon.client()
    assert_cross_site(client.post("/v1/runs", json=INLINE, headers=filled))
    assert runs_in(daemon) == []
    sim.script(Transcript(answer="x" * 400, chunk_chars=2))
    sim.pace_s = 0.02
    run_id = start_run(client, provider="deepseek")
    assert_cross_site(client.post(f"/v1/runs/{run_id}/cancel", headers=filled))
    assert client.get(f"/v1/runs/{run_id}").json()["status"] in ("planned", "running")
    # Reads stay answered: the browser keeps another origin from reading them.
    assert client.get("/v1/runs", headers=filled).status_code == 200
    assert client.post(f"/v1/runs/{run_id}/cancel").status_code == 202
    wait_for_status(client, run_id, {"cancelled"})


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the CLI, scripts
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:{port}"},  # the page
        {"Sec-Fetch-Site": "none"},  # typed by the user
        {"Origin": "http://127.0.0.1:{port}/"},
    ],
)
def test_same_origin_and_plain_clients_may_change_state(
    daemon: LiveDaemon, headers: dict[str, str]
) -> None:
    port = port_of(daemon)
    filled = {key: value.format(port=port) for key, value in headers.items()}
    client = daemon.client()
    created = client.post("/v1/runs", json=INLINE, headers=filled)
    assert created.status_code == 202, created.text
    run_id = created.json()["id"]
    wait_for_status(client, run_id, {"completed_prepare_only"})
    # Finished already, so a 409: the guard let the cancel through to the route.
    cancel = client.post(f"/v1/runs/{run_id}/cancel", headers=filled)
    assert error_of(cancel, 409)["code"] == "RUN_FINISHED"


def test_the_page_origin_under_another_allowed_name(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(allowed_hosts=("thoughtline.lan",))
    client = daemon.client()
    # Behind a TLS proxy: the page is https://thoughtline.lan, the Host has no port.
    headers = {
        "Host": "thoughtline.lan",
        "Origin": "https://thoughtline.lan",
        "Sec-Fetch-Site": "same-origin",
    }
    created = client.post("/v1/runs", json=INLINE, headers=headers)
    assert created.status_code == 202, created.text
    headers["Origin"] = "https://thoughtline.lan:8443"
    assert_cross_site(client.post("/v1/runs", json=INLINE, headers=headers))


def test_a_configured_cors_origin_may_change_state(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(cors_origins=("https://app.example",))
    client = daemon.client()
    headers = {"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}
    created = client.post("/v1/runs", json=INLINE, headers=headers)
    assert created.status_code == 202, created.text
    assert created.headers["access-control-allow-origin"] == "https://app.example"
    other = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    assert_cross_site(client.post("/v1/runs", json=INLINE, headers=other))


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"request": "x", "worker_backend": "inline"}', "text/plain"),
        (b'{"request": "x", "worker_backend": "inline"}', "text/plain;charset=UTF-8"),
        (b"request=x&worker_backend=inline", "application/x-www-form-urlencoded"),
        (b'--b\r\nContent-Disposition: form-data; name="request"\r\n\r\nx\r\n--b--\r\n',
         "multipart/form-data; boundary=b"),
        (b'{"request": "x", "worker_backend": "inline"}', None),
        (b'{"request": "x", "worker_backend": "inline"}', "application/jsonx"),
    ],
)  # fmt: skip
def test_a_body_that_is_not_json_is_refused(
    daemon: LiveDaemon, content: bytes, content_type: str | None
) -> None:
    client = daemon.client()
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = client.post("/v1/runs", content=content, headers=headers)
    error = error_of(response, 415)
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert "application/json" in error["message"]
    cancel = client.post("/v1/runs/run_x/cancel", content=b"x=1", headers=headers)
    assert error_of(cancel, 415)["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert runs_in(daemon) == []


def test_json_with_a_charset_and_a_bodiless_cancel_pass(daemon: LiveDaemon) -> None:
    client = daemon.client()
    created = client.post(
        "/v1/runs",
        content=b'{"request": "x", "worker_backend": "inline"}',
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert created.status_code == 202, created.text
    missing = client.post("/v1/runs/run_missing/cancel")  # no body, no Content-Type
    assert error_of(missing, 404)["code"] == "RUN_NOT_FOUND"

"""Hostile web pages in a real browser against the real daemon: a page whose hostname
resolves to 127.0.0.1 (DNS rebinding) gets nothing, and a page of another site cannot
start or cancel runs; the daemon's own page still can."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.server.web.support import CHROMIUM_ARGS, chromium_path
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

# Both names resolve to the loopback address in this browser only.
RESOLVER = "--host-resolver-rules=MAP rebound.test 127.0.0.1, MAP attacker.test 127.0.0.1"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (apt-get install chromium); browser tests need it")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=[*CHROMIUM_ARGS, RESOLVER]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def attacker() -> Iterator[dict[str, str]]:
    """A site on another origin (served on 127.0.0.1, named attacker.test) whose pages
    the test writes: path -> HTML."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    pages["origin"] = f"http://attacker.test:{server.server_address[1]}"
    try:
        yield pages
    finally:
        server.shutdown()
        server.server_close()


def port_of(daemon: LiveDaemon) -> int:
    return int(daemon.url.rsplit(":", 1)[1])


def test_a_rebound_hostname_gets_nothing(page: Page, daemon: LiveDaemon) -> None:
    origin = f"http://rebound.test:{port_of(daemon)}"
    response = page.goto(f"{origin}/")
    assert response is not None and response.status == 421
    # The page is now same-origin with the daemon as far as the browser knows.
    statuses = page.evaluate(
        """async () => {
            const runs = await fetch("/v1/runs");
            const start = await fetch("/v1/runs", {
                method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({request: "rebound", worker_backend: "inline"}),
            });
            return [runs.status, start.status, (await start.json()).error.code];
        }"""
    )
    assert statuses == [421, 421, "HOST_NOT_ALLOWED"]
    assert daemon.client().get("/v1/runs").json()["runs"] == []


def test_another_site_cannot_start_or_cancel_runs(
    page: Page, daemon: LiveDaemon, sim: Simulator, attacker: dict[str, str]
) -> None:
    sim.script(Transcript(answer="x" * 600, chunk_chars=2))
    sim.pace_s = 0.02
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    target = f"{daemon.url}/v1/runs"
    # A form needs no CORS permission: its POST reaches the daemon either way.
    attacker["/cancel"] = (
        f"<form method=post action='{target}/{run_id}/cancel'></form>"
        "<script>document.forms[0].submit()</script>"
    )
    attacker["/start"] = (
        f"<form method=post enctype=text/plain action='{target}'>"
        '<input name=\'{"request": "forged", "worker_backend": "inline", "x": "\' value=\'"}\'>'
        "</form><script>document.forms[0].submit()</script>"
    )
    for path in ("/cancel", "/start"):
        with page.expect_response(lambda response: response.url.startswith(target)) as answer:
            page.goto(f"{attacker['origin']}{path}")
        assert answer.value.status == 403, path
        assert answer.value.json()["error"]["code"] == "CROSS_SITE_REQUEST"
    assert client.get(f"/v1/runs/{run_id}").json()["status"] in ("planned", "running")
    assert [run["id"] for run in client.get("/v1/runs").json()["runs"]] == [run_id]
    assert client.post(f"/v1/runs/{run_id}/cancel").status_code == 202
    wait_for_status(client, run_id, {"cancelled"})


def test_the_daemons_own_page_may_post(page: Page, start_daemon: StartDaemon) -> None:
    daemon = start_daemon(allowed_hosts=("rebound.test",))
    for origin in (daemon.url, f"http://rebound.test:{port_of(daemon)}"):
        response = page.goto(f"{origin}/")
        assert response is not None and response.status == 200
        status = page.evaluate(
            """async () => (await fetch("/v1/runs", {
                method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({request: "mine", worker_backend: "inline"}),
            })).status"""
        )
        assert status == 202, origin
    assert len(daemon.client().get("/v1/runs").json()["runs"]) == 2


def test_another_site_cannot_frame_the_page(
    page: Page, daemon: LiveDaemon, attacker: dict[str, str]
) -> None:
    """A page of another origin that frames the daemon's page (to overlay Start or
    Cancel) gets an empty frame: the page says ``frame-ancestors 'none'``."""
    attacker["/frame"] = (
        f"<iframe id='daemon' src='{daemon.url}/' onload='window.daemonLoaded = true'></iframe>"
        f"<iframe id='own' src='{attacker['origin']}/framed'></iframe>"
    )
    attacker["/framed"] = "<p id='mine'>a page of the same site, which may be framed</p>"
    page.goto(f"{attacker['origin']}/frame")
    page.wait_for_function("window.daemonLoaded === true")  # loaded, or refused
    own = page.frame_locator("#own")
    # The control: framing itself works, so an empty daemon frame is the policy's doing.
    assert own.locator("#mine").text_content() is not None
    framed = page.frame_locator("#daemon")
    assert framed.locator("[data-testid=run-form]").count() == 0
    frames = [frame for frame in page.frames if frame.url.startswith(daemon.url)]
    assert all(frame.locator("[data-testid=run-form]").count() == 0 for frame in frames)

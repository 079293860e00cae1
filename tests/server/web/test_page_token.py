"""The page as ``thoughtline serve`` announces it: opened at the printed
``/#token=…`` address it lists and starts runs with that token, drops the token from the
address, and runs under the daemon's Content-Security-Policy without a violation."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from tests.cli.test_run_cli import cli_env
from tests.server.web.test_live_daemon import start_from_form
from tests.support import daemon_url, start_process
from thoughtline.server.daemon_token import token_file
from thoughtline.server.page_headers import CONTENT_SECURITY_POLICY
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

# Every violation the page meets, as the page itself sees them.
RECORD_VIOLATIONS = """
window.violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
def served(tmp_path: Path, environ: dict[str, str]) -> Iterator[tuple[str, str]]:
    """``thoughtline serve --port 0`` with no token flag: its URL and the page address
    it printed."""
    home = tmp_path / "home"
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=tmp_path,
    )
    try:
        url = daemon_url(process)
        assert process.stdout is not None
        address = process.stdout.readline().split()[2]
        assert address == f"{url}/#token={token_file(home).read_text().strip()}"
        yield url, address
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_printed_address_opens_a_working_page_and_the_token_leaves_it(
    page: Page, served: tuple[str, str], sim: Simulator
) -> None:
    url, address = served
    token = address.split("#token=", 1)[1]
    with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as client:
        created = client.post("/v1/runs", json={"request": "Listed?", "provider": "deepseek"})
        assert created.status_code == 202
    console: list[ConsoleMessage] = []
    page.on("console", lambda message: console.append(message))
    page.add_init_script(RECORD_VIOLATIONS)

    response = page.goto(address)

    assert response is not None
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-frame-options"] == "DENY"
    expect(page.get_by_test_id("run-item")).to_have_count(1)
    assert page.url == f"{url}/"
    assert token not in page.evaluate("location.href")
    assert page.evaluate("sessionStorage.getItem('thoughtline.token')") == token
    run_id = start_from_form(page, "Started from the page.", provider="deepseek",
                             chain_of_thought="hidden")  # fmt: skip
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(page.get_by_test_id("task-answer")).not_to_be_empty()
    expect(page.get_by_test_id("run-item")).to_have_count(2)
    assert token not in page.url and run_id in page.url
    expect(page.get_by_test_id("token-dialog")).to_be_hidden()

    assert page.evaluate("window.violations") == []
    policy_messages = [m.text for m in console if "Content Security Policy" in m.text]
    assert policy_messages == []


def test_without_the_fragment_the_page_asks_for_the_token(
    page: Page, served: tuple[str, str]
) -> None:
    url, _ = served
    page.goto(f"{url}/")
    expect(page.get_by_test_id("token-dialog")).to_be_visible()
    expect(page.get_by_test_id("token-reason")).to_contain_text("Bearer")

"""Fixtures of the browser tests: one headless Chromium (Debian's, never a downloaded
one) per module, a fresh context per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.server.web.support import CHROMIUM_ARGS, FAKE_ORIGIN, FakeDaemon, chromium_path

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("chromium is not installed (apt-get install chromium); browser tests need it")
    from playwright.sync_api import sync_playwright  # only where a browser starts

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 960})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def fake_daemon(page: Page) -> FakeDaemon:
    """The real page served from a loopback origin whose /v1 answers the test scripts."""
    daemon = FakeDaemon()
    daemon.install(page)
    return daemon


__all__ = ["FAKE_ORIGIN"]

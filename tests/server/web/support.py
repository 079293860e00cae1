"""Helpers of the browser tests: the page's files, a Chromium launch without downloads,
and canned daemon answers served through Playwright's request routing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import thoughtline

if TYPE_CHECKING:  # playwright is imported by the browser tests themselves
    from playwright.sync_api import Page, Route

STATIC_DIR = Path(thoughtline.__file__).resolve().parent / "server" / "static"
SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "screenshots"
"""Where the browser tests save screenshots of the page, for anyone to look at (ignored by
git: the reviewed set in ``artifacts/screenshots/`` is copied from here by hand, so a
test run leaves the working tree as it was)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A loopback address nothing listens on: every request to it is answered by page.route,
# and anything that slipped through would fail on loopback instead of leaving the host.
FAKE_ORIGIN = "http://127.0.0.1:9"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}


def screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Save the whole page (or, with ``full_page=False``, what the screen shows) as
    ``test-artifacts/screenshots/NAME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def chromium_path() -> str | None:
    return shutil.which("chromium")


def sse_frames(events: Iterable[tuple[int, str, Mapping[str, Any]]]) -> str:
    """Encode ``(seq, type, data)`` as the daemon's SSE frames."""
    return "".join(
        f"id: {seq}\nevent: {kind}\ndata: {json.dumps(data)}\n\n" for seq, kind, data in events
    )


def json_body(body: object) -> str:
    return json.dumps(body)


def error_body(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}})


Handler = Callable[["Route", "FakeDaemon"], None]


@dataclass
class FakeDaemon:
    """Serves the real static files and canned ``/v1`` answers from ``routes``
    (``"GET /v1/runs"`` → handler). Records every /v1 request it answered."""

    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def install(self, page: Page) -> None:
        page.route(f"{FAKE_ORIGIN}/**", self._handle)

    def _handle(self, route: Route) -> None:
        request = route.request
        path = request.url[len(FAKE_ORIGIN) :]
        bare = path.split("?", 1)[0]
        if not bare.startswith("/v1/"):
            name = "index.html" if bare in ("/", "/index.html") else bare.removeprefix("/static/")
            file = STATIC_DIR / name
            if "/" in name or not file.is_file():
                route.fulfill(status=404, body="not found")
                return
            route.fulfill(
                status=200,
                body=file.read_bytes(),
                headers={
                    "content-type": CONTENT_TYPES.get(file.suffix, "application/octet-stream")
                },
            )
            return
        self.requests.append((request.method, path, dict(request.headers)))
        handler = self.routes.get(f"{request.method} {bare}")
        if handler is None:
            route.fulfill(
                status=404,
                body=error_body("NOT_FOUND", f"no canned answer for {bare}"),
                content_type="application/json",
            )
            return
        handler(route, self)


def fulfill_json(route: Route, body: object, status: int = 200) -> None:
    route.fulfill(status=status, body=json.dumps(body), content_type="application/json")


def snapshot(
    run_id: str = "run_fake",
    *,
    status: str = "running",
    tasks: list[dict[str, Any]] | None = None,
    request: str = "Explain the decision.",
) -> dict[str, Any]:
    return {
        "schema": "thoughtline.run/v1",
        "id": run_id,
        "status": status,
        "request": request,
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
        "worker_backend": "provider",
        "created_at": "2025-01-01T12:00:00.000Z",
        "finished_at": None,
        "tasks": tasks if tasks is not None else [task()],
    }


def task(task_id: str = "task_fake", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": task_id,
        "name": "engineer",
        "role": "engineer",
        "status": "running",
        "executor": "provider:deepseek:deepseek-reasoner",
        "provider": "deepseek",
        "model": "deepseek-reasoner",
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
        "effort": "provider-default",
        "after": [],
        "output": None,
        "reasoning": None,
        "reasoning_parts": None,
        "reasoning_status": None,
        "reasoning_notice": None,
        "generation": {"max_output_tokens": None, "temperature": None},
        "finish_reason": None,
        "usage": {
            "input_tokens": None,
            "output_tokens": None,
            "reasoning_tokens": None,
            "cached_input_tokens": None,
            "cache_write_tokens": None,
        },
        "error": None,
        "timings": {
            "started_at": None,
            "finished_at": None,
            "first_reasoning_ms": None,
            "first_answer_ms": None,
            "total_ms": None,
        },
    }
    base.update(overrides)
    return base

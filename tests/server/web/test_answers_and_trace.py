"""The answer area and the trace tab in a real browser, against canned daemon answers:
Markdown rendered from DOM nodes with model markup kept as text, the copy button, the
"truncated" mark from the task's finish reason, role names and formatted wire bodies
in the trace, and the page at phone width without sideways scrolling."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from tests.server.web.support import (
    FAKE_ORIGIN,
    FakeDaemon,
    fulfill_json,
    screenshot,
    snapshot,
    sse_frames,
    task,
)

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

RUN = "run_fake"
EVENTS = f"/v1/runs/{RUN}/events"
HOSTILE = (
    "## Plan\n\n"
    "Keep **this** and `[/INST]` apart; [bold]not bold[/bold].\n\n"
    "<script>window.__pwned = 1</script>\n"
    '<img src=x onerror="window.__pwned = 2">\n\n'
    "- first <b>item</b>\n- second\n\n"
    "```python\nprint('<script>alert(1)</script>')\n```\n\n"
    "[safe](https://example.org/) and [unsafe](javascript:window.__pwned=3)"
)


def serve_run(
    fake_daemon: FakeDaemon, run: dict[str, Any], trace: list[dict[str, Any]] | None = None
) -> None:
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )

    def answer_trace(route: Route, _: FakeDaemon) -> None:
        layer = route.request.url.rsplit("layer=", 1)[1]
        fulfill_json(route, [event for event in trace or [] if event["layer"] == layer])

    fake_daemon.routes[f"GET /v1/runs/{RUN}/trace"] = answer_trace


def trace_event(
    number: int, kind: str, layer: str, task_id: str | None, metadata: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": f"evt_{number}",
        "run_id": RUN,
        "task_id": task_id,
        "type": kind,
        "layer": layer,
        "at": "2025-01-01T12:00:01.000Z",
        "metadata": metadata,
    }


def test_markdown_is_rendered_and_model_markup_stays_text(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    run = snapshot(status="completed", tasks=[task(status="done", output=HOSTILE)])
    serve_run(fake_daemon, run)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    answer = page.get_by_test_id("task-answer")
    expect(answer.locator("h4")).to_have_text("Plan")
    expect(answer.locator("strong")).to_have_text("this")
    expect(answer.locator("li")).to_have_count(2)
    expect(answer.locator("pre code")).to_have_text("print('<script>alert(1)</script>')")
    for literal in (
        "[/INST]",
        "[bold]not bold[/bold]",
        "<script>window.__pwned = 1</script>",
        '<img src=x onerror="window.__pwned = 2">',
        "first <b>item</b>",
    ):
        expect(answer).to_contain_text(literal)
    assert answer.locator("script, img, b, iframe").count() == 0
    links = answer.locator("a")
    expect(links).to_have_count(1)
    expect(links).to_have_attribute("href", "https://example.org/")
    expect(answer).to_contain_text("[unsafe](javascript:window.__pwned=3)")
    assert page.evaluate("window.__pwned") is None


def test_copy_button_copies_the_answer_as_written(page: Page, fake_daemon: FakeDaemon) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=FAKE_ORIGIN)
    run = snapshot(status="completed", tasks=[task(status="done", output=HOSTILE)])
    serve_run(fake_daemon, run)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    button = page.get_by_test_id("copy-answer")
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == HOSTILE


def test_truncated_answers_are_marked_from_the_finish_reason(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    cut = task(
        "task_cut",
        status="done",
        output="The answer stops mid-",
        finish_reason="length",
        usage={**task()["usage"], "input_tokens": 9, "output_tokens": 64},
    )
    whole = task(
        "task_whole",
        name="reviewer",
        role="reviewer",
        status="done",
        output="Complete.",
        finish_reason="stop",
    )
    run = snapshot(status="completed", tasks=[cut, whole])
    serve_run(fake_daemon, run)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    cards = page.get_by_test_id("task-card")
    expect(cards.nth(0).get_by_test_id("task-truncated")).to_be_visible()
    expect(cards.nth(1).get_by_test_id("task-truncated")).to_be_hidden()
    expect(cards.nth(0).get_by_test_id("task-stats")).to_contain_text("64 output tokens")


def test_trace_names_roles_and_formats_wire_bodies(page: Page, fake_daemon: FakeDaemon) -> None:
    run = snapshot(
        status="completed", tasks=[task(status="done", output="ok", name="review", role="reviewer")]
    )
    request_body = json.dumps(
        {"model": "deepseek-chat", "messages": [{"role": "user", "content": "Hi"}]}
    )
    stream = 'data: {"choices":[{"delta":{"content":"ok"}}]}\n\ndata: [DONE]\n\n'
    trace = [
        trace_event(1, "worker.completed", "answer", "task_fake", {"finish": {"reason": "stop"}}),
        trace_event(
            2,
            "provider.exchange",
            "provider_raw",
            "task_fake",
            {"request_body": request_body, "response_body": stream},
        ),
    ]
    serve_run(fake_daemon, run, trace)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}/trace")
    expect(page.get_by_test_id("trace-task")).to_have_text("reviewer · review")
    expect(page.get_by_test_id("trace-task")).to_have_attribute("title", "task_fake")
    page.get_by_test_id("trace-layer-provider_raw").click()
    exchange = page.locator("[data-testid=trace-event][data-type='provider.exchange']")
    exchange.locator("summary").click()
    metadata = exchange.get_by_test_id("trace-metadata").text_content() or ""
    assert '"model": "deepseek-chat"' in metadata  # an object, not an escaped string
    assert '\\"' not in metadata
    assert '"content": "ok"' in metadata and '"data": "[DONE]"' in metadata


def test_the_page_fits_a_phone_without_sideways_scrolling(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    unbroken = "x" * 600
    answer = f"{HOSTILE}\n\n{unbroken}\n\n```\n{'wide_code_line ' * 40}\n```"
    run = snapshot(
        status="completed",
        request=f"A long request {unbroken}",
        tasks=[
            task(
                status="done",
                output=answer,
                reasoning=unbroken,
                reasoning_parts=[{"kind": "raw", "text": unbroken}],
            )
        ],
    )
    trace = [trace_event(1, "worker.completed", "answer", "task_fake", {"long": unbroken})]
    serve_run(fake_daemon, run, trace)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}")
    expect(page.get_by_test_id("task-answer").locator("pre")).to_have_count(2)
    page.get_by_test_id("task-reasoning-summary").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "phone-width")
    page.get_by_test_id("tab-trace").click()
    page.get_by_test_id("trace-event").locator("summary").click()
    expect(page.get_by_test_id("trace-metadata")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

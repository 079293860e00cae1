"""The page's own logic in a real browser, against canned daemon answers: SSE parsing,
resuming with Last-Event-ID, the token prompt, trace layers (including a refused one),
reasoning shown only when the data has it, and untrusted text kept as text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from tests.server.web.support import (
    FAKE_ORIGIN,
    FakeDaemon,
    error_body,
    fulfill_json,
    snapshot,
    sse_frames,
    task,
)

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

RUN = "run_fake"
EVENTS = f"/v1/runs/{RUN}/events"


def open_run(page: Page, tab: str = "") -> None:
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}{tab}")


def test_sse_parser_follows_the_event_stream_rules(page: Page, fake_daemon: FakeDaemon) -> None:
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [])
    page.goto(f"{FAKE_ORIGIN}/")
    events = page.evaluate(
        """async () => {
            const { SseParser } = await import("./static/sse.js");
            const seen = [];
            const parser = new SseParser((event) => seen.push(event));
            const stream = ": comment\\r\\nid: 1\\r\\nevent: answer.delta\\r\\ndata: {\\"text\\":\\"a\\"}\\r\\n\\r\\n"
              + "id: 2\\revent: x\\rdata: one\\rdata:two\\r\\r"
              + "event: ignored-without-data\\n\\n"
              + "data:  lead\\nid: 3\\n\\n"
              + "event: unfinished\\ndata: never";
            // feed one character at a time: frames and CRLF pairs split across chunks
            for (const char of stream) parser.push(char);
            return seen;
        }"""
    )
    assert events == [
        {"type": "answer.delta", "data": '{"text":"a"}', "id": "1"},
        {"type": "x", "data": "one\ntwo", "id": "2"},
        {"type": "message", "data": " lead", "id": "3"},
    ]


def test_a_broken_stream_resumes_with_last_event_id_without_duplicates(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    connections: list[str | None] = []

    def events(route: Route, _: FakeDaemon) -> None:
        connections.append(route.request.headers.get("last-event-id"))
        if len(connections) == 1:
            body = sse_frames(
                [
                    (1, "snapshot", snapshot(tasks=[task(status="queued")])),
                    (2, "task.started", task()),
                    (3, "answer.delta", {"task_id": "task_fake", "text": "Hello, "}),
                ]
            )  # the connection ends here without a terminal event
        else:
            final = task(
                status="done",
                output="Hello, world.",
                reasoning_status="unsupported",
                reasoning_notice="This wire API never returns reasoning.",
            )
            body = sse_frames(
                [
                    (4, "answer.delta", {"task_id": "task_fake", "text": "world."}),
                    (5, "task.completed", final),
                    (6, "run.completed", snapshot(status="completed", tasks=[final])),
                ]
            )
        route.fulfill(status=200, body=body, headers={"content-type": "text/event-stream"})

    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [])
    fake_daemon.routes[f"GET {EVENTS}"] = events
    open_run(page)
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    assert connections == [None, "3"]
    expect(page.get_by_test_id("task-answer")).to_have_text("Hello, world.")
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(page.get_by_test_id("task-reasoning")).to_have_count(0)
    expect(page.get_by_test_id("task-reasoning-notice")).to_have_text(
        "This wire API never returns reasoning."
    )


def test_reasoning_section_only_when_the_task_has_reasoning(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    shown = task(
        "task_shown",
        status="done",
        output="Answer one.",
        reasoning="I weighed it.",
        reasoning_parts=[{"kind": "summary", "text": "I weighed it."}],
        reasoning_status="shown",
        reasoning_notice="Reasoning summary shown.",
        usage={"input_tokens": 40, "output_tokens": 900, "reasoning_tokens": None},
        timings={
            "started_at": None,
            "finished_at": None,
            "first_reasoning_ms": 310,
            "first_answer_ms": 2200,
            "total_ms": 2900,
        },
    )
    not_shown = task(
        "task_hidden",
        role="reviewer",
        name="reviewer",
        status="done",
        output="Answer two.",
        chain_of_thought="hidden",
        reasoning_status="not_requested",
        reasoning_notice="Reasoning was not requested (chain_of_thought = hidden).",
    )
    never_called = task(
        "task_refused",
        role="security",
        name="security",
        status="failed",
        error={"code": "BUDGET_EXCEEDED", "message": "Refused.", "retryable": False},
    )
    run = snapshot(status="completed", tasks=[shown, not_shown, never_called])
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    first = page.locator("[data-task-id=task_shown]")
    second = page.locator("[data-task-id=task_hidden]")
    details = first.get_by_test_id("task-reasoning")
    expect(details).not_to_have_attribute("open", "")  # collapsed until asked for
    expect(first.get_by_test_id("task-reasoning-text")).to_be_hidden()
    first.get_by_test_id("task-reasoning-summary").click()
    expect(first.get_by_test_id("task-reasoning-text")).to_have_text("I weighed it.")
    expect(first.get_by_test_id("reasoning-kinds")).to_have_text("summary")
    expect(first.get_by_test_id("task-reasoning-notice")).to_have_count(0)
    expect(second.get_by_test_id("task-reasoning")).to_have_count(0)
    expect(second.get_by_test_id("task-reasoning-notice")).to_have_text(
        "Reasoning was not requested (chain_of_thought = hidden)."
    )
    # Charts: reported numbers are drawn, a null is "not reported", never a zero bar.
    tokens = first.get_by_test_id("chart-tokens")
    expect(tokens.locator("[data-key=input] .chart-value")).to_have_text("40")
    expect(tokens.locator("[data-key=output] .chart-value")).to_have_text("900")
    expect(tokens.locator("[data-key=reasoning] .chart-value")).to_have_text("not reported")
    expect(tokens.locator("[data-key=reasoning] rect")).to_have_count(0)
    timings = first.get_by_test_id("chart-timings")
    expect(timings.locator("[data-key=first_reasoning] .chart-value")).to_have_text("310 ms")
    expect(timings.locator("[data-key=total] .chart-value")).to_have_text("2.9 s")
    expect(second.get_by_test_id("chart-timings").locator("rect")).to_have_count(0)
    # A task that failed before any call says so, not that its numbers were not reported.
    refused = page.locator("[data-task-id=task_refused]")
    expect(
        refused.get_by_test_id("chart-tokens").locator("[data-key=input] .chart-value")
    ).to_have_text("no model call was made")
    expect(
        refused.get_by_test_id("chart-timings").locator("[data-key=total] .chart-value")
    ).to_have_text("no model call was made")


def test_untrusted_text_is_rendered_as_text(page: Page, fake_daemon: FakeDaemon) -> None:
    markup = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
    run = snapshot(
        status="completed",
        request=markup,
        tasks=[task(status="done", output=markup, reasoning=markup, reasoning_notice=markup)],
    )
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    expect(page.get_by_test_id("task-answer")).to_have_text(markup)
    expect(page.get_by_test_id("run-request")).to_have_text(markup)
    expect(page.get_by_test_id("run-item-request")).to_have_text(markup)
    page.get_by_test_id("task-reasoning-summary").click()
    expect(page.get_by_test_id("task-reasoning-text")).to_have_text(markup)
    assert page.locator("main img, aside img, main b, aside b").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_a_long_request_shows_its_start_and_all_of_it_on_demand(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    lines = [f"line {index:06d} of the request" for index in range(20_000)]
    request = "\n".join(lines)
    run = snapshot(status="completed", request=request, tasks=[task(status="done")])
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    heading = page.get_by_test_id("run-request")
    expect(heading).to_have_text("\n".join(lines[:10]))
    more = page.get_by_test_id("run-request-more")
    expect(more).to_be_visible()
    expect(more).to_contain_text(f"{len(request):,} characters")
    item = page.get_by_test_id("run-item-request").text_content() or ""
    assert 0 < len(item) <= 200
    title = page.title()
    assert title.startswith("completed · line 000000 of the request…") and len(title) < 120
    page.get_by_test_id("request-toggle").click()
    expect(page.get_by_test_id("request-toggle")).to_have_text("Show the start only")
    assert heading.evaluate("(element) => element.textContent") == request
    page.get_by_test_id("request-toggle").click()
    expect(heading).to_have_text("\n".join(lines[:10]))
    # A short request has no note and no button.
    short = snapshot(run_id="run_short", status="completed", request="Short.", tasks=[task()])
    fake_daemon.routes["GET /v1/runs/run_short/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", short), (2, "run.completed", short)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/run_short")
    expect(page.get_by_test_id("run-request")).to_have_text("Short.")
    expect(page.get_by_test_id("run-request-more")).to_be_hidden()


def test_token_prompt_after_401_and_the_token_is_sent(page: Page, fake_daemon: FakeDaemon) -> None:
    def runs(route: Route, _: FakeDaemon) -> None:
        if route.request.headers.get("authorization") != "Bearer s3cret":
            route.fulfill(
                status=401,
                body=error_body("UNAUTHORIZED", "This daemon needs a bearer token."),
                content_type="application/json",
            )
            return
        fulfill_json(route, [snapshot(status="completed")])

    fake_daemon.routes["GET /v1/runs"] = runs
    page.goto(f"{FAKE_ORIGIN}/")
    dialog = page.get_by_test_id("token-dialog")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("token-reason")).to_have_text("This daemon needs a bearer token.")
    page.get_by_test_id("token-input").fill("s3cret")
    page.get_by_test_id("token-save").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("run-item")).to_have_count(1)
    assert page.evaluate("sessionStorage.getItem('thoughtline.token')") == "s3cret"
    authorizations = [headers.get("authorization") for _, _, headers in fake_daemon.requests]
    assert authorizations[0] is None
    assert authorizations[-1] == "Bearer s3cret"


def test_trace_layers_with_metadata_and_a_refused_layer(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    run = snapshot(status="completed", tasks=[task(status="done", output="ok")])
    answer_events: list[dict[str, Any]] = [
        {
            "id": "evt_1",
            "run_id": RUN,
            "task_id": None,
            "type": "run.started",
            "layer": "answer",
            "at": "2025-01-01T12:00:00.000Z",
            "metadata": {"tasks": 1},
        },
        {
            "id": "evt_2",
            "run_id": RUN,
            "task_id": "task_fake",
            "type": "worker.completed",
            "layer": "answer",
            "at": "2025-01-01T12:00:01.000Z",
            "metadata": {"reasoning_status": "shown", "usage": {"input_tokens": 40}},
        },
    ]

    def trace(route: Route, _: FakeDaemon) -> None:
        layer = route.request.url.rsplit("layer=", 1)[1]
        if layer == "answer":
            fulfill_json(route, answer_events)
        elif layer == "reasoning":
            fulfill_json(route, [])
        else:
            route.fulfill(
                status=403,
                body=error_body(
                    "OPERATOR_TOKEN_REQUIRED", "The provider_raw layer needs the operator token."
                ),
                content_type="application/json",
            )

    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    fake_daemon.routes[f"GET /v1/runs/{RUN}/trace"] = trace
    open_run(page)
    page.get_by_test_id("tab-trace").click()
    expect(page).to_have_url(f"{FAKE_ORIGIN}/#/runs/{RUN}/trace")
    events = page.get_by_test_id("trace-event")
    expect(events).to_have_count(2)
    expect(events.nth(1)).to_have_attribute("data-type", "worker.completed")
    expect(events.nth(1).get_by_test_id("trace-metadata")).to_be_hidden()
    events.nth(1).locator("summary").click()
    metadata = events.nth(1).get_by_test_id("trace-metadata")
    assert json.loads(metadata.inner_text()) == answer_events[1]["metadata"]

    page.get_by_test_id("trace-layer-reasoning").click()
    expect(page.get_by_test_id("trace-empty")).to_be_visible()
    page.get_by_test_id("trace-layer-provider_raw").click()
    expect(page.get_by_test_id("trace-forbidden")).to_contain_text(
        "The provider_raw layer needs the operator token."
    )
    # The tasks tab still works, and the stream was not reopened for the tab switch.
    page.get_by_test_id("tab-tasks").click()
    expect(page.get_by_test_id("task-answer")).to_have_text("ok")
    opened = [path for _, path, _ in fake_daemon.requests if path.startswith(EVENTS)]
    assert len(opened) == 1


def test_each_task_and_the_run_show_their_cost_or_unknown_with_why(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    priced = {
        "amount": 0.0198,
        "currency": "USD",
        "source": "genai-prices 0.2.3",
        "parts": {
            "input": 0.011,
            "cached_input": 0.0,
            "cache_write": 0.0,
            "output": 0.0088,
            "reasoning": 0.002816,
        },
        "unknown_reason": None,
    }
    reason = "ollama is a local server with no configured price"
    unknown = {
        "amount": None,
        "currency": "USD",
        "source": None,
        "parts": None,
        "unknown_reason": reason,
    }
    run = snapshot(
        status="completed",
        tasks=[
            task("task_priced", status="done", cost=priced),
            task("task_unknown", role="reviewer", name="reviewer", status="done", cost=unknown),
        ],
    )
    run["cost"] = {**unknown, "unknown_reason": f"task reviewer: {reason}"}
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    known = page.locator("[data-task-id=task_priced]").get_by_test_id("task-cost")
    expect(known).to_have_text("$0.020")
    expect(known).to_have_attribute("title", "genai-prices 0.2.3; reasoning $0.0028 of it")
    missing = page.locator("[data-task-id=task_unknown]").get_by_test_id("task-cost")
    expect(missing).to_have_text("unknown")
    expect(missing).to_have_attribute("title", reason)
    expect(page.get_by_test_id("run-cost")).to_have_text("unknown")
    expect(page.get_by_test_id("run-cost")).to_have_attribute("title", f"task reviewer: {reason}")


def test_a_running_task_and_run_show_their_cost_as_pending_not_zero(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    """A running task's calls are priced into its snapshot when it ends: meanwhile the
    page says so, not "$0" (the ended figures: the test above)."""
    zero = {
        "amount": 0.0,
        "currency": "USD",
        "source": None,
        "parts": {"input": 0, "cached_input": 0, "cache_write": 0, "output": 0, "reasoning": 0},
        "unknown_reason": None,
    }
    running = snapshot(status="running", tasks=[task("task_busy", status="running", cost=zero)])
    running["cost"] = zero
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [running])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", running)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    cost = page.locator("[data-task-id=task_busy]").get_by_test_id("task-cost")
    expect(cost).to_have_text("pending")
    expect(cost).to_have_attribute("title", "Each model call is priced as it ends.")
    expect(page.get_by_test_id("run-cost")).to_have_text("pending")


def test_a_task_whose_output_a_budget_capped_says_so_once(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    notice = "Output capped at 659 tokens to fit the run's $0.010 budget."
    done = snapshot(tasks=[task("task_capped", budget_notice=notice)])
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [done])
    fake_daemon.routes[f"GET {EVENTS}"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", done)]),
        headers={"content-type": "text/event-stream"},
    )
    open_run(page)
    shown = page.locator("[data-task-id=task_capped]").get_by_test_id("task-budget-notice")
    expect(shown).to_have_text(notice)
    expect(page.get_by_text(notice)).to_have_count(1)


def test_a_gateway_run_names_its_client_in_the_list(page: Page, fake_daemon: FakeDaemon) -> None:
    gateway_run = dict(snapshot(status="completed"), source="gateway", client="<b>editor</b>")
    other = snapshot("run_other", status="completed")
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [gateway_run, other])
    page.goto(f"{FAKE_ORIGIN}/")
    expect(page.get_by_test_id("run-item")).to_have_count(2)
    clients = page.get_by_test_id("run-item-client")
    expect(clients).to_have_count(1)  # only the gateway's run names one
    expect(clients).to_have_text(" · gateway client <b>editor</b>")  # as text, never markup

"""The trace tab and ``thoughtline trace`` read alike: for every kind of trace event (and
one neither knows), the page's summary is the CLI's, word for word; a summary of
markup-like text stays text. Against canned daemon answers in a real browser."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.server.web.support import FAKE_ORIGIN, FakeDaemon, fulfill_json, snapshot, task
from tests.server.web.test_answers_and_trace import RUN, serve_run, trace_event
from thoughtline.cli._trace_view import event_summary
from thoughtline.records import TraceEvent

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

MARKUP = '<img src=x onerror="window.__pwned=1"> [bold]x[/bold]'
USAGE = {"input_tokens": 1200, "output_tokens": 3456, "reasoning_tokens": 78}
ERROR = {"code": "PROVIDER_BAD_REQUEST", "message": f"The provider said {MARKUP}."}
EVENTS: list[tuple[str, str, str | None, dict[str, Any]]] = [
    (
        "run.started",
        "answer",
        None,
        {
            "request": f"Design {MARKUP}",
            "chain_of_thought": "surface",
            "chain_of_thought_source": "config",
            "worker_backend": "provider",
            "tasks": [{"id": "task_fake", "name": "engineer", "role": "engineer", "after": []}],
        },
    ),
    (
        "task.started",
        "answer",
        "task_fake",
        {
            "role": "engineer",
            "executor": "provider:deepseek:deepseek-reasoner",
            "chain_of_thought": "surface",
            "chain_of_thought_source": "config",
        },
    ),
    (
        "worker.requested",
        "answer",
        "task_fake",
        {
            "endpoint": "deepseek",
            "wire_api": "openai-chat",
            "model": "deepseek-reasoner",
            "reasoning_requested": False,
            "effort": "high",
            "max_output_tokens": 2048,
            "temperature": 0.3,
        },
    ),
    (
        "worker.prepared",
        "answer",
        "task_fake",
        {"system": "You are terse.", "prompt": "A prompt " * 20, "model": "local-model"},
    ),
    (
        "worker.reasoning",
        "reasoning",
        "task_fake",
        {
            "reasoning": "Weigh it.",
            "parts": [
                {"kind": "summary", "text": "Weigh"},
                {"kind": "raw", "text": " it."},
            ],
        },
    ),
    (
        "provider.exchange",
        "provider_raw",
        "task_fake",
        {
            "method": "POST",
            "url": "http://127.0.0.1:9/v1/chat/completions",
            "status": 200,
            "streamed": True,
            "request_body": "x" * 1234,
            "response_body": "y" * 56789,
            "response_body_truncated": True,
        },
    ),
    (
        "tool.called",
        "answer",
        "task_fake",
        {"step": 1, "server": "fs", "tool": "read", "arguments": '{"path": "a.txt"}'},
    ),
    ("tool.approval", "answer", "task_fake", {"server": "fs", "tool": "read", "approved": False}),
    (
        "tool.completed",
        "answer",
        "task_fake",
        {
            "server": None,
            "tool": "search",
            "status": "failed",
            "error": "TOOL_TIMEOUT",
            "duration_ms": 1500.4,
            "result": "partial " * 30,
            "result_truncated": True,
        },
    ),
    (
        "worker.completed",
        "answer",
        "task_fake",
        {
            "status": "done",
            "reasoning_status": "shown",
            "usage": USAGE,
            "timings": {"total_ms": 2345.2},
            "finish": {"reason": "length", "raw": "length"},
            "warnings": [{"code": "PROVIDER_MODEL_FALLBACK", "message": "..."}],
            "error": None,
            "output_chars": 1,
        },
    ),
    (
        "worker.failed",
        "answer",
        "task_fake",
        {
            "status": "failed",
            "usage": {**USAGE, "input_tokens": None},
            "error": ERROR,
            "output_chars": 0,
        },
    ),
    ("task.cancelled", "answer", "task_fake", {"status": "cancelled", "error": None}),
    (
        "run.interrupted",
        "answer",
        None,
        {"reason": "daemon_stopped", "detail": "SIGTERM", "interrupted_tasks": ["task_fake"]},
    ),
    ("run.completed", "answer", None, {"status": "completed_with_failures"}),
    (
        "custom.thing",
        "answer",
        None,
        {"flag": True, "none": None, "ratio": 0.5, "note": MARKUP, "nested": {"a": 1}},
    ),
]


def test_the_page_summarizes_every_event_as_the_cli_does(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    run = snapshot(status="completed", tasks=[task(status="done", output="ok")])
    trace = [
        trace_event(number, kind, layer, task_id, metadata)
        for number, (kind, layer, task_id, metadata) in enumerate(EVENTS)
    ]
    serve_run(fake_daemon, run, trace)
    fake_daemon.routes[f"GET /v1/runs/{RUN}/trace"] = lambda route, _: fulfill_json(route, trace)
    page.goto(f"{FAKE_ORIGIN}/#/runs/{RUN}/trace")
    expect(page.get_by_test_id("trace-event")).to_have_count(len(EVENTS))
    shown = page.get_by_test_id("trace-summary").all_inner_texts()
    expected = [
        event_summary(
            TraceEvent(
                id=event["id"],
                run_id=RUN,
                task_id=event["task_id"],
                type=event["type"],
                layer=event["layer"],
                at=event["at"],
                metadata=event["metadata"],
            )
        )
        for event in trace
    ]
    assert shown == expected
    # Spot checks of what both say.
    assert expected[2] == (
        "deepseek-reasoner at deepseek (openai-chat) · reasoning not requested · effort high"
        " · max 2048 output tokens · temperature 0.3"
    )
    assert expected[10].startswith("failed · PROVIDER_BAD_REQUEST: The provider said <img")
    assert "tokens ? in / 3456 out (78 reasoning)" in expected[10]
    assert expected[-1] == f'flag=true none=null ratio=0.5 note="{MARKUP}"'
    assert page.locator("[data-testid=trace-body] img").count() == 0
    assert page.evaluate("window.__pwned") is None

"""The conversation thread from canned daemon answers: what each earlier turn shows is
what its snapshot holds (reasoning only where it carries some, the notice otherwise, an
error, each task named), run text is text, runs of other conversations are left out,
the follow-up box sends exactly the request and the latest run's id, and a refusal is
shown in its one sentence."""

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

MARKUP = '<img src=x onerror="window.__pwned=1"><b>bold</b>'


def turn(run_id: str, request: str, tasks: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    run = snapshot(run_id, status="completed", request=request, tasks=tasks)
    run.update({"conversation_id": "run_one", "continues": None, **fields})
    return run


def test_earlier_turns_show_what_their_snapshots_hold_and_the_box_continues_the_latest(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    one = turn(
        "run_one",
        f"First {MARKUP}",
        [
            task(
                "t1a",
                status="done",
                output="Shown answer.",
                reasoning="Thought of turn one.",
                reasoning_notice="Reasoning shown.",
            ),
            task(
                "t1b",
                role="reviewer",
                name="reviewer",
                status="done",
                output=MARKUP,
                reasoning_notice="Reasoning was not requested (chain_of_thought = hidden).",
            ),
        ],
    )
    two = turn(
        "run_two",
        "Second.",
        [
            task(
                "t2a",
                status="failed",
                error={"code": "PROVIDER_ERROR", "message": "The provider failed."},
            )
        ],
        continues="run_one",
    )
    three = turn(
        "run_three",
        "Third.",
        [task("t3a", status="done", output="Third answer.")],
        continues="run_two",
    )
    stranger = turn("run_other", "Not ours.", [task("tx", status="done", output="Other.")])
    stranger["conversation_id"] = "run_other"
    posted: list[Any] = []

    def runs(route: Route, _: FakeDaemon) -> None:
        if "conversation=run_three" in route.request.url:
            fulfill_json(route, {"runs": [one, stranger, two, three]})
        else:
            fulfill_json(route, {"runs": [three, two, one, stranger]})

    def create(route: Route, _: FakeDaemon) -> None:
        posted.append(json.loads(route.request.post_data or "null"))
        if len(posted) == 1:
            route.fulfill(
                status=409,
                body=error_body("CONVERSATION_RUN_ACTIVE", "Run run_three is still running."),
                content_type="application/json",
            )
        else:
            fulfill_json(route, {"id": "run_four", "status": "planned", "links": {}}, 202)

    fake_daemon.routes["GET /v1/runs"] = runs
    fake_daemon.routes["POST /v1/runs"] = create
    fake_daemon.routes["GET /v1/runs/run_three/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", three), (2, "run.completed", three)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/run_three")
    turns = page.get_by_test_id("thread-before").get_by_test_id("thread-turn")
    expect(turns).to_have_count(2)
    assert turns.evaluate_all("items => items.map(item => item.dataset.runId)") == [
        "run_one",
        "run_two",
    ]
    first, second = turns.nth(0), turns.nth(1)
    expect(first.get_by_test_id("turn-request")).to_have_text(f"First {MARKUP}")
    replies = first.locator(".turn-reply")
    expect(replies.nth(0).get_by_test_id("turn-reasoning")).to_have_count(1)
    expect(replies.nth(0).get_by_test_id("turn-reasoning-notice")).to_have_count(0)
    replies.nth(0).get_by_test_id("turn-reasoning").locator("summary").click()
    expect(replies.nth(0).get_by_test_id("turn-reasoning-text")).to_have_text(
        "Thought of turn one."
    )
    expect(replies.nth(1).locator(".turn-role")).to_have_text("reviewer")
    expect(replies.nth(1).get_by_test_id("turn-answer")).to_have_text(MARKUP)
    expect(replies.nth(1).get_by_test_id("turn-reasoning")).to_have_count(0)
    expect(replies.nth(1).get_by_test_id("turn-reasoning-notice")).to_have_text(
        "Reasoning was not requested (chain_of_thought = hidden)."
    )
    expect(second.get_by_test_id("turn-error")).to_have_text("PROVIDER_ERROR The provider failed.")
    assert page.locator("[data-testid=thread-turn] img, [data-testid=thread-turn] b").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    expect(page.locator("[data-run-id=run_other][data-testid=thread-turn]")).to_have_count(0)
    expect(page.get_by_test_id("thread-current")).to_contain_text("Turn 3 of 3")
    expect(page.get_by_test_id("thread-after").get_by_test_id("thread-turn")).to_have_count(0)

    box = page.get_by_test_id("follow-up")
    expect(box).to_have_attribute("data-continues", "run_three")
    page.get_by_test_id("follow-up-submit").click()
    expect(page.get_by_test_id("follow-up-error")).to_have_text("Write a follow-up first.")
    assert posted == []
    page.get_by_test_id("follow-up-request").fill("  Fourth?  ")
    page.get_by_test_id("follow-up-submit").click()
    expect(page.get_by_test_id("follow-up-error")).to_have_text(
        "Run run_three is still running. (CONVERSATION_RUN_ACTIVE)"
    )
    expect(page.get_by_test_id("run-view")).to_have_attribute("data-run-id", "run_three")
    page.get_by_test_id("follow-up-submit").click()
    expect(page.get_by_test_id("run-view")).to_have_attribute("data-run-id", "run_four")
    assert posted == [{"request": "Fourth?", "continues": "run_three"}] * 2


def test_a_snapshot_without_a_conversation_shows_no_thread_and_no_box(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    # An older daemon: no conversation_id in its snapshots, no ?conversation= filter.
    run = snapshot("run_old", status="completed", tasks=[task(status="done", output="Old.")])
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, [run])
    fake_daemon.routes["GET /v1/runs/run_old/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", run), (2, "run.completed", run)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/run_old")
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    expect(page.get_by_test_id("task-answer")).to_have_text("Old.")
    expect(page.get_by_test_id("follow-up")).to_be_hidden()
    expect(page.get_by_test_id("thread-turn")).to_have_count(0)
    assert not [path for _, path, _ in fake_daemon.requests if "conversation=" in path]


def test_a_turn_another_client_adds_moves_the_box_under_it(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    one = turn("run_one", "First.", [task("t1", status="done", output="One.")])
    two = turn("run_two", "Second.", [task("t2", status="running")], continues="run_one")
    two["status"] = "running"
    conversation = [one]
    recent = [one]
    posted: list[Any] = []
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(
        route,
        {"runs": list(conversation if "conversation=" in route.request.url else recent)},
    )

    def create(route: Route, _: FakeDaemon) -> None:
        posted.append(json.loads(route.request.post_data or "null"))
        fulfill_json(route, {"id": "run_three", "status": "planned", "links": {}}, 202)

    fake_daemon.routes["POST /v1/runs"] = create
    fake_daemon.routes["GET /v1/runs/run_one/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", one), (2, "run.completed", one)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/run_one")
    box = page.get_by_test_id("follow-up")
    expect(box).to_have_attribute("data-continues", "run_one")
    expect(page.get_by_test_id("thread-current")).to_be_hidden()

    # Another client continues run_one: the page's next look at the recent runs shows it.
    conversation[:] = recent[:] = [one, two]
    later = page.get_by_test_id("thread-after").get_by_test_id("thread-turn")
    expect(later).to_have_attribute("data-run-id", "run_two")
    expect(later.get_by_test_id("turn-no-answer")).to_have_text("No answer yet.")
    expect(box).to_be_hidden()  # the latest turn is still running
    ended = {**two, "status": "completed", "tasks": [task("t2", status="done", output="Two.")]}
    conversation[:] = recent[:] = [one, ended]
    expect(later.get_by_test_id("turn-answer")).to_have_text("Two.")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-continues", "run_two")

    # A turn added between that look and the click is shown first, not branched from.
    third = turn("run_2b", "Meanwhile.", [task("t3", status="done", output="Mid.")])
    third["continues"] = "run_two"
    conversation[:] = [one, ended, third]
    page.get_by_test_id("follow-up-request").fill("Next?")
    page.get_by_test_id("follow-up-submit").click()
    expect(page.get_by_test_id("follow-up-error")).to_contain_text("Another turn was added")
    expect(box).to_have_attribute("data-continues", "run_2b")
    assert posted == []
    page.get_by_test_id("follow-up-submit").click()
    expect(page.get_by_test_id("run-view")).to_have_attribute("data-run-id", "run_three")
    assert posted == [{"request": "Next?", "continues": "run_2b"}]


def test_an_earlier_turns_reasoning_of_several_steps_is_labelled_by_step(
    page: Page, fake_daemon: FakeDaemon
) -> None:
    parts = [
        {"kind": "summary", "text": f"I will call the clock {MARKUP}.", "step": 1},
        {"kind": "summary", "text": "The result is back.", "step": 2},
    ]
    one = turn(
        "run_one",
        "What time is it?",
        [
            task(
                "t1a",
                status="done",
                output="It is noon.",
                reasoning=f"I will call the clock {MARKUP}.\n\nThe result is back.",
                reasoning_parts=parts,
                steps=2,
            )
        ],
    )
    two = turn("run_two", "And now?", [task("t2a", status="done", output="Still noon.")])
    two["continues"] = "run_one"
    fake_daemon.routes["GET /v1/runs"] = lambda route, _: fulfill_json(route, {"runs": [one, two]})
    fake_daemon.routes["GET /v1/runs/run_two/events"] = lambda route, _: route.fulfill(
        status=200,
        body=sse_frames([(1, "snapshot", two), (2, "run.completed", two)]),
        headers={"content-type": "text/event-stream"},
    )
    page.goto(f"{FAKE_ORIGIN}/#/runs/run_two")
    earlier = page.get_by_test_id("thread-before").get_by_test_id("thread-turn")
    expect(earlier).to_have_count(1)
    earlier.get_by_test_id("turn-reasoning").locator("summary").click()
    expect(earlier.get_by_test_id("reasoning-step-label")).to_have_text(["step 1", "step 2"])
    expect(earlier.locator(".reasoning-step-text")).to_have_text(
        [f"I will call the clock {MARKUP}.", "The result is back."]
    )
    assert page.locator("[data-testid=thread-turn] img").count() == 0

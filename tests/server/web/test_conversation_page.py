"""A conversation on the page, in Chromium against the real daemon (a ``thoughtline
serve`` process) and the provider simulator: a run, a follow-up sent from the box under
it, both turns shown as one thread while the second answer streams in, the reasoning of
a turn only where its snapshot carries it, and a phone-width screen that holds it all."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.server.web.support import screenshot
from tests.server.web.test_live_daemon import (
    ACCESS_TOKEN,
    Daemon,
    record_responses,
    start_from_form,
    with_token,
)
from tests.server.web.test_live_daemon import daemon as daemon  # the fixture: its own per module
from tests.store.builders import make_run
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimReasoning, Simulator, Transcript

FIRST_REQUEST = "How should our API limit request rates?"
FIRST_ANSWER = "Use a token bucket per client."
SECOND_REQUEST = "And what should a client see when it is limited?"
SECOND_ANSWER = (
    "Answer 429 Too Many Requests with a Retry-After header, and say in the body which "
    "limit was hit and when the bucket refills."
)
CANARY = "CANARY-THREAD-2c9d"


def get_json(daemon: Daemon, path: str) -> Any:
    request = urllib.request.Request(
        f"{daemon.url}{path}", headers={"Authorization": f"Bearer {ACCESS_TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_a_follow_up_from_the_box_shows_both_turns_as_one_thread(
    page: Page,
    daemon: Daemon,
    sim: Simulator,
) -> None:
    sim.script_turns(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=f"Buckets or windows; {CANARY}."),),
            answer=FIRST_ANSWER,
            reasoning_tokens=20,
        ),
        # 62 chunks of 2 characters, 50 ms apart: about 3 s to see it part-way.
        Transcript(answer=SECOND_ANSWER, chunk_chars=2),
        profile="deepseek",
    )
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    first = start_from_form(page, FIRST_REQUEST, provider="deepseek", chain_of_thought="surface")
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    # A single run: no thread yet, only the box that continues it.
    box = page.get_by_test_id("follow-up")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-continues", first)
    expect(page.get_by_test_id("thread-turn")).to_have_count(0)

    sim.pace_s = 0.05  # the second answer streams in visibly
    page.get_by_test_id("follow-up-request").fill(SECOND_REQUEST)
    page.get_by_test_id("follow-up-submit").click()
    view = page.get_by_test_id("run-view")
    expect(view).not_to_have_attribute("data-run-id", first)
    second = view.get_attribute("data-run-id")
    assert second and second.startswith("run_")
    # The second answer grows while it streams: seen part-way first (before the checks
    # below, which a slow machine may take longer for than the whole stream), the box
    # hidden until the latest turn has ended; then whole.
    page.wait_for_function(
        """([length]) => {
            const answer = document.querySelector("[data-testid=task-answer]");
            const size = answer ? answer.textContent.length : 0;
            return size > 0 && size < length;
        }""",
        arg=[len(SECOND_ANSWER)],
    )
    expect(box).to_be_hidden()

    # Turn 1 above the follow-up's cards: its request, answer and (surface) reasoning.
    turn = page.get_by_test_id("thread-turn")
    expect(turn).to_have_count(1)
    expect(turn).to_have_attribute("data-run-id", first)
    expect(turn.get_by_test_id("turn-request")).to_have_text(FIRST_REQUEST)
    expect(turn.get_by_test_id("turn-answer")).to_have_text(FIRST_ANSWER)
    expect(turn.get_by_test_id("turn-reasoning-text")).to_be_hidden()
    turn.get_by_test_id("turn-reasoning").locator("summary").click()
    expect(turn.get_by_test_id("turn-reasoning-text")).to_contain_text(CANARY)
    expect(page.get_by_test_id("current-turn-request")).to_have_text(SECOND_REQUEST)
    expect(page.get_by_test_id("thread-current")).to_contain_text("Turn 2 of 2")
    expect(page.get_by_test_id("task-answer")).to_have_text(SECOND_ANSWER)
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-continues", second)
    screenshot(page, "conversation-thread")

    snapshot = get_json(daemon, f"/v1/runs/{second}")
    assert (snapshot["continues"], snapshot["conversation_id"]) == (first, first)
    sent = json.dumps(sim.requests_for("deepseek")[-1].body)
    assert FIRST_REQUEST in sent and FIRST_ANSWER in sent and SECOND_REQUEST in sent
    expect(page.locator(f"[data-testid=run-item][data-run-id={second}]")).to_contain_text(
        "follow-up"
    )

    # The first turn on view: the later turn below its cards, the box still continues
    # the latest turn.
    turn.get_by_test_id("turn-link").click()
    expect(view).to_have_attribute("data-run-id", first)
    later = page.get_by_test_id("thread-after").get_by_test_id("thread-turn")
    expect(later).to_have_count(1)
    expect(later.get_by_test_id("turn-answer")).to_have_text(SECOND_ANSWER)
    expect(page.get_by_test_id("thread-current")).to_contain_text("Turn 1 of 2")
    expect(box).to_have_attribute("data-continues", second)

    # A phone: nothing wider than the screen, the box usable.
    page.set_viewport_size({"width": 390, "height": 844})
    later.get_by_test_id("turn-link").click()
    expect(view).to_have_attribute("data-run-id", second)
    expect(page.get_by_test_id("thread-turn")).to_have_count(1)
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    box.scroll_into_view_if_needed()
    expect(page.get_by_test_id("follow-up-submit")).to_be_in_viewport()
    screenshot(page, "conversation-thread-phone")


def test_a_hidden_turn_shows_its_notice_and_its_reasoning_reaches_no_page(
    page: Page,
    daemon: Daemon,
    sim: Simulator,
) -> None:
    canary = "CANARY-THREAD-HIDDEN-70aa"
    # DeepSeek streams reasoning even when none is asked for.
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=f"Private {canary}."),),
            answer=FIRST_ANSWER,
            reasoning_tokens=20,
            chunk_chars=4096,
        ),
        profile="deepseek",
    )
    received = record_responses(page)
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    first = start_from_form(page, FIRST_REQUEST, provider="deepseek", chain_of_thought="hidden")
    expect(page.get_by_test_id("follow-up")).to_be_visible()
    page.get_by_test_id("follow-up-request").fill(SECOND_REQUEST)
    page.get_by_test_id("follow-up-request").press("Control+Enter")
    view = page.get_by_test_id("run-view")
    expect(view).not_to_have_attribute("data-run-id", first)
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    turn = page.get_by_test_id("thread-turn")
    expect(turn.get_by_test_id("turn-answer")).to_have_text(FIRST_ANSWER)
    expect(turn.get_by_test_id("turn-reasoning")).to_have_count(0)
    expect(turn.get_by_test_id("turn-reasoning-notice")).not_to_be_empty()
    expect(page.get_by_test_id("follow-up")).to_be_visible()
    assert canary not in page.content()
    bodies = received.bodies()
    assert any(FIRST_ANSWER.encode() in body for body in bodies)
    for body in bodies:
        assert canary.encode() not in body


def post_json(daemon: Daemon, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{daemon.url}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {ACCESS_TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def ended(daemon: Daemon, run_id: str) -> dict[str, Any]:
    for _ in range(200):
        snapshot: dict[str, Any] = get_json(daemon, f"/v1/runs/{run_id}")
        if snapshot["status"] == "completed":
            return snapshot
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not complete: {snapshot}")


@pytest.mark.slow
def test_an_address_with_a_short_id_a_prefix_or_latest_shows_the_whole_thread(
    page: Page,
    daemon: Daemon,
    sim: Simulator,
) -> None:
    store = SQLiteStore(daemon.home / "thoughtline.db")
    try:  # two older runs whose short ids start alike
        for twin in ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002"):
            store.create_run(
                make_run(twin, status="completed", created_at="2026-01-01T00:00:00.000Z")
            )
    finally:
        store.close()
    sim.script_turns(
        Transcript(answer=FIRST_ANSWER), Transcript(answer=SECOND_ANSWER), profile="deepseek"
    )
    first = post_json(daemon, "/v1/runs", {"request": FIRST_REQUEST, "provider": "deepseek"})
    ended(daemon, first["id"])
    second = post_json(
        daemon, "/v1/runs", {"request": SECOND_REQUEST, "continues": first["short_id"]}
    )
    ended(daemon, second["id"])
    with_token(page, ACCESS_TOKEN)
    view = page.get_by_test_id("run-view")
    turn = page.get_by_test_id("thread-turn")
    box = page.get_by_test_id("follow-up")
    for given, tab in (
        (second["short_id"], ""),
        (second["short_id"][:5], "/trace"),
        ("latest", ""),
    ):
        page.goto(f"{daemon.url}/#/runs/{given}{tab}")
        # The address becomes the whole id; the view is the run's, with its thread.
        expect(page).to_have_url(f"{daemon.url}/#/runs/{second['id']}{tab}")
        expect(view).to_have_attribute("data-run-id", second["id"])
        if tab:
            expect(page.get_by_test_id("trace-panel")).to_be_visible()
            page.get_by_test_id("tab-tasks").click()
            expect(page).to_have_url(f"{daemon.url}/#/runs/{second['id']}")
        expect(turn).to_have_count(1)
        expect(turn).to_have_attribute("data-run-id", first["id"])
        expect(turn.get_by_test_id("turn-answer")).to_have_text(FIRST_ANSWER)
        expect(page.get_by_test_id("thread-current")).to_contain_text("Turn 2 of 2")
        expect(page.get_by_test_id("task-answer")).to_have_text(SECOND_ANSWER)
        expect(box).to_be_visible()
        expect(box).to_have_attribute("data-continues", second["id"])
        selected = page.locator("[data-testid=run-item][aria-current=page]")
        expect(selected).to_have_attribute("data-run-id", second["id"])

    # A start two runs share names no run: the view says so, with the candidates.
    page.goto(f"{daemon.url}/#/runs/kq3x")
    expect(page.get_by_test_id("run-request")).to_have_text("Run unavailable")
    expect(page.get_by_test_id("run-error")).to_have_text(
        "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id. (RUN_ID_AMBIGUOUS)"
    )
    expect(page).to_have_url(f"{daemon.url}/#/runs/kq3x")

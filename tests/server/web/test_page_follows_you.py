"""The page as a new user meets it, at 1280 by 800 and on a phone (390 by 844), against the
real daemon and the provider simulator: a run just started comes into view; a completed
run opens at its answer, which grows with the page, its reasoning collapsed before it;
a failed task shows its error and nothing that waits for an answer; the trace tab reads
as lines (time, kind, task, summary), recorded reasoning as text once and the raw JSON
behind a toggle. The reasoning canary reaches the trace tab only where the run's mode
records it, and markup-like text stays text. Each state is saved as a screenshot."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.server.web.support import screenshot
from tests.server.web.test_live_daemon import (
    ACCESS_TOKEN,
    OPERATOR_TOKEN,
    Daemon,
    serving,
    start_from_form,
    with_token,
)
from thoughtline.testing import Fault, SimReasoning, Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
CANARY = "CANARY-PAGE-TRACE-7c1e"
REASONING = f'First the buckets; {CANARY} here.\nThen <b>the windows</b> <img src=x onerror="window.__pwned=2">.'
LONG_ANSWER = "## A token bucket\n\n" + "".join(
    f"{number}. Step {number} of the limiter, with its reason.\n" for number in range(1, 61)
)
HOSTILE_REQUEST = '<img src=x onerror="window.__pwned=1"> <b>Design</b> one'
CLOCK = re.compile(r"^\d\d:\d\d:\d\d\.\d\d\d$")


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, sim_server: SimulatorServer
) -> Iterator[Daemon]:
    """The real daemon (``thoughtline serve``) on the simulator, for this module."""
    with serving(tmp_path_factory, sim_server) as daemon:
        yield daemon


def api(daemon: Daemon, path: str, *, token: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{daemon.url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def finished_run(daemon: Daemon, request: str, mode: str) -> dict[str, Any]:
    """Start a run through the API and wait (bounded) until it has ended."""
    body = {
        "request": request,
        "roles": ["engineer"],
        "provider": "deepseek",
        "chain_of_thought": mode,
    }
    run_id = api(daemon, "/v1/runs", token=ACCESS_TOKEN, body=body)["id"]
    for _ in range(300):
        run: dict[str, Any] = api(daemon, f"/v1/runs/{run_id}", token=ACCESS_TOKEN)
        if run["status"] not in ("planned", "running"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"{run_id} never ended")


def at_size(page: Page, size: str) -> int:
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    return height


def top_of(page: Page, testid: str) -> float:
    top: float = page.get_by_test_id(testid).first.evaluate(
        "node => node.getBoundingClientRect().top"
    )
    return top


def own_scroll(page: Page, testid: str) -> int:
    """How far the element scrolls inside itself (0: it grows with the page)."""
    extra: int = page.get_by_test_id(testid).first.evaluate(
        "node => node.scrollHeight - node.clientHeight"
    )
    return extra


@pytest.mark.parametrize("size", SIZES)
def test_a_run_started_from_the_form_comes_into_view(
    page: Page, served: Daemon, sim: Simulator, size: str
) -> None:
    for number in range(12):  # a list of runs longer than a phone's screen
        finished_run(served, f"An earlier run {number}", "hidden")
    height = at_size(page, size)
    sim.script(Transcript(answer=LONG_ANSWER, chunk_chars=64))
    sim.pace_s = 0.05
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{served.url}/")
    expect(page.get_by_test_id("run-item").nth(11)).to_be_attached()
    start_from_form(page, "Design a rate limiter", provider="deepseek", chain_of_thought="hidden")
    card = page.get_by_test_id("task-card")
    expect(card).to_have_attribute("data-status", "running")
    # The run's heading and its live card are on the screen, not under the runs list.
    assert 0 <= top_of(page, "run-request") < height / 3
    expect(card).to_be_in_viewport()
    if size == "phone":
        assert top_of(page, "runs-list") > top_of(page, "task-card")
        assert top_of(page, "form-submit") < 0  # the form scrolled away above
    else:
        expect(page.get_by_test_id("form-submit")).to_be_in_viewport()
    screenshot(page, f"run-started-{size}", full_page=False)
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    # A run picked from the list comes into view too (on a phone the list is below it).
    earlier = page.get_by_test_id("run-item").nth(3)
    earlier.scroll_into_view_if_needed()
    picked = earlier.get_attribute("data-run-id")
    earlier.click()
    expect(page.get_by_test_id("run-view")).to_have_attribute("data-run-id", picked or "")
    expect(page.get_by_test_id("run-request")).to_have_text(re.compile("An earlier run"))
    assert 0 <= top_of(page, "run-request") < height / 3


@pytest.mark.parametrize("size", SIZES)
def test_a_completed_run_opens_at_its_answer_with_the_reasoning_before_it(
    page: Page, served: Daemon, sim: Simulator, size: str
) -> None:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=REASONING),),
            answer=LONG_ANSWER,
            chunk_chars=64,
        )
    )
    run = finished_run(served, "Design a rate limiter", "surface")
    assert run["status"] == "completed"
    height = at_size(page, size)
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{served.url}/#/runs/{run['id']}")
    answer = page.get_by_test_id("task-answer")
    expect(answer.locator("ol > li")).to_have_count(60)
    # The start of the answer is on the screen; the answer has no box of its own to
    # scroll (the page scrolls), so nothing opens scrolled to its end.
    assert 0 <= top_of(page, "task-answer") < height
    expect(answer.get_by_text("Step 1 of the limiter", exact=False)).to_be_in_viewport()
    assert own_scroll(page, "task-answer") <= 1
    assert (
        page.evaluate("window.getComputedStyle(document.querySelector('.answer')).overflowY")
        == "visible"
    )
    # The reasoning came first and sits first: collapsed, labelled.
    reasoning = page.get_by_test_id("task-reasoning")
    assert reasoning.evaluate(
        "(node, answer) => Boolean(node.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING)",
        answer.element_handle(),
    )
    assert reasoning.evaluate("node => node.open") is False
    expect(page.get_by_test_id("task-reasoning-summary")).to_contain_text(
        f"Reasoningraw{len(REASONING)} chars, before the answer"
    )
    screenshot(page, f"completed-run-{size}", full_page=False)
    page.get_by_test_id("task-reasoning-summary").click()
    expect(page.get_by_test_id("task-reasoning-text")).to_have_text(REASONING)
    assert own_scroll(page, "task-reasoning-text") <= 1
    assert page.locator("[data-testid=task-card] img, [data-testid=task-card] b").count() == 0
    assert page.evaluate("window.__pwned") is None


@pytest.mark.parametrize("size", SIZES)
def test_a_failed_task_shows_its_error_and_no_waiting_answer(
    page: Page, served: Daemon, sim: Simulator, size: str
) -> None:
    at_size(page, size)
    sim.inject(Fault.http_error(400, "simulated bad request"), profile="deepseek")
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{served.url}/")
    start_from_form(page, "Design a rate limiter", provider="deepseek", chain_of_thought="hidden")
    card = page.get_by_test_id("task-card")
    expect(card).to_have_attribute("data-status", "failed")
    error = card.get_by_test_id("task-error")
    expect(error).to_contain_text("simulated bad request")
    expect(error).to_contain_text("PROVIDER_")
    expect(error).to_be_in_viewport()
    expect(card.get_by_test_id("answer-section")).to_be_hidden()
    text = card.inner_text()
    assert "Waiting for the answer" not in text
    assert "0 chars" not in text and "0.0 s" not in text
    screenshot(page, f"failed-run-{size}", full_page=False)


@pytest.mark.parametrize("size", SIZES)
def test_the_trace_tab_reads_as_lines_with_the_recorded_reasoning_once(
    page: Page, served: Daemon, sim: Simulator, size: str
) -> None:
    sim.script(
        Transcript(reasoning=(SimReasoning(kind="raw", text=REASONING),), answer="Use a bucket.")
    )
    run = finished_run(served, HOSTILE_REQUEST, "surface_and_telemetry")
    stored = api(served, f"/v1/runs/{run['id']}/trace?layer=answer", token=OPERATOR_TOKEN)
    at_size(page, size)
    with_token(page, OPERATOR_TOKEN)
    page.goto(f"{served.url}/#/runs/{run['id']}/trace")
    events = page.get_by_test_id("trace-event")
    expect(events).to_have_count(len(stored))
    assert events.evaluate_all("items => items.map(item => item.dataset.type)") == [
        event["type"] for event in stored
    ]
    for clock in page.get_by_test_id("trace-time").all_inner_texts():
        assert CLOCK.match(clock), clock
    summaries = dict(
        zip(
            page.get_by_test_id("trace-type").all_inner_texts(),
            page.get_by_test_id("trace-summary").all_inner_texts(),
            strict=True,
        )
    )
    assert summaries["run.started"].startswith(f'"{HOSTILE_REQUEST}" · chain_of_thought=')
    assert summaries["worker.requested"].startswith("deepseek-reasoner at deepseek")
    assert summaries["worker.completed"].startswith("done · answer 13 chars · tokens")
    assert summaries["run.completed"] == "completed"
    # Raw JSON waits behind each event's toggle.
    first = events.first
    expect(first.get_by_test_id("trace-metadata")).to_be_hidden()
    assert "{" not in page.get_by_test_id("trace-body").inner_text()
    screenshot(page, f"trace-tab-{size}", full_page=False)

    page.get_by_test_id("trace-layer-reasoning").click()
    reasoning = page.locator("[data-testid=trace-event][data-type='worker.reasoning']")
    expect(reasoning).to_have_count(1)
    expect(reasoning.get_by_test_id("trace-summary")).to_have_text(
        f"recorded reasoning, {len(REASONING)} chars in 1 part (raw):"
    )
    expect(reasoning.get_by_test_id("trace-reasoning")).to_have_text(REASONING)
    assert page.get_by_test_id("trace-body").inner_text().count(CANARY) == 1
    screenshot(page, f"trace-reasoning-{size}", full_page=False)
    reasoning.get_by_test_id("trace-raw").locator("summary").click()
    expect(reasoning.get_by_test_id("trace-metadata")).to_contain_text('"parts"')
    raw = json.loads(reasoning.get_by_test_id("trace-metadata").inner_text())
    assert raw["reasoning"] == REASONING and raw["parts"][0]["text"] == REASONING
    # Markup-like text in the request and reasoning stayed text.
    assert page.locator("[data-testid=trace-body] img, [data-testid=trace-body] b").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0]


@pytest.mark.parametrize("mode", ["hidden", "surface"])
def test_no_reasoning_reaches_the_trace_tab_where_the_mode_does_not_record_it(
    page: Page, served: Daemon, sim: Simulator, mode: str
) -> None:
    canary = f"{CANARY}-{mode}"
    sim.script(
        Transcript(reasoning=(SimReasoning(kind="raw", text=f"Weighing; {canary}."),), answer="Ok.")
    )
    run = finished_run(served, "Explain the decision.", mode)
    with_token(page, OPERATOR_TOKEN)  # every layer readable: nothing is hidden by access
    page.goto(f"{served.url}/#/runs/{run['id']}/trace")
    trace = page.get_by_test_id("trace-panel")
    for layer in ("answer", "reasoning", "provider_raw"):
        page.get_by_test_id(f"trace-layer-{layer}").click()
        body = page.get_by_test_id("trace-body")
        expect(body.locator("[data-testid=trace-events], [data-testid=trace-empty]")).to_have_count(
            1
        )
        for toggle in body.get_by_test_id("trace-raw").all():
            toggle.locator("summary").click()
            expect(toggle.get_by_test_id("trace-metadata")).not_to_be_empty()
        assert canary not in trace.inner_html(), layer
        if layer == "reasoning":
            why = page.get_by_test_id("trace-empty")
            expect(why).to_contain_text(
                f"its tasks ran with chain_of_thought={mode}, which does not record reasoning"
            )
            shows = "surface shows the reasoning with the answer but keeps it out of the trace"
            if mode == "surface":
                expect(why).to_contain_text(shows)
                screenshot(page, "trace-surface-reasoning-layer", full_page=False)
            else:
                expect(why).not_to_contain_text(shows)
    # Surface shows the reasoning with the answer; hidden nowhere on the page at all.
    page.get_by_test_id("tab-tasks").click()
    if mode == "surface":
        page.get_by_test_id("task-reasoning-summary").click()
        expect(page.get_by_test_id("task-reasoning-text")).to_contain_text(canary)
    else:
        expect(page.get_by_test_id("task-reasoning-notice")).to_be_visible()
        assert canary not in page.content()

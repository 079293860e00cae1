"""The page against the real daemon (``thoughtline serve`` in a subprocess) and the
provider simulator: a run fills its card live, reasoning appears exactly when the data
carries it, the reasoning canary never reaches the page in hidden or telemetry_only
runs, and the trace tab shows the layers (the operator-only ones refused without the
operator token)."""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, Response, expect

from tests.conftest import CANARY_KEY, KEY_VARIABLES
from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT
from tests.server.web.support import screenshot
from tests.support import start_process
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # chromium driving the daemon's page

ACCESS_TOKEN = "web-access-token-7d2a"
OPERATOR_TOKEN = "web-operator-token-91c4"
STREAMED_ANSWER = (
    "Use a token bucket per client: refill at the sustained rate, allow bursts up to "
    "the bucket size, and answer 429 with Retry-After when it is empty."
)
STREAMED = Transcript(
    reasoning=(
        SimReasoning(kind="raw", text=f"Considering buckets versus windows; {CANARY} here."),
    ),
    answer=STREAMED_ANSWER,
    reasoning_tokens=48,
    chunk_chars=6,
)


def canary_transcript(canary: str) -> Transcript:
    """TRANSCRIPT with its own canary, sent whole (a leak would show in any body)."""
    return Transcript(
        reasoning=(
            SimReasoning(kind="summary", text=f"Weighing it; {canary}.", signature=f"sig-{canary}"),
        ),
        answer=TRANSCRIPT.answer,
        reasoning_tokens=64,
        chunk_chars=4096,
    )


@dataclass(frozen=True)
class Daemon:
    url: str
    home: Path
    process: subprocess.Popen[str]


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, sim_server: SimulatorServer
) -> Iterator[Daemon]:
    with serving(tmp_path_factory, sim_server) as served:
        yield served


@contextmanager
def serving(
    tmp_path_factory: pytest.TempPathFactory, sim_server: SimulatorServer
) -> Iterator[Daemon]:
    """``thoughtline serve --port 0`` with an access and an operator token, its store in a
    temporary THOUGHTLINE_HOME and every provider pointed at the simulator."""
    home = tmp_path_factory.mktemp("web") / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.pop("THOUGHTLINE_CONFIG", None)
    env.update(sim_server.environ())
    env.update({variable: CANARY_KEY for variable in KEY_VARIABLES})
    env.update(
        THOUGHTLINE_HOME=str(home),
        THOUGHTLINE_TOKEN=ACCESS_TOKEN,
        THOUGHTLINE_OPERATOR_TOKEN=OPERATOR_TOKEN,
        PYTHONUNBUFFERED="1",
    )
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        cwd=home.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _wait_for_url(process)
        _wait_until_answering(url)
        yield Daemon(url=url, home=home, process=process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_for_url(process: subprocess.Popen[str]) -> str:
    """The URL from the daemon's 'serving on http://…' line (bounded wait)."""
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            if not line:
                break
            for word in line.split():
                if word.startswith("http://"):
                    return word.rstrip(")").rstrip(",")
        if process.poll() is not None:
            break
    stderr = process.stderr.read() if process.stderr and process.poll() is not None else ""
    raise AssertionError(f"thoughtline serve did not start: {stderr}")


def _wait_until_answering(url: str) -> None:
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"{url}/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def with_token(page: Page, token: str) -> None:
    page.add_init_script(f"sessionStorage.setItem('thoughtline.token', {json.dumps(token)})")


@dataclass
class Received:
    """Every response the page received, read once the page is done with them."""

    responses: list[Response]

    def bodies(self) -> list[bytes]:
        out: list[bytes] = []
        for response in self.responses:
            if "/v1/" not in response.url:
                continue  # the page's own files
            out.append(response.body())
        return out


def record_responses(page: Page) -> Received:
    received = Received([])
    page.on("response", lambda response: received.responses.append(response))
    return received


def start_from_form(
    page: Page, request: str, *, provider: str, chain_of_thought: str, roles: str = "engineer"
) -> str:
    page.get_by_test_id("form-request").fill(request)
    page.get_by_test_id("form-roles").fill(roles)
    page.get_by_test_id("form-provider").fill(provider)
    page.get_by_test_id("form-chain-of-thought").select_option(chain_of_thought)
    page.get_by_test_id("form-submit").click()
    view = page.get_by_test_id("run-view")
    expect(view).to_be_visible()
    run_id = view.get_attribute("data-run-id")
    assert run_id and run_id.startswith("run_")
    # The page shows the short id people type (the whole one on hover), here and in the list.
    short_id = run_id.removeprefix("run_")[:8]
    expect(page.get_by_test_id("run-id")).to_have_text(short_id)
    expect(page.get_by_test_id("run-id")).to_have_attribute("title", run_id)
    listed = page.locator(f'[data-testid=run-item][data-run-id="{run_id}"]')
    expect(listed.get_by_test_id("run-item-id")).to_have_text(short_id)
    return run_id


def test_surface_run_fills_its_card_live_and_shows_reasoning(
    page: Page, daemon: Daemon, sim: Simulator
) -> None:
    sim.script(STREAMED)
    sim.pace_s = 0.05
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    run_id = start_from_form(
        page, "Design a rate limiter for our API", provider="deepseek", chain_of_thought="surface"
    )
    card = page.get_by_test_id("task-card")
    expect(card).to_have_count(1)
    # The answer grows while the run streams: seen part-way, then whole.
    page.wait_for_function(
        """([length]) => {
            const answer = document.querySelector("[data-testid=task-answer]");
            const size = answer ? answer.textContent.length : 0;
            return size > 0 && size < length;
        }""",
        arg=[len(STREAMED_ANSWER)],
    )
    partial = card.get_by_test_id("task-answer").text_content() or ""
    assert STREAMED_ANSWER.startswith(partial)
    screenshot(page, "live-run")
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    expect(card.get_by_test_id("task-answer")).to_have_text(STREAMED_ANSWER)
    expect(card.get_by_test_id("task-status")).to_have_text("done")
    expect(card.get_by_test_id("task-meta")).to_contain_text("provider:deepseek:deepseek-reasoner")
    # The persona the task ran with, and where it came from (the form's roles).
    expect(card.locator("[data-field=persona] dd")).to_have_text("engineer (asked for)")

    reasoning = card.get_by_test_id("task-reasoning")
    expect(reasoning).to_have_count(1)
    expect(card.get_by_test_id("task-reasoning-text")).to_be_hidden()
    card.get_by_test_id("task-reasoning-summary").click()
    expect(card.get_by_test_id("task-reasoning-text")).to_contain_text(CANARY)
    expect(
        card.get_by_test_id("chart-tokens").locator("[data-key=reasoning] .chart-value")
    ).to_have_text("48")
    expect(page.locator(f"[data-testid=run-item][data-run-id={run_id}]")).to_be_visible()

    screenshot(page, "finished-run-with-reasoning")

    # The trace tab: the answer layer for everyone, the reasoning layer only for operators.
    page.get_by_test_id("tab-trace").click()
    events = page.get_by_test_id("trace-event")
    expect(events.first).to_be_visible()
    types = events.evaluate_all("items => items.map(item => item.dataset.type)")
    assert "run.started" in types and "run.completed" in types
    assert not any(CANARY in text for text in events.all_inner_texts())
    completed = page.locator("[data-testid=trace-event][data-type='worker.completed']")
    completed.locator("summary").click()
    expect(completed.get_by_test_id("trace-metadata")).to_contain_text("reasoning_status")
    expect(completed.get_by_test_id("trace-task")).to_have_text("engineer")
    screenshot(page, "trace-tab")
    page.get_by_test_id("trace-layer-reasoning").click()
    expect(page.get_by_test_id("trace-forbidden")).to_be_visible()
    assert CANARY_KEY not in page.content()


@pytest.mark.parametrize("mode", ["hidden", "telemetry_only"])
def test_no_reasoning_reaches_the_page_when_the_mode_does_not_display_it(
    page: Page, daemon: Daemon, sim: Simulator, mode: str
) -> None:
    # A canary of this test alone: other runs in the daemon's store may legitimately show
    # theirs in the runs list.
    canary = f"CANARY-WEB-{mode}-{secrets.token_hex(4)}"
    sim.script(canary_transcript(canary))  # DeepSeek returns reasoning even unasked
    with_token(page, ACCESS_TOKEN)
    received = record_responses(page)
    page.goto(f"{daemon.url}/")
    start_from_form(page, "Explain the decision.", provider="deepseek", chain_of_thought=mode)
    card = page.get_by_test_id("task-card")
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    expect(card.get_by_test_id("task-status")).to_have_text("done")
    expect(card.get_by_test_id("task-answer")).to_have_text(TRANSCRIPT.answer)
    expect(card.get_by_test_id("task-reasoning")).to_have_count(0)
    notice = card.get_by_test_id("task-reasoning-notice")
    expect(notice).to_be_visible()
    assert (notice.text_content() or "").strip()
    if mode == "hidden":
        screenshot(page, "hidden-run")
    page.get_by_test_id("tab-trace").click()
    expect(page.get_by_test_id("trace-event").first).to_be_visible()

    assert canary not in page.content()
    bodies = received.bodies()
    streams = [r for r in received.responses if r.url.endswith("/events")]
    assert streams, "the page never opened the run's event stream"
    assert any(b"answer.delta" in body or TRANSCRIPT.answer.encode() in body for body in bodies)
    for body in bodies:
        assert canary.encode() not in body
        assert CANARY_KEY.encode() not in body


def test_operator_sees_the_reasoning_layer_of_a_telemetry_run(
    page: Page, daemon: Daemon, sim: Simulator
) -> None:
    sim.script(TRANSCRIPT)
    with_token(page, OPERATOR_TOKEN)
    page.goto(f"{daemon.url}/")
    start_from_form(
        page, "Explain the decision.", provider="deepseek", chain_of_thought="telemetry_only"
    )
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    tasks_panel = page.get_by_test_id("tasks-panel")
    expect(tasks_panel.get_by_test_id("task-reasoning")).to_have_count(0)
    assert CANARY not in tasks_panel.inner_html()
    page.get_by_test_id("tab-trace").click()
    page.get_by_test_id("trace-layer-reasoning").click()
    event = page.locator("[data-testid=trace-event][data-type='worker.reasoning']")
    expect(event).to_have_count(1)
    event.locator("summary").click()
    expect(event.get_by_test_id("trace-metadata")).to_contain_text(CANARY)


def test_without_a_token_the_page_asks_for_one(page: Page, daemon: Daemon) -> None:
    page.goto(f"{daemon.url}/")
    expect(page.get_by_test_id("token-dialog")).to_be_visible()
    page.get_by_test_id("token-input").fill(ACCESS_TOKEN)
    page.get_by_test_id("token-save").click()
    expect(page.get_by_test_id("token-dialog")).to_be_hidden()
    expect(page.get_by_test_id("runs-error")).to_be_hidden()
    expect(page.get_by_test_id("run-item").first).to_be_visible()
    screenshot(page, "runs-list")


def test_cancel_from_the_page_keeps_what_arrived(
    page: Page, daemon: Daemon, sim: Simulator
) -> None:
    long_answer = STREAMED_ANSWER * 20
    sim.script(Transcript(answer=long_answer, chunk_chars=6))
    sim.pace_s = 0.05
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    start_from_form(page, "Take your time.", provider="deepseek", chain_of_thought="hidden")
    answer = page.get_by_test_id("task-answer")
    expect(answer).not_to_be_empty()
    page.get_by_test_id("cancel-run").click()
    expect(page.get_by_test_id("run-status")).to_have_text("cancelled")
    expect(page.get_by_test_id("stream-state")).to_have_text("final")
    expect(page.get_by_test_id("cancel-run")).to_be_hidden()
    kept = answer.text_content() or ""
    assert kept and long_answer.startswith(kept) and len(kept) < len(long_answer)


def test_form_settings_counts_and_a_followed_answer(
    page: Page, daemon: Daemon, sim: Simulator
) -> None:
    lines = "".join(f"{number}. a line of the long answer\n" for number in range(1, 121))
    sim.script(Transcript(answer=lines, chunk_chars=24, output_tokens=777))
    sim.pace_s = 0.03
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    page.get_by_test_id("form-max-output-tokens").fill("321")
    page.get_by_test_id("form-temperature").fill("0.3")
    start_from_form(page, "Write many lines.", provider="deepseek", chain_of_thought="hidden")
    answer = page.get_by_test_id("task-answer")
    stats = page.get_by_test_id("task-stats")
    # While it streams past the screen, the answer grows with the page (no box of its own
    # to scroll), and the card shows elapsed time and the characters so far.
    page.wait_for_function(
        """() => {
            const box = document.querySelector("[data-testid=task-answer]");
            const card = document.querySelector("[data-testid=task-card]");
            return box && card.dataset.status === "running" && box.clientHeight > window.innerHeight;
        }"""
    )
    assert answer.evaluate("box => box.scrollHeight - box.clientHeight") <= 1
    expect(stats).to_contain_text(" s · ")
    expect(stats).to_contain_text("chars")
    # Scrolled into the answer by the reader, the page keeps what they read where it was
    # while the run ends (its notices and buttons change above it).
    page.evaluate(
        """() => {
            const box = document.querySelector("[data-testid=task-answer]");
            window.scrollTo(0, box.getBoundingClientRect().top + window.scrollY + 200);
        }"""
    )
    before = answer.evaluate("box => box.getBoundingClientRect().top")
    assert before < 0
    expect(page.get_by_test_id("task-status")).to_have_text("done")
    expect(page.get_by_test_id("task-reasoning-notice")).to_be_visible()
    # Within a line of where it was (a notice that lands after the page's last frame of
    # keeping the place may move it that much), never to the top or the end.
    assert abs(answer.evaluate("box => box.getBoundingClientRect().top") - before) <= 24
    assert answer.evaluate("box => box.scrollHeight - box.clientHeight") <= 1
    expect(stats).to_contain_text("777 output tokens")
    expect(answer.locator("ol > li")).to_have_count(120)
    bodies = [request.body or {} for request in sim.requests]
    assert [(body["max_tokens"], body["temperature"]) for body in bodies] == [(321, 0.3)]


def test_a_run_started_with_no_role_has_no_persona_and_one_with_a_system_prompt_sends_it(
    page: Page, daemon: Daemon, sim: Simulator
) -> None:
    with_token(page, ACCESS_TOKEN)
    page.goto(f"{daemon.url}/")
    expect(page.get_by_test_id("form-roles")).to_have_value("")
    first_id = start_from_form(
        page, "Summarize this", provider="deepseek", chain_of_thought="hidden", roles=""
    )
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    card = page.get_by_test_id("task-card")
    expect(card.locator("[data-field=persona] dd")).to_have_text("none, no system prompt")
    page.get_by_test_id("form-system").fill("You are terse.")
    page.get_by_test_id("form-request").fill("Summarize this")
    page.get_by_test_id("form-submit").click()
    # The page moves to the new run once it is stored.
    expect(page.get_by_test_id("run-view")).not_to_have_attribute("data-run-id", first_id)
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(page.get_by_test_id("task-card").locator("[data-field=persona] dd")).to_have_text(
        "inline system prompt"
    )
    first, second = sim.requests
    assert first.body is not None and second.body is not None
    assert [m["role"] for m in first.body["messages"]] == ["user"]
    assert second.body["messages"][0] == {"role": "system", "content": "You are terse."}

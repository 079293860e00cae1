"""``thoughtline trace RUN`` as a person reads it: real subprocesses against the
simulator. One line per event with its time, kind and a summary; recorded reasoning as
text, once; an empty reasoning layer says why; ``--json`` keeps the raw events; and the
reasoning canary shows only where the run's mode records it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.conftest import CANARY_KEY
from thoughtline.records import short_run_id
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "CANARY-TRACE-VIEW-41b7"
REASONING = f"First I weigh buckets; {CANARY} here.\nThen I pick one."
EVENT_LINE = re.compile(r"^(\d\d:\d\d:\d\d\.\d\d\d)  (\S+)")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run_once(home: Path, sim: Simulator, environ: dict[str, str], mode: str) -> str:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=REASONING),),
            answer="Use a token bucket.",
        )
    )
    result = thoughtline(
        home, environ, "run", "Design a rate limiter", "--provider", "deepseek",
        "--chain-of-thought", mode, "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_id: str = json.loads(result.stdout)["id"]
    return run_id


def event_lines(stdout: str) -> list[tuple[str, str]]:
    return [
        (match.group(1), match.group(2))
        for line in stdout.splitlines()
        if (match := EVENT_LINE.match(line))
    ]


@pytest.mark.parametrize("mode", ["telemetry_only", "surface_and_telemetry"])
def test_trace_is_a_line_per_event_with_the_recorded_reasoning_once(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    run_id = run_once(home, sim, environ, mode)
    raw = thoughtline(home, environ, "trace", run_id, "--json")
    assert raw.returncode == 0, raw.stderr
    events = json.loads(raw.stdout)
    # --json keeps the raw events: the reasoning text and each part's copy of it.
    reasoning_events = [event for event in events if event["layer"] == "reasoning"]
    assert [event["metadata"]["reasoning"] for event in reasoning_events] == [REASONING]
    assert reasoning_events[0]["metadata"]["parts"][0]["text"] == REASONING

    shown = thoughtline(home, environ, "trace", run_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""
    lines = shown.stdout.splitlines()
    assert lines[0] == f"{len(events)} events · {events[0]['at'][:10]} (UTC)"
    assert event_lines(shown.stdout) == [(event["at"][11:23], event["type"]) for event in events]
    # Reasoning as text, once, its lines under its event; no escaped JSON anywhere.
    assert shown.stdout.count(CANARY) == 1
    assert f"    │ First I weigh buckets; {CANARY} here.\n    │ Then I pick one.\n" in shown.stdout
    assert "\\n" not in shown.stdout and '"parts"' not in shown.stdout
    summaries = {kind: line for line in lines if (kind := line[14:].split(" ", 1)[0])}
    assert '"Design a rate limiter"' in summaries["run.started"]
    assert f"chain_of_thought={mode} (explicit)" in summaries["run.started"]
    assert "assistant" in summaries["task.started"]
    assert (
        "deepseek-reasoner at deepseek (openai-chat) · reasoning requested"
        in (summaries["worker.requested"])
    )
    assert (
        f"recorded reasoning, {len(REASONING)} chars in 1 part (raw):"
        in summaries["worker.reasoning"]
    )
    assert "done · answer 19 chars · tokens" in summaries["worker.completed"]
    assert summaries["run.completed"].endswith("  completed")
    assert "reasoning layer" not in shown.stdout  # it holds an event: nothing to explain
    for result in (raw, shown):
        assert CANARY_KEY not in result.stdout + result.stderr


@pytest.mark.parametrize("mode", ["hidden", "surface"])
def test_a_mode_that_records_no_reasoning_has_none_in_either_view_and_says_why(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    run_id = run_once(home, sim, environ, mode)
    shown = thoughtline(home, environ, "trace", run_id)
    raw = thoughtline(home, environ, "trace", run_id, "--json")
    layer = thoughtline(home, environ, "trace", run_id, "--layer", "reasoning")
    for result in (shown, raw, layer):
        assert result.returncode == 0, result.stderr
        assert CANARY not in result.stdout + result.stderr
    assert not [event for event in json.loads(raw.stdout) if event["layer"] == "reasoning"]
    why = (
        f"The reasoning layer of run {short_run_id(run_id)} is empty: its tasks ran with "
        f"chain_of_thought={mode}, which does not record reasoning"
    )
    assert why in layer.stdout
    assert "reasoning layer" not in shown.stdout  # the whole trace adds no unasked line
    shows = "(surface shows the reasoning with the answer but keeps it out of the trace)"
    assert (shows in layer.stdout) is (mode == "surface")
    assert "worker.completed" in shown.stdout
    # With no RUN_ID, the trace is the latest run's, as status and export are.
    latest = thoughtline(home, environ, "trace")
    assert latest.returncode == 0, latest.stderr
    assert latest.stdout == shown.stdout
    # Surface showed the reasoning with the run itself; the trace keeps none of it.
    status = thoughtline(home, environ, "status", run_id, "--json")
    assert (CANARY in status.stdout) is (mode == "surface")


def test_a_failed_task_and_markup_like_text_read_as_text(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(
        Fault.http_error(400, "[bold]overloaded[/bold] \x1b]0;title\x07"), profile="deepseek"
    )
    result = thoughtline(
        home, environ, "run", "[red]ask[/red] <b>x</b>", "--provider", "deepseek", "--json"
    )
    run_id = json.loads(result.stdout)["id"]
    shown = thoughtline(home, {**environ, "COLUMNS": "400"}, "trace", run_id)
    assert shown.returncode == 0, shown.stderr
    assert '"[red]ask[/red] <b>x</b>"' in shown.stdout
    failed = next(line for line in shown.stdout.splitlines() if "worker.failed" in line)
    assert "failed · PROVIDER_" in failed
    assert "\x1b" not in shown.stdout

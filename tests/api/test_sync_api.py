"""The synchronous Python API as scripts and notebooks meet it: ``thoughtline.run`` from
inside a running event loop (a Jupyter cell), ``thoughtline.stream`` iterating a run's
live events with a plain ``for`` (leaving early cancels the run), and ``answer``, the
answer typed ``str``."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import thoughtline
from tests.support import start_process, wait_for_running_event
from thoughtline import ThoughtlineError
from thoughtline.records.run_events import (
    RunCompleted,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
)
from thoughtline.testing import DEFAULT_TRANSCRIPT, Fault, SimReasoning, Simulator, Transcript

CANARY = "sync-api-reasoning-canary-5e1d"


def _canary_transcript(answer: str = "The answer.", chunk_chars: int = 12) -> Transcript:
    return Transcript(
        answer=answer,
        reasoning=(SimReasoning(kind="summary", text=f"thinking {CANARY} hard", signature="s"),),
        chunk_chars=chunk_chars,
    )


async def test_run_called_inside_a_running_loop_runs_to_the_end(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    # A notebook cell: a loop runs in this thread; the synchronous call blocks it (as
    # any synchronous library call does) and runs the run on a loop of its own.
    run = thoughtline.run("Design a cache", roles=["architect"], environ=user_env)
    assert run.status == "completed"
    assert run.answer == DEFAULT_TRANSCRIPT.answer
    assert run.tasks[0].answer == DEFAULT_TRANSCRIPT.answer
    assert asyncio.get_running_loop().is_running()
    with thoughtline.Conversation(environ=user_env) as chat:
        first = chat.send("First?", roles=["architect"])
        second = chat.send("Then?")
    assert (first.status, second.status, second.continues) == ("completed", "completed", first.id)


NOTEBOOK_CELL = """
import asyncio, sys
import thoughtline

async def cell():
    # What a cell runs: synchronous calls, a loop running in this thread.
    print("started", flush=True)
    try:
        thoughtline.run("Slow one", roles=["architect"])
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    run = thoughtline.run("Next", roles=["architect"])
    print("next", run.status, run.answer, flush=True)

# Like a kernel: a loop, and Ctrl-C raising KeyboardInterrupt where the code is.
asyncio.new_event_loop().run_until_complete(cell())
"""


@pytest.mark.slow  # a Python process interrupted with SIGINT
def test_ctrl_c_in_a_notebook_cell_cancels_the_run_and_the_next_one_runs(
    tmp_path: Path, sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script_turns(
        Transcript(answer="slow and steady " * 40, chunk_chars=8), Transcript(answer="Done.")
    )
    sim.pace_s = 0.05
    script = tmp_path / "cell.py"
    script.write_text(NOTEBOOK_CELL, encoding="utf-8")
    database = tmp_path / "home" / "thoughtline.db"
    process = start_process(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=user_env,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        wait_for_running_event(database, "answer.delta")
        process.send_signal(signal.SIGINT)
        rest, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert rest.splitlines() == ["interrupted", "next completed Done."]
    with sqlite3.connect(database) as conn:
        statuses = [row[0] for row in conn.execute("select status from runs order by created_at")]
    assert statuses == ["cancelled", "completed"]


@pytest.mark.parametrize("inside_a_loop", [False, True])
async def test_stream_yields_the_live_events_in_order_then_the_run(
    sim: Simulator, user_env: dict[str, str], inside_a_loop: bool
) -> None:
    sim.default_transcript = _canary_transcript("streamed " * 20, chunk_chars=5)

    def consume() -> tuple[list[thoughtline.RunEvent], thoughtline.Run]:
        with thoughtline.stream(
            "Design a cache", roles=["architect"], chain_of_thought="surface", environ=user_env
        ) as events:
            seen = list(events)
        return seen, events.run

    # Inside a loop (this test's) or in a thread without one (a script).
    seen, run = consume() if inside_a_loop else await asyncio.to_thread(consume)
    kinds = [type(event) for event in seen]
    assert kinds[0] is RunStarted and kinds[1] is TaskStarted
    assert kinds[-2:] == [TaskCompleted, RunCompleted]
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    answer = "".join(event.text for event in seen if isinstance(event, TaskAnswerDelta))
    reasoning = "".join(event.text for event in seen if isinstance(event, TaskReasoningDelta))
    assert answer == "streamed " * 20 == run.answer
    assert CANARY in reasoning  # surface mode shows it
    assert run.status == "completed"


async def test_a_hidden_stream_carries_no_reasoning(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.default_transcript = _canary_transcript()

    def consume() -> list[str]:
        with thoughtline.stream(
            "Design a cache", roles=["architect"], chain_of_thought="hidden", environ=user_env
        ) as events:
            return [repr(event) for event in events]

    seen = await asyncio.to_thread(consume)
    assert not any("TaskReasoningDelta" in event for event in seen)
    assert not any(CANARY in event for event in seen)


async def test_leaving_a_stream_early_cancels_its_run_with_what_arrived_kept(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.inject(Fault.stall(at="mid_answer", max_s=30), profile="anthropic")

    def leave_at_the_first_answer_delta() -> tuple[str, str]:
        with thoughtline.stream("Design a cache", roles=["architect"], environ=user_env) as events:
            for event in events:
                if isinstance(event, TaskAnswerDelta):
                    break
        return events.run_id, event.text

    run_id, first = await asyncio.to_thread(leave_at_the_first_answer_delta)
    async with thoughtline.Orchestrator.open(environ=user_env) as orchestrator:
        stored = orchestrator.status(run_id)
    assert stored.status == "cancelled"
    assert stored.tasks[0].status == "cancelled"
    assert (stored.tasks[0].output or "").startswith(first)


async def test_ten_thousand_deltas_stream_through_whole(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    # 10k one-character deltas from the provider (the runtime joins those that arrive
    # together into one event): every character arrives once, in order.
    sim.default_transcript = Transcript(
        answer="".join(str(i % 10) for i in range(10_000)), chunk_chars=1
    )

    def joined() -> tuple[str, str]:
        with thoughtline.stream("Many deltas", roles=["architect"], environ=user_env) as events:
            text = "".join(event.text for event in events if isinstance(event, TaskAnswerDelta))
        return text, events.run.answer

    text, answer = await asyncio.to_thread(joined)
    assert text == answer == sim.default_transcript.answer


async def test_bad_input_to_stream_raises_before_anything_is_stored(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    def start() -> None:
        thoughtline.stream("x", roles=["no_such_role"], environ=user_env)

    with pytest.raises(ThoughtlineError) as refused:
        await asyncio.to_thread(start)
    assert refused.value.code == "ROLE_UNKNOWN"
    async with thoughtline.Orchestrator.open(environ=user_env) as orchestrator:
        assert orchestrator.runs() == []


async def test_answer_is_a_str_or_the_error_of_the_task_that_has_none(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(401, "invalid x-api-key"), profile="anthropic")
    failed = await asyncio.to_thread(thoughtline.run, "x", roles=["architect"], environ=user_env)
    with pytest.raises(ThoughtlineError) as no_answer:
        _ = failed.answer
    assert no_answer.value.code == failed.tasks[0].error.code == "PROVIDER_AUTH_ERROR"  # type: ignore[union-attr]
    prepared = await asyncio.to_thread(
        thoughtline.run, "x", roles=["architect"], worker_backend="inline", environ=user_env
    )
    with pytest.raises(ThoughtlineError, match="prepare-only") as only_prepared:
        _ = prepared.answer
    assert only_prepared.value.code == "TASK_NO_ANSWER"


TYPED_SCRIPT = """
import thoughtline

run = thoughtline.run("x", chain_of_thought="surface", effort="low")
shout: str = run.answer.upper()  # a str: no None check needed
for event in thoughtline.stream("x"):
    pass
thoughtline.run("x", chain_of_thought="surfce")
"""


@pytest.mark.slow  # runs mypy on a script
def test_a_type_checker_takes_answer_as_str_and_catches_a_misspelt_mode(tmp_path: Path) -> None:
    script = tmp_path / "typed.py"
    script.write_text(TYPED_SCRIPT, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         str(script)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, checked.stdout
    assert "typed.py:8:" in errors[0] and "surfce" in errors[0] and "chain_of_thought" in errors[0]

"""The run API as a library user meets it: the example script as a real process, live
events from a handle, cancellation, the store read back as the CLI prints it, and bad
input refused with thoughtline's own errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import thoughtline
from tests.support import untimed_deltas
from thoughtline import Orchestrator, ThoughtlineError
from thoughtline.records.event_log import from_records
from thoughtline.records.run_events import RunCompleted, RunStarted, TaskAnswerDelta
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import DEFAULT_TRANSCRIPT, Fault, Simulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_specialists.py"


@pytest.fixture
async def orchestrator(user_env: dict[str, str], tmp_path: Path) -> AsyncIterator[Orchestrator]:
    async with Orchestrator.open(thoughtline.Config(path=None), environ=user_env) as opened:
        yield opened


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_example_script_prints_both_specialists_with_their_reasoning(
    tmp_path: Path, sim: Simulator, user_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=user_env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reasoning = DEFAULT_TRANSCRIPT.reasoning[0].text
    lines = done.stdout.splitlines()
    assert lines[0::4] == ["## architect: done", "## reviewer: done"]
    assert lines[1::4] == [f"answer: {DEFAULT_TRANSCRIPT.answer}"] * 2
    assert lines[2::4] == [f"reasoning: {reasoning}"] * 2
    assert all(line.startswith("notice: ") and len(line) > 20 for line in lines[3::4])
    assert len(lines) == 8
    # Both specialists asked the model, and asked for its reasoning (surface mode).
    bodies = [request.body for request in sim.requests_for("anthropic")]
    assert len(bodies) == 2
    assert all("thinking" in body for body in bodies)
    assert sorted(body["system"][:20] for body in bodies) == sorted(
        ["You are a software a", "You are a careful co"]
    )


async def test_handle_yields_live_events_in_order_then_the_final_run(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    handle = orchestrator.start(
        "Design a cache", roles=["architect", "reviewer"], chain_of_thought="surface"
    )
    assert handle.run.status == "planned"
    seen = [event async for event in handle]
    run = await handle
    assert run.status == "completed"
    assert run.id == handle.run_id
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    assert isinstance(seen[0], RunStarted) and isinstance(seen[-1], RunCompleted)
    for task in run.tasks:
        mine = [event.wire_name for event in seen if getattr(event, "task_id", None) == task.id]
        assert mine[0] == "task.started" and mine[-1] == "task.completed"
        assert {"reasoning.delta", "answer.delta"} <= set(mine)
        answer = "".join(
            event.text
            for event in seen
            if isinstance(event, TaskAnswerDelta) and event.task_id == task.id
        )
        assert answer == task.output == DEFAULT_TRANSCRIPT.answer
    # The events are the ones the store logged, and a second iteration replays them all.
    stored = orchestrator.store.run_events(run.id)
    assert untimed_deltas(from_records(stored)) == untimed_deltas(seen)
    # Consecutive deltas of a task may share a record (tests/core/test_run_events.py);
    # how many do depends on how the network chunked the streams.
    assert len(stored) <= len(seen)
    assert [event async for event in handle] == seen


async def test_iterators_of_one_handle_are_independent_and_a_cancelled_one_disturbs_none(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    """Iterators waiting together are woken together; cancelling one while it waits (a
    consumer that gave up) leaves the others reading every event to the end."""
    sim.inject(Fault.slow_first_byte(0.5), profile="anthropic")  # all wait for a delta
    handle = orchestrator.start("Design a cache", roles=["architect"], chain_of_thought="surface")

    async def read_all() -> list[object]:
        return [event async for event in handle]

    first, second, gives_up = (asyncio.ensure_future(read_all()) for _ in range(3))
    await asyncio.sleep(0.2)  # the task started; its call waits for the first byte
    assert not first.done() and not gives_up.done()
    gives_up.cancel()
    run = await handle
    seen = await first
    assert seen == await second
    assert isinstance(seen[-1], RunCompleted) and run.status == "completed"
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))  # type: ignore[attr-defined]
    assert gives_up.cancelled()
    assert [event async for event in handle] == seen  # a late iterator replays them all


async def test_hidden_mode_sends_no_reasoning_events(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    handle = orchestrator.start("Design a cache", roles=["architect"])
    types = {event.wire_name async for event in handle}
    run = await handle
    assert "reasoning.delta" not in types and "answer.delta" in types
    assert run.tasks[0].reasoning is None
    assert run.tasks[0].reasoning_status == "not_requested"


async def test_cancel_while_running_keeps_the_run_and_ends_it_cancelled(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    sim.inject(Fault.stall(at="mid_answer", max_s=30), profile="anthropic")
    handle = orchestrator.start("Design a cache", roles=["architect"])
    async for event in handle:
        if isinstance(event, TaskAnswerDelta):
            assert handle.cancel() is True
    run = await handle
    assert run.status == "cancelled"
    assert run.tasks[0].status == "cancelled"
    assert run.tasks[0].output  # what arrived is kept
    assert orchestrator.status(run.id).status == "cancelled"
    assert handle.cancel() is False  # already ended


async def test_cancel_before_the_run_starts_executing(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    handle = orchestrator.start("Design a cache", roles=["architect", "reviewer"])
    assert handle.cancel() is True
    run = await handle
    assert run.status == "cancelled"
    assert {task.status for task in run.tasks} == {"cancelled"}
    assert sim.requests_for("anthropic") == []


async def test_leaving_the_block_interrupts_what_still_runs(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.inject(Fault.stall(at="mid_answer", max_s=30), profile="anthropic")
    async with Orchestrator.open(thoughtline.Config(path=None), environ=user_env) as opened:
        handle = opened.start("Design a cache", roles=["architect"])
        async for event in handle:
            if isinstance(event, TaskAnswerDelta):
                break
        with pytest.raises(RuntimeError, match=r"await orchestrator\.aclose\(\)"):
            opened.close()  # the store must not close under a run
    assert handle.done()
    run = await handle
    assert run.status == "interrupted"
    async with Orchestrator.open(thoughtline.Config(path=None), environ=user_env) as reopened:
        assert reopened.status(run.id).status == "interrupted"


@pytest.mark.slow
async def test_status_runs_trace_and_purge_return_what_the_cli_shows(
    sim: Simulator, orchestrator: Orchestrator, user_env: dict[str, str], tmp_path: Path
) -> None:
    first = await orchestrator.start("one", roles=["architect"], chain_of_thought="telemetry_only")
    second = await orchestrator.start(
        RunSpec(
            request="two",
            tasks=(
                TaskSpec(name="design", role="architect"),
                TaskSpec(name="review", role="reviewer", after=("design",)),
            ),
        ),
        chain_of_thought="surface",
    )

    def cli_json(*args: str) -> object:
        done = cli(*args, "--json", env=user_env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert orchestrator.status().snapshot() == cli_json("status")
    assert orchestrator.status(first.id).snapshot() == cli_json("status", first.id)
    assert [run.id for run in orchestrator.runs()] == [second.id, first.id]
    assert [run.snapshot() for run in orchestrator.runs(limit=1)] == cli_json(
        "runs", "--limit", "1"
    )
    trace = orchestrator.trace(first.id)
    assert [event.to_dict() for event in trace] == cli_json("trace", first.id)
    reasoning = orchestrator.trace(first.id, "reasoning")
    assert [event.type for event in reasoning] == ["worker.reasoning"]
    assert [event.to_dict() for event in reasoning] == cli_json(
        "trace", first.id, "--layer", "reasoning"
    )

    report = orchestrator.purge(dry_run=True)
    shown = cli("purge", "--dry-run", env=user_env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert report.dry_run is True
    expected = [
        f"{layer}: would remove {count} event(s)" for layer, count in report.removed.items()
    ] + [f"displayed reasoning: would remove from {report.displayed_reasoning_cleared} task(s)"]
    assert [line.split(" (retention")[0] for line in shown.stdout.splitlines()] == expected
    assert orchestrator.purge().residue is None


async def test_bad_input_raises_thoughtline_errors_and_stores_nothing(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    cases: list[tuple[dict[str, object], str]] = [
        ({"chain_of_thought": "loud"}, "CHAIN_OF_THOUGHT_UNKNOWN"),
        ({"roles": ["astrologer"]}, "ROLE_UNKNOWN"),
        ({"effort": "extreme"}, "EFFORT_UNKNOWN"),
        ({"worker_backend": "remote"}, "WORKER_BACKEND_UNKNOWN"),
        ({"provider": "nowhere"}, "ENDPOINT_UNKNOWN"),
        ({"roles": "architect"}, "REQUEST_INVALID"),
    ]
    for options, code in cases:
        with pytest.raises(ThoughtlineError) as raised:
            orchestrator.start("Design a cache", **options)  # type: ignore[arg-type]
        assert raised.value.code == code, options
    with pytest.raises(ThoughtlineError) as raised:
        orchestrator.start(
            RunSpec(request="x", tasks=(TaskSpec(name="a", role="architect"),)), roles=["reviewer"]
        )
    assert raised.value.code == "REQUEST_INVALID"
    assert orchestrator.runs() == []
    for call, code in (
        (lambda: orchestrator.status(), "RUN_NOT_FOUND"),
        (lambda: orchestrator.status("run_missing"), "RUN_NOT_FOUND"),
        (lambda: orchestrator.trace("run_missing"), "RUN_NOT_FOUND"),
        (lambda: orchestrator.trace("run_missing", "thoughts"), "TRACE_LAYER_UNKNOWN"),  # type: ignore[arg-type]
    ):
        with pytest.raises(ThoughtlineError) as raised:
            call()
        assert raised.value.code == code


def test_run_is_synchronous_and_honours_the_environment(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    run = thoughtline.run(
        "Design a cache",
        roles=["reviewer"],
        chain_of_thought="surface",
        effort="low",
        worker_backend="inline",
        config=thoughtline.Config(path=None),
        environ=user_env,
    )
    assert run.status == "completed_prepare_only"
    assert [(task.role, task.status, task.effort) for task in run.tasks] == [
        ("reviewer", "prepared", "low")
    ]
    assert sim.requests_for("anthropic") == []
    with pytest.raises(ThoughtlineError) as raised:
        thoughtline.run("x", chain_of_thought="loud", environ=user_env)
    assert raised.value.code == "CHAIN_OF_THOUGHT_UNKNOWN"


async def test_start_outside_a_loop_is_refused_before_storing(
    orchestrator: Orchestrator, user_env: dict[str, str]
) -> None:
    # (thoughtline.run inside a loop works: tests/api/test_sync_api.py.)
    def start_without_a_loop() -> None:
        orchestrator.start("x", roles=["architect"])

    with pytest.raises(RuntimeError, match=r"in synchronous code use thoughtline\.run\(\)"):
        await asyncio.to_thread(start_without_a_loop)
    assert orchestrator.runs() == []


TOO_LARGE = "€" * 300
TOO_LARGE_CONFIG = thoughtline.Config(path=None, max_request_bytes=600)
TOO_LARGE_MESSAGE = (
    "The request is 900 bytes of UTF-8 text, more than the limit of 600 bytes; raise "
    "orchestration.max_request_bytes (up to 64 MiB) in thoughtline.toml to allow more."
)


async def test_a_request_over_max_request_bytes_is_refused_before_anything_is_stored(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    """The library applies the cap the command line and the daemon apply: bytes of UTF-8
    text, so 300 three-byte characters are 900 bytes."""
    async with Orchestrator.open(TOO_LARGE_CONFIG, environ=user_env) as opened:
        kept = await opened.start("kept", roles=["engineer"], worker_backend="inline")
        spec = RunSpec(request=TOO_LARGE, tasks=(TaskSpec(name="a", role="engineer"),))
        for request in (TOO_LARGE, spec):
            with pytest.raises(ThoughtlineError) as raised:
                await opened.start(request, worker_backend="inline")
            assert (raised.value.code, raised.value.message) == (
                "REQUEST_TOO_LARGE",
                TOO_LARGE_MESSAGE,
            )
        assert [run.id for run in opened.runs()] == [kept.id]
        at_limit = await opened.start("€" * 200, worker_backend="inline")
        assert at_limit.request == "€" * 200
    assert sim.requests == []


def test_the_synchronous_run_applies_max_request_bytes(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    with pytest.raises(ThoughtlineError) as raised:
        thoughtline.run(
            TOO_LARGE, worker_backend="inline", config=TOO_LARGE_CONFIG, environ=user_env
        )
    assert (raised.value.code, raised.value.message) == ("REQUEST_TOO_LARGE", TOO_LARGE_MESSAGE)
    assert sim.requests == []


async def test_no_role_sends_no_persona_and_system_sends_the_text_given(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    plain = await orchestrator.start("Summarize this")
    inline = await orchestrator.start("Summarize this", system="You are terse.")
    with pytest.raises(ThoughtlineError) as both:
        orchestrator.start("Summarize this", system="You are terse.", roles=["reviewer"])
    assert both.value.code == "REQUEST_INVALID"
    first, second = (request.body for request in sim.requests_for("anthropic"))
    assert first is not None and second is not None
    assert "system" not in first
    assert second["system"] == "You are terse."
    assert plain.tasks[0].to_dict()["persona"] == {"role": "assistant", "source": "default"}
    assert inline.tasks[0].persona == {
        "role": "assistant",
        "source": "system",
        "system": "You are terse.",
    }
    # Read back from the store: the persona and its source were kept.
    stored = orchestrator.status(inline.id)
    assert stored.tasks[0].persona == inline.tasks[0].persona


def test_the_sync_api_takes_system(sim: Simulator, user_env: dict[str, str]) -> None:
    done = thoughtline.run(
        "Summarize this",
        system="You are terse.",
        config=thoughtline.Config(path=None),
        environ=user_env,
    )
    assert done.tasks[0].persona["source"] == "system"
    (sent,) = sim.requests_for("anthropic")
    assert sent.body is not None and sent.body["system"] == "You are terse."

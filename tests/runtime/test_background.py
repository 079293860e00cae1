"""RunManager against the provider simulator: runs in the background, their live events,
waiting, cancelling, interrupting on shutdown, and bad input refused before anything runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import TRANSCRIPT, make_runtime
from thoughtline.errors import ThoughtlineError
from thoughtline.records.run_events import RunCompleted, RunStarted, TaskReasoningDelta
from thoughtline.runtime.engine.background import ManagedRun, RunManager, RunManagerClosed
from thoughtline.runtime.engine.runner import RunEvent
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

SLOW = Transcript(
    reasoning=(SimReasoning(kind="summary", text="x" * 400),),
    answer="y" * 400,
    chunk_chars=4,
)


def spec(*names: str, role: str = "engineer") -> RunSpec:
    tasks = tuple(
        TaskSpec(name=name, role=role, provider="anthropic", model="claude-sonnet-4-6")
        for name in names
    )
    return RunSpec(request="x", tasks=tasks)


async def drain(queue: asyncio.Queue[RunEvent | None]) -> list[RunEvent]:
    """Every event up to the end marker (bounded by the run's own end)."""
    events: list[RunEvent] = []
    while (event := await asyncio.wait_for(queue.get(), 30)) is not None:
        events.append(event)
    return events


async def until_reasoning(queue: asyncio.Queue[RunEvent | None], count: int) -> None:
    seen = 0
    while seen < count:
        event = await asyncio.wait_for(queue.get(), 30)
        assert event is not None, "the run ended before reasoning arrived"
        seen += isinstance(event, TaskReasoningDelta)


async def test_a_run_in_the_background_reports_its_events_and_its_end(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    observed: list[RunEvent] = []
    queues: list[asyncio.Queue[RunEvent | None]] = []
    finished: list[str] = []

    handle = await manager.start(
        spec("a", "b"),
        explicit_mode="surface",
        observer=observed.append,
        on_start=lambda started: queues.append(started.subscribe()),
        on_finish=lambda ended: finished.append(ended.run.status),
    )
    assert manager.get(handle.run_id) is handle
    assert [item.run_id for item in manager.running()] == [handle.run_id]

    events = await drain(queues[0])
    run = await handle.wait()

    assert run is handle.run
    assert run.status == "completed"
    assert [task.status for task in run.tasks] == ["done", "done"]
    assert events == observed  # every listener sees the same events, in order
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunCompleted)
    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert finished == ["completed"]
    assert manager.get(handle.run_id) is None and handle.done
    # Subscribing after the end gets the end marker at once.
    assert await handle.subscribe().get() is None
    stored = store.get_run(handle.run_id)
    assert stored is not None and stored.status == "completed"
    store.close()


async def test_a_wait_that_times_out_leaves_the_run_going(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    handle = await manager.start(spec("a"), explicit_mode="surface")

    during = await manager.wait(handle.run_id, timeout_s=0)
    assert during is handle.run and during.status in ("planned", "running")
    assert not handle.done

    assert manager.cancel(handle.run_id)
    final = await asyncio.wait_for(handle.wait(), 30)
    assert final.status == "cancelled"
    assert await manager.wait(handle.run_id) is None  # no longer executing here
    assert not manager.cancel(handle.run_id)
    store.close()


async def test_cancel_stops_the_run_and_keeps_what_arrived(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    queues: list[asyncio.Queue[RunEvent | None]] = []
    handle = await manager.start(
        spec("a", "b"),
        explicit_mode="surface",
        on_start=lambda started: queues.append(started.subscribe()),
    )
    await until_reasoning(queues[0], 3)

    assert manager.cancel(handle.run_id)
    final = await asyncio.wait_for(handle.wait(), 30)

    assert final.status == "cancelled"
    assert {task.status for task in final.tasks} == {"cancelled"}
    assert any(task.reasoning for task in final.tasks)
    stored = store.get_run(handle.run_id)
    assert stored is not None and stored.status == "cancelled"
    store.close()


async def test_shutdown_interrupts_every_run_and_refuses_new_ones(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    queues: list[asyncio.Queue[RunEvent | None]] = []
    handles = [
        await manager.start(
            spec(name),
            explicit_mode="surface",
            on_start=lambda started: queues.append(started.subscribe()),
        )
        for name in ("a", "b")
    ]
    await until_reasoning(queues[0], 1)

    await manager.shutdown(grace_s=30)

    assert manager.closing
    assert manager.running() == []
    for handle in handles:
        assert handle.done
        assert handle.run.status == "interrupted"
        stored = store.get_run(handle.run_id)
        assert stored is not None and stored.status == "interrupted"
    with pytest.raises(RunManagerClosed) as refused:
        await manager.start(spec("c"))
    assert refused.value.code == "SHUTTING_DOWN"
    assert len(store.list_runs(10)) == 2  # the refused run was never stored
    store.close()


async def test_bad_input_is_refused_before_anything_runs(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    with pytest.raises(ThoughtlineError) as unknown_role:
        await manager.start(spec("a", role="poet"))
    assert unknown_role.value.code == "ROLE_UNKNOWN"
    with pytest.raises(ThoughtlineError) as unknown_mode:
        await manager.start(spec("a"), explicit_mode="loud")
    assert unknown_mode.value.code == "CHAIN_OF_THOUGHT_UNKNOWN"
    assert manager.running() == []
    assert sim.requests == []
    store.close()


async def test_an_observer_that_raises_does_not_disturb_the_run(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    seen: list[str] = []

    def broken(event: RunEvent) -> None:
        raise ValueError("a surface bug")

    def after_ended(ended: ManagedRun) -> None:
        raise ValueError("a surface bug at the end")

    handle = await manager.start(spec("a"), observer=broken, on_finish=after_ended)
    handle.add_observer(lambda event: seen.append(event.wire_name))
    run = await asyncio.wait_for(handle.wait(), 30)

    assert run.status == "completed"
    assert seen[-1] == "run.completed"
    messages = [record.getMessage() for record in caplog.records]
    assert any(message.startswith("observing event 1 of run ") for message in messages)
    assert f"finishing run {run.id} failed" in messages
    store.close()

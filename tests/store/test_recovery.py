"""Runs whose owning process died are marked interrupted; live owners are left alone."""

from __future__ import annotations

import multiprocessing
import os
import signal
from contextlib import closing
from pathlib import Path

import pytest

from tests.store import children
from tests.store.backends import StoreBackend
from tests.store.builders import DAY, ago, make_run
from thoughtline.records import TaskUsage
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.runtime.policy.retention import purge_displayed_reasoning
from thoughtline.store.owner import ProcessIdentity

LINUX_PROC = Path("/proc/self/stat").exists()


@pytest.mark.slow
def test_run_of_a_killed_process_is_interrupted(backend: StoreBackend) -> None:
    child = multiprocessing.get_context("spawn").Process(
        target=children.crash_mid_run, args=(backend.location, "run_crashed")
    )
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL

    store = backend.open()

    assert recover_interrupted(store) == ["run_crashed"]
    run = store.get_run("run_crashed")
    assert run is not None
    assert run.status == "interrupted"
    assert run.finished_at is not None
    done, running, queued = run.tasks
    assert (done.status, done.output) == ("done", "finished answer ✓")
    assert done.usage == TaskUsage(input_tokens=10, output_tokens=0, reasoning_tokens=None)
    assert done.timings.finished_at == "2026-01-01T00:00:01.000Z"
    assert running.status == "interrupted"
    assert running.timings.started_at == "2026-01-01T00:00:00.500Z"
    assert running.timings.finished_at == run.finished_at
    assert queued.status == "interrupted"
    assert queued.timings.started_at is None
    assert queued.timings.finished_at == run.finished_at
    trace = store.trace("run_crashed")
    assert [(event.type, event.layer) for event in trace] == [
        ("task.started", "answer"),
        ("run.interrupted", "answer"),
    ]
    assert trace[0].id == "evt_started"
    assert trace[1].task_id is None
    assert trace[1].at == run.finished_at
    assert trace[1].metadata["reason"] == "owner_exited"
    assert trace[1].metadata["interrupted_tasks"] == [running.id, queued.id]
    assert "has exited" in trace[1].metadata["detail"]
    store.close()

    # Recovery happens once: the next open finds nothing to do and changes nothing.
    again = backend.open()
    assert recover_interrupted(again) == []
    assert again.get_run("run_crashed") == run
    assert len(again.trace("run_crashed")) == 2
    again.close()


@pytest.mark.slow
def test_run_of_a_live_process_is_not_touched(backend: StoreBackend) -> None:
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    child = spawn.Process(target=children.hold_run, args=(backend.location, "run_live", theirs))
    child.start()
    try:
        assert ours.recv() == "created"
        store = backend.open()
        assert recover_interrupted(store) == []
        run = store.get_run("run_live")
        assert run is not None
        assert (run.status, run.finished_at) == ("running", None)
        assert [task.status for task in run.tasks] == ["queued", "queued"]
        assert store.trace("run_live") == []
    finally:
        ours.send("exit")
        child.join()
    assert child.exitcode == 0

    # The owner is gone now (it exited without finishing the run).
    assert recover_interrupted(store) == ["run_live"]
    run = store.get_run("run_live")
    assert run is not None and run.status == "interrupted"
    store.close()


def test_runs_of_this_process_are_not_touched(backend: StoreBackend) -> None:
    first = backend.open()
    first.create_run(make_run("run_mine", status="planned"))
    second = backend.open()
    assert recover_interrupted(second) == []
    run = second.get_run("run_mine")
    assert run is not None and run.status == "planned"
    first.close()
    second.close()


@pytest.mark.skipif(not LINUX_PROC, reason="process start times come from /proc")
def test_reused_pid_is_recognised(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        store.create_run(make_run("run_reused"))
    me = ProcessIdentity.current()
    assert me.start_time is not None
    # Same (live) pid, different start time: the pid now belongs to another process.
    backend.sql("UPDATE runs SET owner_start_time = ?", (me.start_time - 1,))

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_reused"]
        event = store.trace("run_reused")[-1]
        assert (event.type, event.metadata["reason"]) == ("run.interrupted", "owner_pid_reused")


def _identity_in_child(queue: multiprocessing.Queue[tuple[ProcessIdentity, int]]) -> None:
    queue.put((ProcessIdentity.current(), os.getpid()))


@pytest.mark.skipif(not LINUX_PROC, reason="process start times come from /proc")
def test_a_forked_child_owns_its_runs_under_its_own_identity() -> None:
    """The identity is read once per process; a child forked after the parent read it
    is another owner, with its own pid and start time."""
    mine = ProcessIdentity.current()
    assert ProcessIdentity.current() is mine  # read once
    queue: multiprocessing.Queue[tuple[ProcessIdentity, int]] = multiprocessing.get_context(
        "fork"
    ).Queue()
    child = multiprocessing.get_context("fork").Process(target=_identity_in_child, args=(queue,))
    child.start()
    theirs, their_pid = queue.get(timeout=30)
    child.join(30)
    assert child.exitcode == 0
    assert theirs.pid == their_pid != mine.pid
    assert theirs.start_time is not None and mine.start_time is not None
    assert theirs.start_time >= mine.start_time
    assert (theirs.host, theirs.boot_id) == (mine.host, mine.boot_id)


@pytest.mark.skipif(ProcessIdentity.current().boot_id is None, reason="no boot id here")
def test_run_from_before_a_reboot_is_interrupted(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        store.create_run(make_run("run_old_boot"))
    backend.sql("UPDATE runs SET owner_boot_id = 'an-earlier-boot'")

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_old_boot"]
        assert store.trace("run_old_boot")[-1].metadata["reason"] == "host_rebooted"


def test_other_hosts_are_judged_by_heartbeat(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        store.create_run(make_run("run_silent"))
        store.create_run(make_run("run_recent"))
        store.create_run(make_run("run_finished", status="completed"))
    # A pid that is alive here must not matter for a run owned by another machine.
    backend.sql("UPDATE runs SET owner_host = 'other-machine', owner_pid = 1")
    backend.sql(
        "UPDATE runs SET heartbeat_at = ? WHERE id != 'run_recent'",
        (ago(backend.stale_after_s + 60),),
    )
    backend.sql(
        "UPDATE runs SET heartbeat_at = ? WHERE id = 'run_recent'",
        (ago(backend.stale_after_s / 3),),
    )

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_silent"]
        statuses = {run.id: run.status for run in store.list_runs()}
        assert statuses == {
            "run_silent": "interrupted",
            "run_recent": "running",
            "run_finished": "completed",
        }
        event = store.trace("run_silent")[-1]
        assert event.metadata["reason"] == "heartbeat_stale"
        assert "other-machine" in event.metadata["detail"]
        assert store.trace("run_finished") == []


def test_writes_refresh_the_heartbeat(backend: StoreBackend) -> None:
    stale = ago(backend.stale_after_s + 60)
    with closing(backend.open()) as store:
        run = make_run("run_beating")
        store.create_run(run)
        backend.sql("UPDATE runs SET owner_host = 'other-machine', heartbeat_at = ?", (stale,))
        store.update_task(run.tasks[0])  # a write by the owner proves it is alive

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == []


def _crash_mid_stream(backend: StoreBackend, run_id: str, deltas_at: str | None = None) -> int:
    """Run :func:`children.crash_mid_stream` in a spawned process; returns its pid."""
    child = multiprocessing.get_context("spawn").Process(
        target=children.crash_mid_stream, args=(backend.location, run_id, deltas_at)
    )
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL
    assert child.pid is not None
    return child.pid


@pytest.mark.slow
def test_what_reached_the_event_log_is_kept_per_mode(backend: StoreBackend) -> None:
    pid = _crash_mid_stream(backend, "run_stream")

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_stream"]
        run = store.get_run("run_stream")
        log = store.run_events("run_stream")
    assert run is not None and run.status == "interrupted"
    surface, hidden, telemetry, both, queued = run.tasks
    stopped = f"The process running this task stopped (process {pid} that ran it has exited)"
    deltas_at = log[0].at

    # surface: the answer and the reasoning that arrived, exactly as the log has them.
    assert (surface.status, surface.output) == ("interrupted", "Use a token bucket")
    assert surface.reasoning == "Weigh the options."
    assert surface.reasoning_parts == []  # the log does not name part kinds; none is guessed
    assert surface.reasoning_status == "interrupted"
    assert surface.reasoning_notice == (
        f"{stopped}; the 18 characters of answer that reached the store before it are kept; so are "
        "the 18 characters of reasoning that arrived, marked partial."
    )
    assert surface.error is not None and surface.error.code == "RUN_INTERRUPTED"
    assert surface.timings.finished_at == deltas_at  # when its output last arrived

    # hidden: the answer only, and no word about reasoning that was never requested.
    assert (hidden.status, hidden.output) == ("interrupted", "Hidden answer so far ✓")
    assert (hidden.reasoning, hidden.reasoning_parts) == (None, None)
    assert hidden.reasoning_status == "not_requested"
    assert hidden.reasoning_notice == (
        f"{stopped}; the 22 characters of answer that reached the store before it are kept; "
        "reasoning was not requested (chain_of_thought is hidden)."
    )

    # telemetry_only: reasoning is never displayed, so none is rebuilt or claimed.
    assert (telemetry.output, telemetry.reasoning, telemetry.reasoning_parts) == (
        "Telemetry answer",
        None,
        None,
    )
    assert telemetry.reasoning_status == "interrupted"
    assert telemetry.reasoning_notice is not None
    assert "reasoning was not recorded" in telemetry.reasoning_notice

    # surface_and_telemetry: reasoning arrived, no answer yet.
    assert (both.output, both.reasoning) == (None, "Both modes ")
    assert both.reasoning_notice == (
        f"{stopped}; no answer had arrived; the 11 characters of reasoning that arrived "
        "are kept, marked partial."
    )

    # queued: never started, nothing to keep.
    assert (queued.status, queued.output, queued.reasoning) == ("interrupted", None, None)
    assert queued.reasoning_notice == (
        f"The process running this run stopped (process {pid} that ran it has exited) "
        "before this task started (the store has no record of it starting), so nothing of "
        "it is kept."
    )
    # No call was made, so none was interrupted.
    assert queued.reasoning_status == (
        "not_requested" if queued.chain_of_thought == "hidden" else "not_applicable"
    )
    assert queued.timings.finished_at == run.finished_at


@pytest.mark.slow
def test_rebuilt_reasoning_ages_with_its_log_and_is_not_resurrected(backend: StoreBackend) -> None:
    _crash_mid_stream(backend, "run_old", deltas_at=ago(40 * DAY))

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_old"]
        run = store.get_run("run_old")
        assert run is not None and run.tasks[0].reasoning == "Weigh the options."
        # The reasoning retention treats the rebuilt copy like the deltas it came from.
        assert purge_displayed_reasoning(store, 30 * DAY) == 2
        run = store.get_run("run_old")
        assert run is not None
        assert [task.reasoning for task in run.tasks] == [None] * 5
        assert [e.type for e in store.run_events("run_old")].count("reasoning.delta") == 0
        assert run.tasks[0].output == "Use a token bucket"  # answers are not reasoning

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == []
        again = store.get_run("run_old")
        assert again is not None and [task.reasoning for task in again.tasks] == [None] * 5
    assert not backend.holds("Weigh the options")


def test_reasoning_partly_removed_by_retention_is_not_rebuilt(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        run = make_run("run_gap", tasks=5)
        for task in run.tasks:
            task.status = "running"
        store.create_run(run)
        events = children.stream_events("run_gap", [task.id for task in run.tasks], None)
        # The first reasoning delta is old enough for the reasoning retention.
        events[1].at = ago(40 * DAY)
        store.append_run_events(events)
        # The owner is alive (another host, recent heartbeat) while retention runs.
        backend.sql("UPDATE runs SET owner_host = 'other-machine'")
        assert purge_displayed_reasoning(store, 30 * DAY) == 0  # no task has finished
        assert [e.seq for e in store.run_events("run_gap")][:2] == [1, 3]
    backend.sql("UPDATE runs SET heartbeat_at = ?", (ago(backend.stale_after_s + 60),))

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_gap"]
        recovered = store.get_run("run_gap")
    assert recovered is not None
    surface, _hidden, _telemetry, both, _queued = recovered.tasks
    # "the options." alone would pose as what arrived; nothing is shown instead.
    assert (surface.reasoning, surface.output) == (None, "Use a token bucket")
    assert both.reasoning is None
    assert surface.reasoning_notice is not None
    assert "the reasoning retention removed part of this run's event log" in (
        surface.reasoning_notice
    )


def test_streaming_deltas_refresh_the_heartbeat(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        run = make_run("run_streaming", tasks=5)
        store.create_run(run)
        backend.sql(
            "UPDATE runs SET owner_host = 'other-machine', heartbeat_at = ?",
            (ago(backend.stale_after_s + 60),),
        )
        # Only deltas for a long while: the owner is evidently alive.
        store.append_run_events(
            children.stream_events(run.id, [task.id for task in run.tasks], None)
        )

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == []

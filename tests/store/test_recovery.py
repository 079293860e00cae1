"""Runs whose owning process died are marked interrupted; live owners are left alone."""

from __future__ import annotations

import multiprocessing
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.store import children
from tests.store.builders import ago, make_run
from thoughtline.runtime.models import TaskUsage
from thoughtline.store.sqlite import ProcessIdentity, SQLiteStore

LINUX_PROC = Path("/proc/self/stat").exists()


def _sql(path: Path, statement: str, params: tuple[object, ...] = ()) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(statement, params)


def test_run_of_a_killed_process_is_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    child = multiprocessing.get_context("spawn").Process(
        target=children.crash_mid_run, args=(str(path), "run_crashed")
    )
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL

    store = SQLiteStore(path)

    assert store.recovered == ["run_crashed"]
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
    again = SQLiteStore(path)
    assert again.recovered == []
    assert again.recover_interrupted() == []
    assert again.get_run("run_crashed") == run
    assert len(again.trace("run_crashed")) == 2
    again.close()


def test_run_of_a_live_process_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    child = spawn.Process(target=children.hold_run, args=(str(path), "run_live", theirs))
    child.start()
    try:
        assert ours.recv() == "created"
        store = SQLiteStore(path)
        assert store.recovered == []
        assert store.recover_interrupted() == []
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
    assert store.recover_interrupted() == ["run_live"]
    run = store.get_run("run_live")
    assert run is not None and run.status == "interrupted"
    store.close()


def test_runs_of_this_process_are_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    first = SQLiteStore(path)
    first.create_run(make_run("run_mine", status="planned"))
    second = SQLiteStore(path)
    assert second.recovered == []
    run = second.get_run("run_mine")
    assert run is not None and run.status == "planned"
    first.close()
    second.close()


@pytest.mark.skipif(not LINUX_PROC, reason="process start times come from /proc")
def test_reused_pid_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("run_reused"))
    me = ProcessIdentity.current()
    assert me.start_time is not None
    # Same (live) pid, different start time: the pid now belongs to another process.
    _sql(path, "UPDATE runs SET owner_start_time = ?", (me.start_time - 1,))

    with SQLiteStore(path) as store:
        assert store.recovered == ["run_reused"]
        event = store.trace("run_reused")[-1]
        assert (event.type, event.metadata["reason"]) == ("run.interrupted", "owner_pid_reused")


@pytest.mark.skipif(ProcessIdentity.current().boot_id is None, reason="no boot id here")
def test_run_from_before_a_reboot_is_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("run_old_boot"))
    _sql(path, "UPDATE runs SET owner_boot_id = 'an-earlier-boot'")

    with SQLiteStore(path) as store:
        assert store.recovered == ["run_old_boot"]
        assert store.trace("run_old_boot")[-1].metadata["reason"] == "host_rebooted"


def test_other_hosts_are_judged_by_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("run_silent"))
        store.create_run(make_run("run_recent"))
        store.create_run(make_run("run_finished", status="completed"))
    # A pid that is alive here must not matter for a run owned by another machine.
    _sql(path, "UPDATE runs SET owner_host = 'other-machine', owner_pid = 1")
    _sql(path, "UPDATE runs SET heartbeat_at = ? WHERE id != 'run_recent'", (ago(16 * 60),))
    _sql(path, "UPDATE runs SET heartbeat_at = ? WHERE id = 'run_recent'", (ago(60),))

    with SQLiteStore(path) as store:
        assert store.recovered == ["run_silent"]
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


def test_writes_refresh_the_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    stale = ago(16 * 60)
    with SQLiteStore(path) as store:
        run = make_run("run_beating")
        store.create_run(run)
        _sql(path, "UPDATE runs SET owner_host = 'other-machine', heartbeat_at = ?", (stale,))
        store.update_task(run.tasks[0])  # a write by the owner proves it is alive

    with SQLiteStore(path) as store:
        assert store.recovered == []

"""The store is persistence only: it decides nothing about retention or recovery, its
conditional writes refuse stale views, and it sits below the runtime."""

from __future__ import annotations

import ast
import multiprocessing
import signal
from contextlib import closing
from pathlib import Path

import pytest

import thoughtline.store
from tests.store import children
from tests.store.backends import StoreBackend
from tests.store.builders import ago, make_event, make_run, make_task
from thoughtline.records import RunEventRecord, TraceEvent
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.store.base import RunNotFoundError, UnfinishedRun
from thoughtline.store.owner import ProcessIdentity


def _crash(backend: StoreBackend, run_id: str) -> None:
    child = multiprocessing.get_context("spawn").Process(
        target=children.crash_mid_run, args=(backend.location, run_id)
    )
    child.start()
    child.join()
    assert child.exitcode == -signal.SIGKILL


def _interrupted_event(run_id: str) -> TraceEvent:
    return make_event(run_id, type_="run.interrupted", metadata={"reason": "test"})


def test_no_store_module_imports_the_runtime() -> None:
    package = Path(thoughtline.store.__file__).parent
    offenders = []
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                (module.name, name) for name in names if name.startswith("thoughtline.runtime")
            ]
    assert offenders == []


def test_opening_the_store_decides_nothing(backend: StoreBackend) -> None:
    _crash(backend, "run_orphan")
    with closing(backend.open()) as store:
        run = store.get_run("run_orphan")
        assert run is not None and run.status == "running"  # recovery is the runtime's call
        (seen,) = store.unfinished_runs()
        me = ProcessIdentity.current()
        assert (seen.run_id, seen.owner_host, seen.owner_boot_id) == (
            "run_orphan",
            me.host,
            me.boot_id,
        )
        assert seen.owner_pid is not None and seen.owner_pid != me.pid
        assert seen.heartbeat_at is not None
        assert (seen.event_count, seen.last_event_seq) == (0, 0)
        assert recover_interrupted(store) == ["run_orphan"]
        assert store.unfinished_runs() == []


def test_interrupt_run_refuses_a_run_written_since_it_was_seen(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        run = make_run("run_moving", tasks=5)
        store.create_run(run)
        (seen,) = store.unfinished_runs()
        backend.sql("UPDATE runs SET heartbeat_at = ?", (ago(-1),))  # the owner wrote since
        assert not store.interrupt_run(
            seen, finished_at=ago(0), tasks=[], event=_interrupted_event(run.id)
        )
        (fresh,) = store.unfinished_runs()
        store.append_run_events(
            children.stream_events(run.id, [task.id for task in run.tasks], None)
        )
        assert not store.interrupt_run(  # its event log grew meanwhile
            fresh, finished_at=ago(0), tasks=[], event=_interrupted_event(run.id)
        )
        stored = store.get_run("run_moving")
        assert stored is not None and stored.status == "running"
        assert store.trace("run_moving") == []

        (current,) = store.unfinished_runs()
        assert current.event_count > 0 and current.last_event_seq == current.event_count
        task = run.tasks[0]
        task.status = "interrupted"
        task.output = "kept"
        stopped_at = ago(0)
        assert store.interrupt_run(
            current, finished_at=stopped_at, tasks=[task], event=_interrupted_event(run.id)
        )
        assert not store.interrupt_run(  # once only
            current, finished_at=stopped_at, tasks=[task], event=_interrupted_event(run.id)
        )
        stored = store.get_run("run_moving")
    assert stored is not None
    assert (stored.status, stored.finished_at) == ("interrupted", stopped_at)
    assert (stored.tasks[0].status, stored.tasks[0].output) == ("interrupted", "kept")


def test_replace_meta_succeeds_once_from_the_same_value(backend: StoreBackend) -> None:
    with closing(backend.open()) as first, closing(backend.open()) as second:
        assert first.get_meta("k") is None
        assert first.replace_meta("k", None, "1")
        assert not second.replace_meta("k", None, "2")
        assert second.get_meta("k") == "1"
        assert second.replace_meta("k", "1", "2")
        assert not first.replace_meta("k", "1", "3")
        first.set_meta("k", "4")
        assert second.get_meta("k") == "4"


def test_unfinished_run_reads_what_the_row_holds(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        store.create_run(make_run("run_old_row"))
        store.create_run(make_run("run_done", status="completed"))
    backend.sql("UPDATE runs SET owner_host = NULL, owner_pid = NULL, heartbeat_at = NULL")
    with closing(backend.open()) as store:
        (seen,) = store.unfinished_runs()
    assert (seen.run_id, seen.owner_host, seen.owner_pid, seen.heartbeat_at) == (
        "run_old_row",
        None,
        None,
        None,
    )
    assert (seen.event_count, seen.last_event_seq) == (0, 0)
    assert isinstance(seen, UnfinishedRun)


def test_a_transition_is_written_all_or_nothing(backend: StoreBackend) -> None:
    run = make_run("run_txn")
    task = run.tasks[0]
    with closing(backend.open()) as store:
        store.create_run(run)
        delta = RunEventRecord(
            run_id=run.id, seq=1, type="answer.delta", task_id=task.id, at=run.created_at,
            data={"texts": ["He", "llo"]},
        )  # fmt: skip
        stranger = make_task(run.id, 9)
        stranger.id = "task_not_stored"
        with pytest.raises(RunNotFoundError):
            store.write(
                events=[delta],
                tasks=[task, stranger],
                trace=[make_event(run.id, event_id="evt_txn")],
            )
        assert store.run_events(run.id) == []
        assert store.trace(run.id) == []
        # The same transition without the stranger lands whole.
        task.status, task.output = "done", "Hello"
        run.status = "completed"
        store.write(
            events=[delta], run=run, tasks=[task], trace=[make_event(run.id, event_id="evt_txn")]
        )
        stored = store.get_run(run.id)
        assert stored is not None and stored.status == "completed"
        assert stored.tasks[0].output == "Hello"
        assert [record.seq for record in store.run_events(run.id)] == [1]
        assert [event.id for event in store.trace(run.id)] == ["evt_txn"]
        missing = make_run("run_never_created")
        with pytest.raises(RunNotFoundError):
            store.write(run=missing)


def test_events_and_trace_of_a_run_never_stored_are_refused_and_nothing_lands(
    backend: StoreBackend,
) -> None:
    """Each log row must name a stored run: PostgreSQL checks it once per run of a write
    (the runs' rows are locked by the heartbeat refresh every write starts with), not
    by a per-row foreign key."""
    run = make_run("run_kept")
    with closing(backend.open()) as store:
        store.create_run(run)
        for event_run in ("run_ghost", run.id):
            records = [
                RunEventRecord(
                    run_id=event_run,
                    seq=seq,
                    type="answer.delta",
                    task_id=None,
                    at=run.created_at,
                    data={"text": "x"},
                )
                for seq in (1, 2)
            ]
            if event_run == run.id:
                store.append_run_events(records)
                continue
            with pytest.raises(RunNotFoundError, match="run_ghost"):
                store.append_run_events(records)
            with pytest.raises(RunNotFoundError, match="run_ghost"):
                store.append_trace([make_event("run_ghost"), make_event("run_ghost")])
            # One stranger among a stored run's rows: the whole write is refused.
            with pytest.raises(RunNotFoundError, match="run_ghost"):
                store.write(events=records, trace=[make_event(run.id, event_id="evt_mixed")])
        assert [record.seq for record in store.run_events(run.id)] == [1, 2]
        assert store.trace(run.id) == []
        assert store.run_events("run_ghost") == [] and store.trace("run_ghost") == []


def test_deleting_a_run_by_hand_deletes_its_events_and_trace(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        for run_id in ("run_gone", "run_kept"):
            store.create_run(make_run(run_id))
            store.append_run_events(
                [
                    RunEventRecord(
                        run_id=run_id,
                        seq=1,
                        type="run.started",
                        task_id=None,
                        at=ago(0),
                        data={},
                    )
                ]
            )
            store.append_trace([make_event(run_id)])
    if backend.kind == "sqlite":  # foreign keys act on connections that turn them on
        import sqlite3

        with closing(sqlite3.connect(backend.location, isolation_level=None)) as conn:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("DELETE FROM runs WHERE id = 'run_gone'")
    else:
        backend.sql("DELETE FROM runs WHERE id = 'run_gone'")
    assert backend.query("SELECT DISTINCT run_id FROM run_events") == [("run_kept",)]
    assert backend.query("SELECT DISTINCT run_id FROM trace_events") == [("run_kept",)]

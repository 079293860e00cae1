"""Several processes share one store without losing or corrupting writes."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from tests.store import children
from tests.store.backends import StoreBackend
from tests.store.builders import make_event, make_run
from tests.store.children import holding
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.store.migrations import MIGRATIONS
from thoughtline.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow  # many processes opening one database

WRITES = 200


def test_two_processes_open_a_new_store_and_write_at_once(
    backend: StoreBackend, tmp_path: Path
) -> None:
    location = backend.location
    if backend.kind == "sqlite":
        location = str(tmp_path / "home" / "thoughtline.db")  # no file nor directory yet
        backend = StoreBackend("sqlite", location)
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(2)
    workers = [
        spawn.Process(target=children.write_many, args=(location, worker, WRITES, barrier))
        for worker in range(2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join()

    assert [process.exitcode for process in workers] == [0, 0]
    if backend.kind == "sqlite":
        assert backend.query("PRAGMA integrity_check") == [("ok",)]
    # Both processes raced to create the schema; each migration ran exactly once.
    order = "rowid" if backend.kind == "sqlite" else "position"
    assert [row[0] for row in backend.query(f"SELECT name FROM migrations ORDER BY {order}")] == [
        migration.name for migration in MIGRATIONS
    ]
    event_ids = [row[0] for row in backend.query("SELECT id FROM trace_events ORDER BY seq")]
    expected = {f"w{worker}_{n:04d}" for worker in range(2) for n in range(WRITES)}
    store = backend.open()
    runs = store.list_runs(limit=10 * WRITES)
    assert {run.id.removeprefix("run_") for run in runs} == expected
    assert len(runs) == 2 * WRITES
    assert {event_id.removeprefix("evt_") for event_id in event_ids} == expected
    assert len(event_ids) == 2 * WRITES
    for worker in range(2):
        # Each process's events appear in the order that process wrote them.
        own = [event_id for event_id in event_ids if event_id.startswith(f"evt_w{worker}_")]
        assert own == sorted(own)
    for run in runs:
        assert run.status == "completed"
        writer, n = run.id.removeprefix("run_w").split("_")
        assert [(task.status, task.output) for task in run.tasks] == [
            ("done", f"output {writer}/{int(n)}")
        ]
    assert recover_interrupted(store) == []  # every run was finished by its writer
    store.close()


def test_many_processes_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    # Switching a new file to WAL is refused at once (no busy wait) while another process
    # holds the lock; every opener must still succeed.
    spawn = multiprocessing.get_context("spawn")
    for attempt in range(3):
        path = tmp_path / f"attempt{attempt}" / "thoughtline.db"
        barrier = spawn.Barrier(6)
        openers = [
            spawn.Process(target=children.open_and_close, args=(str(path), barrier))
            for _ in range(6)
        ]
        for process in openers:
            process.start()
        for process in openers:
            process.join()
        assert [process.exitcode for process in openers] == [0] * 6
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("SELECT COUNT(*) FROM migrations").fetchone() == (len(MIGRATIONS),)


def test_reads_answer_while_a_write_waits_for_another_processs_lock(tmp_path: Path) -> None:
    """Another process (a CLI run) holds the file's write lock; this process's write
    waits for it in a thread, as the daemon's writer does. Reads, which the daemon makes
    on its event loop, answer meanwhile: they never wait for that write. The write lands
    once the lock is let go."""
    path = tmp_path / "home" / "thoughtline.db"
    store = SQLiteStore(path)
    store.create_run(make_run("run_r"))
    store.append_trace([make_event("run_r", event_id="before")])
    failures: list[BaseException] = []

    def write() -> None:
        try:
            store.write_prepared([store.prepare(trace=[make_event("run_r", event_id="after")])])
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)

    writing = threading.Thread(target=write)
    try:
        with holding(path, "BEGIN IMMEDIATE"):
            writing.start()
            writing.join(0.5)
            assert writing.is_alive()  # waiting for the other process's lock
            run = store.get_run("run_r")
            assert run is not None
            assert [listed.id for listed in store.list_runs()] == ["run_r"]
            assert [event.id for event in store.trace("run_r")] == ["before"]
            assert store.run_events("run_r") == []
            assert writing.is_alive()  # every read answered while the write still waited
    finally:
        if writing.ident is not None:  # started
            writing.join(30)
    assert not failures
    assert [event.id for event in store.trace("run_r")] == ["before", "after"]
    store.close()

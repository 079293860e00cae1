"""The PostgreSQL write path across a server restart: a pooled connection the restart
broke is never used for a write that then fails — it is noticed when lent (the server
told it), or the write, which failed before COMMIT was sent, is written once on another
connection — and a write whose COMMIT may have been applied is never written again."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

import os
import time
from collections.abc import Iterator
from contextlib import closing

import psycopg

from tests.store.builders import make_run, make_task
from tests.store.postgres_cluster import Cluster, running_cluster
from thoughtline.config import StoreSettings
from thoughtline.records import RunEventRecord, now_iso
from thoughtline.store import _postgres_connection
from thoughtline.store.base import RunNotFoundError, StoreError
from thoughtline.store.postgres import PostgresStore

pytestmark = pytest.mark.slow  # every test needs the session's PostgreSQL cluster


@pytest.fixture
def restartable(postgres_cluster: Cluster) -> Iterator[Cluster]:
    """A cluster of its own: it is restarted under a store that stays open."""
    with running_cluster(postgres_cluster.binaries) as cluster:
        yield cluster


def _events(run_id: str, first: int, count: int) -> list[RunEventRecord]:
    return [
        RunEventRecord(
            run_id=run_id, seq=seq, type="answer.delta", task_id=None, at=now_iso(), data={}
        )
        for seq in range(first, first + count)
    ]


def _restart(cluster: Cluster) -> None:
    cluster.stop("fast")
    cluster.start()


def test_a_connection_a_restart_broke_is_not_lent_however_recently_used(
    restartable: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No check for idleness: only what the server told the connection gives it away.
    monkeypatch.setattr(_postgres_connection, "IDLE_CHECK_S", 3600.0)
    with closing(PostgresStore(restartable.dsn())) as store:
        store.create_run(make_run("run_before"))
        _restart(restartable)
        # A read first: a read is never tried twice, so a broken connection would fail it.
        stored = store.get_run("run_before")
        assert stored is not None
        store.append_run_events(_events("run_before", 1, 3))
        assert [event.seq for event in store.run_events("run_before")] == [1, 2, 3]


def test_a_write_on_a_connection_broken_unseen_is_written_once_on_another(
    restartable: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check when lent sees nothing (as when the restart happens just after it):
    # the write fails before COMMIT is sent and is written again, once.
    monkeypatch.setattr(_postgres_connection, "IDLE_CHECK_S", 3600.0)
    monkeypatch.setattr(_postgres_connection, "_has_input", lambda conn: False)
    with closing(PostgresStore(restartable.dsn())) as store:
        store.create_run(make_run("run_before"))
        _restart(restartable)
        store.append_run_events(_events("run_before", 1, 3))
        assert [event.seq for event in store.run_events("run_before")] == [1, 2, 3]


def test_a_write_whose_commit_may_have_been_applied_is_not_written_again(
    restartable: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    with closing(PostgresStore(restartable.dsn())) as store:
        store.create_run(make_run("run_x"))
        commit = psycopg.Connection.commit
        calls: list[int] = []

        def lost_answer(conn: psycopg.Connection[object]) -> None:
            commit(conn)  # applied; its answer never arrives
            calls.append(1)
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(psycopg.Connection, "commit", lost_answer)
        with pytest.raises(StoreError) as raised:
            store.append_run_events(_events("run_x", 1, 2))
        monkeypatch.undo()
        assert raised.value.problem == "unavailable"
        assert "server closed the connection unexpectedly" in raised.value.message
        assert calls == [1]  # not sent again (again, it would fail: the rows are there)
        assert [event.seq for event in store.run_events("run_x")] == [1, 2]


def test_an_update_of_a_missing_run_in_a_pipeline_rolls_back_the_whole_write(
    postgres_dsn: str,
) -> None:
    # Every statement is sent before any count is read: nothing may be committed.
    with closing(PostgresStore(postgres_dsn)) as store:
        stored = make_run("run_here")
        store.create_run(stored)
        missing = make_run("run_gone")
        writes = [
            store.prepare(events=_events("run_here", 1, 2)),
            store.prepare(run=missing),
            store.prepare(events=_events("run_here", 3, 2)),
        ]
        with pytest.raises(RunNotFoundError, match="No run 'run_gone'"):
            store.write_prepared(writes)
        assert store.run_events("run_here") == []
        store.write_prepared([writes[0], writes[2]])
        assert [event.seq for event in store.run_events("run_here")] == [1, 2, 3, 4]


def test_many_runs_and_tasks_updated_in_one_statement_each_are_read_back_whole(
    postgres_dsn: str,
) -> None:
    with closing(PostgresStore(postgres_dsn)) as store:
        first, second = make_run("run_a", tasks=2), make_run("run_b")
        for run in (first, second):
            store.create_run(run)
        tasks = [*first.tasks, *second.tasks]
        for number, task in enumerate(tasks):
            task.status, task.output = "done", f"answer {number} \u00e9\u4e2d"
            task.usage.input_tokens, task.timings.total_ms = 10 + number, 0.1 + number
        first.status, second.status = "completed", "failed"
        first.finished_at = second.finished_at = now_iso()
        store.write_prepared(
            [
                store.prepare(run=first, tasks=first.tasks),
                store.prepare(run=second, tasks=second.tasks),
            ]
        )
        for run in (first, second):
            stored = store.get_run(run.id)
            assert stored is not None
            assert (stored.status, stored.finished_at) == (run.status, run.finished_at)
            assert stored.tasks == [task for task in run.tasks]


def test_a_missing_task_among_many_updated_at_once_is_named_and_nothing_is_written(
    postgres_dsn: str,
) -> None:
    with closing(PostgresStore(postgres_dsn)) as store:
        here = make_run("run_here", tasks=2)
        store.create_run(here)
        stranger = make_task("run_here", 9)
        stranger.id = "task_not_stored"
        for task in (*here.tasks, stranger):
            task.status = "running"
        with pytest.raises(RunNotFoundError, match="No task 'task_not_stored' of run 'run_here'"):
            store.write_prepared(
                [
                    store.prepare(tasks=here.tasks, events=_events("run_here", 1, 2)),
                    store.prepare(tasks=[stranger]),
                ]
            )
        # A task of a run never stored: the run is named (its row is looked for first).
        gone = make_run("run_gone")
        with pytest.raises(RunNotFoundError, match=r"No run 'run_gone' in .* to write to"):
            store.write_prepared(
                [store.prepare(events=_events("run_here", 1, 2)), store.prepare(tasks=gone.tasks)]
            )
        stored = store.get_run("run_here")
        assert stored is not None and {task.status for task in stored.tasks} == {"queued"}
        assert store.run_events("run_here") == []


def test_runs_created_together_are_stored_whole_and_listed_latest_insert_first(
    postgres_dsn: str,
) -> None:
    with closing(PostgresStore(postgres_dsn)) as store:
        runs = [make_run(f"run_{number}", tasks=2) for number in range(3)]
        for run in runs:
            run.created_at = runs[0].created_at  # one millisecond: the insert order decides
        store.write_prepared([store.prepare(create=run) for run in runs])
        assert [run.id for run in store.list_runs()] == ["run_2", "run_1", "run_0"]
        for run in runs:
            stored = store.get_run(run.id)
            assert stored is not None
            assert stored.tasks == run.tasks
            assert (stored.request, stored.status, stored.created_at) == (
                run.request,
                run.status,
                run.created_at,
            )
        (owner,) = {row.owner_pid for row in store.unfinished_runs()}
        assert owner == os.getpid()


def _scans(dsn: str) -> dict[str, tuple[int, int]]:
    """Sequential and index scans of runs and tasks since the statistics were reset."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT relname, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables "
            "WHERE relname IN ('runs', 'tasks')"
        ).fetchall()
    return {str(name): (int(seq), int(idx)) for name, seq, idx in found}


def test_writes_read_their_rows_by_key_after_the_table_outgrew_their_cached_plans(
    postgres_dsn: str,
) -> None:
    # One connection: the plans its prepared statements keep are the ones every write uses.
    settings = StoreSettings(pool_min=1, pool_max=1)
    with closing(PostgresStore(postgres_dsn, settings=settings)) as store:
        pair = [make_run("run_a"), make_run("run_b")]
        for run in pair:
            store.create_run(run)
        # Past five executions a prepared statement keeps a generic plan, made here, while
        # runs and tasks hold two rows each (scanning them was then the cheaper plan).
        for number in range(8):
            for run in pair:
                run.tasks[0].output = f"answer {number}"
            store.write_prepared([store.prepare(run=run, tasks=run.tasks) for run in pair])
        store.write_prepared([store.prepare(create=make_run(f"run_{n:05d}")) for n in range(3000)])
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_reset()")
        for number in range(3):
            for run in pair:
                run.tasks[0].output = f"later {number}"
            store.write_prepared([store.prepare(run=run, tasks=run.tasks) for run in pair])
        with store._transaction() as conn:  # the writes' backend reports its counts now
            conn.execute("SELECT pg_stat_force_next_flush()")
        deadline = time.monotonic() + 10
        while (scans := _scans(postgres_dsn)).get("runs", (0, 0))[1] == 0:
            assert time.monotonic() < deadline, f"no scan of runs was counted: {scans}"
            time.sleep(0.05)
        assert scans["runs"][0] == 0, f"writes scanned the whole runs table: {scans}"
        assert scans["tasks"][0] == 0, f"writes scanned the whole tasks table: {scans}"
        stored = store.get_run("run_a")
        assert stored is not None
        assert stored.tasks[0].output == "later 2"

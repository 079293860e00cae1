"""The shared store: PostgreSQL, for daemons and workers on several machines.

- **Synchronous, with a pool.** The store protocol is synchronous and the runtime calls
  it from its event loop (sub-millisecond writes) and from threads, so this store uses
  psycopg 3's sync API and a :class:`psycopg_pool.ConnectionPool`: each call borrows a
  connection for one transaction. An async pool would need every caller to become async
  (or a loop per thread) for no gain here.
- **Same semantics as SQLite.** Same tables and named migrations
  (:mod:`thoughtline.store._postgres_schema`), same row mapping
  (:mod:`thoughtline.store._rows`); conditional writes (``replace_meta``,
  ``interrupt_run``) are single statements or lock the run's row first, so of racing
  processes on any machine exactly one wins.
- **Owners and their lease.** Each run records the process that owns it and a heartbeat
  stamped by the server's clock (one clock for every host). Besides every write, a
  thread refreshes the heartbeat of this store's unfinished runs every
  :data:`HEARTBEAT_INTERVAL_S`, so crash recovery on another host can presume the owner
  dead after a few missed beats instead of waiting for a long silence.
- **Live events across machines.** Appending run events notifies the channel
  :data:`~thoughtline.store._postgres_listen.CHANNEL` with the run's id and highest event
  number when the transaction commits; :meth:`PostgresStore.listen` follows them from
  any machine (the events stay in the table).
- **Deleting for retention.** ``DELETE`` removes rows from every query at once; the bytes
  stay in the table files until VACUUM reuses the space, and in the write-ahead log,
  backups and replicas until those are recycled — PostgreSQL's business, which
  :meth:`PostgresStore.purge_residue` says after a deletion.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType

import psycopg_pool

from thoughtline.records import TRACE_LAYERS, Run, RunEventRecord, Task, TraceEvent, TraceLayer
from thoughtline.store import _rows as rows
from thoughtline.store._postgres_connection import (
    Connection,
    closed_error,
    migrate,
    open_pool,
    usage_errors,
)
from thoughtline.store._postgres_dsn import server_location
from thoughtline.store._postgres_import import CopyCounts, copy_store
from thoughtline.store._postgres_lease import OwnerLease
from thoughtline.store._postgres_listen import (
    CHANNEL,
    RunEventListener,
    notification_payload,
)
from thoughtline.store._postgres_schema import (
    INSERT_RUN_EVENT,
    INSERT_TASK,
    INSERT_TRACE,
    NOW_SQL,
    UPDATE_TASK,
    run_params,
    task_params,
)
from thoughtline.store.base import PreparedWrite, RunNotFoundError, Store, UnfinishedRun
from thoughtline.store.owner import ProcessIdentity

__all__ = ["HEARTBEAT_INTERVAL_S", "PostgresStore"]

HEARTBEAT_INTERVAL_S = 10.0
"""How often an owner refreshes the heartbeat of its unfinished runs, writing or not."""

UNFINISHED = "('planned', 'running')"
RESIDUE = (
    "PostgreSQL keeps the bytes of deleted rows in its table files until VACUUM reuses "
    "the space, and in its write-ahead log, backups and replicas until they are recycled; "
    "the rows are gone from every query now, and VACUUM FULL trace_events, tasks, "
    "run_events rewrites those tables at once."
)


class PostgresStore(rows.TransitionWrites, Store):
    """The :class:`~thoughtline.store.base.Store` on a PostgreSQL database named by a
    connection string (``postgresql://user@host:5432/dbname``); missing schema
    migrations are applied when it is opened."""

    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S
    live_flush_s: float = 0.02  # each append wakes followers on every daemon (NOTIFY)
    writes_wait_on_network: bool = True
    deletion_erases: bool = False  # deleted bytes stay until VACUUM (RESIDUE)

    def __init__(self, dsn: str, *, heartbeat_interval_s: float | None = None) -> None:
        self.location = server_location(dsn)
        self._dsn = dsn
        if heartbeat_interval_s is not None:
            self.heartbeat_interval_s = heartbeat_interval_s
        migrate(dsn)
        self._pool: psycopg_pool.ConnectionPool[Connection] | None = open_pool(dsn)
        self._residue: str | None = None
        self._lease = OwnerLease(self._beat, self.heartbeat_interval_s)

    # -- connections -----------------------------------------------------------------
    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One transaction on a pooled connection, committed when the block ends."""
        pool = self._pool
        if pool is None:
            raise closed_error(self.location)
        with usage_errors(self.location), pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self._lease.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- runs and tasks --------------------------------------------------------------
    @staticmethod
    def new_run_row(run: Run) -> tuple[object, ...]:
        """A new run's row: its fields and this process as its owner."""
        owner = ProcessIdentity.current()
        return (*run_params(run), owner.host, owner.pid, owner.start_time, owner.boot_id)

    task_row = staticmethod(task_params)

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        # The runtime writes from a thread (writes_wait_on_network): waiting is fine.
        with self._transaction() as conn:
            with conn.cursor() as cursor:
                for run_row, task_rows in write.created:
                    cursor.execute(INSERT_RUN, run_row)
                    cursor.executemany(INSERT_TASK, task_rows)
            # The runs' rows first, as every write of a run: interrupt_run locks them too.
            # A run that is not there updates no row: refused below before anything sticks.
            touched = _touch(conn, sorted(write.run_ids))
            for status, finished_at, run_id in write.runs:
                if run_id not in touched:
                    raise RunNotFoundError(f"No run {run_id!r} in {self.location} to update.")
                conn.execute(
                    "UPDATE runs SET status = %s, finished_at = %s WHERE id = %s",
                    (status, finished_at, run_id),
                )
            with conn.cursor() as cursor:
                if write.events:
                    cursor.executemany(INSERT_RUN_EVENT, write.events)
                if write.trace:
                    cursor.executemany(INSERT_TRACE, write.trace)
            for task in write.tasks:
                if conn.execute(UPDATE_TASK, task).rowcount == 0:
                    raise RunNotFoundError(
                        f"No task {task['id']!r} of run {task['run_id']!r} in {self.location} "
                        "to update."
                    )
            # Delivered to every listener when this commits: ids only, events stay here.
            last_seq: dict[str, int] = {}
            for event_run, event_seq, *_rest in write.events:
                assert isinstance(event_run, str)
                assert isinstance(event_seq, int)
                last_seq[event_run] = max(event_seq, last_seq.get(event_run, 0))
            for notified, seq in sorted(last_seq.items()):
                conn.execute(
                    "SELECT pg_notify(%s, %s)", (CHANNEL, notification_payload(notified, seq))
                )
        for run_row, _tasks in write.created:
            if run_row[1] in ("planned", "running"):
                self._lease.hold(str(run_row[0]))
        for status, _finished_at, run_id in write.runs:
            if status not in ("planned", "running"):
                self._lease.release(run_id)
        return True

    def get_run(self, run_id: str) -> Run | None:
        with self._transaction() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = %s", (run_id,)).fetchone()
            if row is None:
                return None
            tasks = conn.execute(
                "SELECT * FROM tasks WHERE run_id = %s ORDER BY position, row_order", (run_id,)
            ).fetchall()
        return rows.run_from_row(row, [rows.task_from_row(task) for task in tasks])

    def latest_run(self) -> Run | None:
        runs = self.list_runs(limit=1)
        return runs[0] if runs else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        if limit <= 0:
            return []
        with self._transaction() as conn:
            # row_order breaks ties between runs created in the same millisecond.
            run_rows = conn.execute(
                "SELECT * FROM runs ORDER BY created_at DESC, row_order DESC LIMIT %s", (limit,)
            ).fetchall()
            task_rows = conn.execute(
                "SELECT * FROM tasks WHERE run_id = ANY(%s) ORDER BY position, row_order",
                ([row["id"] for row in run_rows],),
            ).fetchall()
        return rows.runs_with_tasks(run_rows, task_rows)

    # -- trace and run event log -----------------------------------------------------
    def run_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        # starts_with compares code points, whatever the database's collation.
        with self._transaction() as conn:
            found = conn.execute(
                'SELECT id FROM runs WHERE starts_with(id, %s) ORDER BY id COLLATE "C" DESC LIMIT %s',
                (prefix, limit),
            ).fetchall()
        return [row["id"] for row in found]

    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        self.write(trace=events)

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        query = "SELECT * FROM trace_events WHERE run_id = %s"
        params: tuple[str, ...] = (run_id,)
        if layer is not None:
            query += " AND layer = %s"
            params += (layer,)
        with self._transaction() as conn:
            found = conn.execute(query + " ORDER BY seq", params).fetchall()
        return [rows.trace_event_from_row(row) for row in found]

    def append_run_events(self, events: Sequence[RunEventRecord]) -> None:
        self.write(events=events)

    def run_events(
        self,
        run_id: str,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        types: Collection[str] | None = None,
    ) -> list[RunEventRecord]:
        query = f"SELECT {rows.RUN_EVENT_COLUMNS} FROM run_events WHERE run_id = %s AND seq > %s"
        params: list[object] = [run_id, after_seq]
        if types is not None:
            query += " AND type = ANY(%s)"
            params.append(sorted(types))
        query += " ORDER BY seq"
        if limit is not None:
            query += " LIMIT %s"
            params.append(max(limit, 0))
        with self._transaction() as conn:
            found = conn.execute(query, params).fetchall()
        return [rows.run_event_from_row(row) for row in found]

    # -- deleting what expired -------------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        counts: dict[TraceLayer, int] = dict.fromkeys(TRACE_LAYERS, 0)
        verb = "SELECT COUNT(*) AS n FROM" if dry_run else "DELETE FROM"
        with self._transaction() as conn:
            for layer, cutoff in cutoffs.items():
                cursor = conn.execute(
                    f"{verb} trace_events WHERE layer = %s AND at_epoch < %s", (layer, cutoff)
                )
                if dry_run:
                    found = cursor.fetchone()
                    counts[layer] = 0 if found is None else int(found["n"])
                else:
                    counts[layer] = cursor.rowcount
        if not dry_run and any(counts.values()):
            self._residue = RESIDUE
        return counts

    def clear_displayed_reasoning(
        self, finished_before: str, notice: str, *, dry_run: bool = False
    ) -> int:
        select = (
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < %s "
            "AND (reasoning IS NOT NULL OR (reasoning_parts_json IS NOT NULL "
            "AND reasoning_parts_json != '[]'))"
        )
        with self._transaction() as conn:
            task_ids = [row["id"] for row in conn.execute(select, (finished_before,)).fetchall()]
            if dry_run:
                return len(task_ids)
            changed = bool(task_ids)
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE tasks SET reasoning = NULL, reasoning_parts_json = '[]', "
                    "reasoning_notice = COALESCE(reasoning_notice || ' ', '') || %s "
                    "WHERE id = %s",
                    [(notice, task_id) for task_id in task_ids],
                )
            changed |= (
                conn.execute(
                    "DELETE FROM run_events WHERE type = 'reasoning.delta' AND at < %s",
                    (finished_before,),
                ).rowcount
                > 0
            )
            snapshots = conn.execute(
                "SELECT run_id, seq, data_json FROM run_events WHERE at < %s AND type != "
                "'reasoning.delta' AND data_json LIKE '%%\"reasoning\":%%'",
                (finished_before,),
            ).fetchall()
            for snapshot in snapshots:
                data = json.loads(snapshot["data_json"])
                if rows.without_reasoning(data):
                    conn.execute(
                        "UPDATE run_events SET data_json = %s WHERE run_id = %s AND seq = %s",
                        (rows.dump(data), snapshot["run_id"], snapshot["seq"]),
                    )
                    changed = True
        if changed:
            self._residue = RESIDUE
        return len(task_ids)

    def purge_residue(self) -> str | None:
        return self._residue

    # -- small shared values ---------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._transaction() as conn:
            found = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return None if found is None else str(found["value"])

    def set_meta(self, key: str, value: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def replace_meta(self, key: str, expected: str | None, value: str) -> bool:
        # One statement each way: the unique key (insert) or the row lock and re-check
        # of the WHERE clause (update) let exactly one of racing processes through.
        with self._transaction() as conn:
            if expected is None:
                cursor = conn.execute(
                    "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                    (key, value),
                )
            else:
                cursor = conn.execute(
                    "UPDATE meta SET value = %s WHERE key = %s AND value = %s",
                    (value, key, expected),
                )
            return cursor.rowcount == 1

    # -- runs whose owner may be gone ------------------------------------------------
    def unfinished_runs(self) -> list[UnfinishedRun]:
        with self._transaction() as conn:
            found = conn.execute(
                "SELECT id, owner_host, owner_pid, owner_start_time, owner_boot_id, "
                "heartbeat_at, created_at, "
                "(SELECT COUNT(*) FROM run_events WHERE run_id = runs.id) AS event_count, "
                "(SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = runs.id) "
                f"AS last_event_seq FROM runs WHERE status IN {UNFINISHED}"
            ).fetchall()
        return [
            UnfinishedRun(
                run_id=row["id"],
                owner_host=row["owner_host"],
                owner_pid=row["owner_pid"],
                owner_start_time=row["owner_start_time"],
                owner_boot_id=row["owner_boot_id"],
                heartbeat_at=row["heartbeat_at"],
                created_at=row["created_at"],
                event_count=int(row["event_count"]),
                last_event_seq=int(row["last_event_seq"]),
            )
            for row in found
        ]

    def interrupt_run(
        self,
        seen: UnfinishedRun,
        *,
        finished_at: str,
        tasks: Sequence[Task],
        event: TraceEvent,
    ) -> bool:
        with self._transaction() as conn:
            # Every write of a run updates its row first, so holding the row's lock
            # orders this check after any write in flight, on any machine.
            locked = conn.execute(
                f"SELECT heartbeat_at FROM runs WHERE id = %s AND status IN {UNFINISHED} "
                "FOR UPDATE",
                (seen.run_id,),
            ).fetchone()
            if locked is None or locked["heartbeat_at"] != seen.heartbeat_at:
                return False
            log = conn.execute(
                "SELECT COUNT(*) AS n, COALESCE(MAX(seq), 0) AS last FROM run_events "
                "WHERE run_id = %s",
                (seen.run_id,),
            ).fetchone()
            if log is None or (log["n"], log["last"]) != (seen.event_count, seen.last_event_seq):
                return False
            conn.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = %s WHERE id = %s",
                (finished_at, seen.run_id),
            )
            with conn.cursor() as cursor:
                cursor.executemany(UPDATE_TASK, [task_params(task) for task in tasks])
            conn.execute(INSERT_TRACE, rows.trace_params(event))
        return True

    def copy_from(self, source: Store) -> CopyCounts:
        """Copy every run of ``source`` (tasks, trace events of every layer, run event
        log) into this store, which must hold no run yet, in one transaction; see
        :mod:`thoughtline.store._postgres_import`."""
        with self._transaction() as conn:
            return copy_store(source, conn, target=self.location)

    def listen(self) -> RunEventListener:
        """A listener for the run events any process appends to this database (see
        :mod:`thoughtline.store._postgres_listen`); the caller closes it."""
        return RunEventListener(self._dsn)

    def store_time(self) -> float:
        """The server's clock (seconds since the epoch), which heartbeats are stamped by."""
        with self._transaction() as conn:
            found = conn.execute("SELECT extract(epoch FROM clock_timestamp()) AS now").fetchone()
        assert found is not None
        return float(found["now"])

    # -- the owner's lease -----------------------------------------------------------
    def _beat(self, owned: list[str]) -> set[str]:
        """Refresh the heartbeat of ``owned`` runs; the ids of those still unfinished."""
        with self._transaction() as conn:
            beating = conn.execute(
                f"UPDATE runs SET heartbeat_at = {NOW_SQL} WHERE id = ANY(%s) "
                f"AND status IN {UNFINISHED} RETURNING id",
                (owned,),
            ).fetchall()
        return {row["id"] for row in beating}


_NEW_RUN_COLUMNS = (
    *rows.RUN_FIELDS, "owner_host", "owner_pid", "owner_start_time", "owner_boot_id"
)  # fmt: skip
INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(_NEW_RUN_COLUMNS)}, heartbeat_at) "
    f"VALUES ({', '.join(['%s'] * len(_NEW_RUN_COLUMNS))}, {NOW_SQL})"
)


def _touch(conn: Connection, run_ids: Sequence[str]) -> set[str]:
    """Refresh the heartbeat of runs about to be written (the owner is evidently alive);
    in sorted order, so two transactions never wait on each other's rows. The ids of
    the runs that exist."""
    touched = conn.execute(
        f"UPDATE runs SET heartbeat_at = {NOW_SQL} WHERE id = ANY(%s) RETURNING id",
        (list(run_ids),),
    ).fetchall()
    return {row["id"] for row in touched}

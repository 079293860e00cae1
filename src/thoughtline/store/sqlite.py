"""The embedded store: one SQLite file (WAL) shared by every thoughtline process of a user.

- **Concurrency.** A CLI run and a daemon may write the same file at once. Each write is
  one short ``BEGIN IMMEDIATE`` transaction: the write lock is taken before anything is
  read, so a transaction never has to upgrade a stale snapshot (which SQLite refuses
  with ``SQLITE_BUSY`` however long the busy timeout). Other writers wait up to
  :data:`~thoughtline.store._sqlite_connection.BUSY_TIMEOUT_S`. Within a process one
  connection writes and another reads, each shared by all threads and guarded by a lock
  of its own: a write waiting in a thread for another process's lock (up to that
  timeout) never holds up a read, such as the daemon's on its event loop (WAL readers
  do not wait for writers).
- **Deleting for retention.** Trace events are rows with their layer, so
  :meth:`SQLiteStore.delete_trace_before` reaches every one. ``secure_delete`` zeroes
  deleted content and a ``TRUNCATE`` checkpoint empties the WAL, so purged reasoning does
  not linger in free pages or the log. The checkpoint cannot finish while another
  connection reads an older snapshot; then :meth:`SQLiteStore.purge_residue` says so,
  and the next deletion finishes the job.
- **Owners.** Each run records the process that owns it (host, pid, process start time,
  boot id) and a heartbeat refreshed by every write, for crash recovery to judge.
- **Opening** creates private files, checks integrity and migrates
  (:mod:`thoughtline.store._sqlite_connection`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from thoughtline.records import (
    TRACE_LAYERS,
    Run,
    RunEventRecord,
    Task,
    TraceEvent,
    TraceLayer,
    now_iso,
)
from thoughtline.store import _rows as rows
from thoughtline.store._sqlite_checkpoint import CHECKPOINT_INTERVAL_S, WalCheckpointer
from thoughtline.store._sqlite_connection import (
    BUSY_TIMEOUT_S,
    closed_error,
    open_connection,
    problem_of,
    side_file,
    usage_errors,
)
from thoughtline.store.base import PreparedWrite, RunNotFoundError, Store, UnfinishedRun
from thoughtline.store.owner import ProcessIdentity

__all__ = ["ERASE_WAIT_S", "ProcessIdentity", "SQLiteStore"]

ERASE_WAIT_S = 5.0
"""How long a deletion waits for other connections to let the checkpoint overwrite what
it removed, before saying the content is still on disk."""


class SQLiteStore(rows.TransitionWrites, Store):
    """The :class:`~thoughtline.store.base.Store` on a SQLite file, created on first use
    (missing schema migrations are applied when it is opened)."""

    live_flush_s: float = 0.1  # other processes poll the log at about this pace
    writes_wait_on_network: bool = False
    deletion_erases: bool = True

    def __init__(self, path: Path, *, checkpoint_interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._read_lock = threading.Lock()
        self._residue: str | None = None
        self._conn: sqlite3.Connection | None = self._open()
        # Commits only append to the WAL; a thread copies it into the file (checkpoints
        # fsync, and took up to 90 ms inside a commit on the event loop).
        self._conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            self._reader: sqlite3.Connection | None = _reading_connection(self.path)
        except BaseException:
            self._conn.close()
            raise
        self._checkpointer = WalCheckpointer(self.path, checkpoint_interval_s)

    # -- connection ------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        return open_connection(self.path)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise closed_error(self.path)
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed when the block ends."""
        with self._lock, usage_errors(self.path):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            with _committing(conn):
                yield conn

    @contextmanager
    def _own_connection(self, timeout_s: float) -> Iterator[sqlite3.Connection]:
        """A connection of this store's file but not its connection, nor its lock: for a
        purge, which may delete a day of trace and then wait for a checkpoint
        (:meth:`_erase`). A purge in a thread so leaves the event loop's reads and
        writes to go on (writes find the file's write lock taken and wait in the
        writer's thread, as for another process's)."""
        self._connection()  # a closed store refuses, as for every other call
        with usage_errors(self.path):
            conn = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
            try:
                yield conn
            finally:
                conn.close()

    @contextmanager
    def _purging(self) -> Iterator[sqlite3.Connection]:
        """A purge's ``BEGIN IMMEDIATE`` transaction, on a connection of its own."""
        with self._own_connection(BUSY_TIMEOUT_S) as conn:
            # Per connection: deleted content is zeroed (see open_connection).
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            with _committing(conn):
                yield conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction, so related SELECTs see the same snapshot; ended promptly
        because an open snapshot keeps checkpoints from emptying the WAL."""
        with self._read_lock, usage_errors(self.path):
            conn = self._reader
            if conn is None:
                raise closed_error(self.path)
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def close(self) -> None:
        self._checkpointer.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def __enter__(self) -> SQLiteStore:
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
        """A new run's row: its fields, this process as its owner, its heartbeat now."""
        owner = ProcessIdentity.current()
        return (
            *(getattr(run, name) for name in rows.RUN_FIELDS),
            *(owner.host, owner.pid, owner.start_time, owner.boot_id, now_iso()),
        )

    task_row = staticmethod(rows.task_params)

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        # Without waiting, neither for the file's write lock nor for this store's
        # connection, which a thread of this process may hold (the writer's, waiting
        # for another process's lock).
        if not self._lock.acquire(blocking=wait):
            return False
        try:
            with usage_errors(self.path):
                conn = self._connection()
                if wait:
                    conn.execute("BEGIN IMMEDIATE")
                elif not _begin_at_once(conn):
                    return False
                with _committing(conn):
                    self._write_rows(conn, write)
        finally:
            self._lock.release()
        self._checkpointer.wrote()
        return True

    def _write_rows(self, conn: sqlite3.Connection, write: PreparedWrite) -> None:
        for run_row, task_rows in write.created:
            conn.execute(INSERT_RUN, run_row)
            conn.executemany(rows.INSERT_TASK, task_rows)
        if write.events:
            conn.executemany(
                f"INSERT INTO run_events ({rows.RUN_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                write.events,
            )
        for status, finished_at, run_id in write.runs:
            cursor = conn.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                (status, finished_at, run_id),
            )
            if cursor.rowcount == 0:
                raise RunNotFoundError(f"No run {run_id!r} in {self.path} to update.")
        for task in write.tasks:
            if conn.execute(rows.UPDATE_TASK, task).rowcount == 0:
                raise RunNotFoundError(
                    f"No task {task['id']!r} of run {task['run_id']!r} in {self.path} to update."
                )
        if write.trace:
            conn.executemany(rows.INSERT_TRACE, write.trace)
        # Every write proves the owner alive (streaming deltas as much as the rest).
        _touch(conn, sorted(write.run_ids))

    def get_run(self, run_id: str) -> Run | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            tasks = conn.execute(
                "SELECT * FROM tasks WHERE run_id = ? ORDER BY position, rowid", (run_id,)
            ).fetchall()
        return rows.run_from_row(row, [rows.task_from_row(task) for task in tasks])

    def latest_run(self) -> Run | None:
        runs = self.list_runs(limit=1)
        return runs[0] if runs else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        if limit <= 0:
            return []
        # rowid breaks ties between runs created in the same millisecond: later insert first.
        newest = "SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?"
        with self._read() as conn:
            run_rows = conn.execute(
                "SELECT * FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            ).fetchall()
            task_rows = conn.execute(
                f"SELECT * FROM tasks WHERE run_id IN ({newest}) ORDER BY position, rowid",
                (limit,),
            ).fetchall()
        return rows.runs_with_tasks(run_rows, task_rows)

    # -- trace and run event log -----------------------------------------------------
    def run_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        # A range on the primary key: ids are ASCII, below U+FFFF in SQLite's byte order.
        with self._read() as conn:
            found = conn.execute(
                "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id DESC LIMIT ?",
                (prefix, prefix + "\uffff", limit),
            ).fetchall()
        return [row["id"] for row in found]

    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        self.write(trace=events)

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        query = "SELECT * FROM trace_events WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if layer is not None:
            query += " AND layer = ?"
            params += (layer,)
        with self._read() as conn:
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
        query = f"SELECT {rows.RUN_EVENT_COLUMNS} FROM run_events WHERE run_id = ? AND seq > ?"
        params: list[object] = [run_id, after_seq]
        if types is not None:
            wanted = sorted(types)
            query += f" AND type IN ({', '.join('?' * len(wanted))})"
            params += wanted
        with self._read() as conn:
            found = conn.execute(
                query + " ORDER BY seq LIMIT ?", (*params, -1 if limit is None else limit)
            ).fetchall()
        return [rows.run_event_from_row(row) for row in found]

    # -- deleting what expired -------------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        counts: dict[TraceLayer, int] = dict.fromkeys(TRACE_LAYERS, 0)
        if dry_run:
            with self._read() as conn:
                for layer, cutoff in cutoffs.items():
                    counts[layer] = conn.execute(
                        "SELECT COUNT(*) FROM trace_events WHERE layer = ? AND at_epoch < ?",
                        (layer, cutoff),
                    ).fetchone()[0]
            return counts
        with self._purging() as conn:
            for layer, cutoff in cutoffs.items():
                counts[layer] = conn.execute(
                    "DELETE FROM trace_events WHERE layer = ? AND at_epoch < ?", (layer, cutoff)
                ).rowcount
        # Also when nothing was deleted now: an earlier deletion may have left its
        # deleted content on disk (see purge_residue), and this finishes it.
        self._erase()
        return counts

    def clear_displayed_reasoning(
        self, finished_before: str, notice: str, *, dry_run: bool = False
    ) -> int:
        select = (
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ? "
            "AND (reasoning IS NOT NULL OR (reasoning_parts_json IS NOT NULL "
            "AND reasoning_parts_json != '[]'))"
        )
        if dry_run:
            with self._read() as conn:
                return len(conn.execute(select, (finished_before,)).fetchall())
        with self._purging() as conn:
            changes_before = conn.total_changes
            task_ids = [row[0] for row in conn.execute(select, (finished_before,)).fetchall()]
            conn.executemany(
                "UPDATE tasks SET reasoning = NULL, reasoning_parts_json = '[]', "
                "reasoning_notice = COALESCE(reasoning_notice || ' ', '') || ? WHERE id = ?",
                [(notice, task_id) for task_id in task_ids],
            )
            conn.execute(
                "DELETE FROM run_events WHERE type = 'reasoning.delta' AND at < ?",
                (finished_before,),
            )
            snapshots = conn.execute(
                "SELECT run_id, seq, data_json FROM run_events WHERE at < ? AND type != "
                "'reasoning.delta' AND data_json LIKE '%\"reasoning\":%'",
                (finished_before,),
            ).fetchall()
            for run_id, seq, data_json in snapshots:
                data = json.loads(data_json)
                if rows.without_reasoning(data):
                    conn.execute(
                        "UPDATE run_events SET data_json = ? WHERE run_id = ? AND seq = ?",
                        (rows.dump(data), run_id, seq),
                    )
            changed = bool(task_ids) or conn.total_changes != changes_before
        if changed:
            self._erase()
        return len(task_ids)

    def purge_residue(self) -> str | None:
        return self._residue

    def _erase(self) -> None:
        """Overwrite deleted content in every file: secure_delete zeroed it in the pages
        just written, which in WAL mode sit in the log while the main file (and older
        log frames) still hold the old bytes. A ``TRUNCATE`` checkpoint copies the log
        into the main file and empties it — unless a connection of another process
        reads an older snapshot or writes, which it waits :data:`ERASE_WAIT_S` for."""
        with self._own_connection(ERASE_WAIT_S) as conn:  # the wait holds no lock here
            conn.execute(f"PRAGMA busy_timeout = {int(ERASE_WAIT_S * 1000)}")
            busy, log_frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            self._residue = None
            return
        wal = side_file(self.path, "-wal")
        self._residue = (
            f"What the purge removed is still on disk in {self.path} and {wal}: another "
            f"process held the database open for more than {ERASE_WAIT_S:.0f} s (a "
            f"thoughtline daemon or run, or another program reading it; {copied} of "
            f"{log_frames} log pages were copied), so its pages could not be overwritten "
            "yet; run thoughtline purge again once that process has closed the database."
        )

    # -- small shared values ---------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._read() as conn:
            found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def replace_meta(self, key: str, expected: str | None, value: str) -> bool:
        with self._write() as conn:  # the write lock makes the check and the set one step
            found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if (None if found is None else found[0]) != expected:
                return False
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            return True

    # -- runs whose owner may be gone ------------------------------------------------
    def unfinished_runs(self) -> list[UnfinishedRun]:
        with self._read() as conn:
            found = conn.execute(
                "SELECT id, owner_host, owner_pid, owner_start_time, owner_boot_id, "
                "heartbeat_at, created_at, "
                "(SELECT COUNT(*) FROM run_events WHERE run_id = runs.id), "
                "(SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = runs.id) "
                "FROM runs WHERE status IN ('planned', 'running')"
            ).fetchall()
        return [
            UnfinishedRun(
                run_id=row[0],
                owner_host=row[1],
                owner_pid=row[2],
                owner_start_time=row[3],
                owner_boot_id=row[4],
                heartbeat_at=row[5],
                created_at=row[6],
                event_count=row[7],
                last_event_seq=row[8],
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
        with self._write() as conn:
            count, last_seq = conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?",
                (seen.run_id,),
            ).fetchone()
            if (count, last_seq) != (seen.event_count, seen.last_event_seq):
                return False
            marked = conn.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ? "
                "AND status IN ('planned', 'running') AND heartbeat_at IS ?",
                (finished_at, seen.run_id, seen.heartbeat_at),
            ).rowcount
            if not marked:
                return False
            conn.executemany(rows.UPDATE_TASK, [rows.task_params(task) for task in tasks])
            conn.execute(rows.INSERT_TRACE, rows.trace_params(event))
            return True


INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(rows.RUN_FIELDS)}, owner_host, owner_pid, "
    f"owner_start_time, owner_boot_id, heartbeat_at) "
    f"VALUES ({', '.join('?' * (len(rows.RUN_FIELDS) + 5))})"
)


def _reading_connection(path: Path) -> sqlite3.Connection:
    """A second connection to the file :func:`open_connection` just opened (created,
    checked and migrated), that only reads."""
    with usage_errors(path):
        # mode=rw: a file removed meanwhile is not created again, empty.
        uri = path.resolve().as_uri() + "?mode=rw"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA query_only = ON")
    return conn


@contextmanager
def _committing(conn: sqlite3.Connection) -> Iterator[None]:
    """Commit the open transaction when the block ends; roll it back if it raises."""
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _begin_at_once(conn: sqlite3.Connection) -> bool:
    """``BEGIN IMMEDIATE`` unless another connection holds the write lock (False)."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if problem_of(exc) != "locked":
            raise
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return True


def _touch(conn: sqlite3.Connection, run_ids: Sequence[str]) -> None:
    """Refresh the heartbeat of runs just written (the owner is evidently alive)."""
    stamp = now_iso()
    conn.executemany(
        "UPDATE runs SET heartbeat_at = ? WHERE id = ?", [(stamp, run_id) for run_id in run_ids]
    )

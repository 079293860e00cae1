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

import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from thoughtline.records import Run, TraceLayer, now_iso
from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import SQLITE
from thoughtline.store._sql_store import SqlStore
from thoughtline.store._sqlite_checkpoint import CHECKPOINT_INTERVAL_S, WalCheckpointer
from thoughtline.store._sqlite_connection import (
    BUSY_TIMEOUT_S,
    closed_error,
    open_connection,
    problem_of,
    side_file,
    usage_errors,
)
from thoughtline.store.base import PreparedWrite
from thoughtline.store.owner import ProcessIdentity

__all__ = ["ERASE_WAIT_S", "ProcessIdentity", "SQLiteStore"]

ERASE_WAIT_S = 5.0
_ERASE_RETRY_S = 0.05
"""How long a deletion waits for other connections to let the checkpoint overwrite what
it removed, before saying the content is still on disk."""


class SQLiteStore(SqlStore[sqlite3.Connection]):
    """The :class:`~thoughtline.store.base.Store` on a SQLite file, created on first use
    (missing schema migrations are applied when it is opened). Its queries are the
    shared ones (:mod:`thoughtline.store._sql_store`); this class owns the file's
    connections, locks, checkpoints and erasing."""

    dialect = SQLITE
    integrity_errors = (sqlite3.IntegrityError,)

    live_flush_s: float = 0.1  # other processes poll the log at about this pace
    writes_wait_on_network: bool = False
    deletion_erases: bool = True

    def __init__(self, path: Path, *, checkpoint_interval_s: float = CHECKPOINT_INTERVAL_S) -> None:
        self.path = Path(path)
        self._where = str(self.path)
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
    def _writing(self) -> Iterator[sqlite3.Connection]:
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
            conn.row_factory = sqlite3.Row
            # Per connection: deleted content is zeroed (see open_connection).
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            with _committing(conn):
                yield conn

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
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

    # -- runs and tasks --------------------------------------------------------------
    @staticmethod
    def new_run_row(run: Run) -> tuple[object, ...]:
        """A new run's row: its fields, this process as its owner, its heartbeat now."""
        owner = ProcessIdentity.current()
        return (
            *rows.run_values(run),
            *(owner.host, owner.pid, owner.start_time, owner.boot_id, now_iso()),
        )

    task_row = staticmethod(rows.task_params)
    tool_call_row = staticmethod(rows.tool_call_params)

    def _execute_many(
        self,
        conn: sqlite3.Connection,
        sql: str,
        params: Iterable[Sequence[object] | Mapping[str, object]],
    ) -> None:
        conn.executemany(sql, params)

    def _tuples(
        self, conn: sqlite3.Connection, sql: str, params: Sequence[object]
    ) -> list[tuple[Any, ...]]:
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

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

    # -- deleting what expired -------------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        counts = super().delete_trace_before(cutoffs, dry_run=dry_run)
        if not dry_run and not any(counts.values()):
            # Also when nothing was deleted now: an earlier deletion may have left its
            # deleted content on disk (see purge_residue), and this finishes it.
            self._erase()
        return counts

    def _deleted(self, tables: Collection[str]) -> None:
        self._erase()

    def purge_residue(self) -> str | None:
        return self._residue

    def vacuum(self) -> None:
        """Nothing to do: a deletion overwrites what it removed (``secure_delete``) and
        new rows reuse the free pages; ``VACUUM`` would rewrite the whole file while
        every other process waits."""
        return None

    def _erase(self) -> None:
        """Overwrite deleted content in every file: secure_delete zeroed it in the pages
        just written, which in WAL mode sit in the log while the main file (and older
        log frames) still hold the old bytes. A ``TRUNCATE`` checkpoint copies the log
        into the main file and empties it — unless a connection of another process
        reads an older snapshot or writes, which it waits :data:`ERASE_WAIT_S` for."""
        deadline = time.monotonic() + ERASE_WAIT_S
        with self._own_connection(ERASE_WAIT_S) as conn:  # the wait holds no lock here
            while True:
                left = max(deadline - time.monotonic(), 0.0)
                conn.execute(f"PRAGMA busy_timeout = {int(left * 1000)}")
                # SQLite answers busy at once, without waiting, while another checkpoint
                # runs: this process's own (held off here) or another process's (tried
                # again until the deadline).
                with self._checkpointer.running:
                    row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                busy, log_frames, copied = row
                if not busy or time.monotonic() >= deadline:
                    break
                time.sleep(min(_ERASE_RETRY_S, max(deadline - time.monotonic(), 0.0)))
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

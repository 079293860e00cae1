"""The embedded store: one SQLite file (WAL) shared by every thoughtline process of a user.

- **Concurrency.** A CLI run and a daemon may write the same file at once. Each write is
  one short ``BEGIN IMMEDIATE`` transaction: the write lock is taken before anything is
  read, so a transaction never has to upgrade a stale snapshot (which SQLite refuses
  with ``SQLITE_BUSY`` however long the busy timeout). Other writers wait up to
  :data:`BUSY_TIMEOUT_S`. Within a process one connection is shared by all threads and
  guarded by a lock.
- **Retention.** Trace events are rows with their layer, so :meth:`SQLiteStore.purge`
  reaches every one. ``secure_delete`` zeroes deleted content and a ``TRUNCATE``
  checkpoint empties the WAL, so purged reasoning does not linger in free pages or the
  log. The checkpoint cannot finish while another connection reads an older snapshot;
  then :meth:`SQLiteStore.purge_residue` says so, and the next purge finishes the job.
- **Crash recovery.** Each run records the process that owns it (host, pid, process
  start time, boot id) and a heartbeat refreshed by every write. Opening the store marks
  runs whose owner is gone as ``interrupted``, their unfinished tasks rebuilt from the run
  event log (:mod:`thoughtline.store.recovery`); runs of live processes are never touched.
- **Private files.** The home directory thoughtline creates is ``0700``; the database
  and its ``-wal``/``-shm`` files are ``0600`` (:mod:`thoughtline.store.files`).
- **Damage.** Opening runs ``quick_check`` (within :data:`INTEGRITY_CHECK_BUDGET_S`)
  before anything is written, so a damaged file is reported — and left byte for byte as
  it is — instead of being written to. Every SQLite failure reaches callers as one
  :class:`~thoughtline.store.base.StoreError` naming the file and what to do.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from thoughtline.errors import ConfigError
from thoughtline.records import (
    TRACE_LAYERS,
    ReasoningPartView,
    Run,
    RunEventRecord,
    Task,
    TaskError,
    TaskTimings,
    TaskUsage,
    TraceEvent,
    TraceLayer,
    new_id,
    now_iso,
)
from thoughtline.store.base import Store, StoreError
from thoughtline.store.files import create_private_file, make_private, make_private_dir
from thoughtline.store.migrations import apply_migrations, check_not_newer
from thoughtline.store.recovery import (
    UNFINISHED_TASK_STATUSES,
    Stop,
    interrupted_task,
    log_is_complete,
)

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process's transaction before giving up."""
HEARTBEAT_STALE_S = 15 * 60
"""A run owned by another host is presumed dead after this long without a write."""
ERASE_WAIT_S = 5.0
"""How long a purge waits for other connections to let the checkpoint overwrite what
it removed, before saying the content is still on disk."""
INTEGRITY_CHECK_BUDGET_S = 0.5
"""Opening checks the file's structure for at most this long (a few hundred MB); a
larger file is opened unchecked and damage is reported when a damaged page is read."""

_LAST_PURGE_KEY = "last_purge_at"
_UNFINISHED_RUNS = "('planned', 'running')"
_UNFINISHED_TASKS = "(" + ", ".join(f"'{status}'" for status in UNFINISHED_TASK_STATUSES) + ")"

# Columns named like the model's fields, so rows and records map by name.
_RUN_FIELDS = (
    "id", "status", "request", "chain_of_thought", "chain_of_thought_source",
    "worker_backend", "created_at", "finished_at",
)  # fmt: skip
_TASK_FIELDS = (
    "id", "run_id", "position", "role", "name", "provider", "model", "chain_of_thought",
    "chain_of_thought_source", "effort", "status", "executor", "output", "reasoning",
    "reasoning_status", "reasoning_notice",
)  # fmt: skip
_USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")
_TIMING_FIELDS = ("started_at", "finished_at", "first_reasoning_ms", "first_answer_ms", "total_ms")
_TASK_COLUMNS = (
    *_TASK_FIELDS, *_USAGE_FIELDS, *_TIMING_FIELDS,
    "after_json", "reasoning_parts_json", "error_code", "error_message", "error_retryable",
)  # fmt: skip
_INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(_TASK_COLUMNS)}) "
    f"VALUES ({', '.join(':' + column for column in _TASK_COLUMNS)})"
)
_RETENTION_NOTE = "The reasoning text was removed by the reasoning retention."

_UPDATE_TASK = (
    f"UPDATE tasks SET {', '.join(f'{column} = :{column}' for column in _TASK_COLUMNS[1:])} "
    "WHERE id = :id"
)


class SQLiteStore(Store):
    """The :class:`~thoughtline.store.base.Store` on a SQLite file, created on first use.

    Opening applies missing schema migrations and then :meth:`recover_interrupted`; the
    ids it marked are kept in :attr:`recovered`.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._residue: str | None = None
        self._conn: sqlite3.Connection | None = self._open()
        self.recovered: list[str] = []
        try:
            self.recovered = self.recover_interrupted()
        except StoreError as exc:
            if exc.problem != "full":
                self.close()
                raise
            # A full disk must not hide what was written: open for reading, and let
            # the next open with some free space mark the runs.
            logger.warning("thoughtline: %s", exc.message)
        except BaseException:
            self.close()
            raise

    # -- connection ------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        location = str(self.path)
        try:
            make_private_dir(self.path.parent)
            if not self.path.exists():
                create_private_file(self.path)  # so SQLite's -wal and -shm start 0600 too
        except OSError as exc:
            raise ConfigError(
                f"Cannot create the directory for the thoughtline database {location} "
                f"({exc.strerror or exc}). Make {self.path.parent} a writable directory, "
                "or set THOUGHTLINE_HOME to one."
            ) from exc
        if self.path.is_dir():
            raise ConfigError(
                f"The thoughtline database path {location} is a directory. Remove it, or "
                "set THOUGHTLINE_HOME to another directory."
            )
        conn: sqlite3.Connection | None = None
        try:
            # isolation_level=None: the module starts no transactions of its own; every
            # transaction below is explicit.
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # Refuse a newer database, or a damaged one, before anything here could
            # write to it.
            check_not_newer(conn, location=location)
            _check_integrity(conn, self.path)
            _enable_wal(conn)
            for private in (
                self.path,
                _side_file(self.path, "-wal"),
                _side_file(self.path, "-shm"),
            ):
                make_private(private)
            # NORMAL is enough under WAL: a commit is appended to the log with write(), so
            # it survives the crash or kill of any process; the file is never corrupted.
            # Only an OS crash or power loss can roll back the last few commits (FULL
            # would fsync every one) — and a run that then looks unfinished is exactly
            # what recover_interrupted marks on the next open.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Deleted and overwritten content is zeroed, not left in free pages: retention
            # must really remove reasoning text from the file.
            conn.execute("PRAGMA secure_delete = ON")
            apply_migrations(conn, location=location)
        except (ConfigError, StoreError):
            if conn is not None:
                conn.close()
            raise
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            problem = _problem(exc)
            if problem in ("damaged", "full"):
                raise _store_error(self.path, exc) from exc
            raise ConfigError(_open_error_message(location, exc)) from exc
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"the store at {self.path} is closed")
        return self._conn

    @contextmanager
    def _usage_errors(self) -> Iterator[None]:
        # A damaged file, a full disk, I/O errors and a lock held past the timeout reach
        # callers as one StoreError naming the file, never as a bare sqlite3 traceback.
        # A constraint violation is a caller's bug and stays what it is.
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise _store_error(self.path, exc) from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed when the block ends."""
        with self._lock, self._usage_errors():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction, so related SELECTs see the same snapshot; ended promptly
        because an open snapshot keeps checkpoints from emptying the WAL."""
        with self._lock, self._usage_errors():
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------------
    def create_run(self, run: Run) -> None:
        owner = ProcessIdentity.current()
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO runs ({', '.join(_RUN_FIELDS)}, owner_host, owner_pid, "
                f"owner_start_time, owner_boot_id, heartbeat_at) "
                f"VALUES ({', '.join('?' * (len(_RUN_FIELDS) + 5))})",
                (
                    *(getattr(run, name) for name in _RUN_FIELDS),
                    *(owner.host, owner.pid, owner.start_time, owner.boot_id, now_iso()),
                ),
            )
            conn.executemany(_INSERT_TASK, [_task_params(task) for task in run.tasks])

    def update_run(self, run: Run) -> None:
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, heartbeat_at = ? WHERE id = ?",
                (run.status, run.finished_at, now_iso(), run.id),
            )
            if cursor.rowcount == 0:
                raise KeyError(run.id)

    def update_task(self, task: Task) -> None:
        with self._write() as conn:
            if conn.execute(_UPDATE_TASK, _task_params(task)).rowcount == 0:
                raise KeyError(task.id)
            _touch(conn, [task.run_id])

    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        if not events:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO trace_events (id, run_id, task_id, type, layer, at, at_epoch, "
                "expires_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        event.id, event.run_id, event.task_id, event.type, event.layer,
                        event.at, _event_epoch(event.at), event.expires_at, _dump(event.metadata),
                    )
                    for event in events
                ],
            )  # fmt: skip
            _touch(conn, sorted({event.run_id for event in events}))

    def append_run_events(self, events: Sequence[RunEventRecord]) -> None:
        if not events:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO run_events (run_id, seq, type, task_id, at, data_json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        event.run_id,
                        event.seq,
                        event.type,
                        event.task_id,
                        event.at,
                        _dump(event.data),
                    )
                    for event in events
                ],
            )
            # Streaming deltas prove the owner alive as much as any other write.
            _touch(conn, sorted({event.run_id for event in events}))

    def run_events(
        self, run_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEventRecord]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT run_id, seq, type, task_id, at, data_json FROM run_events "
                "WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, after_seq, -1 if limit is None else limit),
            ).fetchall()
        return [_run_event_from_row(row) for row in rows]

    # -- reads -----------------------------------------------------------------------
    def get_run(self, run_id: str) -> Run | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            tasks = conn.execute(
                "SELECT * FROM tasks WHERE run_id = ? ORDER BY position, rowid", (run_id,)
            ).fetchall()
        return _run_from_row(row, [_task_from_row(task) for task in tasks])

    def latest_run(self) -> Run | None:
        runs = self.list_runs(limit=1)
        return runs[0] if runs else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        if limit <= 0:
            return []
        # rowid breaks ties between runs created in the same millisecond: later insert first.
        newest = "SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?"
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            ).fetchall()
            task_rows = conn.execute(
                f"SELECT * FROM tasks WHERE run_id IN ({newest}) ORDER BY position, rowid",
                (limit,),
            ).fetchall()
        tasks_by_run: dict[str, list[Task]] = {row["id"]: [] for row in rows}
        for task_row in task_rows:
            tasks_by_run[task_row["run_id"]].append(_task_from_row(task_row))
        return [_run_from_row(row, tasks_by_run[row["id"]]) for row in rows]

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        query = "SELECT * FROM trace_events WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if layer is not None:
            query += " AND layer = ?"
            params += (layer,)
        with self._read() as conn:
            rows = conn.execute(query + " ORDER BY seq", params).fetchall()
        return [_event_from_row(row) for row in rows]

    # -- retention -------------------------------------------------------------------
    def purge(
        self, retention_s: Mapping[TraceLayer, int | None], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        now = time.time()
        cutoffs: dict[TraceLayer, float] = {}
        for layer in TRACE_LAYERS:
            keep = retention_s.get(layer)  # a layer left out is kept forever
            if keep is None:
                continue
            if keep < 0:
                raise ValueError(f"retention for {layer} must be >= 0 seconds, got {keep}")
            cutoffs[layer] = now - keep
        counts: dict[TraceLayer, int] = dict.fromkeys(TRACE_LAYERS, 0)
        if dry_run:
            with self._read() as conn:
                for layer, cutoff in cutoffs.items():
                    counts[layer] = conn.execute(
                        "SELECT COUNT(*) FROM trace_events WHERE layer = ? AND at_epoch < ?",
                        (layer, cutoff),
                    ).fetchone()[0]
            return counts
        with self._write() as conn:
            for layer, cutoff in cutoffs.items():
                counts[layer] = conn.execute(
                    "DELETE FROM trace_events WHERE layer = ? AND at_epoch < ?", (layer, cutoff)
                ).rowcount
            _set_meta(conn, _LAST_PURGE_KEY, _iso(now))
        # Also when nothing was deleted now: an earlier purge may have left its deleted
        # content on disk (see purge_residue), and this finishes it.
        self._erase()
        return counts

    def purge_displayed_reasoning(self, older_than_s: int, *, dry_run: bool = False) -> int:
        """Remove the displayed copies of reasoning (``task.reasoning``, its parts, and
        the run event log's reasoning deltas and task/run snapshots) of tasks that
        finished more than ``older_than_s`` ago — the ``reasoning`` retention applies to
        every copy, not only the trace layer. Returns how many tasks were (or would be)
        cleared; each keeps a notice saying its reasoning was removed by retention."""
        cutoff = _iso(time.time() - older_than_s)
        select = (
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ? "
            "AND (reasoning IS NOT NULL OR (reasoning_parts_json IS NOT NULL "
            "AND reasoning_parts_json != '[]'))"
        )
        if dry_run:
            with self._read() as conn:
                return len(conn.execute(select, (cutoff,)).fetchall())
        with self._write() as conn:
            changes_before = conn.total_changes
            task_ids = [row[0] for row in conn.execute(select, (cutoff,)).fetchall()]
            conn.executemany(
                "UPDATE tasks SET reasoning = NULL, reasoning_parts_json = '[]', "
                "reasoning_notice = COALESCE(reasoning_notice || ' ', '') || ? WHERE id = ?",
                [(_RETENTION_NOTE, task_id) for task_id in task_ids],
            )
            conn.execute(
                "DELETE FROM run_events WHERE type = 'reasoning.delta' AND at < ?", (cutoff,)
            )
            rows = conn.execute(
                "SELECT run_id, seq, data_json FROM run_events WHERE at < ? AND type != "
                "'reasoning.delta' AND data_json LIKE '%\"reasoning\":%'",
                (cutoff,),
            ).fetchall()
            for run_id, seq, data_json in rows:
                data = json.loads(data_json)
                tasks = data["tasks"] if isinstance(data.get("tasks"), list) else [data]
                changed = False
                for task in tasks:
                    if isinstance(task, dict) and (
                        task.get("reasoning") or task.get("reasoning_parts")
                    ):
                        task["reasoning"], task["reasoning_parts"] = None, []
                        changed = True
                if changed:
                    conn.execute(
                        "UPDATE run_events SET data_json = ? WHERE run_id = ? AND seq = ?",
                        (_dump(data), run_id, seq),
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
        with self._lock, self._usage_errors():
            conn = self._connection()
            conn.execute(f"PRAGMA busy_timeout = {int(ERASE_WAIT_S * 1000)}")
            try:
                busy, log_frames, copied = conn.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).fetchone()
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if not busy:
            self._residue = None
            return
        wal = _side_file(self.path, "-wal")
        self._residue = (
            f"What the purge removed is still on disk in {self.path} and {wal}: another "
            f"process held the database open for more than {ERASE_WAIT_S:.0f} s (a "
            f"thoughtline daemon or run, or another program reading it; {copied} of "
            f"{log_frames} log pages were copied), so its pages could not be overwritten "
            "yet; run thoughtline purge again once that process has closed the database."
        )

    def purge_due(self, every_s: int = 86_400) -> bool:
        def due(conn: sqlite3.Connection, now: float) -> bool:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (_LAST_PURGE_KEY,))
            found = row.fetchone()
            last = None if found is None else _parse_epoch(found[0])
            # A last purge "in the future" means the clock went back: treat it as due.
            return last is None or not 0 <= now - last < every_s

        with self._read() as conn:  # the common answer, "no", without taking the write lock
            if not due(conn, time.time()):
                return False
        with self._write() as conn:  # re-check under the lock: one process gets True
            now = time.time()
            if not due(conn, now):
                return False
            _set_meta(conn, _LAST_PURGE_KEY, _iso(now))
            return True

    # -- crash recovery --------------------------------------------------------------
    def recover_interrupted(self) -> list[str]:
        me = ProcessIdentity.current()
        now = time.time()
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, owner_host, owner_pid, owner_start_time, owner_boot_id, "
                f"heartbeat_at, created_at FROM runs WHERE status IN {_UNFINISHED_RUNS}"
            ).fetchall()
        orphans = [(row, why) for row in rows if (why := _why_orphaned(row, me, now))]
        recovered: list[str] = []
        for row, (reason, detail) in orphans:
            with self._write() as conn:
                stop = Stop(reason=reason, detail=detail, at=now_iso())
                # Only if nothing was written since we looked: the owner (or another
                # process recovering the same run) may have moved it on meanwhile.
                marked = conn.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ? "
                    f"AND status IN {_UNFINISHED_RUNS} AND heartbeat_at IS ?",
                    (stop.at, row["id"], row["heartbeat_at"]),
                ).rowcount
                if not marked:
                    continue
                task_ids = self._rebuild_unfinished_tasks(conn, row["id"], stop)
                metadata = {"reason": reason, "detail": detail, "interrupted_tasks": task_ids}
                conn.execute(
                    "INSERT INTO trace_events (id, run_id, task_id, type, layer, at, at_epoch, "
                    "expires_at, metadata_json) VALUES (?, ?, NULL, 'run.interrupted', "
                    "'answer', ?, ?, NULL, ?)",
                    (new_id("evt"), row["id"], stop.at, _event_epoch(stop.at), _dump(metadata)),
                )
            recovered.append(row["id"])
        return recovered

    def _rebuild_unfinished_tasks(
        self, conn: sqlite3.Connection, run_id: str, stop: Stop
    ) -> list[str]:
        """Write every unfinished task of the run as recovery rebuilds it from the run
        event log; returns their ids."""
        tasks = [
            _task_from_row(task)
            for task in conn.execute(
                f"SELECT * FROM tasks WHERE run_id = ? AND status IN {_UNFINISHED_TASKS} "
                "ORDER BY position, rowid",
                (run_id,),
            )
        ]
        if not tasks:
            return []
        count, last_seq = conn.execute(
            "SELECT COUNT(*), MAX(seq) FROM run_events WHERE run_id = ?", (run_id,)
        ).fetchone()
        deltas = [
            _run_event_from_row(event)
            for event in conn.execute(
                "SELECT run_id, seq, type, task_id, at, data_json FROM run_events "
                "WHERE run_id = ? AND type IN ('answer.delta', 'reasoning.delta') ORDER BY seq",
                (run_id,),
            )
        ]
        complete = log_is_complete(count, last_seq)
        for task in tasks:
            rebuilt = interrupted_task(task, deltas, stop, log_complete=complete)
            conn.execute(_UPDATE_TASK, _task_params(rebuilt))
        return [task.id for task in tasks]


# -- process identity ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """Who owns a run: enough to tell later whether that process is still alive."""

    host: str
    pid: int
    start_time: int | None
    """Clock ticks after boot (``/proc/<pid>/stat`` field 22); ``None`` off Linux."""
    boot_id: str | None
    """Changes on every reboot (Linux), so pids of an earlier boot never look alive."""

    @classmethod
    def current(cls) -> ProcessIdentity:
        # Not cached: a forked child is a different owner.
        pid = os.getpid()
        stat = _proc_stat(pid)
        return cls(
            host=socket.gethostname(),
            pid=pid,
            start_time=None if stat is None else stat[1],
            boot_id=_boot_id(),
        )


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process from ``/proc``, or ``None`` when unreadable."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        # The command name (field 2) may contain spaces and parentheses; it ends at the
        # last ")". Fields from 3 on follow, so field n is at index n - 3.
        fields = raw[raw.rindex(")") + 2 :].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _local_owner_state(
    pid: int, start_time: int | None, boot_id: str | None, me: ProcessIdentity
) -> str:
    """``alive``, ``unknown``, or why a process on this host is gone."""
    if boot_id is not None and me.boot_id is not None and boot_id != me.boot_id:
        return "host_rebooted"
    stat = _proc_stat(pid)
    if stat is not None:
        if stat[0] in ("Z", "X"):  # exited, not yet reaped by its parent
            return "owner_exited"
        if start_time is not None and stat[1] != start_time:
            return "owner_pid_reused"
        return "alive"
    if os.name != "posix":
        # os.kill(pid, 0) would terminate the process on Windows; rely on the heartbeat.
        return "unknown"
    try:
        os.kill(pid, 0)  # signal 0 only checks existence (also where /proc hides pids)
    except ProcessLookupError:
        return "owner_exited"
    except PermissionError:
        return "alive"  # exists, owned by another user
    return "alive"


def _why_orphaned(row: sqlite3.Row, me: ProcessIdentity, now: float) -> tuple[str, str] | None:
    """(reason, detail) when the run's owner is gone, ``None`` while it may be alive."""
    host, pid = row["owner_host"], row["owner_pid"]
    if host == me.host and pid is not None:
        state = _local_owner_state(pid, row["owner_start_time"], row["owner_boot_id"], me)
        if state == "alive":
            return None
        if state != "unknown":
            details = {
                "owner_exited": f"process {pid} that ran it has exited",
                "owner_pid_reused": f"process {pid} that ran it has exited (pid reused)",
                "host_rebooted": f"the machine rebooted since process {pid} ran it",
            }
            return state, details[state]
    # Another machine's process cannot be probed; only its silence tells.
    last = row["heartbeat_at"] or row["created_at"]
    seen = _parse_epoch(last)
    if seen is not None and now - seen > HEARTBEAT_STALE_S:
        return "heartbeat_stale", f"no write from process {pid} on {host} since {last}"
    return None


# -- rows ----------------------------------------------------------------------------
def _dump(value: Any) -> str:
    # ASCII escapes keep lone surrogates from provider text storable as UTF-8.
    return json.dumps(value, separators=(",", ":"))


def _iso(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _parse_epoch(stamp: str | None) -> float | None:
    """Seconds since the epoch of an ISO timestamp (naive = UTC), ``None`` if unparsable."""
    if stamp is None:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _event_epoch(at: str) -> float:
    """When a trace event happened, for retention; an unparsable ``at`` counts from the
    write, so retention still reaches the event."""
    parsed = _parse_epoch(at)
    return time.time() if parsed is None else parsed


def _touch(conn: sqlite3.Connection, run_ids: Sequence[str]) -> None:
    """Refresh the heartbeat of runs just written (the owner is evidently alive)."""
    stamp = now_iso()
    conn.executemany(
        "UPDATE runs SET heartbeat_at = ? WHERE id = ?", [(stamp, run_id) for run_id in run_ids]
    )


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _task_params(task: Task) -> dict[str, Any]:
    parts, error = task.reasoning_parts, task.error
    return {
        **{name: getattr(task, name) for name in _TASK_FIELDS},
        **{name: getattr(task.usage, name) for name in _USAGE_FIELDS},
        **{name: getattr(task.timings, name) for name in _TIMING_FIELDS},
        "after_json": _dump(task.after),
        # NULL (not displayed) differs from "[]" (displayed, no parts).
        "reasoning_parts_json": None if parts is None else _dump([p.to_dict() for p in parts]),
        "error_code": None if error is None else error.code,
        "error_message": None if error is None else error.message,
        "error_retryable": None if error is None else int(error.retryable),
    }


def _task_from_row(row: sqlite3.Row) -> Task:
    parts = row["reasoning_parts_json"]
    return Task(
        **{name: row[name] for name in _TASK_FIELDS},
        after=json.loads(row["after_json"]),
        reasoning_parts=None
        if parts is None
        else [
            ReasoningPartView(kind=part["kind"], text=part["text"]) for part in json.loads(parts)
        ],
        usage=TaskUsage(**{name: row[name] for name in _USAGE_FIELDS}),
        timings=TaskTimings(**{name: row[name] for name in _TIMING_FIELDS}),
        error=None
        if row["error_code"] is None
        else TaskError(
            code=row["error_code"],
            message=row["error_message"],
            retryable=bool(row["error_retryable"]),
        ),
    )


def _run_from_row(row: sqlite3.Row, tasks: list[Task]) -> Run:
    return Run(**{name: row[name] for name in _RUN_FIELDS}, tasks=tasks)


def _run_event_from_row(row: sqlite3.Row) -> RunEventRecord:
    return RunEventRecord(
        run_id=row["run_id"],
        seq=row["seq"],
        type=row["type"],
        task_id=row["task_id"],
        at=row["at"],
        data=json.loads(row["data_json"]),
    )


def _event_from_row(row: sqlite3.Row) -> TraceEvent:
    return TraceEvent(
        id=row["id"],
        run_id=row["run_id"],
        task_id=row["task_id"],
        type=row["type"],
        layer=row["layer"],
        at=row["at"],
        metadata=json.loads(row["metadata_json"]),
        expires_at=row["expires_at"],
    )


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a no-op once the file is WAL; the mode is stored in the file).

    The switch needs an exclusive lock and SQLite reports a competing lock at once,
    without the busy handler — so when several processes open a new file together, all
    but one are refused. Retry until the busy timeout, as the busy handler would."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _side_file(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`StoreError` when SQLite's ``quick_check`` finds the file damaged.
    Stops unchecked after :data:`INTEGRITY_CHECK_BUDGET_S`: every command opens the
    store, and a huge file must not slow each of them down."""
    deadline = time.monotonic() + INTEGRITY_CHECK_BUDGET_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1_000)
    try:
        found = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            return
        raise
    finally:
        conn.set_progress_handler(None, 0)
    if found is not None and found[0] != "ok":
        # One line: SQLite's report spans several ("*** in database main ***\nPage 7: ...").
        report = " ".join(str(found[0]).replace("*** in database main ***", "").split())
        raise StoreError("damaged", _damaged_message(path, f"quick_check: {report}"))


def _problem(exc: sqlite3.Error) -> str:
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return "damaged"
    if "not a database" in text:
        return "damaged"
    if name == "SQLITE_FULL" or "is full" in text:
        return "full"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return "locked"
    return "unavailable"


def _damaged_message(path: Path, text: str) -> str:
    return (
        f"The thoughtline database {path} is damaged ({text}) and was left as it is: move "
        "it aside (thoughtline then starts a new one) or restore it from a backup; to "
        f"salvage what it holds, try: sqlite3 {path} .recover | sqlite3 recovered.db"
    )


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """One sentence naming the file, what is wrong and what to do."""
    text = str(exc)
    problem = _problem(exc)
    if problem == "damaged":
        if "not a database" in text:
            return StoreError(
                "damaged",
                f"{path} is not a thoughtline database, or its header is damaged ({text}); "
                "it was left as it is: move it aside (thoughtline then starts a new one) or "
                "restore it from a backup; to salvage a damaged database, try: "
                f"sqlite3 {path} .recover | sqlite3 recovered.db",
            )
        return StoreError("damaged", _damaged_message(path, text))
    if problem == "full":
        return StoreError(
            "full",
            f"The disk holding the thoughtline database {path} is full ({text}); free some "
            "space, then try again (what was written before stays readable).",
        )
    if problem == "locked":
        return StoreError(
            "locked",
            f"The thoughtline database {path} could not be used ({text}): another process "
            f"held it longer than {BUSY_TIMEOUT_S:.0f} s; try again.",
        )
    return StoreError(
        "unavailable",
        f"The thoughtline database {path} could not be used ({text}); check the "
        "permissions of the file and its directory, and free disk space.",
    )


def _open_error_message(location: str, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"The thoughtline database {location} stayed locked by another process for "
            f"{BUSY_TIMEOUT_S:.0f} s ({text}). Try again; if it persists, look for a stuck "
            "thoughtline process."
        )
    return (
        f"Cannot open the thoughtline database {location} ({text}). Check that the file and "
        "its directory are readable and writable by this user, or set THOUGHTLINE_HOME to a "
        "writable directory."
    )

"""The shared store: PostgreSQL, for daemons and workers on several machines.

- **Synchronous, with a pool.** The store protocol is synchronous and the runtime calls
  it from its event loop (sub-millisecond writes) and from threads, so this store uses
  psycopg 3's sync API and a :class:`psycopg_pool.ConnectionPool`: each call borrows a
  connection for one transaction. An async pool would need every caller to become async
  (or a loop per thread) for no gain here.
- **Same semantics as SQLite.** The same queries (:mod:`thoughtline.store._sql_store`),
  the same named migrations (:mod:`thoughtline.store.migrations`, applied by
  :mod:`thoughtline.store._postgres_schema`), the same row mapping
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

import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg_pool
from psycopg import sql as psycopg_sql
from psycopg.rows import DictRow, tuple_row

from thoughtline.config import StoreSettings
from thoughtline.records import Run
from thoughtline.store._postgres_connection import (
    Connection,
    closed_error,
    conninfo,
    mark_used,
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
    notification_payloads,
)
from thoughtline.store._postgres_schema import run_params, task_params, tool_call_params
from thoughtline.store._postgres_sql import (
    APPENDS,
    BY_KEY_ONLY,
    INSERT_RUNS,
    INSERT_TASKS,
    REPLAY_KEEP,
    RESIDUE,
    TOUCH_RUNS,
    UPDATE_RUNS,
    UPDATE_TASKS,
    json_text,
)
from thoughtline.store._sql_dialect import POSTGRES
from thoughtline.store._sql_store import (
    NEW_RUN_COLUMNS,
    UNFINISHED,
    SqlStore,
    UpdateCheck,
    WriteStatements,
    check_updates,
)
from thoughtline.store.base import PreparedWrite, RunUpdate, Store, Vacuumed
from thoughtline.store.owner import ProcessIdentity

__all__ = ["HEARTBEAT_INTERVAL_S", "PostgresStore"]

HEARTBEAT_INTERVAL_S = 10.0
"""How often an owner refreshes the heartbeat of its unfinished runs, writing or not."""
WRITE_WAIT_S = 3.0
"""How long a write waits for a connection: a server that went down is then reported
within seconds (reads wait POOL_WAIT_S, which also covers a pool busy under load)."""


@dataclass(frozen=True, slots=True)
class _UpdatedIds:
    """An update of many rows that returns the ids it found."""

    cursor: psycopg.Cursor[DictRow]
    wanted: list[tuple[object, str]]
    """Each row's id and what to raise when it is not found, in order."""

    def missing(self) -> str | None:
        if self.cursor.pgresult is None or self.cursor.rowcount < 0:
            return None  # not run: an earlier statement failed
        found = {row["id"] for row in self.cursor.fetchall()}
        for row_id, message in self.wanted:
            if row_id not in found:
                return message
        return None


class _BrokenBeforeCommit(Exception):
    """The connection broke before COMMIT was sent: nothing of the write was committed."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


class PostgresStore(SqlStore[Connection]):
    """The :class:`~thoughtline.store.base.Store` on a PostgreSQL database named by a
    connection string (``postgresql://user@host:5432/dbname``); missing schema
    migrations are applied when it is opened. Its queries are the shared ones
    (:mod:`thoughtline.store._sql_store`); this class owns the pool, the owner's lease
    and the announcements of appended events."""

    dialect = POSTGRES
    integrity_errors = (psycopg.errors.ForeignKeyViolation,)

    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S
    outage_buffer_rows: int
    outage_limit_s: float
    # Each commit wakes followers on every daemon (NOTIFY). A live event waits up to this
    # long for the commit, the largest part of its delay on another daemon: at 20 ms a
    # subscriber there saw events p99 35 ms after one here, at 5 ms p99 14 ms, for one
    # small transaction per 5 ms while runs stream (bench/bench_cross_daemon.py).
    live_flush_s: float = 0.005
    writes_wait_on_network: bool = True
    deletion_erases: bool = False  # deleted bytes stay until VACUUM (RESIDUE)

    def __init__(
        self,
        dsn: str,
        *,
        heartbeat_interval_s: float | None = None,
        settings: StoreSettings | None = None,
    ) -> None:
        settings = settings or StoreSettings()
        self.location = server_location(dsn)
        self._where = self.location
        self._dsn = dsn
        self.heartbeat_interval_s = (
            settings.lease_s if heartbeat_interval_s is None else heartbeat_interval_s
        )
        if settings.live_flush_ms is not None:
            self.live_flush_s = settings.live_flush_ms / 1000
        self.outage_buffer_rows = settings.outage_buffer_rows
        self.outage_limit_s = settings.outage_limit_s
        migrate(dsn)
        self._settings = settings
        self._pool_lock = threading.Lock()
        self._pool: psycopg_pool.ConnectionPool[Connection] | None = open_pool(dsn, settings)
        self._application_name = settings.application_name
        self._residue: str | None = None
        self._purged_tables: set[str] = set()
        """Tables this store's deletions touched since it opened (:meth:`vacuum`)."""
        self._lease = OwnerLease(self._beat, self.heartbeat_interval_s)

    # -- connections -----------------------------------------------------------------
    @contextmanager
    def _transaction(self, wait_s: float | None = None) -> Iterator[Connection]:
        """One transaction on a pooled connection, committed when the block ends;
        ``wait_s``: how long to wait for a connection (default :data:`POOL_WAIT_S`)."""
        pool = self._pool
        if pool is None:
            raise closed_error(self.location)
        with usage_errors(self.location), pool.connection(timeout=wait_s) as conn:
            try:
                yield conn
            finally:
                mark_used(conn)

    # Reads, writes and deletions alike: each call is one transaction of its own.
    _reading = _writing = _purging = _transaction

    def close(self) -> None:
        self._lease.close()
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def reconnect(self) -> bool:
        """Whether the server accepts a new connection now. When it does, a fresh pool
        replaces this one: after an outage the pool waits ever longer between its own
        attempts (1, 2, 4, 8 s...), and what the writer holds should be written as soon
        as the server is back."""
        try:
            with psycopg.connect(conninfo(self._dsn), connect_timeout=2, autocommit=True) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        fresh = open_pool(self._dsn, self._settings)
        with self._pool_lock:
            stale, self._pool = self._pool, fresh if self._pool is not None else None
        if stale is None:  # closed meanwhile
            fresh.close()
            return False
        # Its connections in use finish their transaction first.
        threading.Thread(target=stale.close, kwargs={"timeout": 10}, daemon=True).start()
        return True

    # -- runs and tasks --------------------------------------------------------------
    @staticmethod
    def new_run_row(run: Run) -> tuple[object, ...]:
        """A new run's row: its fields and this process as its owner."""
        owner = ProcessIdentity.current()
        return (*run_params(run), owner.host, owner.pid, owner.start_time, owner.boot_id)

    task_row = staticmethod(task_params)
    tool_call_row = staticmethod(tool_call_params)

    def _execute_many(
        self,
        conn: Connection,
        sql: str,
        params: Iterable[Sequence[object] | Mapping[str, object]],
    ) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(sql, params)

    def _insert_created(
        self,
        conn: Connection,
        statements: WriteStatements,
        created: list[tuple[tuple[object, ...], list[dict[str, object]]]],
    ) -> None:
        if len(created) < 2:
            super()._insert_created(conn, statements, created)
            return
        keep = REPLAY_KEEP if statements is self.replay_statements else ""
        new_runs = [dict(zip(NEW_RUN_COLUMNS, run_row, strict=True)) for run_row, _ in created]
        new_tasks = [task for _, task_rows in created for task in task_rows]
        conn.execute(INSERT_RUNS[keep], (json_text(new_runs),))
        if new_tasks:
            conn.execute(INSERT_TASKS[keep], (json_text(new_tasks),))

    def _update_rows(
        self,
        conn: Connection,
        sql: str,
        params: Sequence[RunUpdate] | Sequence[dict[str, object]],
        checks: list[UpdateCheck] | None,
    ) -> None:
        if len(params) < 2 or checks is None:
            super()._update_rows(conn, sql, params, checks)
            return
        if sql == self.statements.update_run:
            changed: list[dict[str, object]] = [
                {
                    "status": status,
                    "finished_at": finished_at,
                    "tool_server_starts_json": starts,
                    "id": run_id,
                }
                for status, finished_at, starts, run_id in params
            ]
            statement = UPDATE_RUNS
        else:
            changed = list(params)  # type: ignore[arg-type]
            statement = UPDATE_TASKS
        ids = [row["id"] for row in changed]
        cursor = conn.execute(statement, (json_text(changed), ids))
        wanted = [(row["id"], self._not_found(params[index])) for index, row in enumerate(changed)]
        checks.append(_UpdatedIds(cursor, wanted))

    def _touch(self, conn: Connection, run_ids: list[str]) -> UpdateCheck:
        # In a pipeline the row count arrives later: the ids found come back instead.
        cursor = conn.execute(TOUCH_RUNS, (run_ids,))
        return _UpdatedIds(
            cursor, [(run_id, self.missing_run_message(run_id)) for run_id in run_ids]
        )

    def _append_many(self, conn: Connection, sql: str, params: list[tuple[object, ...]]) -> None:
        if len(params) == 1:
            self._execute_many(conn, sql, params)  # a statement prepared once, reused
            return
        conn.execute(APPENDS[sql], (json_text(params),))

    def _tuples(
        self, conn: Connection, sql: str, params: Sequence[object]
    ) -> list[tuple[Any, ...]]:
        with conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(sql, params).fetchall()

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        # The runtime writes from a thread (writes_wait_on_network): waiting is fine, but
        # not long: a server that is down is then known soon, and the writer holds what
        # it could not write until the server is back (runtime/engine/store_writer.py).
        pool = self._pool
        if pool is None:
            raise closed_error(self.location)
        with usage_errors(self.location):
            try:
                self._write_once(pool, write)
            except _BrokenBeforeCommit as broken:
                # Nothing of it was committed (COMMIT was never sent): once more, on
                # another connection. A server restart broke every idle one too: the
                # pool checks them (a round trip each) and replaces the broken.
                pool.check()
                try:
                    self._write_once(pool, write)
                except _BrokenBeforeCommit as again:
                    raise again.error from broken.error
        for run_row, _tasks in write.created:
            if run_row[1] in ("planned", "running"):
                self._lease.hold(str(run_row[0]))
        for status, _finished_at, _starts, run_id in write.runs:
            if status not in ("planned", "running"):
                self._lease.release(run_id)
        return True

    def _write_once(
        self, pool: psycopg_pool.ConnectionPool[Connection], write: PreparedWrite
    ) -> None:
        """Write ``write`` in one transaction: every statement in one pipeline (one round
        trip), the updates' row counts checked, then COMMIT (a second). Raises
        :class:`_BrokenBeforeCommit` when the connection broke before COMMIT was sent."""
        with pool.connection(timeout=WRITE_WAIT_S) as conn:
            try:
                checks: list[UpdateCheck] = []
                try:
                    with conn.pipeline():
                        conn.execute(BY_KEY_ONLY)
                        self._queue_rows(conn, write, checks)
                        self._announce(conn, write)
                except psycopg.errors.ForeignKeyViolation as exc:
                    # In the order the statements ran, as a store without a pipeline
                    # would have failed: an update that found nothing, then tool calls.
                    check_updates(checks)
                    if exc.diag.table_name == "task_tool_calls":
                        raise self._tool_calls_not_found(write.tool_calls) from exc
                    raise
                except psycopg.OperationalError as exc:
                    if conn.broken:
                        raise _BrokenBeforeCommit(exc) from exc
                    raise
                check_updates(checks)
            finally:
                mark_used(conn)
            # Leaving the block commits: a failure from here on is not retried.

    @staticmethod
    def _announce(conn: Connection, write: PreparedWrite) -> None:
        """Notify the listeners of every daemon of the runs whose events this write
        appends, when it commits: ids and the range of event numbers written (one
        notification for the commit, a line per run); the events stay here."""
        if payloads := notification_payloads(write.events):
            conn.execute(
                "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) "
                "WITH ORDINALITY AS notified(payload, position) ORDER BY position",
                (CHANNEL, payloads),
            )

    # -- deleting what expired -------------------------------------------------------
    def _deleted(self, tables: Collection[str]) -> None:
        self._residue = RESIDUE
        self._purged_tables.update(tables)

    def purge_residue(self) -> str | None:
        return self._residue

    def vacuum(self) -> Vacuumed:
        """``VACUUM`` the tables this store's deletions touched, on a connection of its
        own: VACUUM cannot run inside a transaction, which every pooled connection opens.
        Not ``FULL``, which would lock each table against every daemon sharing it until
        it is rewritten; no statement timeout either (maintenance, not a request)."""
        tables = tuple(sorted(self._purged_tables))
        if not tables:
            return Vacuumed(tables=(), bytes_before=0, bytes_after=0)
        if self._pool is None:
            raise closed_error(self.location)
        named = psycopg_sql.SQL(", ").join(psycopg_sql.Identifier(table) for table in tables)
        size = "SELECT COALESCE(sum(pg_total_relation_size(t::regclass)), 0) FROM unnest(%s::text[]) AS t"
        settings = StoreSettings(application_name=self._application_name)
        with (
            usage_errors(self.location),
            psycopg.connect(conninfo(self._dsn, settings), autocommit=True) as conn,
        ):
            before = conn.execute(size, (list(tables),)).fetchone()
            conn.execute(psycopg_sql.SQL("VACUUM (ANALYZE) {}").format(named))
            after = conn.execute(size, (list(tables),)).fetchone()
        assert before is not None
        assert after is not None
        self._purged_tables.clear()
        return Vacuumed(tables=tables, bytes_before=int(before[0]), bytes_after=int(after[0]))

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
                f"UPDATE runs SET heartbeat_at = {POSTGRES.now_sql} WHERE id = ANY(%s) "
                f"AND status IN {UNFINISHED} RETURNING id",
                (owned,),
            ).fetchall()
        return {row["id"] for row in beating}

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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import psycopg
import psycopg_pool
from psycopg.rows import tuple_row

from thoughtline.config import StoreSettings
from thoughtline.records import Run
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
    notification_payloads,
)
from thoughtline.store._postgres_schema import run_params, task_params, tool_call_params
from thoughtline.store._sql_dialect import POSTGRES
from thoughtline.store._sql_store import UNFINISHED, SqlStore
from thoughtline.store.base import PreparedWrite, Store
from thoughtline.store.owner import ProcessIdentity

__all__ = ["HEARTBEAT_INTERVAL_S", "PostgresStore"]

HEARTBEAT_INTERVAL_S = 10.0
"""How often an owner refreshes the heartbeat of its unfinished runs, writing or not."""

RESIDUE = (
    "PostgreSQL keeps the bytes of deleted rows in its table files until VACUUM reuses "
    "the space, and in its write-ahead log, backups and replicas until they are recycled; "
    "the rows are gone from every query now, and VACUUM FULL trace_events, tasks, "
    "task_tool_calls, run_events rewrites those tables at once."
)


class PostgresStore(SqlStore[Connection]):
    """The :class:`~thoughtline.store.base.Store` on a PostgreSQL database named by a
    connection string (``postgresql://user@host:5432/dbname``); missing schema
    migrations are applied when it is opened. Its queries are the shared ones
    (:mod:`thoughtline.store._sql_store`); this class owns the pool, the owner's lease
    and the announcements of appended events."""

    dialect = POSTGRES
    integrity_errors = (psycopg.errors.ForeignKeyViolation,)

    heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S
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
        migrate(dsn)
        self._pool: psycopg_pool.ConnectionPool[Connection] | None = open_pool(dsn, settings)
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

    # Reads, writes and deletions alike: each call is one transaction of its own.
    _reading = _writing = _purging = _transaction

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
    tool_call_row = staticmethod(tool_call_params)

    def _execute_many(
        self,
        conn: Connection,
        sql: str,
        params: Iterable[Sequence[object] | Mapping[str, object]],
    ) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(sql, params)

    def _tuples(
        self, conn: Connection, sql: str, params: Sequence[object]
    ) -> list[tuple[Any, ...]]:
        with conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(sql, params).fetchall()

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        # The runtime writes from a thread (writes_wait_on_network): waiting is fine.
        with self._transaction() as conn:
            self._write_rows(conn, write)
            # Delivered to every listener when this commits: ids and the range of event
            # numbers written, the events stay here.
            if payloads := notification_payloads(write.events):
                conn.execute(
                    "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload",
                    (CHANNEL, payloads),
                )
        for run_row, _tasks in write.created:
            if run_row[1] in ("planned", "running"):
                self._lease.hold(str(run_row[0]))
        for status, _finished_at, run_id in write.runs:
            if status not in ("planned", "running"):
                self._lease.release(run_id)
        return True

    # -- deleting what expired -------------------------------------------------------
    def _deleted(self) -> None:
        self._residue = RESIDUE

    def purge_residue(self) -> str | None:
        return self._residue

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

"""The store's writes, written once for SQLite and PostgreSQL: a transition's rows
inserted, updated and appended in one transaction, each update checked to have found its
row, and what each store does its own way (its connections and transactions)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import SqlDialect
from thoughtline.store._step_costs import INSERT_STEP_COST
from thoughtline.store._transitions import TransitionWrites
from thoughtline.store.base import (
    PreparedWrite,
    RunNotFoundError,
    RunUpdate,
    Store,
)


class SqlCursor(Protocol):
    """What a statement returns (``sqlite3.Cursor``, a psycopg cursor)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class SqlConnection(Protocol):
    """A connection whose ``execute`` runs one statement (``sqlite3.Connection``, a
    psycopg connection); rows are read by column name."""

    def execute(self, sql: str, params: Any = ..., /) -> SqlCursor: ...


ConnectionT = TypeVar("ConnectionT", bound=SqlConnection)


@dataclass(frozen=True, slots=True)
class WriteStatements:
    """The statements of the write path in one dialect, rendered once."""

    insert_run: str
    insert_task: str
    update_task: str
    update_run: str
    insert_run_event: str
    insert_trace: str
    upsert_tool_call: str
    insert_thread: str
    insert_step_cost: str

    @classmethod
    def render(cls, dialect: SqlDialect, *, replay: bool = False) -> WriteStatements:
        """The statements; with ``replay``, inserts keep a row already stored instead of
        failing (:attr:`PreparedWrite.replayed`)."""
        keep = " ON CONFLICT DO NOTHING" if replay else ""
        return cls(
            insert_run=dialect.sql(
                f"INSERT INTO runs ({', '.join(NEW_RUN_COLUMNS)}, heartbeat_at) "
                f"VALUES ({', '.join('?' * len(NEW_RUN_COLUMNS))}, {dialect.now_sql}){keep}"
            ),
            insert_task=dialect.sql(rows.INSERT_TASK + keep),
            update_task=dialect.sql(rows.UPDATE_TASK),
            update_run=dialect.sql(rows.UPDATE_RUN),
            insert_run_event=dialect.sql(rows.INSERT_RUN_EVENT + keep),
            insert_trace=dialect.sql(rows.INSERT_TRACE + keep),
            upsert_tool_call=dialect.sql(rows.UPSERT_TOOL_CALL),
            insert_thread=dialect.sql(rows.INSERT_THREAD),
            insert_step_cost=dialect.sql(INSERT_STEP_COST),
        )


@lru_cache(maxsize=64)
def touch_statement(dialect: SqlDialect, count: int) -> str:
    """The statement that refreshes the heartbeat of ``count`` runs."""
    where = dialect.in_list("id", count)
    return dialect.sql(f"UPDATE runs SET heartbeat_at = {dialect.now_sql} WHERE {where}")


class UpdateCheck(Protocol):
    """An update sent: whether it found every row it was to change."""

    def missing(self) -> str | None:
        """What to raise :class:`RunNotFoundError` with (None: nothing missing, or the
        server did not run the statement, after an earlier one failed)."""
        ...


@dataclass(frozen=True, slots=True)
class RowUpdate:
    """One row's update: its row count says whether the row was there."""

    cursor: SqlCursor
    message: str

    def missing(self) -> str | None:
        return self.message if self.cursor.rowcount == 0 else None


@dataclass(frozen=True, slots=True)
class TouchedRuns:
    """The heartbeat refresh that starts a write: it found every run unless its row
    count falls short, and only then are the missing ones looked up (to name one)."""

    store: SqlWrites[Any]
    conn: SqlConnection
    cursor: SqlCursor
    run_ids: list[str]

    def missing(self) -> str | None:
        if self.cursor.rowcount == len(self.run_ids):
            return None
        dialect = self.store.dialect
        found = {
            row[0]
            for row in self.store._tuples(
                self.conn,
                dialect.sql(
                    f"SELECT id FROM runs WHERE {dialect.in_list('id', len(self.run_ids))}"
                ),
                dialect.list_params(self.run_ids),
            )
        }
        missing = [run_id for run_id in self.run_ids if run_id not in found]
        return self.store.missing_run_message(missing[0]) if missing else None


def check_updates(checks: Sequence[UpdateCheck]) -> None:
    """Raise :class:`RunNotFoundError` for the first update that did not find its row."""
    for check in checks:
        if (message := check.missing()) is not None:
            raise RunNotFoundError(message)


NEW_RUN_COLUMNS = (
    *rows.RUN_COLUMNS, "owner_host", "owner_pid", "owner_start_time", "owner_boot_id"
)  # fmt: skip
"""A new run's columns before its heartbeat (``new_run_row``'s values, in order)."""


class SqlWrites(TransitionWrites, Store, Generic[ConnectionT]):
    """The store's writes on connections of type ``ConnectionT``; a subclass names its
    :attr:`dialect` and opens its connections and transactions."""

    dialect: ClassVar[SqlDialect]
    statements: ClassVar[WriteStatements]
    replay_statements: ClassVar[WriteStatements]
    integrity_errors: ClassVar[tuple[type[Exception], ...]]
    """What the database raises for a row whose foreign key finds nothing."""
    _where: str
    """How messages name the database (a file's path, a server's location)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "dialect" in cls.__dict__:
            cls.statements = WriteStatements.render(cls.dialect)
            cls.replay_statements = WriteStatements.render(cls.dialect, replay=True)

    # -- what each store does its own way ----------------------------------------------
    def _reading(self) -> AbstractContextManager[ConnectionT]:
        """One transaction that only reads, so related SELECTs see the same rows."""
        raise NotImplementedError

    def _writing(self) -> AbstractContextManager[ConnectionT]:
        """One write transaction, committed when the block ends."""
        raise NotImplementedError

    def _purging(self) -> AbstractContextManager[ConnectionT]:
        """The write transaction of a deletion for retention."""
        raise NotImplementedError

    def _execute_many(
        self, conn: ConnectionT, sql: str, params: Iterable[Sequence[object] | Mapping[str, object]]
    ) -> None:
        """Run ``sql`` once for each of ``params``."""
        raise NotImplementedError

    def _insert_created(
        self,
        conn: ConnectionT,
        statements: WriteStatements,
        created: list[tuple[tuple[object, ...], list[dict[str, object]]]],
    ) -> None:
        """Insert new runs' rows and their tasks' rows."""
        for run_row, task_rows in created:
            conn.execute(statements.insert_run, run_row)
            self._execute_many(conn, statements.insert_task, task_rows)

    def _update_rows(
        self,
        conn: ConnectionT,
        sql: str,
        params: Sequence[RunUpdate] | Sequence[dict[str, object]],
        checks: list[UpdateCheck] | None,
    ) -> None:
        """Update runs (:data:`~thoughtline.store.base.RunUpdate`) or tasks (rows by column name),
        each with its own statement; see :meth:`_queue_rows` for ``checks``."""
        for row in params:
            updated = RowUpdate(conn.execute(sql, row), self._not_found(row))
            if checks is None:
                check_updates([updated])
            else:
                checks.append(updated)

    def _not_found(self, row: RunUpdate | dict[str, object]) -> str:
        """What :class:`RunNotFoundError` says when the run or task of ``row`` (an
        update's parameters) is not stored."""
        if isinstance(row, dict):
            return f"No task {row['id']!r} of run {row['run_id']!r} in {self._where} to update."
        return f"No run {row[-1]!r} in {self._where} to update."

    def _append_many(self, conn: ConnectionT, sql: str, params: list[tuple[object, ...]]) -> None:
        """Insert rows into a log (``sql`` is :attr:`statements`' insert), in order."""
        self._execute_many(conn, sql, params)

    def _deleted(self, tables: Collection[str]) -> None:
        """A deletion for retention removed or rewrote rows of ``tables`` (see
        :meth:`purge_residue`)."""
        raise NotImplementedError

    def _tuples(
        self, conn: ConnectionT, sql: str, params: Sequence[object]
    ) -> list[tuple[Any, ...]]:
        """The rows of a query as plain tuples (many rows, read fast)."""
        raise NotImplementedError

    # -- runs and tasks --------------------------------------------------------------
    def _write_rows(self, conn: ConnectionT, write: PreparedWrite) -> None:
        """Write ``write``'s rows in the transaction ``conn`` is in; raise
        :class:`RunNotFoundError` when a run or task to update is not stored."""
        self._queue_rows(conn, write, None)

    def _queue_rows(
        self, conn: ConnectionT, write: PreparedWrite, checks: list[UpdateCheck] | None
    ) -> None:
        """Send ``write``'s statements in the transaction ``conn`` is in. Each update's
        row count says whether its run or task is stored: checked at once when
        ``checks`` is None, else added to ``checks`` — on a connection in pipeline mode
        (PostgreSQL) nothing waits for the server here, and the counts are read once the
        pipeline is synced, before the transaction commits."""
        statements = self.replay_statements if write.replayed else self.statements
        if write.created:
            self._insert_created(conn, statements, write.created)
        # The runs' rows first, as every write of a run (interrupt_run locks them too),
        # in sorted order, so two transactions never wait on each other's rows. Every
        # write proves the owner alive (streaming deltas as much as the rest).
        # The check that each run is stored is what lets PostgreSQL's logs go without a
        # foreign key (migration m009): their rows then name runs locked here.
        # Runs created here were stamped and locked by their insert (a replay's insert
        # may have kept an older row: those are refreshed too).
        existing = write.run_ids
        if write.created and not write.replayed:
            existing = existing - {str(run_row[0]) for run_row, _tasks in write.created}
        if existing:
            touched = self._touch(conn, sorted(existing))
            if checks is None:
                check_updates([touched])
            else:
                checks.append(touched)
        if write.runs:
            self._update_rows(conn, statements.update_run, write.runs, checks)
        if write.events:
            self._append_many(conn, statements.insert_run_event, write.events)
        if write.trace:
            self._append_many(conn, statements.insert_trace, write.trace)
        if write.tasks:
            self._update_rows(conn, statements.update_task, write.tasks, checks)
        if write.tool_calls:
            self._tool_call_rows(conn, write.tool_calls)
        if write.threads:
            self._execute_many(conn, statements.insert_thread, write.threads)
        if write.step_costs:
            # After the tasks' rows (new ones were inserted above): appended, never
            # rewritten (a row already stored is kept).
            self._execute_many(conn, statements.insert_step_cost, write.step_costs)

    def _touch(self, conn: ConnectionT, run_ids: list[str]) -> UpdateCheck:
        """Refresh the heartbeat of ``run_ids`` (sorted), locking their rows; the check
        names the first that is not stored."""
        dialect = self.dialect
        cursor = conn.execute(
            touch_statement(dialect, len(run_ids)),
            (*dialect.now_params(), *dialect.list_params(run_ids)),
        )
        return TouchedRuns(self, conn, cursor, run_ids)

    def missing_run_message(self, run_id: str) -> str:
        return f"No run {run_id!r} in {self._where} to write to."

    def _tool_call_rows(self, conn: ConnectionT, calls: list[tuple[object, ...]]) -> None:
        """Insert or replace tool calls' rows; raise :class:`RunNotFoundError` when a
        call's task is not stored."""
        try:
            self._execute_many(conn, self.statements.upsert_tool_call, calls)
        except self.integrity_errors as exc:
            raise self._tool_calls_not_found(calls) from exc

    def _tool_calls_not_found(self, calls: Sequence[tuple[object, ...]]) -> RunNotFoundError:
        named = ", ".join(sorted({repr(call[0]) for call in calls}))
        return RunNotFoundError(
            f"A task among {named} is not in {self._where}, so their tool calls were not written."
        )

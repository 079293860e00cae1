"""Every query of the store, written once for SQLite and PostgreSQL.

:class:`SqlStore` implements the :class:`~thoughtline.store.base.Store` protocol on a
database connection, in the spelling of its :class:`~thoughtline.store._sql_dialect.SqlDialect`.
A store built on it says only what truly differs: how it opens connections and
transactions (:meth:`SqlStore._reading`, :meth:`SqlStore._writing`,
:meth:`SqlStore._purging`), how it writes a prepared write (locks, waiting, what it
announces), and what a deletion leaves on disk (:meth:`SqlStore._deleted`).

Conditional writes (``replace_meta``, ``interrupt_run``) are single statements, or lock
the run's row first, so of racing processes on any machine exactly one wins: in SQLite
a write transaction holds the whole file, in PostgreSQL the row lock orders them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from thoughtline.records import TRACE_LAYERS, Run, RunEventRecord, Task, TraceEvent, TraceLayer
from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import SqlDialect
from thoughtline.store.base import (
    ConversationTask,
    PreparedWrite,
    RunFilter,
    RunNotFoundError,
    Store,
    StoredThread,
    UnfinishedRun,
    UsageGroup,
    UsageKey,
)

UNFINISHED = "('planned', 'running')"
NEW_RUN_COLUMNS = (
    *rows.RUN_COLUMNS, "owner_host", "owner_pid", "owner_start_time", "owner_boot_id"
)  # fmt: skip
"""A new run's columns before its heartbeat (``new_run_row``'s values, in order)."""
SET_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


@lru_cache(maxsize=2)
def run_ids_with_prefix_sql(dialect: SqlDialect) -> str:
    """Ids starting with a prefix, newest first: a backward range scan of an index in
    byte order (SQLite's primary key; PostgreSQL's ``runs_id_bytes``), stopped at the
    limit (parameters: the dialect's ``prefix_params`` and the limit)."""
    return dialect.sql(
        f"SELECT id FROM runs WHERE {dialect.prefix_match('id')} "
        f"ORDER BY {dialect.binary_order('id')} DESC LIMIT ?"
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
            update_run=dialect.sql("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?"),
            insert_run_event=dialect.sql(rows.INSERT_RUN_EVENT + keep),
            insert_trace=dialect.sql(rows.INSERT_TRACE + keep),
            upsert_tool_call=dialect.sql(rows.UPSERT_TOOL_CALL),
            insert_thread=dialect.sql(rows.INSERT_THREAD),
        )


CONVERSATION_TASKS = (
    "SELECT runs.id, runs.continues, runs.request, tasks.id, tasks.name, tasks.provider, "
    "tasks.model, tasks.chain_of_thought, tasks.output, threads.system_digest, "
    "threads.tools_digest, threads.answer_json, threads.carriers_json, "
    "threads.carriers_cleared, threads.at_epoch, tasks.position "
    "FROM runs JOIN tasks ON tasks.run_id = runs.id "
    "LEFT JOIN task_threads AS threads ON threads.task_id = tasks.id "
    "WHERE runs.conversation_id = ?"
)
"""A conversation's tasks and threads, for a follow-up (an index on conversation_id).
Unsorted: sorting rows this wide took PostgreSQL most of the query's time, and the
caller orders them by task position and follows the runs by ``continues``."""


@lru_cache(maxsize=64)
def _tool_calls_query(dialect: SqlDialect, count: int) -> str:
    """The query of :meth:`SqlStore._tool_calls_of` for ``count`` runs."""
    return dialect.sql(rows.TOOL_CALLS_OF_RUNS.format(runs=dialect.in_list("run_id", count)))


USAGE_KEYS: dict[str, str] = {
    "day": "substr(started_at, 1, 10)",  # UTC: timestamps are ISO 8601 in UTC
    "model": "provider || '/' || model",
    "role": "role",
    "mode": "chain_of_thought",
    "provider": "provider",
}
"""The SQL of each :data:`~thoughtline.store.base.UsageKey` (the same in both dialects)."""
_USAGE_COLUMNS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
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

    store: SqlStore[Any]
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


class SqlStore(rows.TransitionWrites, Store, Generic[ConnectionT]):
    """The store's queries on connections of type ``ConnectionT``; a subclass names its
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
        params: Sequence[tuple[str, str | None, str]] | Sequence[dict[str, object]],
        checks: list[UpdateCheck] | None,
    ) -> None:
        """Update runs (``(status, finished_at, id)``) or tasks (rows by column name),
        each with its own statement; see :meth:`_queue_rows` for ``checks``."""
        for row in params:
            updated = RowUpdate(conn.execute(sql, row), self._not_found(row))
            if checks is None:
                check_updates([updated])
            else:
                checks.append(updated)

    def _not_found(self, row: tuple[str, str | None, str] | dict[str, object]) -> str:
        """What :class:`RunNotFoundError` says when the run or task of ``row`` (an
        update's parameters) is not stored."""
        if isinstance(row, dict):
            return f"No task {row['id']!r} of run {row['run_id']!r} in {self._where} to update."
        return f"No run {row[2]!r} in {self._where} to update."

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

    def _tool_calls_of(self, conn: ConnectionT, run_ids: Sequence[str]) -> list[Any]:
        """The rows of ``run_ids``' tool calls, in task and call order, as tuples
        (:func:`rows.tool_calls_by_task`): one query."""
        dialect = self.dialect
        return self._tuples(
            conn, _tool_calls_query(dialect, len(run_ids)), dialect.list_params(run_ids)
        )

    def get_run(self, run_id: str) -> Run | None:
        dialect = self.dialect
        with self._reading() as conn:
            row = conn.execute(dialect.sql("SELECT * FROM runs WHERE id = ?"), (run_id,)).fetchone()
            if row is None:
                return None
            tasks = conn.execute(
                dialect.sql(
                    f"SELECT * FROM tasks WHERE run_id = ? ORDER BY position, {dialect.row_order}"
                ),
                (run_id,),
            ).fetchall()
            calls = self._tool_calls_of(conn, [run_id]) if _any_tools(tasks) else []
        return rows.runs_with_tasks([row], tasks, calls)[0]

    def latest_run(self) -> Run | None:
        runs = self.list_runs(limit=1)
        return runs[0] if runs else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        if limit <= 0:
            return []
        with self._reading() as conn:
            # The row order breaks ties between runs created in the same millisecond:
            # later insert first.
            return self._with_tasks(
                conn,
                f"SELECT * FROM runs ORDER BY created_at DESC, {self.dialect.row_order} DESC "
                "LIMIT ?",
                (limit,),
            )

    def find_runs(self, where: RunFilter, limit: int = 20) -> list[Run]:
        if limit <= 0:
            return []
        conditions, params = runs_where(self.dialect, where)
        clause = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        with self._reading() as conn:
            return self._with_tasks(
                conn,
                f"SELECT * FROM runs {clause}"
                f"ORDER BY created_at DESC, {self.dialect.row_order} DESC LIMIT ?",
                (*params, limit),
            )

    def usage(self, by: UsageKey, since: str | None = None) -> list[UsageGroup]:
        key = USAGE_KEYS[by]
        # Tasks started (every one that spent a token did), read from the index that
        # covers the sum (migration m011), not from their rows.
        where = "tasks.started_at >= ?" if since is not None else "tasks.started_at IS NOT NULL"
        query = (
            f"SELECT {key} AS key, provider, model, COUNT(*), "
            "SUM(CASE WHEN input_tokens IS NULL AND output_tokens IS NULL THEN 1 ELSE 0 END), "
            + ", ".join(f"COALESCE(SUM({column}), 0)" for column in _USAGE_COLUMNS)
            + ", COALESCE(SUM(cost_amount), 0), "
            "SUM(CASE WHEN cost_amount IS NULL THEN 1 ELSE 0 END)"
            f" FROM tasks WHERE {where} GROUP BY {key}, provider, model "
            f"ORDER BY {key}, provider, model"
        )
        with self._reading() as conn:
            found = self._tuples(conn, self.dialect.sql(query), () if since is None else (since,))
        return [
            UsageGroup(
                key=str(row[0]),
                provider=row[1],
                model=row[2],
                tasks=int(row[3]),
                unreported=int(row[4]),
                **{
                    column: int(value)
                    for column, value in zip(_USAGE_COLUMNS, row[5:10], strict=True)
                },
                cost=float(row[10]),
                unpriced=int(row[11]),
            )
            for row in found
        ]

    def conversation_runs(self, conversation_id: str) -> list[Run]:
        with self._reading() as conn:
            return self._with_tasks(
                conn,
                "SELECT * FROM runs WHERE conversation_id = ? "
                f"ORDER BY created_at, {self.dialect.row_order}",
                (conversation_id,),
            )

    def _with_tasks(self, conn: ConnectionT, runs: str, params: Sequence[object]) -> list[Run]:
        """The runs the query ``runs`` selects, in its order, with their tasks and tool
        calls: one query per table."""
        dialect = self.dialect
        run_rows = conn.execute(dialect.sql(runs), tuple(params)).fetchall()
        if not run_rows:
            return []
        # The tasks of exactly these runs (a run created meanwhile is not among them).
        run_ids = [row["id"] for row in run_rows]
        task_rows = conn.execute(
            dialect.sql(
                f"SELECT * FROM tasks WHERE {dialect.in_list('run_id', len(run_ids))} "
                f"ORDER BY position, {dialect.row_order}"
            ),
            dialect.list_params(run_ids),
        ).fetchall()
        calls = self._tool_calls_of(conn, run_ids) if _any_tools(task_rows) else []
        return rows.runs_with_tasks(run_rows, task_rows, calls)

    def conversation_tasks(self, conversation_id: str) -> list[ConversationTask]:
        with self._reading() as conn:
            found = self._tuples(conn, self.dialect.sql(CONVERSATION_TASKS), (conversation_id,))
        found.sort(key=lambda row: (row[0], row[15]))  # by run, then task position
        return [
            ConversationTask(
                run_id=row[0],
                continues=row[1],
                request=row[2],
                task_id=row[3],
                name=row[4],
                provider=row[5],
                model=row[6],
                chain_of_thought=row[7],
                output=row[8],
                thread=None
                if row[11] is None
                else StoredThread(
                    system_digest=row[9],
                    tools_digest=row[10],
                    answer_json=row[11],
                    carriers_json=row[12],
                    carriers_cleared=bool(row[13]),
                    at_epoch=float(row[14]),
                ),
            )
            for row in found
        ]

    def task_threads(self, run_ids: Sequence[str]) -> dict[str, StoredThread]:
        if not run_ids:
            return {}
        dialect = self.dialect
        with self._reading() as conn:
            found = self._tuples(
                conn,
                dialect.sql(
                    "SELECT task_id, system_digest, tools_digest, answer_json, carriers_json, "
                    "carriers_cleared, at_epoch FROM task_threads WHERE "
                    + dialect.in_list("run_id", len(run_ids))
                ),
                dialect.list_params(run_ids),
            )
        return {
            row[0]: StoredThread(
                system_digest=row[1],
                tools_digest=row[2],
                answer_json=row[3],
                carriers_json=row[4],
                carriers_cleared=bool(row[5]),
                at_epoch=float(row[6]),
            )
            for row in found
        }

    def run_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        dialect = self.dialect
        with self._reading() as conn:
            found = conn.execute(
                run_ids_with_prefix_sql(dialect), (*dialect.prefix_params(prefix), limit)
            ).fetchall()
        return [row["id"] for row in found]

    # -- trace and run event log -----------------------------------------------------
    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        self.write(trace=events)

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        query = "SELECT * FROM trace_events WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if layer is not None:
            query += " AND layer = ?"
            params += (layer,)
        with self._reading() as conn:
            found = conn.execute(self.dialect.sql(query + " ORDER BY seq"), params).fetchall()
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
        dialect = self.dialect
        query = f"SELECT {rows.RUN_EVENT_COLUMNS} FROM run_events WHERE run_id = ? AND seq > ?"
        params: list[object] = [run_id, after_seq]
        if types is not None:
            wanted = sorted(types)
            query += f" AND {dialect.in_list('type', len(wanted))}"
            params += dialect.list_params(wanted)
        query += " ORDER BY seq"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(limit, 0))
        with self._reading() as conn:
            found = conn.execute(dialect.sql(query), params).fetchall()
        return [rows.run_event_from_row(row) for row in found]

    def run_events_after(self, after: Mapping[str, int]) -> dict[str, list[RunEventRecord]]:
        """The live events of several runs at once, each run's with ``seq`` greater than
        its number in ``after``, in order: one query for every run a daemon follows and
        an announcement named (see :mod:`thoughtline.server.announcements`)."""
        if not after:
            return {}
        runs = sorted(after.items())
        wanted = " OR ".join(["(run_id = ? AND seq > ?)"] * len(runs))
        query = (
            f"SELECT {rows.RUN_EVENT_COLUMNS} FROM run_events WHERE {wanted} ORDER BY run_id, seq"
        )
        params = [value for pair in runs for value in pair]
        with self._reading() as conn:
            found = conn.execute(self.dialect.sql(query), params).fetchall()
        events: dict[str, list[RunEventRecord]] = {run_id: [] for run_id, _ in runs}
        for row in found:
            record = rows.run_event_from_row(row)
            events[record.run_id].append(record)
        return events

    # -- deleting what expired -------------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        counts: dict[TraceLayer, int] = dict.fromkeys(TRACE_LAYERS, 0)
        where = " trace_events WHERE layer = ? AND at_epoch < ?"
        if dry_run:
            with self._reading() as conn:
                for layer, cutoff in cutoffs.items():
                    found = conn.execute(
                        self.dialect.sql("SELECT COUNT(*) AS n FROM" + where), (layer, cutoff)
                    ).fetchone()
                    counts[layer] = int(found["n"])
            return counts
        sql = self.dialect.sql
        with self._purging() as conn:
            for layer, cutoff in cutoffs.items():
                counts[layer] = conn.execute(sql("DELETE FROM" + where), (layer, cutoff)).rowcount
            # Conversation threads (not counted: the counts are trace events): the answer
            # layer's messages go with that layer, the carriers kept beside them with the
            # reasoning layer.
            threads = 0
            if (answer_cutoff := cutoffs.get("answer")) is not None:
                threads += conn.execute(
                    sql("DELETE FROM task_threads WHERE at_epoch < ?"), (answer_cutoff,)
                ).rowcount
            if (reasoning_cutoff := cutoffs.get("reasoning")) is not None:
                threads += conn.execute(
                    sql(
                        "UPDATE task_threads SET carriers_json = NULL, carriers_cleared = 1 "
                        "WHERE at_epoch < ? AND carriers_json IS NOT NULL"
                    ),
                    (reasoning_cutoff,),
                ).rowcount
        touched = {"trace_events"} if any(counts.values()) else set()
        if threads:
            touched.add("task_threads")
        if touched:
            self._deleted(touched)  # erased from every file of the store (SQLite)
        return counts

    def clear_displayed_reasoning(
        self, finished_before: str, notice: str, *, dry_run: bool = False
    ) -> int:
        sql = self.dialect.sql
        select = sql(
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ? "
            "AND (reasoning IS NOT NULL OR (reasoning_parts_json IS NOT NULL "
            "AND reasoning_parts_json != '[]'))"
        )
        if dry_run:
            with self._reading() as conn:
                return len(conn.execute(select, (finished_before,)).fetchall())
        with self._purging() as conn:
            task_ids = [row["id"] for row in conn.execute(select, (finished_before,)).fetchall()]
            touched = {"tasks"} if task_ids else set()
            self._execute_many(
                conn,
                sql(
                    "UPDATE tasks SET reasoning = NULL, reasoning_parts_json = '[]', "
                    "reasoning_notice = COALESCE(reasoning_notice || ' ', '') || ? WHERE id = ?"
                ),
                [(notice, task_id) for task_id in task_ids],
            )
            deltas = conn.execute(
                sql("DELETE FROM run_events WHERE type = 'reasoning.delta' AND at < ?"),
                (finished_before,),
            )
            if deltas.rowcount > 0:
                touched.add("run_events")
            snapshots = conn.execute(
                sql(
                    "SELECT run_id, seq, data_json FROM run_events WHERE at < ? AND type != "
                    "'reasoning.delta' AND data_json LIKE '%\"reasoning\":%'"
                ),
                (finished_before,),
            ).fetchall()
            for snapshot in snapshots:
                data = json.loads(snapshot["data_json"])
                if rows.without_reasoning(data):
                    conn.execute(
                        sql("UPDATE run_events SET data_json = ? WHERE run_id = ? AND seq = ?"),
                        (rows.dump(data), snapshot["run_id"], snapshot["seq"]),
                    )
                    touched.add("run_events")
        if touched:
            self._deleted(touched)
        return len(task_ids)

    # -- small shared values ---------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._reading() as conn:
            found = conn.execute(
                self.dialect.sql("SELECT value FROM meta WHERE key = ?"), (key,)
            ).fetchone()
        return None if found is None else str(found["value"])

    def set_meta(self, key: str, value: str) -> None:
        with self._writing() as conn:
            conn.execute(self.dialect.sql(SET_META), (key, value))

    def replace_meta(self, key: str, expected: str | None, value: str) -> bool:
        # One statement each way: the unique key (insert) or the row lock and re-check
        # of the WHERE clause (update) let exactly one of racing processes through.
        sql = self.dialect.sql
        with self._writing() as conn:
            if expected is None:
                cursor = conn.execute(
                    sql("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"),
                    (key, value),
                )
            else:
                cursor = conn.execute(
                    sql("UPDATE meta SET value = ? WHERE key = ? AND value = ?"),
                    (value, key, expected),
                )
            return cursor.rowcount == 1

    # -- runs whose owner may be gone ------------------------------------------------
    def unfinished_runs(self) -> list[UnfinishedRun]:
        with self._reading() as conn:
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
        sql = self.dialect.sql
        with self._writing() as conn:
            # Every write of a run updates its row first, so holding the row's lock
            # orders this check after any write in flight, on any machine.
            locked = conn.execute(
                sql(
                    f"SELECT heartbeat_at FROM runs WHERE id = ? AND status IN {UNFINISHED}"
                    f"{self.dialect.lock_row}"
                ),
                (seen.run_id,),
            ).fetchone()
            if locked is None or locked["heartbeat_at"] != seen.heartbeat_at:
                return False
            log = conn.execute(
                sql(
                    "SELECT COUNT(*) AS n, COALESCE(MAX(seq), 0) AS last FROM run_events "
                    "WHERE run_id = ?"
                ),
                (seen.run_id,),
            ).fetchone()
            if (log["n"], log["last"]) != (seen.event_count, seen.last_event_seq):
                return False
            conn.execute(
                sql("UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ?"),
                (finished_at, seen.run_id),
            )
            statements = self.statements
            self._execute_many(
                conn, statements.update_task, [self.task_row(task) for task in tasks]
            )
            calls = [
                self.tool_call_row(task, position)
                for task in tasks
                for position in range(len(task.tool_calls or ()))
            ]
            if calls:
                self._tool_call_rows(conn, calls)
            conn.execute(statements.insert_trace, rows.trace_params(event))
        return True


def runs_where(dialect: SqlDialect, where: RunFilter) -> tuple[list[str], list[object]]:
    """The ``WHERE`` conditions (joined by ``AND``) and their parameters for ``where``."""
    conditions: list[str] = []
    params: list[object] = []
    if where.status is not None:
        conditions.append("status = ?")
        params.append(where.status)
    if where.since is not None:
        conditions.append("created_at >= ?")
        params.append(where.since)
    if where.search is not None:
        conditions.append(dialect.contains_folded("request"))
        params.append(where.search)
    for column, value in (("model", where.model), ("role", where.role)):
        if value is not None:
            conditions.append(
                f"EXISTS (SELECT 1 FROM tasks WHERE tasks.run_id = runs.id AND tasks.{column} = ?)"
            )
            params.append(value)
    return conditions, params


def _any_tools(task_rows: Sequence[Any]) -> bool:
    """Whether any of the tasks may call tools (only then are tool calls read)."""
    return any(row["tools_json"] is not None for row in task_rows)

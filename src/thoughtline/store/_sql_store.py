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

from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from types import TracebackType
from typing import Any, Self

from thoughtline.records import Run, RunEventRecord, TraceEvent, TraceLayer
from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import SqlDialect
from thoughtline.store._sql_upkeep import SET_META, UNFINISHED, SqlUpkeep
from thoughtline.store._sql_writes import (
    NEW_RUN_COLUMNS,
    ConnectionT,
    SqlConnection,
    SqlCursor,
    UpdateCheck,
    WriteStatements,
    check_updates,
)
from thoughtline.store._step_costs import NO_STEPS as _NO_STEPS
from thoughtline.store._step_costs import STEP_COSTS_OF_RUNS
from thoughtline.store.base import (
    ConversationTask,
    RunFilter,
    StoredThread,
    UsageGroup,
    UsageKey,
)

__all__ = [
    "NEW_RUN_COLUMNS",
    "SET_META",
    "UNFINISHED",
    "ConnectionT",
    "SqlConnection",
    "SqlCursor",
    "SqlStore",
    "UpdateCheck",
    "WriteStatements",
    "check_updates",
    "run_ids_with_prefix_sql",
    "runs_where",
]


@lru_cache(maxsize=2)
def run_ids_with_prefix_sql(dialect: SqlDialect) -> str:
    """Ids starting with a prefix, newest first: a backward range scan of an index in
    byte order (SQLite's primary key; PostgreSQL's ``runs_id_bytes``), stopped at the
    limit (parameters: the dialect's ``prefix_params`` and the limit)."""
    return dialect.sql(
        f"SELECT id FROM runs WHERE {dialect.prefix_match('id')} "
        f"ORDER BY {dialect.binary_order('id')} DESC LIMIT ?"
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


@lru_cache(maxsize=64)
def _step_costs_query(dialect: SqlDialect, count: int) -> str:
    """The query of :meth:`SqlStore._step_costs_of` for ``count`` runs."""
    return dialect.sql(STEP_COSTS_OF_RUNS.format(runs=dialect.in_list("run_id", count)))


USAGE_KEYS: dict[str, str] = {
    "day": "substr(started_at, 1, 10)",  # UTC: timestamps are ISO 8601 in UTC
    "model": "provider || '/' || model",
    "role": "role",
    "mode": "chain_of_thought",
    "provider": "provider",
    "client": "COALESCE(runs.client, '-')",
}
"""The SQL of each :data:`~thoughtline.store.base.UsageKey` (the same in both dialects)."""
_USAGE_COLUMNS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


class SqlStore(SqlUpkeep[ConnectionT]):
    """The store's queries on connections of type ``ConnectionT``, written once for
    SQLite and PostgreSQL (its writes: :class:`~thoughtline.store._sql_writes.SqlWrites`;
    its upkeep: :class:`~thoughtline.store._sql_upkeep.SqlUpkeep`); a subclass names its
    :attr:`dialect` and opens its connections and transactions. A store is its own
    context manager: leaving it closes it."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- runs and tasks --------------------------------------------------------------
    def _tool_calls_of(self, conn: ConnectionT, run_ids: Sequence[str]) -> list[Any]:
        """The rows of ``run_ids``' tool calls, in task and call order, as tuples
        (:func:`rows.tool_calls_by_task`): one query."""
        dialect = self.dialect
        return self._tuples(
            conn, _tool_calls_query(dialect, len(run_ids)), dialect.list_params(run_ids)
        )

    def _step_costs_of(
        self, conn: ConnectionT, run_ids: Sequence[str], task_rows: Sequence[Any]
    ) -> list[Any]:
        """The rows of ``run_ids``' step costs, in task and step order, as tuples; none
        read when no task of ``task_rows`` made a priced call."""
        if not any(row["cost_json"] not in (None, _NO_STEPS) for row in task_rows):
            return []
        dialect = self.dialect
        return self._tuples(
            conn, _step_costs_query(dialect, len(run_ids)), dialect.list_params(run_ids)
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
            costs = self._step_costs_of(conn, [run_id], tasks)
        return rows.runs_with_tasks([row], tasks, calls, costs)[0]

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
        # covers the sum (migrations m011, m015), not from their rows.
        where = "tasks.started_at >= ?" if since is not None else "tasks.started_at IS NOT NULL"
        # By client: each task's run (by its primary key), the rest from the index.
        source = "tasks JOIN runs ON runs.id = tasks.run_id" if by == "client" else "tasks"
        query = (
            f"SELECT {key} AS key, tasks.provider, tasks.model, COUNT(*), "
            "SUM(CASE WHEN input_tokens IS NULL AND output_tokens IS NULL THEN 1 ELSE 0 END), "
            + ", ".join(f"COALESCE(SUM({column}), 0)" for column in _USAGE_COLUMNS)
            # A task of unknown cost adds what its calls of known cost came to.
            + ", COALESCE(SUM(COALESCE(cost_amount, cost_known_amount)), 0), "
            "SUM(CASE WHEN cost_amount IS NULL THEN 1 ELSE 0 END)"
            f" FROM {source} WHERE {where} GROUP BY {key}, tasks.provider, tasks.model "
            f"ORDER BY {key}, tasks.provider, tasks.model"
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
        costs = self._step_costs_of(conn, run_ids, task_rows)
        return rows.runs_with_tasks(run_rows, task_rows, calls, costs)

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
    if where.client is not None:
        conditions.append("client = ?")
        params.append(where.client)
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

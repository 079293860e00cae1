"""PostgreSQL's bulk statements: a write's rows sent as one JSON parameter and spread
into rows by the server (one statement per table, however many rows), the updates that
find their rows by key, and what a deletion leaves on disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

import orjson

from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import POSTGRES
from thoughtline.store._sql_store import (
    NEW_RUN_COLUMNS,
)

RESIDUE = (
    "PostgreSQL keeps the bytes of deleted rows in its table files until VACUUM reuses "
    "the space, and in its write-ahead log, backups and replicas until they are recycled; "
    "the rows are gone from every query now, and VACUUM FULL trace_events, tasks, "
    "task_tool_calls, run_events rewrites those tables at once."
)


def _from_json(table: str, columns: str, casts: tuple[str, ...], keep: str) -> str:
    """An INSERT of many rows sent as one JSON array of rows: one statement for the
    server to run and one result for the client to read, where ``executemany`` has one
    of each per row; JSON because it is written in C (:func:`json_text`), where psycopg
    adapts a list element by element in Python (measured: 1.5 ms for 64 events); read
    as ``jsonb``, parsed once, where each ``->>`` of a ``json`` value parses its row's
    text again (the server's time per event: 8 µs against 13)."""
    names = [column.strip() for column in columns.split(",")]
    values = ", ".join(f"(row ->> {index}){cast}" for index, cast in enumerate(casts))
    return (
        f"INSERT INTO {table} ({', '.join(names)}) SELECT {values} "
        "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS appended(row, position) "
        f"ORDER BY position{keep}"
    )


def json_text(rows: object) -> str:
    """The JSON text of the rows one statement writes. orjson writes it several times
    faster than :func:`json.dumps` (which took a sixth of the writer thread's time in
    ``bench/bench_store.py``), and refuses a lone surrogate: such text goes through
    :func:`json.dumps` instead, which keeps it, so that it fails to encode as UTF-8 as a
    row's would, and the write is retried with such characters escaped
    (:meth:`~thoughtline.store._transitions.TransitionWrites.write_prepared`)."""
    try:
        return orjson.dumps(rows).decode()
    except orjson.JSONEncodeError:
        return json.dumps(rows, ensure_ascii=False)


REPLAY_KEEP = " ON CONFLICT DO NOTHING"
APPENDS: Final = {
    POSTGRES.sql(rows.INSERT_RUN_EVENT + keep): _from_json(
        "run_events", rows.RUN_EVENT_COLUMNS, ("", "::bigint", "", "", "", ""), keep
    )
    for keep in ("", REPLAY_KEEP)
} | {
    POSTGRES.sql(rows.INSERT_TRACE + keep): _from_json(
        "trace_events", rows.TRACE_COLUMNS, ("", "", "", "", "", "", "::float8", "", ""), keep
    )
    for keep in ("", REPLAY_KEEP)
}
"""The log inserts (and their replays, :attr:`PreparedWrite.replayed`), row by row,
and as one statement of a JSON array (in row order: trace events are numbered as they
are inserted)."""


def _insert_from_json(table: str, columns: Sequence[str], extra: str, keep: str) -> str:
    """An INSERT of many rows from a JSON array of objects typed by the table's own
    columns, in the array's order (the identity ``row_order`` follows it)."""
    return (
        f"INSERT INTO {table} ({', '.join(columns)}{', ' if extra else ''}"
        f"{'heartbeat_at' if extra else ''}) SELECT "
        f"{', '.join('given.' + column for column in columns)}{', ' if extra else ''}{extra} "
        f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) WITH ORDINALITY AS given "
        f"ORDER BY given.ordinality{keep}"
    )


INSERT_RUNS: Final = {
    keep: _insert_from_json("runs", NEW_RUN_COLUMNS, POSTGRES.now_sql, keep)
    for keep in ("", REPLAY_KEEP)
}
INSERT_TASKS: Final = {
    keep: _insert_from_json("tasks", rows.TASK_COLUMNS, "", keep) for keep in ("", REPLAY_KEEP)
}
"""New runs (stamped with the server's clock) and their tasks, one statement each."""
UPDATE_RUNS: Final = (
    "UPDATE runs SET status = changed.status, finished_at = changed.finished_at, "
    "tool_server_starts_json = changed.tool_server_starts_json "
    "FROM jsonb_populate_recordset(NULL::runs, %s::jsonb) AS changed "
    "WHERE runs.id = changed.id AND runs.id = ANY(%s) RETURNING runs.id"
)
UPDATE_TASKS: Final = (
    f"UPDATE tasks SET ({', '.join(rows.UPDATED_TASK_COLUMNS)}) = "
    f"({', '.join('changed.' + column for column in rows.UPDATED_TASK_COLUMNS)}) "
    "FROM jsonb_populate_recordset(NULL::tasks, %s::jsonb) AS changed "
    "WHERE tasks.id = changed.id AND tasks.id = ANY(%s) RETURNING tasks.id"
)
"""Several runs' or tasks' updates in one statement, from a JSON array of rows typed by
the table's own columns; the ids updated come back, so a missing one is named. The ids
are also given as an array: the planner cannot see into the JSON (it guesses 100 rows)
and joined it to a scan of the whole table, a cost that grew with every run stored
(1.7 ms for 8 runs among 2,700); ``= ANY`` of the ids reads them by the primary key."""
TOUCH_RUNS: Final = (
    f"UPDATE runs SET heartbeat_at = {POSTGRES.now_sql} WHERE id = ANY(%s) RETURNING id"
)
"""The heartbeat refresh every write starts with (it locks the runs' rows)."""
BY_KEY_ONLY: Final = "SET LOCAL enable_seqscan = off"
"""How a write transaction starts. Its updates find their rows by primary key, and a
prepared statement keeps the plan it was first given (a generic plan, after five
executions): on a fresh database, where scanning the small table was cheaper, that plan
scanned the whole table at every write as the table grew (a third of the server's time
in ``bench/bench_store.py``), until an ANALYZE. Planned without sequential scans, they
always read by key; the setting ends with the transaction."""

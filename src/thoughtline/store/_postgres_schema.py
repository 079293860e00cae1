"""The PostgreSQL schema, as the same ordered named migrations as SQLite's
(:mod:`thoughtline.store.migrations`): same names, same tables and columns, in
PostgreSQL's types.

Opening a database applies, in order, the migrations whose names its ``migrations``
table lacks, all in one transaction that first takes a transaction-scoped advisory lock
(:data:`MIGRATION_LOCK`): when several processes or machines start at the same moment,
one migrates and the others wait, then find nothing left to do. A database that records
a migration this code does not know was written by a newer thoughtline and is refused
untouched.

The tables live in the connection's current schema (``search_path``): put
``options=-csearch_path=NAME`` in the connection string to keep them in a schema of
their own. Rules for new migrations are those of :mod:`thoughtline.store.migrations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from thoughtline.records import Run, Task, now_iso
from thoughtline.store import _rows as rows
from thoughtline.store.migrations import newer_database_error

MIGRATION_LOCK = 0x7468_6F75_6768_746C  # "thoughtl": one key for thoughtline's schema
"""The advisory lock key every thoughtline process takes before migrating."""

NOW_SQL = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
"""The server's clock as the runtime writes timestamps: heartbeats written by every
host compare against one clock."""


# Statements the store and the copy into it share (rows mapped by thoughtline.store._rows).
INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(rows.TASK_COLUMNS)}) "
    f"VALUES ({', '.join(f'%({column})s' for column in rows.TASK_COLUMNS)})"
)
UPDATE_TASK = (
    f"UPDATE tasks SET "
    f"{', '.join(f'{column} = %({column})s' for column in rows.UPDATED_TASK_COLUMNS)} "
    "WHERE id = %(id)s"
)
INSERT_TRACE = rows.INSERT_TRACE.replace("?", "%s")
INSERT_RUN_EVENT = (
    f"INSERT INTO run_events ({rows.RUN_EVENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"
)


NUL_REPLACEMENT = "\ufffd"
"""What U+0000 becomes: PostgreSQL text cannot hold it (SQLite can). Only model output
can carry one; JSON columns escape it and keep it exactly."""


def storable(value: object) -> object:
    return value.replace("\x00", NUL_REPLACEMENT) if isinstance(value, str) else value


def task_params(task: Task) -> dict[str, object]:
    """A task's row parameters (``rows.task_params``), storable in PostgreSQL."""
    return {name: storable(value) for name, value in rows.task_params(task).items()}


def run_params(run: Run) -> tuple[object, ...]:
    """A run's :data:`rows.RUN_FIELDS` values, storable in PostgreSQL."""
    return tuple(storable(getattr(run, name)) for name in rows.RUN_FIELDS)


@dataclass(frozen=True, slots=True)
class PostgresMigration:
    """One named, append-only schema change: statements run in order."""

    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[PostgresMigration, ...] = (
    PostgresMigration(
        "m001_runs_and_tasks",
        (
            # row_order breaks ties between runs created in the same millisecond, as
            # SQLite's rowid does.
            """
            CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                status TEXT NOT NULL,
                request TEXT NOT NULL,
                chain_of_thought TEXT NOT NULL,
                chain_of_thought_source TEXT NOT NULL,
                worker_backend TEXT NOT NULL,
                created_at TEXT NOT NULL,
                finished_at TEXT,
                owner_host TEXT,
                owner_pid BIGINT,
                owner_start_time BIGINT,
                owner_boot_id TEXT,
                heartbeat_at TEXT,
                row_order BIGINT GENERATED ALWAYS AS IDENTITY
            )
            """,
            "CREATE INDEX runs_created_at ON runs (created_at, row_order)",
            "CREATE INDEX runs_status ON runs (status)",
            """
            CREATE TABLE tasks (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                role TEXT NOT NULL,
                name TEXT NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                chain_of_thought TEXT NOT NULL,
                chain_of_thought_source TEXT NOT NULL,
                effort TEXT NOT NULL,
                after_json TEXT NOT NULL,
                status TEXT NOT NULL,
                executor TEXT NOT NULL,
                output TEXT,
                reasoning TEXT,
                reasoning_parts_json TEXT,
                reasoning_status TEXT,
                reasoning_notice TEXT,
                input_tokens BIGINT,
                output_tokens BIGINT,
                reasoning_tokens BIGINT,
                error_code TEXT,
                error_message TEXT,
                error_retryable INTEGER,
                started_at TEXT,
                finished_at TEXT,
                first_reasoning_ms DOUBLE PRECISION,
                first_answer_ms DOUBLE PRECISION,
                total_ms DOUBLE PRECISION,
                row_order BIGINT GENERATED ALWAYS AS IDENTITY
            )
            """,
            "CREATE INDEX tasks_run ON tasks (run_id, position)",
        ),
    ),
    PostgresMigration(
        "m002_trace_events",
        (
            # seq is the write order; an identity never hands out a number twice.
            """
            CREATE TABLE trace_events (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                task_id TEXT,
                type TEXT NOT NULL,
                layer TEXT NOT NULL CHECK (layer IN ('answer', 'reasoning', 'provider_raw')),
                at TEXT NOT NULL,
                at_epoch DOUBLE PRECISION NOT NULL,
                expires_at TEXT,
                metadata_json TEXT NOT NULL
            )
            """,
            "CREATE INDEX trace_events_run ON trace_events (run_id, seq)",
            "CREATE INDEX trace_events_layer_at ON trace_events (layer, at_epoch)",
        ),
    ),
    PostgresMigration(
        "m003_meta",
        ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",),
    ),
    PostgresMigration(
        "m004_run_events",
        (
            # The payload stays in the table: a live-event notification carries ids only.
            """
            CREATE TABLE run_events (
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                seq BIGINT NOT NULL,
                type TEXT NOT NULL,
                task_id TEXT,
                at TEXT NOT NULL,
                data_json TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            )
            """,
            "CREATE INDEX run_events_type_at ON run_events (type, at)",
        ),
    ),
    PostgresMigration(
        "m005_task_finish_generation_cache",
        tuple(
            f"ALTER TABLE tasks ADD COLUMN {column}"
            for column in (
                "finish_reason TEXT",
                "cached_input_tokens BIGINT",
                "cache_write_tokens BIGINT",
                "max_output_tokens BIGINT",
                "temperature DOUBLE PRECISION",
            )
        ),
    ),
)


def applied_migrations(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Names recorded in the ``migrations`` table in the order applied (empty for a new
    database)."""
    found = conn.execute("SELECT to_regclass('migrations')").fetchone()
    if found is None or found[0] is None:
        return []
    return [str(row[0]) for row in conn.execute("SELECT name FROM migrations ORDER BY position")]


def check_not_newer(
    conn: psycopg.Connection[tuple[object, ...]],
    *,
    location: str,
    migrations: Sequence[PostgresMigration] = MIGRATIONS,
) -> None:
    """Raise :class:`~thoughtline.errors.ConfigError` when the database records a
    migration this code does not know."""
    known = {migration.name for migration in migrations}
    unknown = [name for name in applied_migrations(conn) if name not in known]
    if unknown:
        raise newer_database_error(
            f"at {location}",
            unknown,
            elsewhere="point THOUGHTLINE_STORE_URL (or [store] dsn) at another database",
        )


def apply_migrations(
    conn: psycopg.Connection[tuple[object, ...]],
    *,
    location: str,
    migrations: Sequence[PostgresMigration] = MIGRATIONS,
) -> list[str]:
    """Apply the missing migrations in order, in one transaction under the advisory
    lock; return their names. ``conn`` must be in autocommit mode."""
    check_not_newer(conn, location=location, migrations=migrations)
    if set(applied_migrations(conn)) >= {migration.name for migration in migrations}:
        return []  # up to date: opening never waits for a process that migrates
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, "
            "applied_at TEXT NOT NULL, position BIGINT GENERATED ALWAYS AS IDENTITY)"
        )
        # Read again under the lock: another process may have migrated meanwhile.
        check_not_newer(conn, location=location, migrations=migrations)
        done = set(applied_migrations(conn))
        for migration in migrations:
            if migration.name in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (%s, %s)",
                (migration.name, now_iso()),
            )
            applied_now.append(migration.name)
    return applied_now

"""How PostgreSQL applies the schema's named migrations (written once, for both stores,
in :mod:`thoughtline.store.migrations`), and the row values it stores.

Opening a database applies, in order, the migrations whose names its ``migrations``
table lacks, all in one transaction that first takes a transaction-scoped advisory lock
(:data:`MIGRATION_LOCK`): when several processes or machines start at the same moment,
one migrates and the others wait, then find nothing left to do. A database that records
a migration this code does not know was written by a newer thoughtline and is refused
untouched.

The tables live in the connection's current schema (``search_path``): put
``options=-csearch_path=NAME`` in the connection string to keep them in a schema of
their own.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from thoughtline.records import Run, Task, now_iso
from thoughtline.store import _rows as rows
from thoughtline.store._sql_dialect import POSTGRES
from thoughtline.store.migrations import newer_database_error
from thoughtline.store.schema import MIGRATIONS, Migration

__all__ = [
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "apply_migrations",
    "run_params",
    "task_params",
    "tool_call_params",
]

MIGRATION_LOCK = 0x7468_6F75_6768_746C  # "thoughtl": one key for thoughtline's schema
"""The advisory lock key every thoughtline process takes before migrating."""

# Statements the store and the copy into it share (rows mapped by thoughtline.store._rows).
INSERT_TASK = POSTGRES.sql(rows.INSERT_TASK)
INSERT_TRACE = POSTGRES.sql(rows.INSERT_TRACE)
INSERT_RUN_EVENT = POSTGRES.sql(rows.INSERT_RUN_EVENT)
UPSERT_TOOL_CALL = POSTGRES.sql(rows.UPSERT_TOOL_CALL)

NUL_REPLACEMENT = "\ufffd"
"""What U+0000 becomes: PostgreSQL text cannot hold it (SQLite can). Only model output
can carry one; JSON columns escape it and keep it exactly."""


def storable(value: object) -> object:
    return value.replace("\x00", NUL_REPLACEMENT) if isinstance(value, str) else value


def task_params(task: Task) -> dict[str, object]:
    """A task's row parameters (``rows.task_params``), storable in PostgreSQL."""
    params = rows.task_params(task)
    # Forty-odd columns, prepared for every write of a task: only those holding U+0000
    # are replaced (a function call per column cost more than the rest of the row).
    for name in [name for name, value in params.items() if type(value) is str and "\x00" in value]:
        params[name] = storable(params[name])
    return params


def tool_call_params(task: Task, position: int) -> tuple[object, ...]:
    """A tool call's row parameters (``rows.tool_call_params``), storable in PostgreSQL."""
    return tuple(storable(value) for value in rows.tool_call_params(task, position))


def run_params(run: Run) -> tuple[object, ...]:
    """A run's :data:`rows.RUN_COLUMNS` values, storable in PostgreSQL."""
    return tuple(storable(value) for value in rows.run_values(run))


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
    migrations: Sequence[Migration] = MIGRATIONS,
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
    migrations: Sequence[Migration] = MIGRATIONS,
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
            for statement in migration.statements_for(POSTGRES):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (%s, %s)",
                (migration.name, now_iso()),
            )
            applied_now.append(migration.name)
    return applied_now

"""How a SQLite store applies the schema's migrations (:mod:`thoughtline.store.schema`;
PostgreSQL's: :mod:`thoughtline.store._postgres_schema`).

A migration is a list of statements that change the schema; its name is recorded in the
``migrations`` table (``name``, ``applied_at``) once it has run. Opening a database
applies, in order, only the migrations whose names are missing, so a database created by
an older thoughtline is brought up to date and a current one is left alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from thoughtline.errors import ConfigError
from thoughtline.records import now_iso
from thoughtline.store._sql_dialect import SQLITE
from thoughtline.store.schema import MIGRATIONS, Migration, Only

__all__ = [
    "MIGRATIONS",
    "Migration",
    "Only",
    "applied_migrations",
    "apply_migrations",
    "check_not_newer",
    "newer_database_error",
]


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names recorded in the ``migrations`` table, in the order they were applied
    (empty for a new database)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'"
    ).fetchone()
    if exists is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY rowid")]


def check_not_newer(
    conn: sqlite3.Connection, *, location: str, migrations: Sequence[Migration] = MIGRATIONS
) -> None:
    """Raise :class:`ConfigError` when the database records a migration this code does not
    know: a newer thoughtline wrote it, and touching it could damage data it relies on."""
    known = {migration.name for migration in migrations}
    unknown = [name for name in applied_migrations(conn) if name not in known]
    if unknown:
        raise newer_database_error(
            location, unknown, elsewhere="set THOUGHTLINE_HOME to another directory"
        )


def newer_database_error(location: str, unknown: Sequence[str], *, elsewhere: str) -> ConfigError:
    """The refusal to open a database a newer thoughtline wrote (every store says it the
    same way); ``elsewhere`` is how to point thoughtline at another database."""
    return ConfigError(
        f"The thoughtline database {location} was written by a newer version of "
        f"thoughtline (it records schema migrations this version does not know: "
        f"{', '.join(unknown)}). Upgrade thoughtline, or {elsewhere}. The database was "
        "not modified."
    )


def apply_migrations(
    conn: sqlite3.Connection, *, location: str, migrations: Sequence[Migration] = MIGRATIONS
) -> list[str]:
    """Apply the missing migrations in order, all in one transaction; return their names.

    ``conn`` must be in autocommit mode (``isolation_level=None``). The quick check runs
    without a lock so opening an up-to-date database never waits for a writer; when work
    is needed, the write lock is taken first and the state read again, so two processes
    opening the same new database at once cannot both apply a migration.
    """
    check_not_newer(conn, location=location, migrations=migrations)
    if set(applied_migrations(conn)) >= {migration.name for migration in migrations}:
        return []
    applied_now: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        check_not_newer(conn, location=location, migrations=migrations)
        done = set(applied_migrations(conn))
        for migration in migrations:
            if migration.name in done:
                continue
            for statement in migration.statements_for(SQLITE):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, now_iso()),
            )
            applied_now.append(migration.name)
        conn.execute("COMMIT")
    except BaseException:
        # A failed statement may already have ended the transaction.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied_now

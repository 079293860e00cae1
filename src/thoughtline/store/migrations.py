"""The SQLite schema, as an ordered list of named migrations.

A migration is a function that changes the schema; its name is recorded in the
``migrations`` table (``name``, ``applied_at``) once it has run. Opening a database
applies, in order, only the migrations whose names are missing, so a database created by
an older thoughtline is brought up to date and a current one is left alone.

Rules for whoever adds a migration:

- Append to :data:`MIGRATIONS`; never rename, reorder or edit one that has shipped —
  databases in the wild already recorded it.
- Use ``conn.execute`` only. ``executescript`` commits the open transaction first, which
  would break the all-or-nothing guarantee and let two processes migrate at once.
- Everything retention must reach gets real columns (no opaque blobs).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from thoughtline.errors import ConfigError
from thoughtline.records import now_iso


@dataclass(frozen=True, slots=True)
class Migration:
    """One named, append-only schema change."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


def _m001_runs_and_tasks(conn: sqlite3.Connection) -> None:
    # Owner columns identify the process that created the run, so a later open can tell a
    # crashed owner (mark the run interrupted) from a live one in another process.
    conn.execute(
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
            owner_pid INTEGER,
            owner_start_time INTEGER,
            owner_boot_id TEXT,
            heartbeat_at TEXT
        )
        """
    )
    conn.execute("CREATE INDEX runs_created_at ON runs (created_at)")
    conn.execute("CREATE INDEX runs_status ON runs (status)")
    conn.execute(
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
            input_tokens INTEGER,
            output_tokens INTEGER,
            reasoning_tokens INTEGER,
            error_code TEXT,
            error_message TEXT,
            error_retryable INTEGER,
            started_at TEXT,
            finished_at TEXT,
            first_reasoning_ms REAL,
            first_answer_ms REAL,
            total_ms REAL
        )
        """
    )
    conn.execute("CREATE INDEX tasks_run ON tasks (run_id, position)")


def _m002_trace_events(conn: sqlite3.Connection) -> None:
    # ``seq`` is the write order (AUTOINCREMENT never reuses a number, even after purges
    # delete the newest rows). ``at_epoch`` is ``at`` parsed to seconds, so retention
    # compares numbers and is right whatever offset or precision ``at`` was written with.
    conn.execute(
        """
        CREATE TABLE trace_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            task_id TEXT,
            type TEXT NOT NULL,
            layer TEXT NOT NULL CHECK (layer IN ('answer', 'reasoning', 'provider_raw')),
            at TEXT NOT NULL,
            at_epoch REAL NOT NULL,
            expires_at TEXT,
            metadata_json TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX trace_events_run ON trace_events (run_id, seq)")
    conn.execute("CREATE INDEX trace_events_layer_at ON trace_events (layer, at_epoch)")


def _m003_meta(conn: sqlite3.Connection) -> None:
    # Small facts about the database itself, e.g. when retention last ran.
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _m004_run_events(conn: sqlite3.Connection) -> None:
    # The live events of each run (task.started, answer.delta, reasoning.delta when the
    # mode displays it, task.completed, the terminal event) with their per-run sequence
    # numbers, so any process can replay or tail a run's stream by event id.
    conn.execute(
        """
        CREATE TABLE run_events (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            task_id TEXT,
            at TEXT NOT NULL,
            data_json TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID
        """
    )


def _m005_task_finish_generation_cache(conn: sqlite3.Connection) -> None:
    # Why a task's answer ended, the generation settings its call sent, and the cached
    # and cache-written shares of its input (null in rows written before).
    for column in (
        "finish_reason TEXT",
        "cached_input_tokens INTEGER",
        "cache_write_tokens INTEGER",
        "max_output_tokens INTEGER",
        "temperature REAL",
    ):
        conn.execute(f"ALTER TABLE tasks ADD COLUMN {column}")


MIGRATIONS: tuple[Migration, ...] = (
    Migration("m001_runs_and_tasks", _m001_runs_and_tasks),
    Migration("m002_trace_events", _m002_trace_events),
    Migration("m003_meta", _m003_meta),
    Migration("m004_run_events", _m004_run_events),
    Migration("m005_task_finish_generation_cache", _m005_task_finish_generation_cache),
)


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
            migration.apply(conn)
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

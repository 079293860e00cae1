"""Both stores are built from one schema: the same migrations make the same tables,
columns (names, kinds of values, nullability), keys and indexes (names and columns) in
SQLite and PostgreSQL, apart from the differences the schema makes on purpose."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from thoughtline.store.migrations import MIGRATIONS, apply_migrations
from thoughtline.store.sqlite import SQLiteStore

TYPE_CLASSES = {
    "text": "text",
    "integer": "integer",
    "bigint": "integer",
    "real": "real",
    "double precision": "real",
}
"""Each database's column types, by the kind of value they hold."""

ROW_ORDER_COLUMNS = {("runs", "row_order"), ("tasks", "row_order"), ("migrations", "position")}
"""PostgreSQL's columns that order rows inserted together, where SQLite has its rowid
(which every SQLite index also ends in)."""
POSTGRES_ONLY_INDEXES = {
    ("run_events_reasoning_at", "run_events", ("at",), False),
    ("runs_id_bytes", "runs", ("id",), False),
}
"""A purge's index of reasoning deltas that SQLite leaves out (there every index is kept
up on the event loop at each append of a live event), and the run ids in byte order that
SQLite's primary key already is."""

Column = tuple[str, str, str, bool]  # table, column, type class, nullable
Key = tuple[str, str, tuple[str, ...]]  # table, "primary" or "unique", columns
Index = tuple[str, str, tuple[str, ...], bool]  # name, table, columns, unique


@dataclass(frozen=True)
class Schema:
    columns: frozenset[Column]
    keys: frozenset[Key]
    indexes: frozenset[Index]
    migrations: tuple[str, ...]


def _sqlite_schema(path: Path) -> Schema:
    columns: set[Column] = set()
    keys: set[Key] = set()
    indexes: set[Index] = set()
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        ]
        for table in tables:
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()
            primary = tuple(str(row[1]) for row in sorted(info, key=lambda row: row[5]) if row[5])
            keys.add((table, "primary", primary))
            for _cid, name, declared, not_null, _default, in_key in info:
                nullable = not (not_null or in_key)
                columns.add((table, name, TYPE_CLASSES[str(declared).lower()], nullable))
            for _seq, index, unique, origin, _partial in conn.execute(
                f"PRAGMA index_list({table})"
            ).fetchall():
                indexed = tuple(
                    str(row[2]) for row in conn.execute(f"PRAGMA index_info({index})").fetchall()
                )
                if origin == "u":
                    keys.add((table, "unique", indexed))
                elif origin == "c":
                    indexes.add((index, table, indexed, bool(unique)))
        migrations = tuple(
            str(row[0]) for row in conn.execute("SELECT name FROM migrations ORDER BY rowid")
        )
    return Schema(frozenset(columns), frozenset(keys), frozenset(indexes), migrations)


def _postgres_schema(dsn: str) -> Schema:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        columns = {
            (str(table), str(name), TYPE_CLASSES[str(declared)], nullable == "YES")
            for table, name, declared, nullable in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable "
                "FROM information_schema.columns WHERE table_schema = current_schema()"
            ).fetchall()
        }
        keys: set[Key] = set()
        indexes: set[Index] = set()
        for index, table, primary, unique, constraint, indexed in conn.execute(
            "SELECT i.relname, t.relname, x.indisprimary, x.indisunique, "
            "EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid), "
            "array_agg(a.attname::text ORDER BY k.position) "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid "
            "CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, position) "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
            "WHERE t.relnamespace = current_schema()::regnamespace "
            "GROUP BY i.relname, t.relname, x.indisprimary, x.indisunique, x.indexrelid"
        ).fetchall():
            if constraint:
                keys.add((str(table), "primary" if primary else "unique", tuple(indexed)))
            else:
                indexes.add((str(index), str(table), tuple(indexed), bool(unique)))
        migrations = tuple(
            str(row[0]) for row in conn.execute("SELECT name FROM migrations ORDER BY position")
        )
    return Schema(frozenset(columns), frozenset(keys), frozenset(indexes), migrations)


def _as_in_sqlite(schema: Schema) -> Schema:
    """A PostgreSQL schema with its deliberate differences taken out: the row order
    columns (and their place at the end of indexes), the index SQLite leaves out."""
    indexes = {
        (name, table, columns[:-1] if columns[-1:] == ("row_order",) else columns, unique)
        for name, table, columns, unique in schema.indexes - POSTGRES_ONLY_INDEXES
    }
    return replace(
        schema,
        columns=frozenset(
            column for column in schema.columns if column[:2] not in ROW_ORDER_COLUMNS
        ),
        indexes=frozenset(indexes),
    )


def _differences(left: Schema, right: Schema) -> dict[str, set[object]]:
    """What one schema has and the other lacks, by part (empty when they are the same)."""
    found: dict[str, set[object]] = {
        "columns": set(left.columns ^ right.columns),
        "keys": set(left.keys ^ right.keys),
        "indexes": set(left.indexes ^ right.indexes),
        "migrations": set() if left.migrations == right.migrations else {left.migrations},
    }
    return {part: items for part, items in found.items() if items}


@pytest.mark.slow
def test_both_stores_have_the_same_tables_columns_keys_and_indexes(
    tmp_path: Path, postgres_dsn: str
) -> None:
    from thoughtline.store.postgres import PostgresStore

    SQLiteStore(tmp_path / "thoughtline.db").close()
    PostgresStore(postgres_dsn).close()
    sqlite = _sqlite_schema(tmp_path / "thoughtline.db")
    postgres = _postgres_schema(postgres_dsn)

    assert _differences(sqlite, _as_in_sqlite(postgres)) == {}
    # The comparison covers every table and what differs on purpose is really there.
    assert {column[0] for column in sqlite.columns} == {
        "runs", "tasks", "trace_events", "meta", "run_events", "migrations", "task_tool_calls",
        "task_threads", "task_step_costs",
    }  # fmt: skip
    assert ("tasks", "temperature", "real", True) in sqlite.columns
    assert ("task_tool_calls", "duration_ms", "real", True) in sqlite.columns
    assert ("task_tool_calls", "primary", ("task_id", "position")) in sqlite.keys
    assert (
        "task_tool_calls_run", "task_tool_calls", ("run_id", "task_id", "position"), False
    ) in sqlite.indexes  # fmt: skip
    assert ("task_step_costs", "primary", ("task_id", "step")) in sqlite.keys
    assert ("trace_events", "unique", ("id",)) in sqlite.keys
    assert ("run_events", "primary", ("run_id", "seq")) in sqlite.keys
    assert ("runs_created_at", "runs", ("created_at", "row_order"), False) in postgres.indexes
    assert postgres.indexes >= POSTGRES_ONLY_INDEXES
    assert {(table, name) for table, name, *_ in postgres.columns} >= ROW_ORDER_COLUMNS


def test_a_column_one_store_lacks_is_reported(tmp_path: Path) -> None:
    # The same migrations, one of them without its last column: as if one dialect's
    # schema had drifted.
    names = [migration.name for migration in MIGRATIONS]
    at = names.index("m005_task_finish_generation_cache")
    drifted = replace(MIGRATIONS[at], statements=MIGRATIONS[at].statements[:-1])
    SQLiteStore(tmp_path / "full.db").close()
    with closing(sqlite3.connect(tmp_path / "drifted.db", isolation_level=None)) as conn:
        apply_migrations(
            conn,
            location="drifted.db",
            migrations=(*MIGRATIONS[:at], drifted, *MIGRATIONS[at + 1 :]),
        )

    found = _differences(
        _sqlite_schema(tmp_path / "full.db"), _sqlite_schema(tmp_path / "drifted.db")
    )

    assert found == {"columns": {("tasks", "temperature", "real", True)}}

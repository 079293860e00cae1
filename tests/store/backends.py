"""The stores the behavioural tests run against, behind one small interface: open the
store (as often as a test likes, as several processes would), change its rows behind its
back with SQL, and hand its location to child processes."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from thoughtline.runtime.policy.recovery import HEARTBEAT_STALE_S, LEASE_MISSED_BEATS
from thoughtline.store.base import Store
from thoughtline.store.schema import Migration
from thoughtline.store.sqlite import SQLiteStore

StoreKind = Literal["sqlite", "postgres"]


def open_at(location: str) -> Store:
    """The store at ``location``: a PostgreSQL URL or a SQLite file path."""
    if location.startswith("postgresql://"):
        from thoughtline.store.postgres import PostgresStore

        return PostgresStore(location)
    return SQLiteStore(Path(location))


@dataclass(frozen=True)
class StoreBackend:
    kind: StoreKind
    location: str
    """The SQLite file's path, or the PostgreSQL database's URL."""
    opened: list[Store] = field(default_factory=list, compare=False, repr=False)
    """Every store :meth:`open` returned, closed by the ``backend`` fixture afterwards."""

    def open(self) -> Store:
        store = open_at(self.location)
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        """Close what the test left open (closing twice is harmless)."""
        for store in self.opened:
            store.close()
        self.opened.clear()

    @property
    def named_in_messages(self) -> str:
        """How the store's errors name it."""
        if self.kind == "sqlite":
            return self.location
        return self.location.rpartition("@")[2]

    @property
    def stale_after_s(self) -> float:
        """How long a remote owner's silence takes to count as death in this store."""
        if self.kind == "sqlite":
            return HEARTBEAT_STALE_S
        from thoughtline.store.postgres import HEARTBEAT_INTERVAL_S

        return LEASE_MISSED_BEATS * HEARTBEAT_INTERVAL_S

    def make_earlier(
        self,
        migrations: Sequence[Migration],
        rows: Sequence[tuple[str, tuple[object, ...]]] = (),
    ) -> None:
        """Make the store as an earlier version left it: the schema of ``migrations``
        only, then ``rows`` (statements with ``?`` placeholders and their parameters)
        written as that version wrote them."""
        if self.kind == "sqlite":
            from thoughtline.store.migrations import apply_migrations

            with closing(sqlite3.connect(self.location, isolation_level=None)) as conn:
                apply_migrations(conn, location=self.location, migrations=migrations)
                for statement, params in rows:
                    conn.execute(statement, params)
            return
        import psycopg

        from thoughtline.store._postgres_schema import apply_migrations as apply_postgres

        with psycopg.connect(self.location, autocommit=True) as pg:
            apply_postgres(pg, location="test", migrations=migrations)
            for statement, params in rows:
                pg.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]

    def sql(self, statement: str, params: tuple[object, ...] = ()) -> None:
        """Run one statement (``?`` placeholders) outside the store, committed."""
        if self.kind == "sqlite":
            with closing(sqlite3.connect(self.location, isolation_level=None)) as conn:
                conn.execute(statement, params)
            return
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as conn:
            conn.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]

    def query(self, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        if self.kind == "sqlite":
            with closing(sqlite3.connect(self.location)) as conn:
                return list(conn.execute(statement, params).fetchall())
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as conn:
            return list(conn.execute(statement.replace("?", "%s"), params).fetchall())  # type: ignore[arg-type]

    def holds(self, text: str) -> bool:
        """Whether ``text`` is anywhere in the store: in any of the SQLite files' bytes,
        or in any row of any table of the PostgreSQL database."""
        if self.kind == "sqlite":
            path = Path(self.location)
            return any(
                text.encode() in file.read_bytes()
                for file in path.parent.iterdir()
                if file.name.startswith(path.name)
            )
        return any(text in dump for dump in self.table_dumps().values())

    def table_dumps(self) -> dict[str, str]:
        """PostgreSQL: every table of the public schema, each row as text."""
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as conn:
            tables = [
                str(row[0])
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            ]
            return {
                table: "\n".join(
                    str(row[0])
                    for row in conn.execute(f"SELECT t::text FROM {table} AS t").fetchall()  # type: ignore[arg-type]
                )
                for table in tables
            }

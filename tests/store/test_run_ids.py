"""Finding runs by the start of their id, on each store: through an index in byte order
(a backward range scan stopped at the limit, whatever the database's collation), old
runs as well as new, wildcard characters taken literally, newest first."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from tests.store.postgres_cluster import Cluster
from thoughtline.store._sql_dialect import POSTGRES, SQLITE
from thoughtline.store._sql_store import run_ids_with_prefix_sql
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.sqlite import SQLiteStore

IDS = ["run_a1", "run_a2", "run_b1", "run_%x", "run__y", "run_a%", "run_a_"]
IDS += [f"run_f{n:04d}" for n in range(1200)]  # more than a screenful of newer runs


def test_runs_are_found_by_the_start_of_their_id(backend: StoreBackend) -> None:
    store = backend.open()
    try:
        store.write_prepared([store.prepare(create=make_run(run_id)) for run_id in IDS])
        assert store.run_ids_with_prefix("run_a", 10) == ["run_a_", "run_a2", "run_a1", "run_a%"]
        assert store.run_ids_with_prefix("run_a1", 10) == ["run_a1"]
        assert store.run_ids_with_prefix("run_%", 10) == ["run_%x"]
        assert store.run_ids_with_prefix("run__", 10) == ["run__y"]
        assert store.run_ids_with_prefix("run_a_", 10) == ["run_a_"]
        assert store.run_ids_with_prefix("run_a%", 10) == ["run_a%"]
        assert store.run_ids_with_prefix("run_f", 3) == ["run_f1199", "run_f1198", "run_f1197"]
        assert store.run_ids_with_prefix("run_f0000", 3) == ["run_f0000"]
        assert store.run_ids_with_prefix("run_f000", 2) == ["run_f0009", "run_f0008"]
        assert store.run_ids_with_prefix("run_z", 3) == []
    finally:
        store.close()


def test_sqlite_ranges_over_its_primary_key_without_sorting(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "thoughtline.db").close()
    with closing(sqlite3.connect(tmp_path / "thoughtline.db")) as conn:
        plan = [
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN " + run_ids_with_prefix_sql(SQLITE), ("run_a", "run_a\uffff", 2)
            )
        ]
    assert plan == ["SEARCH runs USING COVERING INDEX sqlite_autoindex_runs_1 (id>? AND id<?)"]


@pytest.fixture
def collated_dsn(postgres_cluster: Cluster) -> Iterator[str]:
    """A database whose collation is not byte order (C.UTF-8: PostgreSQL orders it by
    the C library, as it does en_US.UTF-8), so its primary key cannot serve a prefix."""
    import psycopg

    with psycopg.connect(postgres_cluster.dsn(), autocommit=True) as conn:
        try:
            conn.execute(
                "CREATE DATABASE collated TEMPLATE template0 "
                "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
            )
        except psycopg.Error as exc:
            pytest.skip(f"no C.UTF-8 locale for PostgreSQL here ({exc})")
    try:
        yield postgres_cluster.dsn("collated")
    finally:
        with psycopg.connect(postgres_cluster.dsn(), autocommit=True) as conn:
            conn.execute("DROP DATABASE collated WITH (FORCE)")


@pytest.mark.slow
def test_postgres_ranges_over_the_byte_order_index_in_any_collation(collated_dsn: str) -> None:
    """EXPLAIN of the very query the store sends: a backward index scan of runs_id_bytes
    bounded by the prefix (no sequential scan, no sort), with the parameters given and
    with a prepared statement's generic plan; and the answers in that collation, where
    '_' and '%' would otherwise sort out of place."""
    import psycopg
    from psycopg import sql

    with closing(PostgresStore(collated_dsn)) as store:
        store.write_prepared([store.prepare(create=make_run(run_id)) for run_id in IDS])
        assert store.run_ids_with_prefix("run_a", 10) == ["run_a_", "run_a2", "run_a1", "run_a%"]
        assert store.run_ids_with_prefix("run__", 10) == ["run__y"]
        assert store.run_ids_with_prefix("run_f", 2) == ["run_f1199", "run_f1198"]
    query = run_ids_with_prefix_sql(POSTGRES)
    params = (*POSTGRES.prefix_params("run_a"), 2)
    with psycopg.connect(collated_dsn, autocommit=True) as conn:
        collation = conn.execute("SELECT datcollate FROM pg_database WHERE datname = 'collated'")
        assert collation.fetchone() == ("C.UTF-8",)
        conn.execute("ANALYZE runs")
        custom = [row[0] for row in conn.execute(f"EXPLAIN {query}", params)]
        conn.execute("SET plan_cache_mode = force_generic_plan")
        numbered = iter(range(1, len(params) + 1))
        prepared = re.sub("%s", lambda _: f"${next(numbered)}", query)
        conn.execute(f"PREPARE lookup AS {prepared}")
        values = sql.SQL(", ").join(sql.Literal(value) for value in params)
        execute = sql.SQL("EXPLAIN EXECUTE lookup ({})").format(values)
        generic = [row[0] for row in conn.execute(execute)]
    for plan in (custom, generic):
        text = "\n".join(plan)
        assert "Index Only Scan Backward using runs_id_bytes on runs" in text, text
        assert "Index Cond: ((id >= " in text, text
        assert "Seq Scan" not in text and "Sort" not in text, text

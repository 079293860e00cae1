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
from thoughtline.errors import ThoughtlineError
from thoughtline.store._sql_dialect import POSTGRES, SQLITE
from thoughtline.store._sql_store import run_ids_with_prefix_sql
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.run_ids import find_conversation, find_run, resolve_run_id
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


def test_one_resolver_names_runs_and_conversations_in_every_form(backend: StoreBackend) -> None:
    """``latest``, a short id, a start of one; a conversation by its id (an ACP session's)
    or by any of its runs; a run from before conversations were kept is one of its own."""
    store = backend.open()
    older = "run_20261201232642abcdef0123456789"  # made before short ids and conversations
    root = "run_kq3x9m2a20261201232642000001"
    turn = "run_kq3x7h4b20261201232643000002"
    session = "run_m4ab1c2d20261201232644000003"
    runs = [
        make_run(older, status="completed", created_at="2026-12-01T00:00:00.000Z"),
        make_run(root, conversation_id=root, created_at="2026-12-01T00:00:01.000Z"),
        make_run(turn, conversation_id=root, continues=root, created_at="2026-12-01T00:00:02.000Z"),
        make_run(session, conversation_id="sess_1", created_at="2026-12-01T00:00:03.000Z"),
    ]
    try:
        store.write_prepared([store.prepare(create=run) for run in runs])
        for given, expected in (
            ("latest", session),
            ("m4ab1c2d", session),
            ("kq3x7", turn),
            ("run_kq3x9", root),
            (older[4:12], older),
            ("nothing", None),
            ("", None),
        ):
            found = find_run(store, given)
            assert (found and found.id) == expected, given
            assert resolve_run_id(store, given) == expected, given
        assert [run.id for run in find_conversation(store, "kq3x7") or []] == [root, turn]
        assert [run.id for run in find_conversation(store, root) or []] == [root, turn]
        assert [run.id for run in find_conversation(store, "sess_1") or []] == [session]
        assert [run.id for run in find_conversation(store, "latest") or []] == [session]
        assert [run.id for run in find_conversation(store, older) or []] == [older]
        assert find_conversation(store, "sess_2") is None
        for ambiguous in (
            lambda: find_run(store, "kq3x"),
            lambda: find_conversation(store, "kq3x"),
        ):
            with pytest.raises(ThoughtlineError) as raised:
                ambiguous()
            assert raised.value.code == "RUN_ID_AMBIGUOUS"
            assert raised.value.message == (
                "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."
            )
    finally:
        store.close()

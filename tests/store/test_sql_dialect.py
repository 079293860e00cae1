"""Queries are written once, in SQLite's spelling; PostgreSQL gets psycopg's."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from thoughtline.store._sql_dialect import POSTGRES, SQLITE


def test_postgres_gets_psycopg_placeholders_and_literals_stay_as_written() -> None:
    query = (
        "UPDATE tasks SET notice = :notice || '?' WHERE id = ? "
        "AND data LIKE '%\"reasoning\":%' AND at < ? AND note = 'it''s :not_a_name'"
    )

    assert POSTGRES.sql(query) == (
        "UPDATE tasks SET notice = %(notice)s || '?' WHERE id = %s "
        "AND data LIKE '%%\"reasoning\":%%' AND at < %s AND note = 'it''s :not_a_name'"
    )
    assert SQLITE.sql(query) == query


def test_the_phrases_that_differ() -> None:
    assert POSTGRES.sql(POSTGRES.in_list("id", 2)) == "id = ANY(%s)"
    assert POSTGRES.list_params(("a", "b")) == (["a", "b"],)
    assert SQLITE.prefix_params("run_") == ("run_", "run_\uffff")
    assert POSTGRES.prefix_params("run_") == ("run_", "run_\U0010ffff")
    (stamp,) = SQLITE.now_params()
    assert isinstance(stamp, str) and stamp.endswith("Z")
    assert POSTGRES.now_params() == ()
    assert "clock_timestamp()" in POSTGRES.now_sql


def test_a_long_in_list_is_one_parameter_in_sqlite() -> None:
    # SQLite caps a statement's parameters (32766): a page of every run must not hit it.
    ids = [f"run_{number:06d}" for number in range(40_000)]
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY)")
        conn.executemany("INSERT INTO runs VALUES (?)", [(run_id,) for run_id in ids[::2]])
        for wanted in (ids[:3], ids):
            query = f"SELECT COUNT(*) FROM runs WHERE {SQLITE.in_list('id', len(wanted))}"
            params = SQLITE.list_params(wanted)
            (found,) = conn.execute(query, params).fetchone()
            assert found == len(wanted[::2])
    assert SQLITE.in_list("id", 3) == "id IN (?, ?, ?)"
    assert len(SQLITE.list_params(ids)) == 1

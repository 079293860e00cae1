"""Queries are written once, in SQLite's spelling; PostgreSQL gets psycopg's."""

from __future__ import annotations

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
    assert SQLITE.in_list("id") == "id IN (SELECT value FROM json_each(?))"
    assert SQLITE.list_param(["a", "b"]) == '["a","b"]'
    assert POSTGRES.sql(POSTGRES.in_list("id")) == "id = ANY(%s)"
    assert POSTGRES.list_param(("a", "b")) == ["a", "b"]
    assert SQLITE.prefix_params("run_") == ("run_", "run_\uffff")
    assert POSTGRES.prefix_params("run_") == ("run_",)
    (stamp,) = SQLITE.now_params()
    assert isinstance(stamp, str) and stamp.endswith("Z")
    assert POSTGRES.now_params() == ()
    assert "clock_timestamp()" in POSTGRES.now_sql

"""The schema migrates itself from the named migrations recorded in the database."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.store.builders import make_event, make_run
from thoughtline.errors import ConfigError
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.runtime.policy.retention import purge_due
from thoughtline.store.migrations import MIGRATIONS, apply_migrations
from thoughtline.store.sqlite import SQLiteStore

ALL_NAMES = [
    "m001_runs_and_tasks",
    "m002_trace_events",
    "m003_meta",
    "m004_run_events",
    "m005_task_finish_generation_cache",
    "m006_task_tool_calls",
    "m007_conversations",
    "m008_run_ids_in_byte_order",
    "m009_log_rows_checked_per_run",
    "m010_task_costs",
    "m011_task_usage_index",
    "m012_budgets",
    "m013_personas",
    "m014_run_tool_servers",
    "m015_task_step_costs",
    "m016_budget_notices_and_known_costs",
    "m017_gateway_clients",
    "m018_run_server_starts",
]


def _sql(path: Path, statement: str) -> list[tuple[object, ...]]:
    """Run one statement on its own connection, closed afterwards (so the WAL is
    checkpointed into the main file when it was the last one)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(statement).fetchall()


def _recorded(path: Path) -> list[tuple[object, ...]]:
    return _sql(path, "SELECT name, applied_at FROM migrations ORDER BY rowid")


def _tables(path: Path) -> set[object]:
    return {row[0] for row in _sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_the_list_is_what_this_test_expects() -> None:
    assert [migration.name for migration in MIGRATIONS] == ALL_NAMES


def test_fresh_database_records_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    SQLiteStore(path).close()

    recorded = _recorded(path)
    assert [name for name, _ in recorded] == ALL_NAMES
    assert all(str(applied_at).endswith("Z") for _, applied_at in recorded)
    assert {"runs", "tasks", "trace_events", "meta", "migrations"} <= _tables(path)


def test_reopening_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    SQLiteStore(path).close()
    before = _recorded(path)

    SQLiteStore(path).close()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert apply_migrations(conn, location=str(path)) == []

    assert _recorded(path) == before


def test_older_database_gets_only_the_missing_migrations(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert apply_migrations(conn, location=str(path), migrations=MIGRATIONS[:1]) == [
        "m001_runs_and_tasks"
    ]
    conn.execute(
        "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
        "worker_backend, created_at) VALUES ('run_old', 'completed', 'old request', 'hidden', "
        "'default', 'provider', '2025-01-01T00:00:00.000Z')"
    )
    conn.close()
    first = _recorded(path)
    assert [name for name, _ in first] == ["m001_runs_and_tasks"]
    assert "trace_events" not in _tables(path)

    store = SQLiteStore(path)

    recorded = _recorded(path)
    assert [name for name, _ in recorded] == ALL_NAMES
    assert recorded[0] == first[0]
    old = store.get_run("run_old")
    assert old is not None and (old.status, old.request, old.tasks) == (
        "completed",
        "old request",
        [],
    )
    store.append_trace([make_event("run_old", event_id="evt_new")])
    assert [event.id for event in store.trace("run_old")] == ["evt_new"]
    assert purge_due(store) is True
    store.close()


def test_budgets_are_stored_and_runs_from_before_them_have_none(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(
        conn, location=str(path), migrations=MIGRATIONS[: ALL_NAMES.index("m012_budgets")]
    )
    conn.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
        "worker_backend, created_at) VALUES ('run_before', 'completed', 'old request', "
        "'hidden', 'default', 'provider', '2025-01-01T00:00:00.000Z')"
    )
    conn.close()
    with SQLiteStore(path) as store:  # applies m012 to a run written before it
        before = store.get_run("run_before")
        assert before is not None and before.max_cost is None
        assert "max_cost" not in before.snapshot()
        budgeted = make_run("run_budgeted", max_cost=0.25)
        budgeted.tasks[0].max_cost = 0.1
        store.create_run(budgeted)
        store.update_task(budgeted.tasks[0])
        stored = store.get_run("run_budgeted")
    assert stored is not None and stored.max_cost == 0.25
    assert stored.tasks[0].max_cost == 0.1
    assert stored.snapshot()["max_cost"] == 0.25
    assert stored.snapshot()["tasks"][0]["max_cost"] == 0.1


def test_personas_are_stored_and_tasks_from_before_them_read_unrecorded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        run = make_run("run_personas", tasks=2)
        run.tasks[0].persona_source = "system"
        run.tasks[0].system = "You are terse."
        run.tasks[1].persona_source = "config"
        store.create_run(run)
        stored = store.get_run("run_personas")
    assert stored is not None
    assert [task.persona for task in stored.tasks] == [
        {"role": run.tasks[0].role, "source": "system", "system": "You are terse."},
        {"role": run.tasks[1].role, "source": "config"},
    ]
    # What m013 leaves in the rows of tasks written before it: NULL.
    _sql(path, "UPDATE tasks SET persona_source = NULL, system_prompt = NULL")
    with SQLiteStore(path) as store:
        before = store.get_run("run_personas")
    assert before is not None
    assert before.snapshot()["tasks"][1]["persona"] == {
        "role": run.tasks[1].role,
        "source": "unrecorded",
    }


def test_runs_from_before_tool_servers_were_recorded_have_none(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(
        conn,
        location=str(path),
        migrations=MIGRATIONS[: ALL_NAMES.index("m014_run_tool_servers")],
    )
    conn.execute(
        "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
        "worker_backend, created_at) VALUES ('run_before', 'completed', 'old request', "
        "'hidden', 'default', 'provider', '2025-01-01T00:00:00.000Z')"
    )
    conn.close()
    with SQLiteStore(path) as store:  # applies m014 to a run written before it
        before = store.get_run("run_before")
    assert before is not None and before.tool_servers == []
    # m017: a run stored before gateway clients has none, and no source in its snapshot.
    assert before.client is None
    assert "client" not in before.snapshot() and "source" not in before.snapshot()


def test_database_from_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("run_kept", status="running"))
        # Make the run's owner look dead, so a store that did open would change it.
        store._connection().execute("UPDATE runs SET owner_pid = 999999999")
    _sql(
        path,
        "INSERT INTO migrations (name, applied_at) "
        "VALUES ('m900_from_the_future', '2030-01-01T00:00:00.000Z')",
    )
    assert not (tmp_path / "thoughtline.db-wal").exists()
    before = path.read_bytes()

    with pytest.raises(ConfigError) as raised:
        SQLiteStore(path)

    message = str(raised.value)
    assert str(path) in message
    assert "newer version of thoughtline" in message
    assert "m900_from_the_future" in message
    assert path.read_bytes() == before
    assert not (tmp_path / "thoughtline.db-wal").exists()
    assert _sql(path, "SELECT status FROM runs") == [("running",)]
    assert _sql(path, "SELECT COUNT(*) FROM trace_events") == [(0,)]
    # Without the unknown migration the same database would have been recovered.
    _sql(path, "DELETE FROM migrations WHERE name = 'm900_from_the_future'")
    with SQLiteStore(path) as store:
        assert recover_interrupted(store) == ["run_kept"]


def test_tasks_written_before_m005_read_back_with_those_fields_unknown(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        apply_migrations(conn, location=str(path), migrations=MIGRATIONS[:4])
        conn.execute(
            "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
            "worker_backend, created_at) VALUES ('run_old', 'completed', 'r', 'hidden', "
            "'default', 'provider', '2025-01-01T00:00:00.000Z')"
        )
        conn.execute(
            "INSERT INTO tasks (id, run_id, position, role, name, provider, model, "
            "chain_of_thought, chain_of_thought_source, effort, after_json, status, executor, "
            "output, input_tokens) VALUES ('task_old', 'run_old', 0, 'engineer', 'engineer', "
            "'anthropic', 'm', 'hidden', 'default', 'provider-default', '[]', 'done', "
            "'provider:anthropic:m', 'the answer', 12)"
        )
    with SQLiteStore(path) as store:
        run = store.get_run("run_old")
    assert run is not None
    (task,) = run.tasks
    assert (task.output, task.usage.input_tokens) == ("the answer", 12)
    assert task.finish_reason is None
    assert task.usage.cached_input_tokens is None and task.usage.cache_write_tokens is None
    assert (task.generation.max_output_tokens, task.generation.temperature) == (None, None)

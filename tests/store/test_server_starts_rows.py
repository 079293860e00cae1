"""A run's tool server starts (``tool_server_starts``) are kept with its row in each
store: written with the run when they change, read back by every read of runs, copied
into PostgreSQL, and absent from runs a store held before it kept them."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline.records import Run
from thoughtline.records.snapshot import ToolServerStartSnapshot
from thoughtline.store.base import RunFilter, Store
from thoughtline.store.migrations import MIGRATIONS
from thoughtline.store.sqlite import SQLiteStore

READY: ToolServerStartSnapshot = {
    "server": "git",
    "state": "ready",
    "started_at": "2026-01-02T03:04:05.000Z",
    "duration_ms": 412,
    "tools": 12,
}
FAILED: ToolServerStartSnapshot = {
    "server": "db \u00e9\u0000",
    "state": "failed",
    "started_at": "2026-01-02T03:04:05.500Z",
    "duration_ms": 90,
    "error": {"code": "TOOL_SERVER_UNAVAILABLE", "message": "no <b>database</b> \ud800 here"},
}


def _read_back(store: Store, run: Run) -> list[Run]:
    """``run`` as each read of runs returns it."""
    by_id = store.get_run(run.id)
    assert by_id is not None
    found = [found for found in store.list_runs() if found.id == run.id]
    found += [
        found for found in store.find_runs(RunFilter(status=run.status)) if found.id == run.id
    ]
    found += store.conversation_runs(run.conversation_id or run.id)
    latest = store.latest_run()
    assert latest is not None
    return [by_id, *found, latest]


def test_the_starts_are_written_with_the_run_and_read_back_by_every_read(
    backend: StoreBackend,
) -> None:
    run = make_run("run_starts")
    run.conversation_id = run.id
    with closing(backend.open()) as store:
        store.create_run(run)
        assert store.get_run(run.id).server_starts == []  # type: ignore[union-attr]
        run.server_starts = [{**READY, "state": "starting"}]
        store.update_run(run)
        assert store.get_run(run.id).server_starts == run.server_starts  # type: ignore[union-attr]
        run.server_starts = [READY, FAILED]
        run.status, run.finished_at = "failed", "2026-01-02T03:04:06.000Z"
        store.update_run(run)
        for stored in _read_back(store, run):
            assert stored.snapshot() == run.snapshot()


def test_a_run_created_with_starts_keeps_them(backend: StoreBackend) -> None:
    run = make_run("run_created", server_starts=[READY])
    with closing(backend.open()) as store:
        store.create_run(run)
        stored = store.get_run(run.id)
    assert stored is not None and stored.server_starts == [READY]


def test_runs_written_together_each_keep_their_own_starts(backend: StoreBackend) -> None:
    """Several runs in one write (PostgreSQL updates them in one statement), and a
    later write of the same run winning over an earlier one merged with it."""
    first, second = make_run("run_first"), make_run("run_second")
    with closing(backend.open()) as store:
        store.write_prepared([store.prepare(create=run) for run in (first, second)])
        first.server_starts = [{**READY, "state": "starting"}]
        early = store.prepare(run=first)
        first.server_starts = [READY]
        second.server_starts = [FAILED]
        store.write_prepared([early, store.prepare(run=second), store.prepare(run=first)])
        stored = {run_id: store.get_run(run_id) for run_id in ("run_first", "run_second")}
    assert stored["run_first"].server_starts == [READY]  # type: ignore[union-attr]
    assert stored["run_second"].server_starts == [FAILED]  # type: ignore[union-attr]


def test_a_store_of_the_previous_version_reads_its_runs_without_starts(
    backend: StoreBackend,
) -> None:
    previous = MIGRATIONS[: [m.name for m in MIGRATIONS].index("m018_run_server_starts")]
    old_run = (
        "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
        "worker_backend, created_at, finished_at) VALUES ('run_old', 'completed', 'r', "
        "'hidden', 'default', 'provider', '2025-01-01T00:00:00.000Z', "
        "'2025-01-01T00:00:01.000Z')"
    )
    backend.make_earlier(previous, [(old_run, ())])

    with closing(backend.open()) as store:
        old = store.get_run("run_old")
        assert old is not None and old.server_starts == []
        assert "tool_server_starts" not in old.snapshot()
        # The migrated store keeps the starts of what it writes next.
        old.server_starts = [READY]
        store.update_run(old)
        again = store.get_run("run_old")
    assert again is not None and again.server_starts == [READY]
    assert ("m018_run_server_starts",) in backend.query("SELECT name FROM migrations")


@pytest.mark.slow
def test_copy_into_postgres_brings_the_starts(tmp_path: Path, postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    run = make_run("run_copied", status="failed", server_starts=[READY, FAILED])
    plain = make_run("run_plain", status="completed")
    with SQLiteStore(tmp_path / "thoughtline.db") as source:
        for each in (run, plain):
            source.create_run(each)
        with PostgresStore(postgres_dsn) as target:
            target.copy_from(source)
            copied = {each.id: each for each in target.list_runs()}
    assert copied["run_copied"].snapshot() == run.snapshot()
    assert copied["run_plain"].server_starts == []

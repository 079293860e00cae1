"""Per-layer retention removes expired trace events, and removes them from the disk."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import DAY, ago, make_event, make_run
from tests.store.children import holding
from thoughtline.records import TraceEvent, TraceLayer
from thoughtline.runtime.policy.retention import purge, purge_due
from thoughtline.store import sqlite as store_sqlite
from thoughtline.store.base import Store
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.sqlite import SQLiteStore

_S = TypeVar("_S", bound=Store)

RETENTION: dict[TraceLayer, int | None] = {
    "provider_raw": 7 * DAY,
    "reasoning": 30 * DAY,
    "answer": None,
}
SHORT_CANARY = "CANARY-short-7f3a9c"
LONG_CANARY = "CANARY-long-b81e44-" * 400  # several pages: stored on overflow pages


def _events() -> list[TraceEvent]:
    def event(event_id: str, layer: TraceLayer, age_s: float, text: str = "") -> TraceEvent:
        return make_event(
            "run_p", event_id=event_id, layer=layer, at=ago(age_s), metadata={"text": text}
        )

    return [
        event("answer_old", "answer", 400 * DAY),
        event("answer_new", "answer", 60),
        event("reasoning_old", "reasoning", 31 * DAY, SHORT_CANARY),
        event("reasoning_older", "reasoning", 90 * DAY, LONG_CANARY),
        event("reasoning_new", "reasoning", 29 * DAY, "keep me"),
        event("raw_old", "provider_raw", 8 * DAY),
        event("raw_new", "provider_raw", 6 * DAY),
    ]


def _ids(store: Store) -> list[str]:
    return [event.id for event in store.trace("run_p")]


def _disk_bytes(directory: Path) -> dict[str, bytes]:
    return {file.name: file.read_bytes() for file in directory.iterdir() if file.is_file()}


def _seed(store: _S) -> _S:
    store.create_run(make_run("run_p"))
    # Enough neighbours that the canaries share pages with rows that stay.
    for batch in range(5):
        store.append_trace(
            [
                make_event("run_p", event_id=f"fill_{batch}_{n}", metadata={"n": n})
                for n in range(40)
            ]
        )
    store.append_trace(_events())
    return store


def test_dry_run_counts_without_deleting(backend: StoreBackend) -> None:
    store = _seed(backend.open())
    before = _ids(store)

    counts = purge(store, RETENTION, dry_run=True)

    assert counts == {"answer": 0, "reasoning": 2, "provider_raw": 1}
    assert _ids(store) == before
    assert purge_due(store) is True  # a dry run is not a purge
    store.close()


def test_purge_deletes_only_expired_events(backend: StoreBackend) -> None:
    store = _seed(backend.open())
    before = _ids(store)

    counts = purge(store, RETENTION)

    assert counts == {"answer": 0, "reasoning": 2, "provider_raw": 1}
    gone = {"reasoning_old", "reasoning_older", "raw_old"}
    assert _ids(store) == [event_id for event_id in before if event_id not in gone]
    assert purge(store, RETENTION) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    store.close()


def test_layers_left_out_or_forever_are_kept(backend: StoreBackend) -> None:
    store = _seed(backend.open())
    before = _ids(store)

    assert purge(store, {"answer": None}) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    assert purge(store, {}) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    assert _ids(store) == before

    counts = purge(store, {"answer": 0, "reasoning": None, "provider_raw": None})
    assert counts == {"answer": 202, "reasoning": 0, "provider_raw": 0}
    assert [event.layer for event in store.trace("run_p")] == ["reasoning"] * 3 + [
        "provider_raw"
    ] * 2
    with pytest.raises(ValueError, match="reasoning"):
        purge(store, {"reasoning": -1})
    store.close()


def test_purged_reasoning_is_gone_from_every_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = _seed(SQLiteStore(home / "thoughtline.db"))
    # Also checkpointed into the main file once, as a long-lived database would be.
    store._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    store.append_trace([make_event("run_p", event_id="after_checkpoint", metadata={"n": -1})])
    on_disk = b"".join(_disk_bytes(home).values())
    assert SHORT_CANARY.encode() in on_disk  # the scan below can see what it looks for
    assert LONG_CANARY.encode()[:200] in on_disk

    purge(store, RETENTION)

    files = _disk_bytes(home)
    assert "thoughtline.db" in files
    for name, content in files.items():
        assert SHORT_CANARY.encode() not in content, name
        assert b"CANARY-long" not in content, name
        assert b"keep me" in content or name != "thoughtline.db"
    assert [event.metadata["text"] for event in store.trace("run_p", layer="reasoning")] == [
        "keep me"
    ]
    store.close()
    for name, content in _disk_bytes(home).items():
        assert b"CANARY" not in content, name
    with closing(sqlite3.connect(home / "thoughtline.db")) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_purge_due_once_per_window(backend: StoreBackend) -> None:
    store = backend.open()
    assert purge_due(store, every_s=DAY) is True
    assert purge_due(store, every_s=DAY) is False
    other = backend.open()  # another process sharing the store sees the same record
    assert purge_due(other, every_s=DAY) is False
    assert purge_due(other, every_s=0) is True

    backend.sql("UPDATE meta SET value = ? WHERE key = 'last_purge_at'", (ago(DAY + 5),))
    assert purge_due(store, every_s=DAY) is True
    assert purge_due(other, every_s=DAY) is False

    purge(store, RETENTION)  # a real purge counts as one
    backend.sql("UPDATE meta SET value = ? WHERE key = 'last_purge_at'", (ago(DAY + 5),))
    purge(store, RETENTION)
    assert purge_due(store, every_s=DAY) is False
    store.close()
    other.close()


@pytest.mark.slow
def test_a_reader_of_another_process_keeps_purged_bytes_and_purge_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_sqlite, "ERASE_WAIT_S", 0.5)
    home = tmp_path / "home"
    store = _seed(SQLiteStore(home / "thoughtline.db"))
    store.close()  # checkpointed: the canaries sit in the main file
    assert SHORT_CANARY.encode() in (home / "thoughtline.db").read_bytes()
    store = SQLiteStore(home / "thoughtline.db")
    with holding(home / "thoughtline.db", "BEGIN") as seen:
        assert seen > 0  # its snapshot is open
        assert purge(store, RETENTION)["reasoning"] == 2
        residue = store.purge_residue()
        assert residue is not None
        assert "still on disk" in residue and str(home / "thoughtline.db") in residue
        assert "run thoughtline purge again" in residue
        # It says so because it is so.
        assert SHORT_CANARY.encode() in b"".join(_disk_bytes(home).values())

    assert purge(store, RETENTION)["reasoning"] == 0  # nothing left to delete, only to erase
    assert store.purge_residue() is None
    for name, content in _disk_bytes(home).items():
        assert SHORT_CANARY.encode() not in content, name
        assert b"CANARY-long" not in content, name
    store.close()


@pytest.mark.slow
def test_thoughtline_purge_says_when_bytes_are_still_on_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _seed(SQLiteStore(home / "thoughtline.db")).close()
    env = {key: value for key, value in os.environ.items() if key != "THOUGHTLINE_CONFIG"}
    env["THOUGHTLINE_HOME"] = str(home)

    def purge_command() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", "purge"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )

    with holding(home / "thoughtline.db", "BEGIN"):
        held = purge_command()
        on_disk = b"".join(_disk_bytes(home).values())
    assert held.returncode == 1, held.stderr
    assert "reasoning: removed 2 event(s)" in held.stdout
    lines = held.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in held.stderr, held.stderr
    assert lines[0].startswith("thoughtline: What the purge removed is still on disk in ")
    assert "another process held the database open" in lines[0]
    assert "run thoughtline purge again once that process has closed the database" in lines[0]
    assert SHORT_CANARY.encode() in on_disk  # the message was true

    again = purge_command()
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    for name, content in _disk_bytes(home).items():
        assert SHORT_CANARY.encode() not in content, name
        assert b"CANARY-long" not in content, name


def test_a_purge_waiting_to_erase_leaves_the_process_reading_and_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running process purges in a thread. While that purge waits to erase (here:
    another program holds a snapshot open), the store still answers this process's
    reads, and a write that must not wait says so at once instead of waiting for it."""
    monkeypatch.setattr(store_sqlite, "ERASE_WAIT_S", 30.0)
    home = tmp_path / "home"
    store = _seed(SQLiteStore(home / "thoughtline.db"))
    store.close()
    store = SQLiteStore(home / "thoughtline.db")
    removed: list[dict[TraceLayer, int]] = []
    purging = threading.Thread(target=lambda: removed.append(purge(store, RETENTION)))
    try:
        with (
            holding(home / "thoughtline.db", "BEGIN"),
            closing(sqlite3.connect(home / "thoughtline.db")) as look,
        ):
            purging.start()
            for _ in range(3000):  # until the deletion is committed: the erase comes next
                gone = look.execute(
                    "SELECT COUNT(*) FROM trace_events WHERE id = 'reasoning_old'"
                ).fetchone()
                if gone[0] == 0:
                    break
                time.sleep(0.01)
            run = store.get_run("run_p")
            assert run is not None
            assert "reasoning_old" not in _ids(store)
            write = store.prepare(trace=[make_event("run_p", event_id="during_purge")])
            assert store.write_prepared([write], wait=False) in (True, False)
            assert purging.is_alive()  # all of it answered while the purge still waits
    finally:
        if purging.ident is not None:  # started
            purging.join(60)
    assert removed[0]["reasoning"] == 2
    assert store.purge_residue() is None
    store.close()


def _purge_cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "purge", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


VACUUMED = re.compile(
    r"^vacuum: (?P<tables>[a-z_, ]+): freed (?P<freed>[\d,]+) bytes "
    r"\((?P<before>[\d,]+) -> (?P<after>[\d,]+) bytes with their indexes\); "
    r"new rows reuse the rest of the space the deleted rows held$",
    re.MULTILINE,
)


@pytest.mark.slow
def test_purge_vacuum_on_postgres_vacuums_the_tables_it_touched_and_says_what_it_freed(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """Every trace event is old enough to go, so VACUUM can hand the emptied table and
    its TOAST back to the disk; the sizes printed are the server's own."""
    import psycopg

    with closing(PostgresStore(postgres_dsn)) as store:
        finished = make_run("run_v", status="completed", finished_at=ago(40 * DAY))
        finished.tasks[0].timings.finished_at = ago(40 * DAY)
        finished.tasks[0].reasoning = SHORT_CANARY
        store.create_run(finished)
        filler = os.urandom(3000).hex()  # past the TOAST threshold, barely compressible
        for batch in range(10):
            store.append_trace(
                [
                    make_event(
                        "run_v",
                        event_id=f"old_{batch}_{n}",
                        layer="reasoning",
                        at=ago(40 * DAY),
                        metadata={"text": f"{SHORT_CANARY} {filler}"},
                    )
                    for n in range(50)
                ]
            )
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        # Autovacuum must not reclaim the space first (it wakes once a minute).
        for table in ("trace_events", "tasks", "run_events", "task_threads"):
            conn.execute(
                f"ALTER TABLE {table} SET (autovacuum_enabled = false, "
                "toast.autovacuum_enabled = false)"
            )
    config = tmp_path / "thoughtline.toml"
    config.write_text('[trace.retention]\nreasoning = "30d"\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "THOUGHTLINE_CONFIG"}
    env.update(
        THOUGHTLINE_HOME=str(tmp_path / "home"),
        THOUGHTLINE_CONFIG=str(config),
        THOUGHTLINE_STORE_URL=postgres_dsn,
    )
    purged = _purge_cli(env, tmp_path, "--vacuum")
    assert purged.returncode == 0, purged.stderr
    assert "reasoning: removed 500 event(s)" in purged.stdout
    assert "displayed reasoning: removed from 1 task(s)" in purged.stdout
    found = VACUUMED.search(purged.stdout)
    assert found is not None, purged.stdout
    assert found["tables"] == "tasks, trace_events"

    def number(name: str) -> int:
        return int(found[name].replace(",", ""))

    assert number("freed") == number("before") - number("after")
    assert number("freed") > 500_000  # most of 500 rows of 6,000 characters
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        sizes = conn.execute(
            "SELECT sum(pg_total_relation_size(t::regclass)) "
            "FROM unnest(ARRAY['tasks', 'trace_events']) AS t"
        ).fetchone()
        vacuumed = conn.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE vacuum_count > 0 AND relname IN "
            "('trace_events', 'tasks', 'run_events', 'task_threads') ORDER BY relname"
        ).fetchall()
    assert sizes is not None
    assert int(sizes[0]) == number("after")
    assert [row[0] for row in vacuumed] == ["tasks", "trace_events"]  # only those it touched
    assert SHORT_CANARY not in purged.stdout + purged.stderr

    again = _purge_cli(env, tmp_path, "--vacuum")
    assert again.returncode == 0, again.stderr
    assert "vacuum: nothing to do (this purge deleted nothing)" in again.stdout


def test_purge_vacuum_on_sqlite_says_none_is_needed_and_refuses_a_dry_run(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _seed(SQLiteStore(home / "thoughtline.db")).close()
    env = {key: value for key, value in os.environ.items() if key != "THOUGHTLINE_CONFIG"}
    env.pop("THOUGHTLINE_STORE_URL", None)
    env["THOUGHTLINE_HOME"] = str(home)
    purged = _purge_cli(env, tmp_path, "--vacuum")
    assert purged.returncode == 0, purged.stderr
    assert "reasoning: removed 2 event(s)" in purged.stdout
    assert purged.stdout.splitlines()[-1] == (
        "vacuum: not needed on SQLite (a purge overwrites what it deletes, and new rows "
        "reuse the free pages)"
    )
    both = _purge_cli(env, tmp_path, "--vacuum", "--dry-run")
    assert both.returncode == 2
    assert "--dry-run deletes nothing for --vacuum to reclaim; give one." in both.stderr


def test_purge_erases_while_another_connection_is_checkpointing(tmp_path: Path) -> None:
    """SQLite answers a TRUNCATE checkpoint ``busy`` at once, without waiting, while
    another connection checkpoints (a daemon's checkpoint thread, say): purge tries
    again until that one ends instead of reporting a residue."""
    home = tmp_path / "home"
    store = _seed(SQLiteStore(home / "thoughtline.db"))
    path = home / "thoughtline.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as writer:
        # A log large enough that copying it takes a while.
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("CREATE TABLE ballast (b BLOB)")
        writer.execute("BEGIN")
        for _ in range(12_000):
            writer.execute("INSERT INTO ballast VALUES (randomblob(4000))")
        writer.execute("COMMIT")
    started = threading.Event()

    def checkpoint() -> None:
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            started.set()
            other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    thread = threading.Thread(target=checkpoint)
    thread.start()
    started.wait(10)
    time.sleep(0.02)
    try:
        assert purge(store, RETENTION)["reasoning"] == 2
    finally:
        thread.join(30)
    assert store.purge_residue() is None
    store.close()

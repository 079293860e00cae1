"""Per-layer retention removes expired trace events, and removes them from the disk."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.store.builders import DAY, ago, make_event, make_run
from thoughtline.runtime.models import TraceEvent, TraceLayer
from thoughtline.store.sqlite import SQLiteStore

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


def _ids(store: SQLiteStore) -> list[str]:
    return [event.id for event in store.trace("run_p")]


def _disk_bytes(directory: Path) -> dict[str, bytes]:
    return {file.name: file.read_bytes() for file in directory.iterdir() if file.is_file()}


def _seed(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
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


def test_dry_run_counts_without_deleting(tmp_path: Path) -> None:
    store = _seed(tmp_path / "thoughtline.db")
    before = _ids(store)

    counts = store.purge(RETENTION, dry_run=True)

    assert counts == {"answer": 0, "reasoning": 2, "provider_raw": 1}
    assert _ids(store) == before
    assert store.purge_due() is True  # a dry run is not a purge
    store.close()


def test_purge_deletes_only_expired_events(tmp_path: Path) -> None:
    store = _seed(tmp_path / "thoughtline.db")
    before = _ids(store)

    counts = store.purge(RETENTION)

    assert counts == {"answer": 0, "reasoning": 2, "provider_raw": 1}
    gone = {"reasoning_old", "reasoning_older", "raw_old"}
    assert _ids(store) == [event_id for event_id in before if event_id not in gone]
    assert store.purge(RETENTION) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    store.close()


def test_layers_left_out_or_forever_are_kept(tmp_path: Path) -> None:
    store = _seed(tmp_path / "thoughtline.db")
    before = _ids(store)

    assert store.purge({"answer": None}) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    assert store.purge({}) == {"answer": 0, "reasoning": 0, "provider_raw": 0}
    assert _ids(store) == before

    counts = store.purge({"answer": 0, "reasoning": None, "provider_raw": None})
    assert counts == {"answer": 202, "reasoning": 0, "provider_raw": 0}
    assert [event.layer for event in store.trace("run_p")] == ["reasoning"] * 3 + [
        "provider_raw"
    ] * 2
    with pytest.raises(ValueError, match="reasoning"):
        store.purge({"reasoning": -1})
    store.close()


def test_purged_reasoning_is_gone_from_every_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = _seed(home / "thoughtline.db")
    # Also checkpointed into the main file once, as a long-lived database would be.
    store._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    store.append_trace([make_event("run_p", event_id="after_checkpoint", metadata={"n": -1})])
    on_disk = b"".join(_disk_bytes(home).values())
    assert SHORT_CANARY.encode() in on_disk  # the scan below can see what it looks for
    assert LONG_CANARY.encode()[:200] in on_disk

    store.purge(RETENTION)

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


def test_purge_due_once_per_window(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    store = SQLiteStore(path)
    assert store.purge_due(every_s=DAY) is True
    assert store.purge_due(every_s=DAY) is False
    other = SQLiteStore(path)  # another process sharing the file sees the same record
    assert other.purge_due(every_s=DAY) is False
    assert other.purge_due(every_s=0) is True

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'last_purge_at'", (ago(DAY + 5),))
    assert store.purge_due(every_s=DAY) is True
    assert other.purge_due(every_s=DAY) is False

    store.purge(RETENTION)  # a real purge counts as one
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'last_purge_at'", (ago(DAY + 5),))
    store.purge(RETENTION)
    assert store.purge_due(every_s=DAY) is False
    store.close()
    other.close()

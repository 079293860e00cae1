"""The runtime's store writer (group commit) against each real store: many transitions in
one transaction, in order, a failure reported only to the run whose write failed, a
SQLite file locked by another process waited for off the event loop, and checkpoints
kept out of commits."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from tests.store.backends import StoreBackend
from tests.store.builders import make_event, make_run
from thoughtline.records import Run, RunEventRecord
from thoughtline.runtime.engine.store_writer import LOOP_BATCH, StoreWriter
from thoughtline.store.base import PreparedWrite, Store, StoreError
from thoughtline.store.sqlite import SQLiteStore


class CountingStore:
    """The real store, counting the transactions the writer asks of it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.transactions: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def write_prepared(self, writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        written = self.store.write_prepared(writes, wait=wait)
        if written:
            self.transactions.append(len(writes))
        return written


def delta(run: Run, seq: int, text: str) -> RunEventRecord:
    return RunEventRecord(
        run_id=run.id,
        seq=seq,
        type="task.answer.delta",
        task_id=run.tasks[0].id,
        at="2026-11-30T00:00:00.000Z",
        data={"text": text},
    )


def test_transitions_queued_together_share_one_transaction_in_order(
    backend: StoreBackend,
) -> None:
    store = backend.open()
    counting = CountingStore(store)
    writer = StoreWriter(counting)  # type: ignore[arg-type]
    runs = [make_run(status="planned") for _ in range(20)]

    async def main() -> None:
        for run in runs:
            await writer.write(store.prepare(create=run))
        for run in runs:
            task = run.tasks[0]
            task.status, task.output = "running", None
            writer.submit(store.prepare(events=[delta(run, 1, "a")], tasks=[task]))
            task.status, task.output = "done", "the answer"
            writer.submit(
                store.prepare(events=[delta(run, 2, "b")], tasks=[task], trace=[make_event(run.id)])
            )
            task.output = "changed after the transition"  # the queued row keeps its copy
        await writer.flush()
        await writer.aclose()

    try:
        asyncio.run(main())
        # 20 creates awaited one by one, then 40 transitions in one transaction.
        assert counting.transactions[-1] == 40
        assert len(counting.transactions) == 21
        reopened = backend.open()
        for run in runs:
            stored = reopened.get_run(run.id)
            assert stored is not None
            assert stored.tasks[0].status == "done"
            assert stored.tasks[0].output == "the answer"
            assert [event.data["text"] for event in reopened.run_events(run.id)] == ["a", "b"]
            assert len(reopened.trace(run.id)) == 1
        reopened.close()
    finally:
        store.close()


def test_a_failed_write_is_reported_to_its_run_only(backend: StoreBackend) -> None:
    store = backend.open()
    writer = StoreWriter(store)
    stored, missing = make_run(status="running"), make_run(status="running")
    store.create_run(stored)
    failures: dict[str, list[StoreError]] = {stored.id: [], missing.id: []}

    async def main() -> None:
        writer.submit(store.prepare(events=[delta(stored, 1, "kept")]), failures[stored.id].append)
        # A run the store does not hold: its write fails, and so would its next one.
        writer.submit(store.prepare(run=missing), failures[missing.id].append)
        writer.submit(store.prepare(events=[delta(missing, 1, "x")]), failures[missing.id].append)
        writer.submit(store.prepare(events=[delta(stored, 2, "also")]), failures[stored.id].append)
        await writer.flush()
        await writer.aclose()

    try:
        asyncio.run(main())
        assert failures[stored.id] == []
        [error] = failures[missing.id]  # told once; its later write was not attempted
        assert missing.id in error.message
        assert [event.data["text"] for event in store.run_events(stored.id)] == ["kept", "also"]
        assert store.run_events(missing.id) == []
    finally:
        store.close()


def test_a_sqlite_file_locked_by_another_process_is_waited_for_off_the_event_loop(
    tmp_path: Path,
) -> None:
    path = tmp_path / "thoughtline.db"
    store = SQLiteStore(path)
    writer = StoreWriter(store)
    run = make_run(status="running")
    store.create_run(run)
    other_process = sqlite3.connect(path, isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")  # the write lock, until released

    async def main() -> int:
        writer.submit(store.prepare(events=[delta(run, 1, "waited")]))
        flushed = asyncio.ensure_future(writer.flush())
        ticks = 0
        while ticks < 20:  # the loop keeps running while the write waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not flushed.done(), "written while another process held the lock"
        other_process.execute("ROLLBACK")
        await asyncio.wait_for(flushed, 10)
        await writer.aclose()
        return ticks

    try:
        assert asyncio.run(main()) == 20
        assert [event.data["text"] for event in store.run_events(run.id)] == ["waited"]
    finally:
        other_process.close()
        store.close()


def test_live_sources_are_collected_into_the_event_log(backend: StoreBackend) -> None:
    store = backend.open()
    writer = StoreWriter(store)
    run = make_run(status="running")
    store.create_run(run)

    class Source:
        def __init__(self) -> None:
            self.pending = [delta(run, seq, f"d{seq}") for seq in range(1, 4)]
            self.failed: list[StoreError] = []
            self.taken = asyncio.Event()
            self.takes = 0

        def take_live(self) -> PreparedWrite | None:
            self.takes += 1
            self.taken.set()
            events, self.pending = self.pending, []
            return store.prepare(events=events) if events else None

        def store_failed(self, error: StoreError) -> None:
            self.failed.append(error)

    source = Source()

    async def main() -> None:
        writer.want_live(source)
        writer.want_live(source)  # taken once per interval, however often asked
        await asyncio.wait_for(source.taken.wait(), 10)
        await writer.flush()
        await writer.aclose()

    try:
        asyncio.run(main())
        assert [event.seq for event in store.run_events(run.id)] == [1, 2, 3]
        assert source.takes == 1
        assert source.failed == []
    finally:
        store.close()


def test_a_runtime_used_from_a_new_event_loop_writes_what_the_old_one_left(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "thoughtline.db")
    writer = StoreWriter(store)
    run = make_run(status="running")
    store.create_run(run)

    async def queue_only() -> None:
        writer.submit(store.prepare(events=[delta(run, 1, "left behind")]))

    async def next_use() -> None:
        writer.submit(store.prepare(events=[delta(run, 2, "next")]))
        await writer.aclose()

    try:
        asyncio.run(queue_only())  # ends before the commit delay
        asyncio.run(next_use())
        assert [event.seq for event in store.run_events(run.id)] == [1, 2]
    finally:
        store.close()


def _file_size(path: Path) -> int:
    return path.stat().st_size


def _write_3_mb(store: SQLiteStore) -> None:
    """About 3 MB of log: three times the WAL size at which SQLite's own checkpoint runs
    inside a commit."""
    run = make_run(status="running")
    store.create_run(run)
    for seq in range(1, 3001):
        store.write(events=[delta(run, seq, "x" * 1000)])


def test_sqlite_commits_only_append_to_the_wal(tmp_path: Path) -> None:
    """SQLite's own checkpoint inside a commit took up to 90 ms on the event loop."""
    path = tmp_path / "thoughtline.db"
    store = SQLiteStore(path, checkpoint_interval_s=3600)
    before = _file_size(path)
    _write_3_mb(store)
    assert _file_size(path.with_name(path.name + "-wal")) > 3_000_000
    assert _file_size(path) < before + 100_000, "a commit copied the WAL into the file"
    store.close()
    with closing(sqlite3.connect(path)) as conn:  # nothing lost by closing
        assert conn.execute("SELECT count(*) FROM run_events").fetchone()[0] == 3000


def test_the_checkpointer_thread_copies_the_wal_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    store = SQLiteStore(path, checkpoint_interval_s=0.05)
    before = _file_size(path)
    _write_3_mb(store)
    deadline = time.monotonic() + 20
    while _file_size(path) < before + 3_000_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert _file_size(path) >= before + 3_000_000, "the WAL was never copied into the file"
    finally:
        store.close()


def test_on_the_event_loop_a_transaction_holds_a_bounded_batch(tmp_path: Path) -> None:
    """SQLite writes on the event loop: a long queue is written a slice per loop
    iteration, so streams are served between slices; nothing is lost or reordered."""
    store = SQLiteStore(tmp_path / "thoughtline.db")
    counting = CountingStore(store)
    writer = StoreWriter(counting)  # type: ignore[arg-type]
    run = make_run(status="running")
    store.create_run(run)
    other_steps: list[int] = []

    async def other() -> None:
        for _step in range(1000):
            other_steps.append(len(counting.transactions))
            await asyncio.sleep(0)

    async def main() -> None:
        for seq in range(1, 201):
            writer.submit(store.prepare(events=[delta(run, seq, str(seq))]))
        other_task = asyncio.ensure_future(other())
        await writer.flush()
        other_task.cancel()
        await writer.aclose()

    try:
        asyncio.run(main())
        assert counting.transactions == [LOOP_BATCH, LOOP_BATCH, LOOP_BATCH, 200 - 3 * LOOP_BATCH]
        # The other coroutine ran between the slices.
        assert {1, 2, 3} <= set(other_steps)
        assert [event.seq for event in store.run_events(run.id)] == list(range(1, 201))
    finally:
        store.close()


def test_a_write_its_caller_awaits_is_not_held_for_company(backend: StoreBackend) -> None:
    # A run's creation is awaited (the daemon's answer, the gateway's first byte wait on
    # it): committed in the loop's next turn with what that turn queued, never held the
    # commit delay (an hour here, so a held write would time out).
    store = backend.open()
    counting = CountingStore(store)
    writer = StoreWriter(counting)  # type: ignore[arg-type]
    writer.commit_delay_s = 3600.0
    runs = [make_run(status="planned") for _ in range(5)]

    async def main() -> None:
        creates = [writer.write(store.prepare(create=run)) for run in runs]
        await asyncio.wait_for(asyncio.gather(*creates), timeout=60)
        await asyncio.wait_for(writer.write(store.prepare(create=make_run())), timeout=60)
        await writer.aclose()

    try:
        asyncio.run(main())
        assert counting.transactions == [5, 1]
    finally:
        store.close()

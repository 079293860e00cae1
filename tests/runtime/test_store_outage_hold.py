"""The writer's hold through a server outage, on a store that fails as a PostgreSQL
server that went away does (``StoreError("unavailable")``), over a real SQLite file:
what was held is written once, in order, even when the write that failed had committed
(its acknowledgement lost); a run's creation is refused at once meanwhile; past the row
limit the held writes fail with ``held_then_lost``. The same against a real PostgreSQL
server stopped and started: tests/store/test_outage.py."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.store.builders import make_run
from thoughtline.records import RunEventRecord, now_iso
from thoughtline.runtime.engine.store_writer import StoreWriter
from thoughtline.store.base import OutageBuffered, PreparedWrite, StoreError
from thoughtline.store.sqlite import SQLiteStore


class FlakyServer:
    """A SQLite store that answers like a server: while ``down`` every call fails
    ``unavailable``; with ``lose_ack`` the next write commits, then fails as a connection
    lost while committing."""

    writes_wait_on_network = True

    def __init__(self, path: Path, *, buffer_rows: int = 1000, limit_s: float = 30.0) -> None:
        self.inner = SQLiteStore(path)
        self.live_flush_s = 0.01
        self.outage_buffer_rows = buffer_rows
        self.outage_limit_s = limit_s
        self.down = False
        self.lose_ack = False
        self.replays = 0

    def _away(self) -> StoreError:
        return StoreError("unavailable", "No connection to the test server in time.")

    def write_prepared(self, writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        if self.lose_ack:
            self.lose_ack = False
            self.inner.write_prepared(writes, wait=wait)
            self.down = True
            raise self._away()
        if self.down:
            raise self._away()
        self.replays += any(write.replayed for write in writes)
        return self.inner.write_prepared(writes, wait=wait)

    def get_meta(self, key: str) -> str | None:
        if self.down:
            raise self._away()
        return self.inner.get_meta(key)

    def reconnect(self) -> bool:
        return not self.down

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _deltas(run_id: str, first: int, count: int) -> list[PreparedWrite]:
    return [
        PreparedWrite(
            events=[
                (run_id, seq, "answer.delta", None, now_iso(), f'{{"text":"{seq}"}}')
                for seq in (first + n,)
            ],
            run_ids=frozenset({run_id}),
        )
        for n in range(count)
    ]


def _seqs(store: FlakyServer, run_id: str) -> list[int]:
    records: list[RunEventRecord] = store.inner.run_events(run_id)
    return [record.seq for record in records]


def test_held_writes_are_written_once_in_order_even_after_a_lost_acknowledgement(
    tmp_path: Path,
) -> None:
    store = FlakyServer(tmp_path / "t.db")
    assert isinstance(store, OutageBuffered)
    writer = StoreWriter(store)  # type: ignore[arg-type]
    run = make_run("run_hold")
    failures: list[StoreError] = []

    async def main() -> None:
        await writer.write(store.inner.prepare(create=run))
        store.lose_ack = True  # the next write commits, then "the connection" is lost
        for write in _deltas(run.id, 1, 5):
            writer.submit(write, failures.append)
        await asyncio.sleep(0.1)
        assert writer.outage is not None
        for write in _deltas(run.id, 6, 15):  # queued while the server is away
            writer.submit(write, failures.append)
        flushed = asyncio.ensure_future(writer.flush())
        await asyncio.sleep(0.5)
        assert not flushed.done()  # what was held is not written yet
        store.down = False
        await asyncio.wait_for(flushed, 10)
        assert writer.outage is None
        await writer.aclose()

    asyncio.run(main())
    assert failures == []
    assert _seqs(store, run.id) == list(range(1, 21))
    assert store.replays >= 1


def test_a_run_s_creation_is_refused_at_once_while_the_server_is_away(tmp_path: Path) -> None:
    store = FlakyServer(tmp_path / "t.db")
    writer = StoreWriter(store)  # type: ignore[arg-type]
    first, second = make_run("run_first"), make_run("run_second")

    async def main() -> None:
        await writer.write(store.inner.prepare(create=first))
        store.down = True
        writer.submit(_deltas(first.id, 1, 1)[0])
        await asyncio.sleep(0.1)
        assert writer.outage is not None
        with pytest.raises(StoreError) as refused:
            await asyncio.wait_for(writer.write(store.inner.prepare(create=second), hold=False), 1)
        assert refused.value.problem == "unavailable"
        store.down = False
        await asyncio.wait_for(writer.flush(), 10)
        await writer.aclose()

    asyncio.run(main())
    assert store.inner.get_run("run_second") is None
    assert _seqs(store, first.id) == [1]


def test_past_the_row_limit_what_was_held_fails_as_lost_and_later_writes_are_held_again(
    tmp_path: Path,
) -> None:
    store = FlakyServer(tmp_path / "t.db", buffer_rows=10)
    writer = StoreWriter(store)  # type: ignore[arg-type]
    run = make_run("run_lost")
    failures: list[StoreError] = []

    async def main() -> None:
        await writer.write(store.inner.prepare(create=run))
        store.down = True
        for write in _deltas(run.id, 1, 12):  # 12 rows: past the limit of 10
            writer.submit(write, failures.append)
        await asyncio.wait_for(writer.flush(), 10)  # given up on: the flush returns
        assert failures
        assert all(error.held_then_lost for error in failures)
        assert "store.outage_buffer_rows (10 rows)" in failures[0].message
        writer.submit(_deltas(run.id, 13, 1)[0], failures.append)  # the run's end, say
        store.down = False
        await asyncio.wait_for(writer.flush(), 10)
        await writer.aclose()

    asyncio.run(main())
    # The held deltas were given up on; what came after reached the server once back.
    assert _seqs(store, run.id) == [13]

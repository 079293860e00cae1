"""A daemon following a run of another process is woken by the store's announcement of
each append (PostgreSQL LISTEN/NOTIFY), not by its next poll; SQLite streams poll."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.store.builders import make_run
from thoughtline.event_log import to_records
from thoughtline.records import Run, RunEventRecord
from thoughtline.run_events import (
    RunCompleted,
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskStarted,
)
from thoughtline.server.announcements import FEED_FRAMES, Announcements
from thoughtline.server.daemon import ServerSettings
from thoughtline.server.sse import _tail
from thoughtline.store.base import Store
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.wire.frames import SSEDecoder


def delta(run_id: str, task_id: str, seq: int) -> RunEventRecord:
    return RunEventRecord(
        run_id=run_id, seq=seq, type="answer.delta", task_id=task_id, at="x", data={"text": "x"}
    )


async def test_each_append_wakes_the_followers_of_its_run(postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    with (
        closing(PostgresStore(postgres_dsn)) as mine,
        closing(PostgresStore(postgres_dsn)) as other,
    ):
        announcements = Announcements(mine)
        announcements.start()
        try:
            assert announcements.active
            run, bystander = make_run("run_followed"), make_run("run_other")
            other.create_run(run)
            other.create_run(bystander)
            follower = announcements.follow(run.id)
            unrelated = announcements.follow(bystander.id)
            for seq in range(1, 4):
                follower.ready()
                unrelated.ready()
                other.append_run_events([delta(run.id, run.tasks[0].id, seq)])
                # Far longer than an announcement takes: returning woken means it arrived.
                await follower.wait(30.0)
                assert follower.woken.is_set(), seq
                assert not unrelated.woken.is_set()
            follower.close()
            unrelated.close()
        finally:
            announcements.stop()


def test_a_store_without_announcements_leaves_streams_polling(tmp_path: Path) -> None:
    with closing(SQLiteStore(tmp_path / "thoughtline.db")) as store:
        announcements = Announcements(store)
        announcements.start()
        assert not announcements.active
        announcements.stop()


def test_a_payload_names_the_range_a_commit_wrote_and_old_or_unknown_ones_are_tolerated() -> None:
    pytest.importorskip("psycopg")
    from thoughtline.store._postgres_listen import (
        RunEventsAppended,
        notification_payloads,
        parse_payload,
    )
    from thoughtline.store._rows import run_event_params

    run, other = make_run("run_a"), make_run("run_b")
    # A batch of ten deltas (numbered by its last, 12) after two single events.
    events = [
        *to_records(
            [
                RunStarted(run_id=run.id, seq=1, at="x", snapshot=run.snapshot()),
                *(
                    TaskAnswerDelta(run_id=run.id, seq=seq, at="x", task_id="t", text="x")
                    for seq in range(2, 12)
                ),
            ]
        ),
        delta(other.id, "t", 7),
    ]
    rows = [run_event_params(event) for event in reversed(events)]
    assert notification_payloads(rows) == ["run_a 1-11", "run_b 7-7"]
    assert notification_payloads([run_event_params(events[1])]) == ["run_a 2-11"]
    assert parse_payload("run_a 1-11") == RunEventsAppended("run_a", seq=11, first=1)
    # The previous version's payload: the last event only.
    assert parse_payload("run_a 11") == RunEventsAppended("run_a", seq=11, first=None)
    unknown = ["", "run_a", "run_a x", "run_a 1-", "run_a -3", "run_a 9-3", "v3 run_a 1-2", "1-2"]
    assert [parse_payload(payload) for payload in unknown] == [None] * len(unknown)
    assert len(max(notification_payloads(rows), key=len).encode()) < 8000


async def test_the_announcement_of_a_commit_carries_its_range(postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    with (
        closing(PostgresStore(postgres_dsn)) as mine,
        closing(PostgresStore(postgres_dsn)) as other,
    ):
        owner = Owner(other, make_run("run_ranged"))
        with mine.listen() as listener:
            owner.deltas(10)
            owner.deltas(1)
            announced = listener.wait(30.0, limit=2)
    assert [(item.run_id, item.first, item.seq) for item in announced] == [
        ("run_ranged", 3, 12),
        ("run_ranged", 13, 13),
    ]


def counting_store(dsn: str) -> Any:
    """A PostgreSQL store recording from where each event-log read started (``reads``)."""
    from thoughtline.store.postgres import PostgresStore

    class CountingStore(PostgresStore):
        reads: list[int]

        def run_events(self, run_id: str, after_seq: int = 0, *args: Any, **kw: Any) -> Any:
            self.reads.append(after_seq)
            return super().run_events(run_id, after_seq, *args, **kw)

    store = CountingStore(dsn)
    store.reads = []
    return store


class Owner:
    """Writes a run's event log as the daemon executing it would: deltas in batches."""

    def __init__(self, store: Store, run: Run) -> None:
        self.store, self.run, self.seq = store, run, 0
        store.create_run(run)
        self.task = run.tasks[0]
        self.append(
            RunStarted(run_id=run.id, seq=1, at="x", snapshot=run.snapshot()),
            TaskStarted(
                run_id=run.id, seq=2, at="x", task_id=self.task.id, task=self.task.to_dict()
            ),
        )

    def append(self, *events: RunEvent) -> None:
        self.store.write(events=to_records(events))
        self.seq = events[-1].seq

    def deltas(self, count: int) -> None:
        first = self.seq + 1
        self.append(
            *(
                TaskAnswerDelta(
                    run_id=self.run.id, seq=seq, at="x", task_id=self.task.id, text=f"<{seq}>"
                )
                for seq in range(first, first + count)
            )
        )

    def end(self) -> None:
        ended = self.run.snapshot() | {"status": "completed"}
        self.append(RunCompleted(run_id=self.run.id, seq=self.seq + 1, at="x", snapshot=ended))


async def _streams(
    daemon: Any, run_id: str, after: int, count: int
) -> list[asyncio.Task[list[int]]]:
    async def stream() -> list[int]:
        decoder = SSEDecoder()
        return [
            int(frame.id)
            async for chunk in _tail(daemon, run_id, after)
            for frame in decoder.feed(chunk)
            if frame.id is not None
        ]

    return [asyncio.create_task(stream()) for _ in range(count)]


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the test's own timeout bounds it): it
    watches reads made in threads, which no event announces."""
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("kept_frames", [FEED_FRAMES, 4])
async def test_the_streams_of_a_foreign_run_share_one_read_per_announced_append(
    postgres_dsn: str, kept_frames: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five streams of a run another process writes: each append is read once, by the
    run's feed, and every stream gets every event once, in order, to the end. With a
    feed that keeps fewer frames than an append brings (4 here), every stream is behind
    what it holds and reads the store itself: still each event once, in order."""
    from thoughtline.store.postgres import PostgresStore

    monkeypatch.setattr("thoughtline.server.announcements.FEED_FRAMES", kept_frames)
    with (
        closing(counting_store(postgres_dsn)) as mine,
        closing(PostgresStore(postgres_dsn)) as other,
    ):
        owner = Owner(other, make_run("run_shared"))
        announcements = Announcements(mine)
        announcements.start()
        # Polls far apart (10 x 30 s): only announcements make these streams read.
        settings = ServerSettings(poll_s=30.0, recover_interval_s=3600.0)
        daemon = SimpleNamespace(
            settings=settings, store=mine, announcements=announcements, closing=asyncio.Event()
        )
        try:
            streams = await _streams(daemon, owner.run.id, 2, 5)
            # Each stream's own first reads: is the event it has the end, what follows it.
            await _until(lambda: len(mine.reads) == 10)
            assert sorted(mine.reads) == [1] * 5 + [2] * 5
            feed = announcements.feed(owner.run.id)
            assert feed is not None
            for count in (10, 1, 7):
                mine.reads.clear()
                before = owner.seq
                owner.deltas(count)
                await _until(
                    lambda: (
                        feed.last == owner.seq
                        and all(follower.cursor == owner.seq for follower in feed.followers)
                    )
                )
                if kept_frames >= count:
                    assert mine.reads == [before]  # one query for five streams
                else:
                    assert mine.reads == [before] * 6  # the feed's, then each stream's
            owner.end()
            seen = await asyncio.gather(*streams)
        finally:
            announcements.stop()
    assert seen == [list(range(3, owner.seq + 1))] * 5
    assert announcements.feed(owner.run.id) is None  # forgotten with its last stream

"""A daemon following a run of another process is woken by the store's announcement of
each append (PostgreSQL LISTEN/NOTIFY), not by its next poll; SQLite streams poll."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline.records import Run, RunEventRecord
from thoughtline.records.event_log import to_records
from thoughtline.records.run_events import (
    RunCompleted,
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskStarted,
)
from thoughtline.server.announcements import FEED_FRAMES, Announcements
from thoughtline.server.daemon import ServerSettings
from thoughtline.server.sse import _tail
from thoughtline.store._sql_store import SqlStore
from thoughtline.store.base import Store
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.wire.frames import SSEDecoder


def delta(run_id: str, task_id: str, seq: int) -> RunEventRecord:
    return RunEventRecord(
        run_id=run_id, seq=seq, type="answer.delta", task_id=task_id, at="x", data={"text": "x"}
    )


@pytest.mark.slow
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
            # An append committed before LISTEN is in place is never announced.
            assert await asyncio.to_thread(announcements.listening.wait, 30)
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
                assert follower.woken, seq
                assert not unrelated.woken
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
        PAYLOAD_BYTES,
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
    # One payload for the commit, a line per run.
    assert notification_payloads(rows) == ["run_a 1-11\nrun_b 7-7"]
    assert notification_payloads([run_event_params(events[1])]) == ["run_a 2-11"]
    assert parse_payload("run_a 1-11\nrun_b 7-7") == [
        RunEventsAppended("run_a", seq=11, first=1),
        RunEventsAppended("run_b", seq=7, first=7),
    ]
    # The previous version's payload: the last event only.
    assert parse_payload("run_a 11") == [RunEventsAppended("run_a", seq=11, first=None)]
    unknown = ["", "run_a", "run_a x", "run_a 1-", "run_a -3", "run_a 9-3", "v3 run_a 1-2", "1-2"]
    assert [parse_payload(payload) for payload in unknown] == [[]] * len(unknown)
    # A line it does not read leaves the others.
    assert parse_payload("v3 run_a 1-2\nrun_b 4-5") == [RunEventsAppended("run_b", 5, first=4)]
    # Hundreds of runs in one commit: as few payloads as the bound allows, every run once.
    many = [run_event_params(delta(f"run_{n:04d}_{'x' * 20}", "t", n + 1)) for n in range(500)]
    payloads = notification_payloads(many)
    assert 1 < len(payloads) < 20
    assert all(len(payload.encode()) <= PAYLOAD_BYTES < 8000 for payload in payloads)
    announced = [item for payload in payloads for item in parse_payload(payload)]
    assert [(item.run_id, item.first, item.seq) for item in announced] == [
        (f"run_{n:04d}_{'x' * 20}", n + 1, n + 1) for n in range(500)
    ]


@pytest.mark.slow
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
            announced = listener.wait(30.0, limit=2)  # two notifications
    assert [(item.run_id, item.first, item.seq) for item in announced] == [
        ("run_ranged", 3, 12),
        ("run_ranged", 13, 13),
    ]


def counting_store(dsn: str) -> Any:
    """A PostgreSQL store recording from where each event-log read started."""
    from thoughtline.store.postgres import PostgresStore

    class CountingStore(PostgresStore):
        reads: list[int]  # a stream's own reads: after which seq
        shared: list[dict[str, int]]  # the feeds' reads, one query for several runs

        def run_events(self, run_id: str, after_seq: int = 0, *args: Any, **kw: Any) -> Any:
            self.reads.append(after_seq)
            return super().run_events(run_id, after_seq, *args, **kw)

        def run_events_after(self, after: dict[str, int]) -> Any:
            self.shared.append(dict(after))
            return super().run_events_after(after)

        def get_run(self, run_id: str) -> Any:
            self.run_reads += 1
            return super().get_run(run_id)

    store = CountingStore(dsn)
    store.reads, store.shared, store.run_reads = [], [], 0
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
    daemon: Any,
    run_id: str,
    after: int,
    count: int,
    writer: str = "stream",
    written: list[int] | None = None,
) -> list[asyncio.Task[list[int]]]:
    """``count`` streams of ``run_id``: each yields its frames (``stream``), or lets
    the feed write them to a send of its own once caught up, one that finishes at once
    (``direct``) or one whose every other write waits a turn of the loop (``slow``: the
    write then finishes in the stream's task). ``written`` gets one item per frame the
    feed wrote to a stream's send."""

    async def stream() -> list[int]:
        decoder = SSEDecoder()
        ids: list[int] = []
        writes = 0

        def received(chunk: bytes) -> list[int]:
            got = [int(frame.id) for frame in decoder.feed(chunk) if frame.id is not None]
            ids.extend(got)
            return got

        async def send(message: Any) -> None:
            nonlocal writes
            writes += 1
            if writer == "slow" and writes % 2:
                await asyncio.sleep(0)
            got = received(message["body"])
            if written is not None:
                written.extend(got)

        direct = None if writer == "stream" else send
        async for chunk in _tail(daemon, run_id, after, direct):
            received(chunk)
        return ids

    return [asyncio.create_task(stream()) for _ in range(count)]


def _waiting(announcements: Announcements, run_id: str) -> int:
    """How many streams of ``run_id`` wait for its feed."""
    feed = announcements.feed(run_id)
    return 0 if feed is None else sum(follower.waiting for follower in feed.followers)


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the test's own timeout bounds it): it
    watches reads made in threads, which no event announces."""
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.005)


@asynccontextmanager
async def _daemon_following(
    dsn: str, run_id: str, poll_s: float
) -> AsyncIterator[tuple[Any, Owner, Announcements, Any]]:
    """A daemon's store (counting its reads), announcements listening, a daemon with
    ``poll_s``, and the owner (another store) of ``run_id``, which it has started."""
    from thoughtline.store.postgres import PostgresStore

    with closing(counting_store(dsn)) as mine, closing(PostgresStore(dsn)) as other:
        owner = Owner(other, make_run(run_id))
        announcements = Announcements(mine)
        announcements.start()
        try:
            assert await asyncio.to_thread(announcements.listening.wait, 30)
            settings = ServerSettings(poll_s=poll_s, recover_interval_s=3600.0)
            daemon = SimpleNamespace(
                settings=settings, store=mine, announcements=announcements, closing=asyncio.Event()
            )
            yield mine, owner, announcements, daemon
        finally:
            announcements.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kept_frames", "writer"),
    [(FEED_FRAMES, "stream"), (4, "stream"), (FEED_FRAMES, "direct"), (FEED_FRAMES, "slow"),
     (4, "direct")],
)  # fmt: skip
async def test_the_streams_of_a_foreign_run_share_one_read_per_announced_append(
    postgres_dsn: str, kept_frames: int, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five streams of a run another process writes: each append is read once, by the
    run's feed, and every stream gets every event once, in order, to the end. With a
    feed that keeps fewer frames than an append brings (4 here), every stream is behind
    what it holds and reads the store itself: still each event once, in order. So when
    the feed writes for the caught-up streams itself, to clients that take each write at
    once or only after a wait."""
    monkeypatch.setattr("thoughtline.server.announcements.FEED_FRAMES", kept_frames)
    # Polls far apart (10 x 30 s): only announcements make these streams read.
    following = _daemon_following(postgres_dsn, "run_shared", poll_s=30.0)
    async with following as (mine, owner, announcements, daemon):
        written: list[int] = []
        streams = await _streams(daemon, owner.run.id, 2, 5, writer, written)
        # Each stream's own first reads (is the event it has the end, what follows
        # it), done: every stream waits for the feed.
        await _until(lambda: _waiting(announcements, owner.run.id) == 5)
        feed = announcements.feed(owner.run.id)
        assert feed is not None
        assert sorted(mine.reads) == [1] * 5 + [2] * 5
        for count in (10, 1, 7):
            mine.reads.clear()
            mine.shared.clear()
            before = owner.seq
            owner.deltas(count)
            await _until(
                lambda: (
                    feed.last == owner.seq
                    and all(follower.cursor == owner.seq for follower in feed.followers)
                )
            )
            assert mine.shared == [{owner.run.id: before}]  # one query for five streams
            # A feed that could not keep the append: each stream reads it itself.
            assert mine.reads == ([] if kept_frames >= count else [before] * 5)
        owner.end()
        seen = await asyncio.gather(*streams)
    assert seen == [list(range(3, owner.seq + 1))] * 5
    if writer != "stream" and kept_frames >= 10:
        # Every append and the end were written by the feed, for every stream.
        assert sorted(written) == sorted(list(range(3, owner.seq + 1)) * 5)
    elif writer == "stream":
        assert written == []
    assert announcements.feed(owner.run.id) is None  # forgotten with its last stream


@pytest.mark.slow
async def test_streams_the_feed_writes_to_leave_the_store_alone_until_it_falls_silent(
    postgres_dsn: str,
) -> None:
    """A caught-up stream's wait ends every ``poll_s`` x 10 (0.4 s here): while the feed
    wrote to it meanwhile, it goes on from the feed. Every stream of a daemon reading
    the log and the run at the same moments held up the feeds' own reads. Once the feed
    falls silent (a lost announcement), each stream reads the store again."""
    following = _daemon_following(postgres_dsn, "run_streaming", poll_s=0.04)
    async with following as (mine, owner, announcements, daemon):
        written: list[int] = []
        streams = await _streams(daemon, owner.run.id, 2, 5, "direct", written)
        await _until(lambda: _waiting(announcements, owner.run.id) == 5)
        feed = announcements.feed(owner.run.id)
        assert feed is not None
        mine.reads.clear()
        mine.run_reads = 0
        # 1.6 s of deltas, one append each 0.1 s: four waits of every stream end.
        for _ in range(16):
            await asyncio.to_thread(owner.deltas, 1)
            await asyncio.sleep(0.1)
        await _until(lambda: all(f.cursor == owner.seq for f in feed.followers))
        assert (mine.reads, mine.run_reads) == ([], 0)
        assert len(mine.shared) >= 8  # the feed read the appends (some together)
        # Silence: each stream reads the log (and, after a second, the run) itself.
        await _until(lambda: len(mine.reads) >= 5 and mine.run_reads >= 5)
        owner.end()
        seen = await asyncio.gather(*streams)
    assert seen == [list(range(3, owner.seq + 1))] * 5


@pytest.mark.slow
async def test_one_commit_of_several_followed_runs_is_read_in_one_query(postgres_dsn: str) -> None:
    """A daemon's writer commits the live events of all its runs together: a daemon
    following several of them reads the commit once, for every run and stream."""
    from thoughtline.store.postgres import PostgresStore

    with (
        closing(counting_store(postgres_dsn)) as mine,
        closing(PostgresStore(postgres_dsn)) as other,
    ):
        owners = [Owner(other, make_run(f"run_{n}")) for n in range(3)]
        announcements = Announcements(mine)
        announcements.start()
        assert await asyncio.to_thread(announcements.listening.wait, 30)
        settings = ServerSettings(poll_s=30.0, recover_interval_s=3600.0)
        daemon = SimpleNamespace(
            settings=settings, store=mine, announcements=announcements, closing=asyncio.Event()
        )
        try:
            streams = [
                task for owner in owners for task in await _streams(daemon, owner.run.id, 2, 2)
            ]
            await _until(
                lambda: all(_waiting(announcements, owner.run.id) == 2 for owner in owners)
            )
            feeds = [announcements.feed(owner.run.id) for owner in owners]
            assert len(mine.reads) == 12
            mine.shared.clear()
            events: list[RunEvent] = []
            for owner in owners:
                first = owner.seq + 1
                events += [
                    TaskAnswerDelta(
                        run_id=owner.run.id, seq=seq, at="x", task_id=owner.task.id, text="x"
                    )
                    for seq in range(first, first + 4)
                ]
                owner.seq += 4
            other.write(events=to_records(events))  # one transaction, three runs
            await _until(lambda: all(feed is not None and feed.last == 6 for feed in feeds))
            assert mine.shared == [{owner.run.id: 2 for owner in owners}]
            for owner in owners:
                owner.end()
            seen = await asyncio.gather(*streams)
        finally:
            announcements.stop()
    assert seen == [list(range(3, 8))] * 6


def test_several_runs_are_read_in_one_query_as_each_alone(backend: StoreBackend) -> None:
    """``run_events_after``: each run's events after its own number, as ``run_events``
    reads them one run at a time (batches of deltas included)."""
    store = backend.open()
    owners = [Owner(store, make_run(f"run_{n}")) for n in range(3)]
    for count, owner in zip((10, 1, 0), owners, strict=True):
        if count:
            owner.deltas(count)
    after = {owners[0].run.id: 5, owners[1].run.id: 0, owners[2].run.id: 99, "run_none": 0}
    assert isinstance(store, SqlStore)
    found = store.run_events_after(after)
    assert found == {
        run_id: store.run_events(run_id, after_seq=seq) for run_id, seq in after.items()
    }
    assert [len(records) for records in found.values()] == [1, 3, 0, 0]
    assert store.run_events_after({}) == {}

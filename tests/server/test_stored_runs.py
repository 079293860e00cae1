"""Runs of other processes folded from a real SQLite store incrementally: each request
reads only what was appended since the last, and gives what folding the whole log
gives."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.store.builders import make_run
from thoughtline.records import Run, RunSnapshot
from thoughtline.records.event_log import from_records, to_records
from thoughtline.records.run_events import (
    RunCompleted,
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskReasoningDelta,
    TaskStarted,
)
from thoughtline.server.announcements import Announcements
from thoughtline.server.daemon import ServerSettings
from thoughtline.server.events import closing_frames, fold
from thoughtline.server.sse import _tail
from thoughtline.server.stored_runs import StoredRunFolds
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.wire.frames import SSEDecoder

AT = "2026-12-01T00:00:00.000Z"


class CountingStore(SQLiteStore):
    """The real store, recording from where each event-log read started."""

    reads: list[int]

    def run_events(self, run_id: str, after_seq: int = 0, *args: object, **kw: object):  # type: ignore[no-untyped-def, override]
        self.reads.append(after_seq)
        return super().run_events(run_id, after_seq, *args, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    store = CountingStore(tmp_path / "thoughtline.db")
    store.reads = []
    yield store
    store.close()


class OtherProcess:
    """Writes a run's event log as its owner would, in batches of deltas."""

    def __init__(self, store: SQLiteStore, run: Run) -> None:
        self.store, self.run, self.seq = store, run, 0
        store.create_run(run)
        task = run.tasks[0]
        self.append(
            RunStarted(run_id=run.id, seq=1, at=AT, snapshot=run.snapshot()),
            TaskStarted(run_id=run.id, seq=2, at=AT, task_id=task.id, task=task.to_dict()),
        )

    def append(self, *events: RunEvent) -> None:
        self.store.write(events=to_records(events))
        self.seq = events[-1].seq

    def deltas(self, count: int, kind: type[TaskAnswerDelta | TaskReasoningDelta]) -> None:
        task_id, first = self.run.tasks[0].id, self.seq + 1
        self.append(
            *(
                kind(run_id=self.run.id, seq=seq, at=AT, task_id=task_id, text=f"<{seq}>")
                for seq in range(first, first + count)
            )
        )

    def whole_fold(self) -> RunSnapshot:
        events = from_records(self.store.run_events(self.run.id))
        return fold(self.run.snapshot(), events, events[-1].seq)


def test_each_request_reads_only_what_was_appended_and_matches_the_whole_fold(
    store: CountingStore,
) -> None:
    owner = OtherProcess(store, make_run())
    folds = StoredRunFolds(store)
    folded_up_to = 0  # the first request folds the log from its start
    for count, kind in [(50, TaskReasoningDelta), (1, TaskReasoningDelta), (30, TaskAnswerDelta)]:
        owner.deltas(count, kind)
        store.reads.clear()
        snapshot, seq = folds.snapshot(owner.run)
        assert store.reads == [folded_up_to]
        assert seq == owner.seq
        assert snapshot == owner.whole_fold()
        folded_up_to = seq
    task = snapshot["tasks"][0]
    assert task["reasoning"] == "".join(f"<{seq}>" for seq in range(3, 54))
    assert task["output"] == "".join(f"<{seq}>" for seq in range(54, 84))
    store.reads.clear()
    assert folds.snapshot(owner.run) == (snapshot, owner.seq)  # nothing new: nothing re-read
    assert store.reads == [owner.seq]


def test_a_run_that_ended_is_served_as_stored_and_forgotten(store: CountingStore) -> None:
    owner = OtherProcess(store, make_run())
    folds = StoredRunFolds(store)
    owner.deltas(10, TaskReasoningDelta)
    folds.snapshot(owner.run)
    assert len(folds) == 1
    # The owner ends the run: the terminal event, then the row's status.
    ended = owner.run.snapshot() | {"status": "completed"}
    owner.append(RunCompleted(run_id=owner.run.id, seq=owner.seq + 1, at=AT, snapshot=ended))
    snapshot, _ = folds.snapshot(owner.run)  # the row read before the status changed
    assert snapshot["status"] == "completed"
    assert len(folds) == 0
    owner.run.status = "completed"
    store.reads.clear()
    assert folds.snapshot(owner.run) == (owner.run.snapshot(), 0)
    assert store.reads == []  # a finished run's log is not read


def test_folders_are_bounded_and_least_recently_asked_dropped_first(
    store: CountingStore,
) -> None:
    owners = [OtherProcess(store, make_run()) for _ in range(4)]
    folds = StoredRunFolds(store, max_runs=3)
    for owner in owners:
        owner.deltas(5, TaskAnswerDelta)
        folds.snapshot(owner.run)
    assert len(folds) == 3
    store.reads.clear()
    folds.snapshot(owners[0].run)  # dropped: folded from the start again
    folds.snapshot(owners[3].run)  # kept: nothing new to read
    assert store.reads == [0, owners[3].seq]


def test_a_folder_older_than_the_reasoning_retention_is_folded_again(
    store: CountingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = OtherProcess(store, make_run())
    folds = StoredRunFolds(store, max_age_s=60.0)
    owner.deltas(5, TaskReasoningDelta)
    folds.snapshot(owner.run)
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 61.0)
    store.reads.clear()
    folds.snapshot(owner.run)
    assert store.reads == [0]
    folds.clear()
    store.reads.clear()
    folds.snapshot(owner.run)
    assert store.reads == [0]


def test_a_finished_runs_closing_frames_are_the_same_folded_per_record(
    store: CountingStore,
) -> None:
    """A fresh stream of a finished run of another process folds its log one record at a
    time (a batch of deltas as one joined delta): the frames are those of a delta at a
    time."""
    owner = OtherProcess(store, make_run())
    owner.deltas(40, TaskReasoningDelta)
    owner.deltas(1, TaskAnswerDelta)
    owner.deltas(25, TaskAnswerDelta)
    ended = owner.whole_fold() | {"status": "completed"}
    owner.append(RunCompleted(run_id=owner.run.id, seq=owner.seq + 1, at=AT, snapshot=ended))
    records = store.run_events(owner.run.id)
    planned = owner.run.snapshot()
    joined = from_records(records, joined=True)
    assert len(joined) < 10 < len(from_records(records))
    assert closing_frames(planned, joined) == closing_frames(planned, from_records(records))


def test_a_long_log_of_markup_like_text_is_folded_once_then_only_what_grows(
    store: CountingStore,
) -> None:
    """10k deltas of frame- and markup-breaking text, then three requests as the run
    grows by 1k deltas each: every request reads from where the last one stopped, and
    the text is exactly what folding the whole log gives."""
    owner = OtherProcess(store, make_run())
    folds = StoredRunFolds(store)
    task_id = owner.run.tasks[0].id
    hostile = ["</think>", "\n\ndata: [DONE]\n\n", "[bold]x[/bold]", "<|im_end|>", "\udcff"]

    def grow(count: int) -> None:
        first = owner.seq + 1
        owner.append(
            *(
                TaskReasoningDelta(
                    run_id=owner.run.id, seq=seq, at=AT, task_id=task_id, text=hostile[seq % 5]
                )
                for seq in range(first, first + count)
            )
        )

    grow(10_000)
    assert folds.snapshot(owner.run)[1] == owner.seq
    for _ in range(3):
        folded_up_to = owner.seq
        grow(1_000)
        store.reads.clear()
        snapshot, seq = folds.snapshot(owner.run)
        assert store.reads == [folded_up_to]
        assert seq == owner.seq
        assert snapshot == owner.whole_fold()
    assert len(snapshot["tasks"][0]["reasoning"] or "") == sum(
        len(hostile[seq % 5]) for seq in range(3, owner.seq + 1)
    )


class LateOwner(CountingStore):
    """The real store, where the dead owner's last deltas land just after the follower's
    last poll: while the follower makes sure the run ended (its second look at the row)."""

    owner: OtherProcess
    looks = 0

    def get_run(self, run_id: str) -> Run | None:
        self.looks += 1
        if self.looks == 2:
            self.owner.deltas(7, TaskAnswerDelta)
        return super().get_run(run_id)


@pytest.mark.slow  # a dead owner's stream read to its end
async def test_a_dead_owners_run_ends_after_everything_it_stored(tmp_path: Path) -> None:
    """A run whose owner died has no terminal event: the stream sends every event
    stored after the client's, then an end made up from the stored row, numbered one
    past the last stored event, reading the log only after what it had sent."""
    store = LateOwner(tmp_path / "thoughtline.db")
    store.reads = []
    try:
        owner = store.owner = OtherProcess(store, make_run())
        owner.deltas(30, TaskReasoningDelta)
        owner.run.status = "interrupted"
        store.update_run(owner.run)
        daemon = SimpleNamespace(
            settings=ServerSettings(poll_s=0.01, recover_interval_s=3600.0),
            store=store,
            announcements=Announcements(store),
            closing=asyncio.Event(),
        )
        decoder = SSEDecoder()
        frames = [
            frame
            async for chunk in _tail(daemon, owner.run.id, 10)  # type: ignore[arg-type]
            for frame in decoder.feed(chunk)
            if frame.id is not None
        ]
    finally:
        store.close()
    assert owner.seq == 2 + 30 + 7
    assert [int(frame.id or 0) for frame in frames] == list(range(11, owner.seq + 2))
    assert [frame.event for frame in frames[-8:]] == ["answer.delta"] * 7 + ["run.interrupted"]
    assert json.loads(frames[-1].data)["status"] == "interrupted"
    assert "".join(json.loads(frame.data)["text"] for frame in frames[-8:-1]) == "".join(
        f"<{seq}>" for seq in range(33, 40)
    )
    # The event the client named (is it the end?), then only what follows: never the
    # log from its start.
    assert min(store.reads) == 9

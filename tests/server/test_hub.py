"""The in-process hub without sockets: folding, and a slow subscriber that falls behind
gets a resync and never holds up publishing."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from thoughtline.run_events import (
    RunCompleted,
    RunEvent,
    TaskAnswerDelta,
    TaskReasoningDelta,
    TaskStarted,
)
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.server.events import (
    EventHub,
    RetainedRun,
    RetainedRuns,
    RunChannel,
    SnapshotFolder,
    fold,
)
from thoughtline.server.sse import _live

PLANNED: dict[str, Any] = {
    "schema": "thoughtline.run/v1",
    "id": "run_1",
    "status": "planned",
    "tasks": [{"id": "task_1", "status": "queued", "output": None, "reasoning": None}],
}


AT = "2026-01-01T00:00:00.000Z"


def started(seq: int) -> TaskStarted:
    task = {"id": "task_1", "status": "running", "output": None, "reasoning": None}
    return TaskStarted(run_id="run_1", seq=seq, at=AT, task_id="task_1", task=task)


def delta(seq: int, text: str) -> TaskAnswerDelta:
    return TaskAnswerDelta(run_id="run_1", seq=seq, at=AT, task_id="task_1", text=text)


def reasoning(seq: int, text: str) -> TaskReasoningDelta:
    return TaskReasoningDelta(run_id="run_1", seq=seq, at=AT, task_id="task_1", text=text)


def test_fold_accumulates_deltas_and_never_mutates_event_data() -> None:
    start = started(1)
    events: list[RunEvent] = [start, delta(2, "ab"), delta(3, "cd"), reasoning(4, "r")]
    snapshot = fold(PLANNED, events, upto=3)
    assert snapshot["tasks"][0]["output"] == "abcd"
    assert snapshot["tasks"][0]["reasoning"] is None
    assert fold(PLANNED, events, upto=4)["tasks"][0]["reasoning"] == "r"
    assert start.task["output"] is None
    assert PLANNED["tasks"][0]["status"] == "queued"
    folder = SnapshotFolder(PLANNED)
    assert folder.snapshot()["tasks"][0]["status"] == "queued"


async def test_a_slow_subscriber_resyncs_and_publishing_never_waits() -> None:
    settings = ServerSettings(subscriber_queue=3, keepalive_s=5.0)
    hub = EventHub(settings.subscriber_queue)
    channel = hub.open("run_1", PLANNED)
    daemon = cast(Daemon, type("FakeDaemon", (), {"settings": settings})())
    stream = _live(daemon, channel, None)
    first = await anext(stream)
    assert first.startswith(b"id: 0\nevent: snapshot\n")
    channel.publish(started(1))
    for seq in range(2, 12):  # far more than the queue holds, nobody reading
        channel.publish(delta(seq, str(seq % 10)))
    resync = await anext(stream)
    assert resync.startswith(b"id: 11\nevent: resync\n")
    assert b'"output":"2345678901"' in resync
    channel.publish(delta(12, "!"))
    channel.publish(completed(13))
    # Frames ready together go out as one write; split them back into frames.
    rest = b"".join([chunk async for chunk in stream]).split(b"\n\n")
    assert rest[0].startswith(b"id: 12\nevent: answer.delta\n")
    assert rest[1].startswith(b"id: 13\nevent: run.completed\n")
    assert rest[2:] == [b""]
    assert not channel.subscribers


def completed(seq: int) -> RunCompleted:
    return RunCompleted(run_id="run_1", seq=seq, at=AT, snapshot={**PLANNED, "status": "completed"})


def finished_channel(hub: EventHub, run_id: str, deltas: int) -> RunChannel:
    channel = hub.open(run_id, PLANNED)
    channel.publish(started(1))
    for seq in range(2, deltas + 2):
        channel.publish(delta(seq, "x" * 100))
    channel.publish(completed(deltas + 2))
    return channel


async def test_every_subscriber_writes_the_frame_encoded_once_and_drains_in_one_write() -> None:
    settings = ServerSettings(keepalive_s=5.0)
    hub = EventHub()
    channel = hub.open("run_1", PLANNED)
    daemon = cast(Daemon, type("FakeDaemon", (), {"settings": settings})())
    streams = [_live(daemon, channel, None), _live(daemon, channel, None)]
    for stream in streams:
        assert (await anext(stream)).startswith(b"id: 0\nevent: snapshot\n")
    reads = [asyncio.ensure_future(anext(stream)) for stream in streams]
    await asyncio.sleep(0)  # both readers wait
    channel.publish(started(1))
    channel.publish(delta(2, "a"))
    channel.publish(delta(3, "b"))
    first, second = await asyncio.gather(*reads)
    # Woken once, each reader sends everything published meanwhile as one write.
    assert first == second == b"".join(channel.frames)
    assert first.count(b"\n\n") == 3
    assert len({id(data) for data in channel.frames}) == 3
    channel.publish(completed(4))
    assert [chunk async for chunk in streams[0]] == [channel.frames[-1]]
    assert [chunk async for chunk in streams[1]] == [channel.frames[-1]]
    assert not channel.subscribers


async def test_a_finished_channel_ends_the_stream_of_a_client_that_has_the_end() -> None:
    settings = ServerSettings(keepalive_s=5.0)
    hub = EventHub()
    channel = finished_channel(hub, "run_1", deltas=2)
    daemon = cast(Daemon, type("FakeDaemon", (), {"settings": settings})())
    assert [chunk async for chunk in _live(daemon, channel, 4)] == []
    assert [chunk async for chunk in _live(daemon, channel, 2)] == [b"".join(channel.frames[2:])]
    fresh = [chunk async for chunk in _live(daemon, channel, None)]
    assert fresh == [b"".join(channel.closing or ())]
    assert fresh[0].startswith(b"id: 3\nevent: snapshot\n")
    assert b'"output":"' + b"x" * 200 + b'"' in fresh[0]


def test_retained_runs_are_evicted_oldest_first_beyond_the_byte_bound() -> None:
    hub = EventHub()
    one_run = finished_channel(EventHub(), "run_0", deltas=10)
    size = RetainedRun(
        run_id="run_0", frames=one_run.frames, closing=one_run.closing or (b"", b""), expires_at=0
    ).size()
    hub.retained = RetainedRuns(max_bytes=3 * size, max_age_s=60)
    for number in range(5):
        finished_channel(hub, f"run_{number}", deltas=10)
        hub.close(f"run_{number}")
        assert hub.get(f"run_{number}") is None
    assert [hub.retained.get(f"run_{n}") is not None for n in range(5)] == [False, False] + [
        True
    ] * 3
    assert hub.retained.bytes == 3 * size
    retained = hub.retained.get("run_4")
    assert retained is not None
    assert retained.after(0) == retained.frames and len(retained.frames) == 12
    assert retained.after(11) == [retained.frames[-1]]
    # A run larger than the whole bound is not kept, and evicts nothing.
    finished_channel(hub, "run_big", deltas=100)
    hub.close("run_big")
    assert hub.retained.get("run_big") is None
    assert len(hub.retained) == 3


def test_retained_runs_expire_and_unfinished_runs_are_not_kept() -> None:
    hub = EventHub(retain_s=0.0)
    finished_channel(hub, "run_1", deltas=1)
    hub.close("run_1")
    assert hub.retained.get("run_1") is None
    assert hub.retained.bytes == 0
    hub = EventHub()
    channel = hub.open("run_2", PLANNED)
    channel.publish(started(1))  # no terminal event: the store has to say how it ended
    hub.close("run_2")
    assert hub.retained.get("run_2") is None


async def test_the_keepalive_comes_only_after_a_quiet_interval_on_one_timer() -> None:
    """A subscriber fed every few milliseconds never times out, a quiet one does after
    the interval, and the timer behind it is one per subscriber, not one per wait."""
    loop = asyncio.get_running_loop()
    channel = RunChannel("run_1", PLANNED)
    subscriber = channel.subscribe()
    channel.publish(started(1))
    timers: list[asyncio.TimerHandle] = []
    real_call_at = loop.call_at

    def counting_call_at(
        when: float, callback: Any, *args: Any, **options: Any
    ) -> asyncio.TimerHandle:
        handle = real_call_at(when, callback, *args, **options)
        if getattr(callback, "__self__", None) is subscriber:
            timers.append(handle)
        return handle

    loop.call_at = counting_call_at  # type: ignore[method-assign]
    try:
        for seq in range(2, 30):
            subscriber.take()
            loop.call_later(0.005, channel.publish, delta(seq, "x"))
            assert await subscriber.wait(0.05) is True  # 140 ms of events, 50 ms interval
        subscriber.take()
        quiet_from = loop.time()
        assert await subscriber.wait(0.05) is False
        assert loop.time() - quiet_from >= 0.045
    finally:
        del loop.call_at
    # The first wait armed the timer; it re-armed itself when it fired (every 50 ms).
    assert 1 <= len(timers) <= 6
    channel.unsubscribe(subscriber)
    assert all(timer.cancelled() for timer in timers[-1:])

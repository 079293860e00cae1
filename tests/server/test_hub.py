"""The in-process hub without sockets: folding, and a slow subscriber that falls behind
gets a resync and never holds up publishing."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from thoughtline.records.run_events import (
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
from thoughtline.server.sse import KEEPALIVE, _live

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


def finished_channel(
    hub: EventHub, run_id: str, deltas: int, *, followed: bool = True
) -> RunChannel:
    """A run's channel through its end; ``followed``: with a subscriber from the start."""
    channel = hub.open(run_id, PLANNED)
    if followed:
        channel.subscribe()
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


def test_a_run_nobody_follows_is_framed_only_once_asked_and_then_as_it_would_have_been() -> None:
    followed = finished_channel(EventHub(), "run_1", deltas=3)
    quiet_hub = EventHub()
    quiet = finished_channel(quiet_hub, "run_1", deltas=3, followed=False)
    assert quiet.finished and not quiet.followed
    quiet_hub.close("run_1")
    # Nobody read it here: late readers read the store, which has all of it by now.
    assert quiet_hub.retained.get("run_1") is None

    asked_hub = EventHub()
    asked = finished_channel(asked_hub, "run_1", deltas=3, followed=False)
    assert asked.frames == followed.frames
    assert asked.closing == followed.closing is not None
    assert asked.folder.snapshot() == followed.folder.snapshot()
    assert asked.seq == followed.seq == 5
    asked_hub.close("run_1")
    kept = asked_hub.retained.get("run_1")
    assert kept is not None and kept.frames == followed.frames


def test_a_subscriber_that_joins_a_quiet_run_gets_the_frames_it_missed_then_each_new_one() -> None:
    channel = EventHub().open("run_1", PLANNED)
    channel.publish(started(1))
    channel.publish(delta(2, "one "))
    subscriber = channel.subscribe(after=0)
    assert [frame.split(b"\n")[0] for frame in subscriber.take()] == [b"id: 1", b"id: 2"]
    channel.publish(delta(3, "two "))
    assert subscriber.pending()
    assert [frame.split(b"\n")[0] for frame in subscriber.take()] == [b"id: 3"]


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


class FakeServer:
    """A server's ``send`` for direct writes: records each body it is given (in the
    order the writes finish), and can hold one write until released, as a transport
    with a full buffer holds a write until the client reads, or fail one."""

    def __init__(self, hold_call: int | None = None, fail_call: int | None = None) -> None:
        self.bodies: list[bytes] = []
        self.calls = 0
        self.hold_call = hold_call
        self.fail_call = fail_call
        self.released = asyncio.Event()
        self.tasks: list[asyncio.Task[Any] | None] = []
        """The task each write started in."""
        self.held_write_finished_in: asyncio.Task[Any] | None = None

    async def send(self, message: dict[str, Any]) -> None:
        self.calls += 1
        self.tasks.append(asyncio.current_task())
        if self.calls == self.fail_call:
            raise OSError("the client went away")
        if self.calls == self.hold_call:
            await self.released.wait()
            self.held_write_finished_in = asyncio.current_task()
        self.bodies.append(message["body"])


async def _drain(stream: Any, into: list[bytes]) -> None:
    async for chunk in stream:
        into.append(chunk)


def _fake_daemon(keepalive_s: float = 5.0) -> Daemon:
    settings = ServerSettings(keepalive_s=keepalive_s)
    return cast(Daemon, type("FakeDaemon", (), {"settings": settings})())


async def _caught_up(
    channel: RunChannel, server: FakeServer, into: list[bytes]
) -> asyncio.Task[None]:
    """A live stream on ``channel`` that has read its snapshot and handed its ``send``
    to the channel."""
    stream = _live(_fake_daemon(), channel, None, server.send)  # type: ignore[arg-type]
    into.append(await anext(stream))
    task = asyncio.ensure_future(_drain(stream, into))
    await asyncio.sleep(0)
    assert any(subscriber.direct is not None for subscriber in channel.direct)
    return task


async def test_the_channel_writes_each_frame_to_caught_up_subscribers_as_it_is_published() -> None:
    channel = RunChannel("run_1", PLANNED)
    servers = [FakeServer(), FakeServer()]
    yielded: list[list[bytes]] = [[], []]
    tasks = [await _caught_up(channel, s, y) for s, y in zip(servers, yielded, strict=True)]
    this_task = asyncio.current_task()
    channel.publish(started(1))
    channel.publish(delta(2, "a"))
    assert [server.bodies for server in servers] == [channel.frames] * 2  # already written
    channel.publish(delta(3, "b"))
    for server in servers:
        assert server.bodies == channel.frames
        # Written by the publisher (here, this test), no subscriber task woken.
        assert server.tasks == [this_task] * 3
    assert len(channel.direct) == 2
    assert all(not task.done() for task in tasks)
    channel.publish(completed(4))
    await asyncio.gather(*tasks)
    for server, chunks in zip(servers, yielded, strict=True):
        assert server.bodies[-1] == channel.frames[-1]
        assert chunks[1:] == []  # every frame after the snapshot went out directly
    assert not channel.subscribers
    assert not channel.direct


async def test_a_slow_clients_write_is_finished_by_its_own_task_and_holds_up_nobody() -> None:
    channel = RunChannel("run_1", PLANNED)
    slow, fast = FakeServer(hold_call=2), FakeServer()
    slow_chunks: list[bytes] = []
    fast_chunks: list[bytes] = []
    slow_task = await _caught_up(channel, slow, slow_chunks)
    fast_task = await _caught_up(channel, fast, fast_chunks)
    channel.publish(started(1))
    await asyncio.sleep(0)
    channel.publish(delta(2, "a"))  # the slow client's write of this one cannot finish
    await asyncio.sleep(0)
    assert len(channel.direct) == 1
    for seq in (3, 4):
        channel.publish(delta(seq, "b"))
        await asyncio.sleep(0)
    assert fast.bodies == channel.frames  # one write per event, none held up
    assert slow.bodies == [channel.frames[0]]
    slow.released.set()
    for _ in range(5):
        await asyncio.sleep(0)
    # The held write finished in the slow stream's own task, which then caught up by
    # itself, and handed its send back to the channel.
    assert slow.bodies == channel.frames[:2]
    assert slow.tasks[1] is asyncio.current_task()  # started by the publisher (this test)
    assert slow.held_write_finished_in is slow_task
    assert slow_chunks[1:] == [b"".join(channel.frames[2:4])]
    assert len(channel.direct) == 2
    channel.publish(completed(5))
    await asyncio.gather(slow_task, fast_task)
    assert b"".join([*slow.bodies[:2], *slow_chunks[1:], *slow.bodies[2:]]) == b"".join(
        channel.frames
    )
    assert b"".join(fast.bodies) == b"".join(channel.frames)


async def test_a_failing_direct_write_ends_only_that_stream_with_its_error() -> None:
    channel = RunChannel("run_1", PLANNED)
    broken, fine = FakeServer(fail_call=1), FakeServer()
    broken_task = await _caught_up(channel, broken, [])
    fine_task = await _caught_up(channel, fine, [])
    channel.publish(started(1))
    await asyncio.sleep(0)
    with pytest.raises(OSError, match="went away"):
        await broken_task
    assert len(channel.subscribers) == len(channel.direct) == 1
    channel.publish(completed(2))
    await fine_task
    assert fine.bodies == channel.frames
    assert broken.calls == 1


async def test_a_cancelled_stream_is_no_longer_written_for() -> None:
    channel = RunChannel("run_1", PLANNED)
    server = FakeServer()
    task = await _caught_up(channel, server, [])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not channel.subscribers and not channel.direct
    channel.publish(started(1))
    await asyncio.sleep(0)
    assert server.calls == 0


async def test_a_quiet_direct_stream_sends_its_keepalive_and_hands_its_send_back() -> None:
    channel = RunChannel("run_1", PLANNED)
    server = FakeServer()
    chunks: list[bytes] = []
    stream = _live(_fake_daemon(keepalive_s=0.05), channel, None, server.send)  # type: ignore[arg-type]
    chunks.append(await anext(stream))
    task = asyncio.ensure_future(_drain(stream, chunks))
    loop = asyncio.get_running_loop()
    quiet_from = loop.time()
    for _ in range(200):
        await asyncio.sleep(0.005)
        if len(chunks) > 1:
            break
    assert chunks[1:] == [KEEPALIVE]
    assert loop.time() - quiet_from >= 0.045
    await asyncio.sleep(0)
    assert len(channel.direct) == 1  # handed back after the keep-alive
    channel.publish(completed(1))
    await task
    assert server.bodies == channel.frames

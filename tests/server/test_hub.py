"""The in-process hub without sockets: folding, and a slow subscriber that falls behind
gets a resync and never holds up publishing."""

from __future__ import annotations

from typing import Any, cast

from thoughtline.run_events import (
    RunCompleted,
    RunEvent,
    TaskAnswerDelta,
    TaskReasoningDelta,
    TaskStarted,
)
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.server.events import EventHub, SnapshotFolder, fold
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
    channel.publish(
        RunCompleted(run_id="run_1", seq=13, at=AT, snapshot={**PLANNED, "status": "completed"})
    )
    # Frames ready together go out as one write; split them back into frames.
    rest = b"".join([chunk async for chunk in stream]).split(b"\n\n")
    assert rest[0].startswith(b"id: 12\nevent: answer.delta\n")
    assert rest[1].startswith(b"id: 13\nevent: run.completed\n")
    assert rest[2:] == [b""]
    assert not channel.subscribers

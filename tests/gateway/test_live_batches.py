"""The gateway's live stream: the deltas a run queued while the client's last write went
out leave in one batch (one write), framed as one at a time would be."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from thoughtline.model.events import StreamEvent, TextDelta, TextEnd, TextStart
from thoughtline.records.run_events import RunCompleted, RunEvent, TaskAnswerDelta
from thoughtline.server.gateway.bridge import Call
from thoughtline.server.gateway.live import live_events

AT = "2026-01-01T00:00:00.000Z"


def answer(seq: int, text: str) -> TaskAnswerDelta:
    return TaskAnswerDelta(run_id="run_1", seq=seq, at=AT, task_id="task_1", text=text)


def ended(seq: int) -> RunCompleted:
    return RunCompleted(run_id="run_1", seq=seq, at=AT, snapshot=cast(Any, {}))


async def batches(events: asyncio.Queue[RunEvent]) -> list[list[StreamEvent]]:
    call = cast(Call, SimpleNamespace(events=events))
    return [batch async for batch in live_events(call)]


async def test_deltas_queued_before_the_stream_reads_leave_in_one_batch() -> None:
    events: asyncio.Queue[RunEvent] = asyncio.Queue()
    for seq, text in enumerate(["one ", "two ", "three"]):
        events.put_nowait(answer(seq, text))
    events.put_nowait(ended(3))

    assert await batches(events) == [
        [
            TextStart(part_id="text-1"),
            TextDelta(part_id="text-1", text="one "),
            TextDelta(part_id="text-1", text="two "),
            TextDelta(part_id="text-1", text="three"),
            TextEnd(part_id="text-1"),
        ]
    ]


async def test_a_stream_that_keeps_up_gets_each_delta_in_a_batch_of_its_own() -> None:
    events: asyncio.Queue[RunEvent] = asyncio.Queue()
    stream = live_events(cast(Call, SimpleNamespace(events=events)))
    events.put_nowait(answer(0, "one "))
    assert await anext(stream) == [
        TextStart(part_id="text-1"),
        TextDelta(part_id="text-1", text="one "),
    ]
    events.put_nowait(answer(1, "two "))
    assert await anext(stream) == [TextDelta(part_id="text-1", text="two ")]
    events.put_nowait(ended(2))
    assert await anext(stream) == [TextEnd(part_id="text-1")]

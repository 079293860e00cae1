"""The gateway's live stream (:class:`CallFrames`): the deltas a run queued while the
client's last write went out leave in one write, framed as one at a time would be; once
the stream has sent everything, the run's observer writes each delta to the server's
send as it comes, and hands the stream's task a write the client is slow to take, a
write that failed, and the end."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from thoughtline.gateway.dialects import ReplyStream
from thoughtline.model.events import StreamEvent
from thoughtline.records.run_events import RunCompleted, RunEvent, TaskAnswerDelta
from thoughtline.server.gateway.bridge import Call, _Forward
from thoughtline.server.gateway.live import CallFrames

AT = "2026-01-01T00:00:00.000Z"


def answer(seq: int, text: str) -> TaskAnswerDelta:
    return TaskAnswerDelta(run_id="run_1", seq=seq, at=AT, task_id="task_1", text=text)


def ended(seq: int) -> RunCompleted:
    return RunCompleted(run_id="run_1", seq=seq, at=AT, snapshot=cast(Any, {}))


class Named:
    """A dialect stream that writes each event's kind and text, one line each."""

    content_type = "text/event-stream"

    def feed(self, event: StreamEvent) -> bytes:
        return f"{type(event).__name__} {getattr(event, 'text', '')}\n".encode()

    def close(self) -> bytes:
        return b"closed\n"


class Run:
    """A call in flight as the stream sees it, and the observer the run calls."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.call = cast(
            Call,
            SimpleNamespace(
                events=asyncio.Queue(),
                writer=None,
                handle=SimpleNamespace(run_id="run_1"),
                bridge=SimpleNamespace(daemon=SimpleNamespace(runs=self)),
                outcome=lambda: SimpleNamespace(reply=None),
            ),
        )
        self.observe = _Forward()
        self.observe.to(self.call)
        self.frames = CallFrames(self.call, cast(ReplyStream, Named()))

    def cancel(self, run_id: str) -> None:
        self.cancelled.append(run_id)

    async def handed_over(self) -> None:
        """Until the stream lets the observer write (bounded)."""
        for _ in range(100):
            if self.call.writer is not None:
                return
            await asyncio.sleep(0)
        raise AssertionError("the stream never handed its send to the run")


class Sends:
    """The server's send: records each body; a write may be made to wait or to fail."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.hold: asyncio.Future[None] | None = None
        self.fail: OSError | None = None

    async def __call__(self, message: dict[str, Any]) -> None:
        if self.fail is not None:
            raise self.fail
        if self.hold is not None:
            await self.hold
        self.bodies.append(message["body"])


async def test_deltas_queued_before_the_stream_reads_leave_in_one_write() -> None:
    run = Run()
    for seq, text in enumerate(["one ", "two ", "three"]):
        run.observe(answer(seq, text))
    run.observe(ended(3))

    assert [chunk async for chunk in run.frames] == [
        b"TextStart \nTextDelta one \nTextDelta two \nTextDelta three\nTextEnd \n",
        b"closed\n",
    ]
    assert run.cancelled == []


async def test_a_stream_that_keeps_up_gets_each_delta_in_a_write_of_its_own() -> None:
    run = Run()
    stream = aiter(run.frames)
    run.observe(answer(0, "one "))
    assert await anext(stream) == b"TextStart \nTextDelta one \n"
    run.observe(answer(1, "two "))
    assert await anext(stream) == b"TextDelta two \n"
    run.observe(ended(2))
    assert await anext(stream) == b"TextEnd \n"


async def test_a_caught_up_stream_has_each_delta_written_by_the_run_as_it_comes() -> None:
    run, send = Run(), Sends()
    run.frames.direct = send
    stream = aiter(run.frames)
    rest = asyncio.ensure_future(anext(stream))
    await run.handed_over()

    run.observe(answer(0, "one "))
    run.observe(answer(1, "two "))
    # Written in the observer's call, before the stream's task ran again.
    assert send.bodies == [b"TextStart \nTextDelta one \n", b"TextDelta two \n"]
    assert not rest.done()

    run.observe(ended(2))
    assert await rest == b"TextEnd \n"
    assert [chunk async for chunk in stream] == [b"closed\n"]
    assert run.call.writer is None


async def test_a_write_the_client_is_slow_to_take_is_finished_by_the_stream_in_order() -> None:
    run, send = Run(), Sends()
    run.frames.direct = send
    stream = aiter(run.frames)
    rest = asyncio.ensure_future(anext(stream))
    await run.handed_over()

    send.hold = asyncio.get_running_loop().create_future()
    run.observe(answer(0, "one "))  # the write waits for the client
    assert run.call.writer is None
    run.observe(answer(1, "two "))  # queued behind it
    run.observe(answer(2, "three"))
    send.hold.set_result(None)
    send.hold = None

    assert await rest == b"TextDelta two \nTextDelta three\n"
    assert send.bodies == [b"TextStart \nTextDelta one \n"]
    rest = asyncio.ensure_future(anext(stream))
    await run.handed_over()  # caught up again
    run.observe(ended(3))
    assert await rest == b"TextEnd \n"
    assert [chunk async for chunk in stream] == [b"closed\n"]


async def test_a_direct_write_that_fails_ends_the_stream_and_cancels_the_run() -> None:
    run, send = Run(), Sends()
    run.frames.direct = send
    stream = aiter(run.frames)
    rest = asyncio.ensure_future(anext(stream))
    await run.handed_over()

    send.fail = ConnectionResetError("the client went away")
    run.observe(answer(0, "one "))  # the run goes on: the failure is the stream's
    with pytest.raises(ConnectionResetError):
        await rest
    assert run.cancelled == ["run_1"]
    assert run.call.writer is None

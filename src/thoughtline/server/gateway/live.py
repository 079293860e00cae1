"""A call's run as the model's event stream a dialect renders, each part framed by its
start and end: the answer and reasoning deltas the disclosure gate released, as they
come; then, from the task's end, its tool calls, usage and finish, or its failure.
Reasoning deltas exist only when the client's mode shows reasoning (the gate emits none
otherwise), and carry no carrier: a client gets the signatures of shown reasoning in an
answer that is not streamed, and never needs them, since the gateway keeps them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

from starlette.types import Send

from thoughtline.gateway.dialects import ReplyStream
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from thoughtline.model.parts import ToolCallPart
from thoughtline.records.run_events import (
    RunEvent,
    TaskAnswerDelta,
    TaskReasoningDelta,
    is_terminal,
)
from thoughtline.server.events import Blocked, Failed, start_write
from thoughtline.server.gateway.bridge import Call
from thoughtline.server.gateway.failure import GatewayFailure
from thoughtline.server.sse import DirectFrames


class _Framing:
    """Opens a part when a delta of another kind arrives, closing the one before."""

    def __init__(self) -> None:
        self.open: tuple[str, str] | None = None  # (kind, part id)
        self.count = 0

    def close(self) -> list[StreamEvent]:
        if self.open is None:
            return []
        kind, part_id = self.open
        self.open = None
        if kind == "text":
            return [TextEnd(part_id=part_id)]
        return [ReasoningEnd(part_id=part_id, kind="summary")]

    def text(self, text: str) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self.open is None or self.open[0] != "text":
            out = self.close()
            self.count += 1
            self.open = ("text", f"text-{self.count}")
            out.append(TextStart(part_id=self.open[1]))
        return [*out, TextDelta(part_id=self.open[1], text=text)]

    def reasoning(self, text: str, part: str | None) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        wanted = part or (self.open[1] if self.open and self.open[0] == "reasoning" else None)
        if self.open is None or self.open[0] != "reasoning" or self.open[1] != wanted:
            out = self.close()
            self.count += 1
            self.open = ("reasoning", part or f"reasoning-{self.count}")
            out.append(ReasoningStart(part_id=self.open[1], kind="summary"))
        return [*out, ReasoningDelta(part_id=self.open[1], text=text)]


class CallFrames(DirectFrames):
    """The body of a streamed call: the gated deltas as they come, each part opened and
    closed, then the task's tool calls, usage and finish (or its failure), in the
    dialect's stream. A client that goes away before the end cancels the run, as any
    caller that stops one.

    Frames that are ready together leave in one write: the deltas the run queued while
    the last write went out, not one write each. Once the stream has sent everything
    queued and the response gave it the server's own send (``direct``), the run's
    observer writes each delta itself as the run hands it on (:attr:`Call.writer`),
    rather than queueing it and waking this stream's task a turn of the loop later; the
    task takes over again for a write the client is slow to take, and for the end."""

    __slots__ = ("_call", "_framing", "_stream", "_waiter")

    def __init__(self, call: Call, stream: ReplyStream) -> None:
        super().__init__()
        self._call = call
        self._stream = stream
        self._framing = _Framing()
        self._waiter: asyncio.Future[Blocked | Failed | None] | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._frames()

    async def _frames(self) -> AsyncGenerator[bytes, None]:
        call, stream = self._call, self._stream
        ended = False
        try:
            while True:
                waited: list[RunEvent] = []
                if call.events.empty():
                    if self.direct is not None:
                        if (outcome := await self._handed_over(self.direct)) is not None:
                            if isinstance(outcome, Failed):
                                raise outcome.error
                            await outcome  # the write the client was slow to take
                        continue
                    waited.append(await call.events.get())
                chunk, finished = self._render(waited + _drained(call.events))
                if chunk:
                    yield chunk
                if finished:
                    break
            for event in closing_events(call):
                if chunk := stream.feed(event):
                    yield chunk
            ended = True
            yield stream.close()
        finally:
            call.writer = None
            if not ended:
                call.bridge.daemon.runs.cancel(call.handle.run_id)

    async def _handed_over(self, send: Send) -> Blocked | Failed | None:
        """Let the run's observer write each delta to ``send`` until an event needs this
        task: None for the end (or any event the observer queued), else the write that
        could not finish at once, or failed."""
        waiter: asyncio.Future[Blocked | Failed | None] = asyncio.get_running_loop().create_future()
        self._waiter = waiter

        def write(event: RunEvent) -> bool:
            if isinstance(event, TaskAnswerDelta | TaskReasoningDelta):
                try:
                    chunk, _ = self._render([event])
                except Exception as exc:  # raised in this stream's task, not the run's
                    self._release(Failed(exc))
                    return True
                if chunk and (outcome := start_write(send, chunk)) is not None:
                    self._release(outcome)
                return True
            if is_terminal(event):
                self._release(None)
                return False
            return True  # nothing of it reaches the client

        self._call.writer = write
        try:
            return await waiter
        finally:
            self._call.writer = None
            self._waiter = None

    def _release(self, outcome: Blocked | Failed | None) -> None:
        self._call.writer = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(outcome)

    def _render(self, events: list[RunEvent]) -> tuple[bytes, bool]:
        """The bytes of these run events in the dialect, and whether the run ended."""
        framing, feed = self._framing, self._stream.feed
        out: list[StreamEvent] = []
        for event in events:
            if isinstance(event, TaskAnswerDelta):
                out += framing.text(event.text)
            elif isinstance(event, TaskReasoningDelta):
                out += framing.reasoning(event.text, event.part_id)
            elif is_terminal(event):
                out += framing.close()
                return b"".join(feed(item) for item in out), True
        return b"".join(feed(item) for item in out), False


def _drained(events: asyncio.Queue[RunEvent]) -> list[RunEvent]:
    taken: list[RunEvent] = []
    while not events.empty():
        taken.append(events.get_nowait())
    return taken


def closing_events(call: Call) -> Iterator[StreamEvent]:
    """The task's tool calls, usage and finish; a failure as the stream's error."""
    try:
        task = call.outcome()
    except GatewayFailure as failure:
        yield StreamError(
            code=failure.code, message=failure.message, retryable=False, status=failure.status
        )
        return
    reply = task.reply
    if reply is None:
        return
    for number, part in enumerate(reply.parts):
        if isinstance(part, ToolCallPart):
            part_id = f"call-{number}"
            yield ToolCallStart(part_id=part_id, tool_call_id=part.tool_call_id, name=part.name)
            yield ToolCallDelta(part_id=part_id, arguments_delta=part.arguments)
            yield ToolCallEnd(part_id=part_id)
    yield reply.usage
    if reply.finish is not None:
        yield reply.finish
    elif reply.tool_calls:
        yield Finish(reason="tool_calls")

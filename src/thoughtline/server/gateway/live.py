"""A call's run as the model's event stream a dialect renders, each part framed by its
start and end: the answer and reasoning deltas the disclosure gate released, as they
come; then, from the task's end, its tool calls, usage and finish, or its failure.
Reasoning deltas exist only when the client's mode shows reasoning (the gate emits none
otherwise), and carry no carrier: a client gets the signatures of shown reasoning in an
answer that is not streamed, and never needs them, since the gateway keeps them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

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
from thoughtline.records.run_events import TaskAnswerDelta, TaskReasoningDelta, is_terminal
from thoughtline.server.gateway.bridge import Call
from thoughtline.server.gateway.failure import GatewayFailure


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


async def live_events(call: Call) -> AsyncIterator[list[StreamEvent]]:
    """The gated deltas until the run ends, each part opened and closed, in batches: each
    batch what the run had queued when the stream came back for more (one delta while the
    stream keeps up; all it missed, for one write, once it fell behind)."""
    framing = _Framing()
    while True:
        batch: list[StreamEvent] = []
        event = await call.events.get()
        while True:
            if isinstance(event, TaskAnswerDelta):
                batch += framing.text(event.text)
            elif isinstance(event, TaskReasoningDelta):
                batch += framing.reasoning(event.text, event.part_id)
            elif is_terminal(event):
                batch += framing.close()
                yield batch
                return
            if call.events.empty():
                break
            event = call.events.get_nowait()
        if batch:
            yield batch


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

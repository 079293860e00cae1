"""A call's run as the model's event stream a dialect renders: the answer and
reasoning deltas the disclosure gate released, as they come; then, from the task's
end, its tool calls, usage and finish, or its failure. Reasoning deltas exist only when
the client's mode shows reasoning (the gate emits none otherwise)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from thoughtline.model.parts import ToolCallPart
from thoughtline.records.run_events import (
    TaskAnswerDelta,
    TaskReasoningDelta,
    is_terminal,
)
from thoughtline.server.gateway.bridge import Call
from thoughtline.server.gateway.failure import GatewayFailure

_TEXT = "text"
_REASONING = "reasoning"


async def live_events(call: Call) -> AsyncIterator[StreamEvent]:
    """The gated deltas until the run ends."""
    while True:
        event = await call.events.get()
        if isinstance(event, TaskAnswerDelta):
            yield TextDelta(part_id=_TEXT, text=event.text)
        elif isinstance(event, TaskReasoningDelta):
            yield ReasoningDelta(part_id=event.part_id or _REASONING, text=event.text)
        elif is_terminal(event):
            return


def closing_events(call: Call) -> Iterator[StreamEvent]:
    """The task's tool calls, usage and finish; a failure as the stream's error."""
    try:
        task = call.finish()
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

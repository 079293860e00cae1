"""A call's run as the model's event stream a dialect renders, each part framed by its
start and end: the answer and reasoning deltas the disclosure gate released, as they
come; then, from the task's end, its tool calls, usage and finish, or its failure.
Reasoning exists only when the client's mode shows reasoning (the gate emits none
otherwise); then each reasoning part opens and closes where the provider's did, with its
carriers (:class:`~thoughtline.records.run_events.ReasoningEdge`: a signature at the
end, redacted data at the start, an ``encrypted_content`` and its item id), so a
dialect streams them where its API does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from thoughtline.model.events import (
    Finish,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
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
    ReasoningEdge,
    TaskAnswerDelta,
    TaskReasoningDelta,
    is_terminal,
)
from thoughtline.server.gateway.bridge import Call
from thoughtline.server.gateway.failure import GatewayFailure


class _Framing:
    """Opens a part when a delta of another kind arrives, closing the one before; a
    reasoning part's edges open and close it as the provider did, with its carriers."""

    def __init__(self) -> None:
        self.open: tuple[str, str] | None = None  # (kind, part id)
        self.count = 0
        self.kind: ReasoningKind = "summary"  # the open reasoning part's
        self.carriers: ProviderMetadata = {}  # what its start carried

    def close(self, end: ReasoningEdge | None = None) -> list[StreamEvent]:
        if self.open is None:
            return []
        kind, part_id = self.open
        self.open = None
        if kind == "text":
            return [TextEnd(part_id=part_id)]
        if end is None:  # closed by what came next, or by the run's end
            return [ReasoningEnd(part_id=part_id, kind=self.kind, provider_metadata=self.carriers)]
        # The end's carriers replace the start's for the same keys (the event model's rule).
        carriers = {**self.carriers, **end.carriers}
        return [ReasoningEnd(part_id=part_id, kind=end.kind, provider_metadata=carriers)]

    def edge(self, edge: ReasoningEdge) -> list[StreamEvent]:
        if edge.edge == "end":
            return self.close(edge) if self.open == ("reasoning", edge.part_id) else []
        out = self.close()
        self.open = ("reasoning", edge.part_id)
        self.kind, self.carriers = edge.kind, edge.carriers
        start = ReasoningStart(
            part_id=edge.part_id, kind=edge.kind, provider_metadata=edge.carriers
        )
        return [*out, start]

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
            self.kind, self.carriers = "summary", {}
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
                if event.edge is not None:
                    batch += framing.edge(event.edge)
                else:
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

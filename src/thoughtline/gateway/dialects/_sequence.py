"""One part at a time, for the APIs whose streams have no interleaving.

Anthropic's content blocks and OpenAI Responses' output items each stream from start to
stop before the next begins, while the event model lets parts interleave (a provider
may stream two tool calls at once, or reasoning beside text). :class:`Sequencer` passes
the events of the part that opened first straight through and holds those of any part
opened meanwhile, releasing them, in the order their parts opened, once the current part
ends. Each event is held and released once: linear in the events.
"""

from __future__ import annotations

from collections import deque

from thoughtline.model.events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

PartEvent = (
    ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | TextStart
    | TextDelta
    | TextEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
)
_PART_EVENTS = (
    ReasoningStart,
    ReasoningDelta,
    ReasoningEnd,
    TextStart,
    TextDelta,
    TextEnd,
    ToolCallStart,
    ToolCallDelta,
    ToolCallEnd,
)
_ENDS = (ReasoningEnd, TextEnd, ToolCallEnd)


class Sequencer:
    """See the module docstring. :meth:`push` each event, :meth:`flush` at the end."""

    __slots__ = ("_current", "_held", "_waiting")

    def __init__(self) -> None:
        self._current: str | None = None
        self._held: dict[str, list[PartEvent]] = {}
        self._waiting: deque[str] = deque()

    def push(self, event: StreamEvent) -> list[StreamEvent]:
        """The events to render now, in order (an event of no part passes at once)."""
        if not isinstance(event, _PART_EVENTS):
            return [event]
        part = event.part_id
        if self._current is None:
            self._current = part
        if part != self._current:
            held = self._held.get(part)
            if held is None:
                held = self._held[part] = []
                self._waiting.append(part)
            held.append(event)
            return []
        if not isinstance(event, _ENDS):
            return [event]
        self._current = None
        out: list[StreamEvent] = [event]
        self._release(out)
        return out

    def _release(self, out: list[StreamEvent]) -> None:
        while self._waiting:
            part = self._waiting.popleft()
            events = self._held.pop(part)
            out.extend(events)
            if not isinstance(events[-1], _ENDS):
                self._current = part
                return

    def flush(self) -> list[StreamEvent]:
        """Every event still held (parts that never ended), in order."""
        out: list[StreamEvent] = []
        while self._waiting:
            out.extend(self._held.pop(self._waiting.popleft()))
        self._current = None
        return out

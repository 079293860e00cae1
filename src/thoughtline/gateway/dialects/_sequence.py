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

from thoughtline.gateway.call import GatewayCall
from thoughtline.gateway.dialects._common import Rendering, as_asked
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
    Usage,
    merge_usage,
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


_REASONING = (ReasoningStart, ReasoningDelta, ReasoningEnd)


class SequencedStream:
    """What the Messages and Responses streams share: hidden reasoning dropped before
    anything else sees it, usage, finish and a stream error kept for :meth:`close`, and
    every other event rendered (:meth:`_render`) in the order :class:`Sequencer`
    releases it."""

    __slots__ = ("_call", "_error", "_finish", "_rendering", "_sequencer", "_usage")

    def __init__(self, call: GatewayCall, rendering: Rendering) -> None:
        self._call = call
        self._rendering = as_asked(rendering, call)
        self._sequencer = Sequencer()
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self._error: StreamError | None = None

    def feed(self, event: StreamEvent) -> bytes:
        if isinstance(event, _REASONING) and not self._rendering.shows_reasoning:
            return b""
        if isinstance(event, Usage):
            self._usage = merge_usage(self._usage, event)
            return b""
        if isinstance(event, Finish):
            self._finish = event
            return b""
        if isinstance(event, StreamError):
            self._error = event
            return b""
        out = b""
        for ready in self._sequencer.push(event):
            out += self._render(ready)
        return out

    def _render(self, event: StreamEvent) -> bytes:
        raise NotImplementedError

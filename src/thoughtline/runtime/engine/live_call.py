"""The live side of one model call of a task: what the disclosure gate's stream for the
call releases goes to the run's observers, one delta per stream per network chunk, and
when the call's first reasoning and answer text arrived is noted (kept for a call
cancelled before it built its exchange)."""

from __future__ import annotations

import time

from thoughtline.model.events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
)
from thoughtline.runtime.engine.task_sink import TaskSink
from thoughtline.runtime.policy.disclosure import GateStream, LiveStream

_EDGES = (ReasoningStart, ReasoningEnd)


class LiveCall:
    """The live side of one model call: the gate's stream for the call, and when its
    first reasoning and answer text arrived (kept for a call cancelled before it built
    its exchange)."""

    __slots__ = (
        "edges",
        "first_answer_at",
        "first_reasoning_at",
        "sink",
        "started",
        "stream",
        "task_id",
    )

    def __init__(
        self, sink: TaskSink, task_id: str, stream: GateStream, *, edges: bool = False
    ) -> None:
        self.sink = sink
        self.task_id = task_id
        self.stream = stream
        self.edges = edges
        """Whether each displayed reasoning part's start and end are told too, with its
        carriers (a gateway task: its client's stream carries them)."""
        self.started = 0.0
        self.first_reasoning_at: float | None = None
        self.first_answer_at: float | None = None

    def saw(self, event: object) -> None:
        """Note when the first reasoning and the first answer text arrived."""
        kind = type(event)
        if kind is TextDelta:
            if self.first_answer_at is None:
                self.first_answer_at = time.perf_counter()
        elif kind is ReasoningDelta and self.first_reasoning_at is None:
            self.first_reasoning_at = time.perf_counter()

    def elapsed_ms(self, at: float | None) -> float | None:
        return None if at is None else round((at - self.started) * 1000.0, 3)

    def show(self, batch: list[StreamEvent]) -> None:
        """Hand what the gate releases of one network chunk to the live surfaces: one
        delta per stream per chunk, as text that arrived together is shown together (a
        fast or buffered stream brings hundreds of deltas at once, and each live event
        costs every surface, the event log and every subscriber)."""
        sink, task_id, edges = self.sink, self.task_id, self.edges
        stream: LiveStream = "answer"
        pieces: list[str] = []
        for event in batch:
            if self.first_answer_at is None:
                self.saw(event)
            live = self.stream.live(event)
            if live is not None:
                if pieces and live[0] != stream:
                    sink.emit_text(task_id, stream, "".join(pieces))
                    pieces.clear()
                stream = live[0]
                pieces.append(live[1])
            if edges and type(event) in _EDGES:
                edge = self.stream.edge(event)  # type: ignore[arg-type]
                if edge is not None:
                    # The part's text so far goes first: the edge closes (or opens) it.
                    if pieces:
                        sink.emit_text(task_id, stream, "".join(pieces))
                        pieces.clear()
                    sink.emit_reasoning_edge(task_id, edge)
        if pieces:
            sink.emit_text(task_id, stream, "".join(pieces))

    def finish(self) -> None:
        """Show the tails the gate held back as a possible credential."""
        for stream, text in self.stream.finish():
            self.sink.emit_text(self.task_id, stream, text)

"""Bookkeeping of one call and its attempts: the clock, what an attempt ended with, and
which decoded events may be delivered yet."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from thoughtline.model.events import (
    ReasoningDelta,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    Usage,
)


@dataclass(slots=True)
class CallClock:
    """When the call started, and when its first byte, reasoning and text arrived."""

    started: float = field(default_factory=time.perf_counter)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    first_byte_ms: float | None = None
    first_reasoning_ms: float | None = None
    first_text_ms: float | None = None

    def ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 3)


@dataclass(slots=True)
class AttemptOutcome:
    """What one attempt received and how it ended."""

    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    error: StreamError | None = None
    retry_after_s: float | None = None
    delivered: bool = False
    held: list[StreamEvent] = field(default_factory=list)
    body_chunks: list[bytes] = field(default_factory=list)
    body_redacted: bool = False  # body_chunks were redacted as they arrived
    final: bool = False  # not to be retried whatever its code says
    received_bytes: int = 0  # of the response body
    capture_truncated: bool = False


def route(
    events: list[StreamEvent], clock: CallClock, outcome: AttemptOutcome
) -> list[StreamEvent]:
    """The events to deliver now. Bookkeeping events are held until content flows
    (so a retry can discard them); an error is kept in ``outcome``, not delivered;
    first-reasoning / first-text times are recorded."""
    if not events:
        return events
    if (
        outcome.delivered
        and clock.first_text_ms is not None
        and clock.first_reasoning_ms is not None
        and type(events[-1]) is not StreamError  # an error is always a batch's last event
    ):
        return events  # the steady state: nothing to hold, time or intercept
    out: list[StreamEvent] = []
    for event in events:
        if outcome.error is not None:
            break
        if isinstance(event, StreamError):
            outcome.error = event
            break
        if not outcome.delivered:
            if isinstance(event, ResponseStarted | Usage | StreamWarning):
                outcome.held.append(event)
                continue
            outcome.delivered = True
            out.extend(outcome.held)
            outcome.held.clear()
        if clock.first_text_ms is None or clock.first_reasoning_ms is None:
            if clock.first_reasoning_ms is None and isinstance(
                event, ReasoningStart | ReasoningDelta
            ):
                clock.first_reasoning_ms = clock.ms()
            elif clock.first_text_ms is None and isinstance(event, TextDelta):
                clock.first_text_ms = clock.ms()
        out.append(event)
    return out

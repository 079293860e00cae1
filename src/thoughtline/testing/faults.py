"""Faults the simulator injects: what each one is, and how it alters a response's frames.

A :class:`Fault` is applied to the next matching request(s) through
:meth:`~thoughtline.testing.simulator.Simulator.inject`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from thoughtline.testing.transcript import Frame, StreamErrorKind, WireRenderer

__all__ = ["Fault", "FaultKind", "HoldPoint"]

FaultKind: TypeAlias = Literal[
    "http_error",
    "cut_mid_reasoning",
    "cut_mid_answer",
    "malformed_json",
    "stream_error",
    "slow_first_byte",
    "keep_alive_forever",
    "stall",
    "endless_line",
]
HoldPoint: TypeAlias = Literal["start", "mid_reasoning", "mid_answer"]
"""Where a held stream stops sending content: right after the response headers, or
halfway through the reasoning or answer frames (as the ``cut_*`` faults count them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """A failure to inject into the next matching request(s)."""

    kind: FaultKind
    status: int = 500
    message: str = "simulated failure"
    retry_after_s: float | None = None
    retry_after_ms: int | None = None
    stream_error_kind: StreamErrorKind = "overloaded"
    delay_s: float = 0.0
    at: HoldPoint = "mid_answer"
    interval_s: float = 1.0
    max_s: float = 60.0
    size_bytes: int = 0

    @classmethod
    def rate_limited(
        cls, *, retry_after_s: float | None = None, retry_after_ms: int | None = None
    ) -> Fault:
        return cls(
            kind="http_error",
            status=429,
            message="Rate limit reached (simulated).",
            retry_after_s=retry_after_s,
            retry_after_ms=retry_after_ms,
        )

    @classmethod
    def overloaded(cls) -> Fault:
        return cls(kind="http_error", status=529, message="Overloaded (simulated).")

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls(kind="http_error", status=status, message="Internal server error (simulated).")

    @classmethod
    def http_error(cls, status: int, message: str) -> Fault:
        return cls(kind="http_error", status=status, message=message)

    @classmethod
    def cut_mid_reasoning(cls) -> Fault:
        """Close the connection halfway through the reasoning frames."""
        return cls(kind="cut_mid_reasoning")

    @classmethod
    def cut_mid_answer(cls) -> Fault:
        """Close the connection halfway through the answer frames."""
        return cls(kind="cut_mid_answer")

    @classmethod
    def malformed_json(cls) -> Fault:
        """Send a frame with broken JSON after the first frame."""
        return cls(kind="malformed_json")

    @classmethod
    def stream_error(
        cls, kind: StreamErrorKind = "overloaded", message: str = "Overloaded (simulated)."
    ) -> Fault:
        """An error event inside an HTTP-200 stream, after the reasoning frames."""
        return cls(kind="stream_error", stream_error_kind=kind, message=message)

    @classmethod
    def slow_first_byte(cls, delay_s: float) -> Fault:
        return cls(kind="slow_first_byte", delay_s=delay_s)

    @classmethod
    def keep_alive_forever(
        cls, *, at: HoldPoint = "mid_answer", interval_s: float = 1.0, max_s: float = 60.0
    ) -> Fault:
        """Stop the content at ``at``, then send the provider's keep-alive (Anthropic
        ``event: ping``, an SSE comment, a blank NDJSON line) every ``interval_s``
        until the client leaves (at most ``max_s``): bytes keep flowing, nothing comes."""
        return cls(kind="keep_alive_forever", at=at, interval_s=interval_s, max_s=max_s)

    @classmethod
    def stall(cls, *, at: HoldPoint = "start", max_s: float = 60.0) -> Fault:
        """Stop sending at ``at`` and keep the connection open in silence until the
        client leaves (at most ``max_s``)."""
        return cls(kind="stall", at=at, max_s=max_s)

    @classmethod
    def endless_line(cls, size_bytes: int) -> Fault:
        """Answer 200 and stream ``size_bytes`` bytes of one line that never ends (no
        newline), in 64 KiB chunks, then close: a broken or hostile server."""
        return cls(kind="endless_line", size_bytes=size_bytes)


def apply_to_frames(
    frames: list[Frame], renderer: WireRenderer, fault: Fault | None
) -> list[bytes | None]:
    """The bytes to send, with the fault applied. ``None`` means: cut the connection."""
    out: list[bytes | None] = []
    kind = fault.kind if fault is not None else None
    seen = {"reasoning": 0, "text": 0}
    # Cut halfway through the reasoning (or answer) frames: past the part's opening
    # frames, inside its deltas, whatever the protocol's framing around them.
    total = {role: sum(1 for frame in frames if frame.role == role) for role in seen}
    cut_after = {role: max(1, (count + 1) // 2) for role, count in total.items()}
    for index, frame in enumerate(frames):
        if kind == "malformed_json" and index == 1:
            out.append(renderer.malformed_frame())
        if kind == "stream_error" and fault is not None and frame.role in ("text", "tool", "end"):
            out.append(renderer.stream_error_frame(fault.stream_error_kind, fault.message))
            return out
        out.append(frame.data)
        if frame.role in seen:
            seen[frame.role] += 1
        if kind == "cut_mid_reasoning" and seen["reasoning"] == cut_after["reasoning"]:
            out.append(None)
            return out
        if kind == "cut_mid_answer" and seen["text"] == cut_after["text"]:
            out.append(None)
            return out
    return out


def frames_before_hold(frames: list[Frame], at: HoldPoint) -> list[bytes]:
    """The frames sent before a stream is held at ``at`` (same halfway point as the
    ``cut_*`` faults)."""
    if at == "start":
        return []
    role = "reasoning" if at == "mid_reasoning" else "text"
    total = sum(1 for frame in frames if frame.role == role)
    stop_after = max(1, (total + 1) // 2)
    out: list[bytes] = []
    seen = 0
    for frame in frames:
        out.append(frame.data)
        if frame.role == role:
            seen += 1
            if seen == stop_after:
                break
    return out

"""What the dialect tests share: a reply's events, a history with every kind of part,
and the official SDKs pointed at a rendered body through an in-memory transport."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import httpx2

from thoughtline.model.accumulator import ModelResponse, accumulate
from thoughtline.model.events import (
    Finish,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

CANARY = "CANARY-7f3a-hidden-thought"
"""Reasoning text no hidden render may carry."""


def reasoning(
    part_id: str,
    text: str,
    *,
    kind: ReasoningKind = "summary",
    end: ProviderMetadata | None = None,
    start: ProviderMetadata | None = None,
    pieces: int = 2,
    deltas: Sequence[str] | None = None,
) -> list[StreamEvent]:
    """A reasoning part's events: ``text`` in ``pieces`` deltas, or the ``deltas`` given."""
    if deltas is None:
        step = max(1, len(text) // pieces)
        deltas = [text[i : i + step] for i in range(0, len(text), step)]
    return [
        ReasoningStart(part_id=part_id, kind=kind, provider_metadata=start or {}),
        *(ReasoningDelta(part_id=part_id, text=piece) for piece in deltas),
        ReasoningEnd(part_id=part_id, kind=kind, provider_metadata=end or {}),
    ]


def text(part_id: str, *pieces: str) -> list[StreamEvent]:
    return [
        TextStart(part_id=part_id),
        *(TextDelta(part_id=part_id, text=piece) for piece in pieces),
        TextEnd(part_id=part_id),
    ]


def tool_call(part_id: str, call_id: str, name: str, *pieces: str) -> list[StreamEvent]:
    return [
        ToolCallStart(part_id=part_id, tool_call_id=call_id, name=name),
        *(ToolCallDelta(part_id=part_id, arguments_delta=piece) for piece in pieces),
        ToolCallEnd(part_id=part_id),
    ]


USAGE = Usage(input_tokens=40, output_tokens=900, reasoning_tokens=780, cached_input_tokens=8)


def the_answer(*, finish: str = "tool_calls") -> list[StreamEvent]:
    """Text, two tool calls, usage and the finish: a reply after its reasoning."""
    return [
        *text("t0", "Checking ", "the weather."),
        *tool_call("c0", "call_1", "get_weather", '{"city":', '"Paris"}'),
        *tool_call("c1", "call_2", "get_time", "{}"),
        USAGE,
        Finish(reason=finish, raw_reason=finish),  # type: ignore[arg-type]
    ]


def a_reply(*, signature: str = "EqQBsig==", finish: str = "tool_calls") -> list[StreamEvent]:
    """Reasoning (the canary in it, a signature at its end), text, two tool calls."""
    return [
        # The canary is one delta of its own: a leak carries it whole.
        *reasoning(
            "r0",
            "",
            deltas=("Let me think. ", CANARY, " Done."),
            end={"signature": signature},
        ),
        *the_answer(finish=finish),
    ]


def response_of(events: Iterable[StreamEvent]) -> ModelResponse:
    return accumulate(events)


def render_stream(stream: Any, events: Sequence[StreamEvent]) -> bytes:
    return b"".join(stream.feed(event) for event in events) + stream.close()


def transport(body: bytes, *, status: int = 200, stream: bool = False) -> httpx2.Client:
    """An HTTP client whose every request gets ``body``."""
    content_type = "text/event-stream" if stream else "application/json"

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, content=body, headers={"content-type": content_type})

    return httpx2.Client(transport=httpx2.MockTransport(answer))

"""Shared helpers for the openai-responses tests: fixtures, contexts, decoding."""

from __future__ import annotations

from pathlib import Path

from tests.support import call_context
from thoughtline.model.events import ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import CallContext, StreamDecoder, decode_whole
from thoughtline.providers.openai_responses import WIRE
from thoughtline.testing.transcript import SimRequest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openai_responses"
ADAPTER = WIRE
REQUEST = ModelRequest.simple("gpt-5.5", "hi")


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def context(model: str = "gpt-5.5", *, base_url: str | None = None) -> CallContext:
    return call_context("openai", model, environ={"OPENAI_BASE_URL": base_url} if base_url else {})


def new_decoder() -> StreamDecoder:
    return ADAPTER.new_decoder(REQUEST, context())


def decode_stream(data: bytes) -> list[StreamEvent]:
    return decode_whole(new_decoder(), data)


def decode_body(data: bytes) -> list[StreamEvent]:
    return ADAPTER.decode_body(data, REQUEST, context())


def merge_deltas(events: list[StreamEvent]) -> list[StreamEvent]:
    """Consecutive deltas of one part joined into one: what a whole body yields for the
    same content as a stream."""
    merged: list[StreamEvent] = []
    for event in events:
        previous = merged[-1] if merged else None
        if (
            isinstance(event, ReasoningDelta)
            and isinstance(previous, ReasoningDelta)
            and previous.part_id == event.part_id
        ):
            merged[-1] = ReasoningDelta(part_id=event.part_id, text=previous.text + event.text)
            continue
        if (
            isinstance(event, TextDelta)
            and isinstance(previous, TextDelta)
            and previous.part_id == event.part_id
        ):
            merged[-1] = TextDelta(part_id=event.part_id, text=previous.text + event.text)
            continue
        if (
            isinstance(event, ToolCallDelta)
            and isinstance(previous, ToolCallDelta)
            and previous.part_id == event.part_id
        ):
            merged[-1] = ToolCallDelta(
                part_id=event.part_id,
                arguments_delta=previous.arguments_delta + event.arguments_delta,
            )
            continue
        merged.append(event)
    return merged


def sim_request(request: ModelRequest) -> SimRequest:
    """What the simulator would receive for ``request`` built by the adapter."""
    wire = ADAPTER.build_request(request, context(request.model))
    return SimRequest(
        method="POST",
        path="/v1/responses",
        query={},
        headers=dict(wire.headers),
        body=dict(wire.body),
        profile="openai",
        model=request.model,
        stream=request.stream,
    )

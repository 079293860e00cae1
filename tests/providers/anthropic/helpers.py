"""Shared helpers for the Anthropic adapter tests."""

from __future__ import annotations

from pathlib import Path

from tests.support import call_context, decode_in_pieces
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.anthropic import WIRE
from thoughtline.providers.base import CallContext, StreamDecoder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "anthropic"
ADAPTER = WIRE


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def context(model: str, *, endpoint: str = "anthropic") -> CallContext:
    return call_context(
        "anthropic",
        model,
        environ={"ANTHROPIC_API_KEY": "sk-ant-test-secret"},
        capability_endpoint=endpoint,
    )


def request(model: str = "claude-sonnet-4-6") -> ModelRequest:
    return ModelRequest.simple(model, "hi")


def new_decoder() -> StreamDecoder:
    return ADAPTER.new_decoder(request(), context("claude-sonnet-4-6"))


def decode_stream(data: bytes) -> list[StreamEvent]:
    return decode_in_pieces(new_decoder, data)


def decode_body(data: bytes) -> list[StreamEvent]:
    return ADAPTER.decode_body(data, request(), context("claude-sonnet-4-6"))

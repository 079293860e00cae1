"""Shared helpers for the Ollama adapter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import call_context
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext, decode_whole
from thoughtline.providers.ollama import WIRE
from thoughtline.testing.transcript import SimRequest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ollama"
ADAPTER = WIRE


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(fixture_bytes(name))
    return value


def ndjson_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in fixture_bytes(name).decode().splitlines() if line]


def context(model: str = "qwen3:8b") -> CallContext:
    return call_context("ollama", model)


def request(
    model: str = "qwen3:8b",
    *,
    enabled: bool = False,
    effort: Any = "provider-default",
    stream: bool = True,
) -> ModelRequest:
    return ModelRequest.simple(
        model,
        "How do I get from Paris to Lyon?",
        reasoning=ReasoningRequest(enabled=enabled, effort=effort),
        stream=stream,
    )


def decode_stream(name: str) -> list[StreamEvent]:
    return decode_whole(ADAPTER.new_decoder(request(), context()), fixture_bytes(name))


def decode_body(name: str) -> list[StreamEvent]:
    return ADAPTER.decode_body(fixture_bytes(name), request(stream=False), context())


def sim_request(model_request: ModelRequest) -> SimRequest:
    wire = ADAPTER.build_request(model_request, context(model_request.model))
    return SimRequest(
        method="POST",
        path="/api/chat",
        query={},
        headers={},
        body=dict(wire.body),
        profile="ollama",
        model=model_request.model,
        stream=model_request.stream,
    )

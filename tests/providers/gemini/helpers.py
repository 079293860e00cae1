"""Shared helpers for the Gemini adapter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import call_context
from thoughtline.model.events import StreamEvent
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext, decode_whole
from thoughtline.providers.gemini import WIRE
from thoughtline.testing.transcript import SimRequest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"
BASE_URL = "https://generativelanguage.googleapis.com"
ADAPTER = WIRE


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(fixture_bytes(name))
    return value


def sse_payloads(name: str) -> list[dict[str, Any]]:
    """The JSON payload of every ``data:`` line of a recorded stream."""
    text = fixture_bytes(name).decode("utf-8")
    return [
        json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")
    ]


def context(model: str = "gemini-2.5-flash") -> CallContext:
    return call_context("gemini", model)


def request(
    model: str = "gemini-2.5-flash",
    *,
    enabled: bool = False,
    effort: Any = "provider-default",
    stream: bool = True,
    budget_tokens: int | None = None,
) -> ModelRequest:
    return ModelRequest.simple(
        model,
        "How do I get from Paris to Lyon?",
        reasoning=ReasoningRequest(enabled=enabled, effort=effort, budget_tokens=budget_tokens),
        stream=stream,
    )


def decode_stream(name: str, model: str = "gemini-2.5-flash") -> list[StreamEvent]:
    decoder = ADAPTER.new_decoder(request(model), context(model))
    return decode_whole(decoder, fixture_bytes(name))


def decode_body(name: str, model: str = "gemini-2.5-flash") -> list[StreamEvent]:
    return ADAPTER.decode_body(fixture_bytes(name), request(model, stream=False), context(model))


def sim_request(model_request: ModelRequest) -> SimRequest:
    """What the simulator would record for the request the adapter builds."""
    wire = ADAPTER.build_request(model_request, context(model_request.model))
    path = wire.url.removeprefix(BASE_URL).partition("?")[0]
    return SimRequest(
        method="POST",
        path=path,
        query={"alt": "sse"} if model_request.stream else {},
        headers={},
        body=dict(wire.body),
        profile="gemini",
        model=model_request.model,
        stream=model_request.stream,
    )

"""Simulator renderer output decodes, through the adapter, to the expected response."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import Finish, FinishReason, StreamError, StreamEvent, Usage
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import decode_whole
from thoughtline.testing.renderers.gemini import GeminiRenderer
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

from .helpers import ADAPTER, context, request, sim_request

DEFAULT_SIGNATURE = base64.b64encode(b"sim-thought-signature:sim_1").decode()
THOUGHT = "Paris → Lyon: TGV or car? Café stops, 日本 style 🚄."
ANSWER = "Take the TGV — about 2 hours, é."


def stream(
    renderer: GeminiRenderer, transcript: Transcript, model_request: ModelRequest
) -> ModelResponse:
    sim = sim_request(model_request)
    data = b"".join(frame.data for frame in renderer.stream_frames(transcript, sim))
    decoder = ADAPTER.new_decoder(model_request, context(model_request.model))
    return accumulate(decode_whole(decoder, data))


def body(
    renderer: GeminiRenderer, transcript: Transcript, model_request: ModelRequest
) -> ModelResponse:
    sim = sim_request(model_request)
    events = ADAPTER.decode_body(
        renderer.body(transcript, sim), model_request, context(model_request.model)
    )
    return accumulate(events)


def signature_part(value: str, attached_to: str) -> ReasoningPart:
    return ReasoningPart(
        kind="encrypted",
        text="",
        provider_metadata={"thought_signature": value, "attached_to": attached_to},
    )


TRANSCRIPT = Transcript(
    answer=ANSWER,
    reasoning=(SimReasoning(kind="summary", text=THOUGHT),),
    input_tokens=40,
    reasoning_tokens=300,
    output_tokens=320,
    response_id="resp-1",
)


@pytest.mark.parametrize("decode", [stream, body])
def test_enabled_returns_thoughts_and_signature(decode: Any) -> None:
    response = decode(GeminiRenderer(), TRANSCRIPT, request("gemini-2.5-flash", enabled=True))
    assert response.text == ANSWER
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text=THOUGHT),
        signature_part(base64.b64encode(b"sim-thought-signature:resp-1").decode(), "text"),
    )
    assert response.usage == Usage(
        input_tokens=40, output_tokens=320, reasoning_tokens=300, total_tokens=360
    )
    assert response.finish == Finish(reason="stop", raw_reason="STOP")
    assert response.response_id == "resp-1"
    assert response.model == "gemini-2.5-flash"
    assert response.error is None


@pytest.mark.parametrize("decode", [stream, body])
def test_hidden_returns_only_the_signature_and_the_count(decode: Any) -> None:
    transcript = Transcript(
        answer=ANSWER,
        reasoning=(SimReasoning(kind="summary", text=THOUGHT, signature="U0lHTkVE"),),
        reasoning_tokens=640,
    )
    response = decode(GeminiRenderer(), transcript, request("gemini-3-pro-preview"))
    assert response.text == ANSWER
    assert response.reasoning_parts == (signature_part("U0lHTkVE", "text"),)
    assert response.usage.reasoning_tokens == 640


@pytest.mark.parametrize("decode", [stream, body])
def test_late_signature_on_empty_part(decode: Any) -> None:
    renderer = GeminiRenderer(signature_placement="late_empty")
    response = decode(
        renderer,
        Transcript(answer=ANSWER, reasoning=(SimReasoning(kind="summary", text=THOUGHT),)),
        request("gemini-3-pro-preview", enabled=True),
    )
    assert response.text == ANSWER
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text=THOUGHT),
        signature_part(DEFAULT_SIGNATURE, "empty"),
    )


def test_late_signature_arrives_in_the_final_chunk() -> None:
    renderer = GeminiRenderer(signature_placement="late_empty")
    sim = sim_request(request("gemini-3-pro-preview", enabled=True))
    frames = renderer.stream_frames(TRANSCRIPT, sim)
    assert [frame.role for frame in frames] == ["reasoning"] * 5 + ["text"] * 3 + ["end"]
    assert all(b"thoughtSignature" not in frame.data for frame in frames[:-1])
    assert b'{"text":"","thoughtSignature":' in frames[-1].data


@pytest.mark.parametrize("decode", [stream, body])
def test_tool_calls_carry_the_signature(decode: Any) -> None:
    transcript = Transcript(
        reasoning=(SimReasoning(kind="summary", text="Two cities."),),
        tool_calls=(
            SimToolCall(call_id="c1", name="get_weather", arguments='{"city":"Zürich"}'),
            SimToolCall(call_id="c2", name="get_weather", arguments='{"city":"東京"}'),
        ),
        finish="tool_calls",
    )
    response = decode(GeminiRenderer(), transcript, request("gemini-3-pro-preview", enabled=True))
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="c1",
            name="get_weather",
            arguments='{"city":"Zürich"}',
            provider_metadata={"thought_signature": DEFAULT_SIGNATURE},
        ),
        ToolCall(tool_call_id="c2", name="get_weather", arguments='{"city":"東京"}'),
    )
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text="Two cities."),
        signature_part(DEFAULT_SIGNATURE, "function_call"),
    )
    assert response.finish == Finish(reason="tool_calls", raw_reason="STOP")


@pytest.mark.parametrize("decode", [stream, body])
def test_zero_budget_means_no_reasoning(decode: Any) -> None:
    response = decode(
        GeminiRenderer(), TRANSCRIPT, request("gemini-2.5-flash", enabled=True, effort="none")
    )
    assert response.text == ANSWER
    assert response.reasoning_parts == ()
    assert response.usage == Usage(
        input_tokens=40, output_tokens=20, reasoning_tokens=None, total_tokens=60
    )


@pytest.mark.parametrize(
    ("finish", "reason", "raw"),
    [("length", "length", "MAX_TOKENS"), ("content_filter", "content_filter", "SAFETY")],
)
def test_finishes(finish: Any, reason: FinishReason, raw: str) -> None:
    transcript = Transcript(answer="cut", finish=finish)
    response = stream(GeminiRenderer(), transcript, request())
    assert response.finish == Finish(reason=reason, raw_reason=raw)


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("overloaded", "PROVIDER_OVERLOADED"),
        ("server_error", "PROVIDER_SERVER_ERROR"),
        ("rate_limited", "PROVIDER_RATE_LIMITED"),
    ],
)
def test_stream_error_frame(kind: Any, code: str) -> None:
    renderer = GeminiRenderer()
    sim = sim_request(request(enabled=True))
    frames = renderer.stream_frames(TRANSCRIPT, sim)
    data = frames[0].data + renderer.stream_error_frame(kind, "try later")
    events: list[StreamEvent] = decode_whole(ADAPTER.new_decoder(request(), context()), data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == (code, True)


def test_malformed_frame() -> None:
    renderer = GeminiRenderer()
    sim = sim_request(request(enabled=True))
    frames = renderer.stream_frames(TRANSCRIPT, sim)
    data = frames[0].data + renderer.malformed_frame() + frames[1].data
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "PROVIDER_BAD_REQUEST"),
        (404, "PROVIDER_NOT_FOUND"),
        (429, "PROVIDER_RATE_LIMITED"),
        (500, "PROVIDER_SERVER_ERROR"),
        (503, "PROVIDER_OVERLOADED"),
    ],
)
def test_error_body(status: int, code: str) -> None:
    error = ADAPTER.parse_error(status, {}, GeminiRenderer().error_body(status, "nope"))
    assert error.code == code
    assert "nope" in error.message
    assert error.retry_after_s is None


def test_error_body_with_retry_delay() -> None:
    error = ADAPTER.parse_error(
        429, {}, GeminiRenderer(retry_delay="0.5s").error_body(429, "slow down")
    )
    assert error.retry_after_s == 0.5


def test_model_and_stream_from_the_path() -> None:
    renderer = GeminiRenderer()
    sim = sim_request(request("gemini-3-pro-preview"))
    assert renderer.model_of(sim) == "gemini-3-pro-preview"
    assert renderer.is_stream(sim) is True
    assert renderer.is_stream(sim_request(request(stream=False))) is False

"""Simulator renderer output decodes, through the adapter, to the expected response."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import Finish, StreamError, Usage
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import decode_whole
from thoughtline.testing.renderers.ollama import OllamaRenderer
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

from .helpers import ADAPTER, context, request, sim_request

THOUGHT = "Paris → Lyon: TGV or car? Café, 日本 🤔."
ANSWER = "Take the TGV — about 2 hours, é."
TRANSCRIPT = Transcript(
    answer=ANSWER,
    reasoning=(SimReasoning(kind="raw", text=THOUGHT),),
    input_tokens=26,
    reasoning_tokens=200,
    output_tokens=230,
)


def stream(
    renderer: OllamaRenderer, transcript: Transcript, model_request: ModelRequest
) -> ModelResponse:
    sim = sim_request(model_request)
    data = b"".join(frame.data for frame in renderer.stream_frames(transcript, sim))
    return accumulate(decode_whole(ADAPTER.new_decoder(model_request, context()), data))


def body(
    renderer: OllamaRenderer, transcript: Transcript, model_request: ModelRequest
) -> ModelResponse:
    sim = sim_request(model_request)
    return accumulate(ADAPTER.decode_body(renderer.body(transcript, sim), model_request, context()))


@pytest.mark.parametrize("decode", [stream, body])
@pytest.mark.parametrize("effort", ["provider-default", "high"])
def test_think_returns_raw_reasoning(decode: Any, effort: str) -> None:
    response = decode(OllamaRenderer(), TRANSCRIPT, request(enabled=True, effort=effort))
    assert response.text == ANSWER
    assert response.reasoning_parts == (ReasoningPart(kind="raw", text=THOUGHT),)
    assert response.usage == Usage(input_tokens=26, output_tokens=230)
    assert response.finish == Finish(reason="stop", raw_reason="stop")
    assert response.model == "qwen3:8b"
    assert response.error is None


@pytest.mark.parametrize("decode", [stream, body])
def test_hidden_switches_off_a_model_that_thinks_by_default(decode: Any) -> None:
    # Ollama thinks by default on thinking models; hidden mode sends think: false.
    response = decode(OllamaRenderer(), TRANSCRIPT, request())
    assert response.text == ANSWER
    assert response.reasoning_parts == ()


@pytest.mark.parametrize("decode", [stream, body])
def test_hidden_on_a_model_that_always_thinks_still_returns_thinking(decode: Any) -> None:
    # gpt-oss ignores think: false (none is sent); the adapter reports what arrived and
    # disclosure gating happens once, at capture.
    model_request = request("gpt-oss:20b")
    assert "think" not in sim_request(model_request).body  # type: ignore[operator]
    response = decode(OllamaRenderer(), TRANSCRIPT, model_request)
    assert response.reasoning_parts == (ReasoningPart(kind="raw", text=THOUGHT),)


@pytest.mark.parametrize("decode", [stream, body])
def test_no_thinking_when_the_model_does_not_think_by_default(decode: Any) -> None:
    response = decode(OllamaRenderer(reasoning_by_default=False), TRANSCRIPT, request())
    assert response.text == ANSWER
    assert response.reasoning_parts == ()
    assert response.usage == Usage(input_tokens=26, output_tokens=30)


def test_think_false_turns_thinking_off() -> None:
    sim = sim_request(request())
    sim = replace(sim, body={**dict(sim.body or {}), "think": False})
    assert all(
        frame.role != "reasoning" for frame in OllamaRenderer().stream_frames(TRANSCRIPT, sim)
    )


@pytest.mark.parametrize("decode", [stream, body])
def test_tool_calls(decode: Any) -> None:
    transcript = Transcript(
        reasoning=(SimReasoning(kind="raw", text="Two cities."),),
        tool_calls=(
            SimToolCall(call_id="c1", name="get_weather", arguments='{"city": "Zürich"}'),
            SimToolCall(call_id="c2", name="get_weather", arguments='{"city": "東京"}'),
        ),
        finish="tool_calls",
    )
    response = decode(OllamaRenderer(), transcript, request(enabled=True))
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="c1",
            name="get_weather",
            arguments='{"city":"Zürich"}',
            provider_metadata={"index": 0},
        ),
        ToolCall(
            tool_call_id="c2",
            name="get_weather",
            arguments='{"city":"東京"}',
            provider_metadata={"index": 1},
        ),
    )
    assert response.finish == Finish(reason="tool_calls", raw_reason="stop")


def test_frame_roles() -> None:
    frames = OllamaRenderer().stream_frames(TRANSCRIPT, sim_request(request(enabled=True)))
    assert [frame.role for frame in frames] == ["reasoning"] * 4 + ["text"] * 3 + ["end"]


def test_length() -> None:
    response = stream(OllamaRenderer(), Transcript(answer="cut", finish="length"), request())
    assert response.finish == Finish(reason="length", raw_reason="length")


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("overloaded", "PROVIDER_OVERLOADED"),
        ("server_error", "PROVIDER_SERVER_ERROR"),
        ("rate_limited", "PROVIDER_RATE_LIMITED"),
    ],
)
def test_stream_error_frame(kind: Any, code: str) -> None:
    renderer = OllamaRenderer()
    frames = renderer.stream_frames(TRANSCRIPT, sim_request(request(enabled=True)))
    data = frames[0].data + renderer.stream_error_frame(kind, "the runner stopped")
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == (code, True)


def test_malformed_frame() -> None:
    renderer = OllamaRenderer()
    frames = renderer.stream_frames(TRANSCRIPT, sim_request(request(enabled=True)))
    data = frames[0].data + renderer.malformed_frame() + frames[1].data
    last = decode_whole(ADAPTER.new_decoder(request(), context()), data)[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (404, 'model "qwen3:8b" not found, try pulling it first', "PROVIDER_NOT_FOUND"),
        (400, "invalid request", "PROVIDER_BAD_REQUEST"),
        (500, "llama runner process has terminated", "PROVIDER_SERVER_ERROR"),
    ],
)
def test_error_body(status: int, message: str, code: str) -> None:
    error = ADAPTER.parse_error(status, {}, OllamaRenderer().error_body(status, message))
    assert error.code == code
    assert message in error.message


def test_model_and_stream() -> None:
    renderer = OllamaRenderer()
    assert renderer.model_of(sim_request(request())) == "qwen3:8b"
    assert renderer.is_stream(sim_request(request())) is True
    assert renderer.is_stream(sim_request(request(stream=False))) is False

"""Round trip: adapter request → simulator renderer → adapter decoding → ModelResponse."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import Finish, StreamError, Usage
from thoughtline.model.requests import Effort, ModelRequest, ReasoningRequest
from thoughtline.testing.renderers.anthropic import AnthropicRenderer, fake_signature
from thoughtline.testing.transcript import SimReasoning, SimRequest, SimToolCall, Transcript
from thoughtline.wire import loads_object

from .helpers import ADAPTER, context, decode_body, decode_stream

RENDERER = AnthropicRenderer()

THOUGHTFUL = Transcript(
    answer="Die Antwort ist 42 — voilà ✅",
    reasoning=(
        SimReasoning(
            kind="summary", text="Erst π schätzen → dann 日本 prüfen 🙂", signature="sig-A"
        ),
        SimReasoning(kind="summary", text="Zweiter Gedanke.", signature="sig-B"),
    ),
    input_tokens=31,
    reasoning_tokens=500,
    output_tokens=620,
    chunk_chars=5,
    response_id="msg_sim_1",
)


def sim_request(body: dict[str, Any]) -> SimRequest:
    return SimRequest(
        method="POST",
        path="/anthropic/v1/messages",
        query={},
        headers={},
        body=body,
        profile="anthropic",
        model=body.get("model"),
        stream=bool(body.get("stream")),
    )


def adapter_request(
    model: str, *, enabled: bool, effort: Effort = "provider-default", stream: bool = True
) -> SimRequest:
    request = ModelRequest.simple(
        model, "Frage", reasoning=ReasoningRequest(enabled=enabled, effort=effort), stream=stream
    )
    return sim_request(dict(ADAPTER.build_request(request, context(model)).body))


def both_paths(transcript: Transcript, request: SimRequest) -> ModelResponse:
    """Decode the rendered stream and the rendered body; they must agree."""
    frames = RENDERER.stream_frames(transcript, request)
    streamed = accumulate(decode_stream(b"".join(frame.data for frame in frames)))
    whole = accumulate(decode_body(RENDERER.body(transcript, request)))
    assert whole == streamed
    return streamed


def test_adaptive_summarized_returns_summaries_with_signatures() -> None:
    request = adapter_request("claude-sonnet-4-6", enabled=True, effort="high")
    response = both_paths(THOUGHTFUL, request)
    assert response.text == "Die Antwort ist 42 — voilà ✅"
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="Erst π schätzen → dann 日本 prüfen 🙂",
            provider_metadata={"signature": "sig-A"},
        ),
        ReasoningPart(
            kind="summary", text="Zweiter Gedanke.", provider_metadata={"signature": "sig-B"}
        ),
    )
    assert response.usage == Usage(
        input_tokens=31, output_tokens=620, reasoning_tokens=500, cached_input_tokens=None
    )
    assert response.finish == Finish(reason="stop", raw_reason="end_turn")
    assert (response.response_id, response.model) == ("msg_sim_1", "claude-sonnet-4-6")
    assert response.warnings == ()
    assert response.error is None


def test_budget_family_with_enabled_thinking_returns_summaries() -> None:
    request = adapter_request("claude-sonnet-4-5", enabled=True, effort="medium")
    assert request.body is not None
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    response = both_paths(THOUGHTFUL, request)
    assert [(part.kind, part.text) for part in response.reasoning_parts] == [
        ("summary", "Erst π schätzen → dann 日本 prüfen 🙂"),
        ("summary", "Zweiter Gedanke."),
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"model": "claude-opus-4-7", "thinking": {"type": "adaptive"}},  # family default omitted
        {"model": "claude-sonnet-4-6", "thinking": {"type": "adaptive", "display": "omitted"}},
        {
            "model": "claude-sonnet-4-5",
            "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "omitted"},
        },
    ],
)
def test_omitted_display_returns_only_signatures(body: dict[str, Any]) -> None:
    response = both_paths(THOUGHTFUL, sim_request({**body, "max_tokens": 4096, "stream": True}))
    assert response.reasoning_parts == (
        ReasoningPart(kind="encrypted", text="", provider_metadata={"signature": "sig-A"}),
        ReasoningPart(kind="encrypted", text="", provider_metadata={"signature": "sig-B"}),
    )
    assert response.usage.reasoning_tokens == 500


def test_adaptive_without_display_on_summarizing_family_shows_text() -> None:
    body = {"model": "claude-opus-4-6", "thinking": {"type": "adaptive"}, "max_tokens": 10}
    response = both_paths(THOUGHTFUL, sim_request(body))
    assert [part.kind for part in response.reasoning_parts] == ["summary", "summary"]


def test_hidden_on_a_model_that_does_not_reason_by_default_returns_no_reasoning() -> None:
    transcript = Transcript(
        answer="Kurz.", reasoning=(SimReasoning(kind="summary", text="x" * 40),), input_tokens=9
    )
    response = both_paths(transcript, adapter_request("claude-sonnet-4-6", enabled=False))
    assert response.reasoning_parts == ()
    assert response.text == "Kurz."
    # Derived counts: the answer only, no thinking reported.
    assert response.usage == Usage(input_tokens=9, output_tokens=1, reasoning_tokens=None)


def test_hidden_on_a_model_that_reasons_by_default_returns_omitted_blocks() -> None:
    request = adapter_request("claude-sonnet-5", enabled=False)
    assert request.body is not None
    assert "thinking" not in request.body
    response = both_paths(THOUGHTFUL, request)
    assert [part.kind for part in response.reasoning_parts] == ["encrypted", "encrypted"]
    assert all(part.text == "" for part in response.reasoning_parts)
    assert response.usage.reasoning_tokens == 500


def test_explicitly_disabled_thinking_returns_no_reasoning() -> None:
    body = {"model": "claude-sonnet-5", "thinking": {"type": "disabled"}, "max_tokens": 10}
    response = both_paths(THOUGHTFUL, sim_request(body))
    assert response.reasoning_parts == ()
    assert response.usage.reasoning_tokens is None


def test_redacted_blocks_and_tool_calls() -> None:
    transcript = Transcript(
        reasoning=(
            SimReasoning(kind="summary", text="Wetter holen."),
            SimReasoning(kind="redacted", signature="EmwKAhgBEgy3va3p=="),
        ),
        tool_calls=(
            SimToolCall(call_id="toolu_1", name="get_weather", arguments='{"city": "Zürich"}'),
            SimToolCall(call_id="toolu_2", name="get_time", arguments="{}"),
        ),
        finish="tool_calls",
        chunk_chars=4,
        response_id="msg_sim_tools",
    )
    request = adapter_request("claude-opus-4-8", enabled=True)
    response = both_paths(transcript, request)
    generated = fake_signature("msg_sim_tools:0:Wetter holen.")
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary", text="Wetter holen.", provider_metadata={"signature": generated}
        ),
        ReasoningPart(kind="redacted", text="", provider_metadata={"data": "EmwKAhgBEgy3va3p=="}),
    )
    assert response.tool_calls == (
        ToolCall(tool_call_id="toolu_1", name="get_weather", arguments='{"city":"Zürich"}'),
        ToolCall(tool_call_id="toolu_2", name="get_time", arguments="{}"),
    )
    assert response.text == ""
    assert response.finish == Finish(reason="tool_calls", raw_reason="tool_use")


@pytest.mark.parametrize(
    ("finish", "stop_reason", "reason"),
    [
        ("length", "max_tokens", "length"),
        ("refusal", "refusal", "refusal"),
        ("content_filter", "refusal", "refusal"),
    ],
)
def test_finish_reasons(finish: Any, stop_reason: str, reason: str) -> None:
    transcript = Transcript(answer="…", finish=finish)
    response = both_paths(transcript, adapter_request("claude-opus-5", enabled=False))
    assert response.finish == Finish(reason=reason, raw_reason=stop_reason)  # type: ignore[arg-type]


def test_frames_are_tagged_by_role() -> None:
    transcript = Transcript(
        answer="ok",
        reasoning=(SimReasoning(kind="summary", text="abc"),),
        tool_calls=(SimToolCall(call_id="t", name="f", arguments='{"a":1}'),),
        chunk_chars=100,
    )
    frames = RENDERER.stream_frames(transcript, adapter_request("claude-sonnet-4-6", enabled=True))
    assert [frame.role for frame in frames] == [
        "meta",
        "meta",  # message_start, ping
        "reasoning",
        "reasoning",
        "reasoning",
        "reasoning",  # start, delta, signature, stop
        "text",
        "text",
        "text",
        "tool",
        "tool",
        "tool",
        "end",
        "end",  # message_delta, message_stop
    ]


def test_is_stream_and_model_of_follow_the_body() -> None:
    assert RENDERER.is_stream(sim_request({"model": "claude-opus-5", "stream": True})) is True
    assert RENDERER.is_stream(sim_request({"model": "claude-opus-5"})) is False
    assert RENDERER.model_of(sim_request({"model": "claude-opus-5"})) == "claude-opus-5"


# ---------------------------------------------------------------- faults


def test_stream_error_frame_after_reasoning_is_the_last_event() -> None:
    request = adapter_request("claude-sonnet-4-6", enabled=True)
    frames = RENDERER.stream_frames(THOUGHTFUL, request)
    reasoning_frames = [frame for frame in frames if frame.role in ("meta", "reasoning")]
    raw = b"".join(frame.data for frame in reasoning_frames[:5])
    raw += RENDERER.stream_error_frame("rate_limited", "Slow down")
    events = decode_stream(raw)
    assert events[-1] == StreamError(
        code="PROVIDER_RATE_LIMITED",
        message="Anthropic stream error (rate_limit_error): Slow down. Wait and try again, or "
        "lower max_concurrency.",
        retryable=True,
        provider_error_type="rate_limit_error",
    )
    response = accumulate(events)
    assert response.reasoning_parts[0].complete is False
    assert response.reasoning_parts[0].text.startswith("Erst ")


def test_connection_cut_mid_reasoning_is_interrupted() -> None:
    frames = RENDERER.stream_frames(THOUGHTFUL, adapter_request("claude-opus-4-7", enabled=True))
    cut = next(i for i, frame in enumerate(frames) if frame.role == "reasoning") + 2
    events = decode_stream(b"".join(frame.data for frame in frames[:cut]))
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_STREAM_INTERRUPTED"


def test_malformed_frame_is_a_malformed_response() -> None:
    frames = RENDERER.stream_frames(THOUGHTFUL, adapter_request("claude-opus-4-7", enabled=True))
    raw = frames[0].data + RENDERER.malformed_frame() + b"".join(f.data for f in frames[1:])
    events = decode_stream(raw)
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    ("status", "code", "error_type"),
    [
        (400, "PROVIDER_BAD_REQUEST", "invalid_request_error"),
        (401, "PROVIDER_AUTH_ERROR", "authentication_error"),
        (413, "PROVIDER_REQUEST_TOO_LARGE", "request_too_large"),
        (429, "PROVIDER_RATE_LIMITED", "rate_limit_error"),
        (500, "PROVIDER_SERVER_ERROR", "api_error"),
        (503, "PROVIDER_OVERLOADED", "api_error"),
        (529, "PROVIDER_OVERLOADED", "overloaded_error"),
    ],
)
def test_error_bodies_parse_back(status: int, code: str, error_type: str) -> None:
    body = RENDERER.error_body(status, "Nope")
    assert loads_object(body)["error"]["type"] == error_type
    error = ADAPTER.parse_error(status, {}, body)
    assert (error.code, error.provider_error_type, error.request_id) == (
        code,
        error_type,
        f"req_sim_{status}",
    )

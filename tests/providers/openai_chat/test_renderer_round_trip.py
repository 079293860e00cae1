"""Simulator output for several transcripts decodes to the expected response."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import Finish, StreamError, Usage
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.base import CallContext
from thoughtline.testing.renderers.openai_chat import OpenAIChatRenderer
from thoughtline.testing.transcript import (
    SimReasoning,
    SimRequest,
    SimToolCall,
    Transcript,
)

from .helpers import ADAPTER, make_context

RICH = Transcript(
    answer="Voilà — 42 🎉",
    reasoning=(
        SimReasoning(kind="summary", text="Thinking about 日本…", signature="sig-1=="),
        SimReasoning(kind="encrypted", signature="gAAAA=="),
        SimReasoning(kind="raw", text="raw → text"),
        SimReasoning(kind="redacted", signature="redacted=="),
    ),
    input_tokens=12,
    reasoning_tokens=300,
    output_tokens=350,
    chunk_chars=5,
    response_id="gen-rt-1",
)
TOOLS = Transcript(
    reasoning=(SimReasoning(kind="raw", text="Need the tool <now>."),),
    tool_calls=(
        SimToolCall(call_id="call_a", name="lookup", arguments='{"q": "café"}'),
        SimToolCall(call_id="call_b", name="clock", arguments="{}"),
    ),
    finish="tool_calls",
    chunk_chars=4,
    response_id="chatcmpl-rt-2",
)


def run(
    renderer: OpenAIChatRenderer,
    transcript: Transcript,
    request: ModelRequest,
    context: CallContext,
) -> tuple[ModelResponse, ModelResponse, dict[str, Any]]:
    """(streamed, whole) responses, and the body the renderer received."""
    results = []
    body: dict[str, Any] = {}
    for stream in (True, False):
        wire = ADAPTER.build_request(
            ModelRequest(
                model=request.model,
                messages=request.messages,
                reasoning=request.reasoning,
                tools=request.tools,
                stream=stream,
            ),
            context,
        )
        body = dict(wire.body)
        sim = SimRequest(
            method="POST",
            path="/chat/completions",
            query={},
            headers=dict(wire.headers),
            body=body,
            profile=context.endpoint.name,
            model=request.model,
            stream=stream,
        )
        assert renderer.is_stream(sim) is stream
        assert renderer.model_of(sim) == request.model
        if stream:
            decoder = ADAPTER.new_decoder(request, context)
            events = []
            for frame in renderer.stream_frames(transcript, sim):
                events.extend(decoder.feed(frame.data))
            events.extend(decoder.close())
        else:
            events = ADAPTER.decode_body(renderer.body(transcript, sim), request, context)
        results.append(accumulate(events))
    return results[0], results[1], body


def request_for(model: str, reasoning: ReasoningRequest) -> ModelRequest:
    return ModelRequest.simple(model, "What is 6 times 7?", reasoning=reasoning)


def test_openrouter_enabled_returns_every_kind() -> None:
    renderer = OpenAIChatRenderer(dialect="openrouter", upstream_provider="Anthropic")
    request = request_for("anthropic/claude-sonnet-4.6", ReasoningRequest(enabled=True))
    streamed, whole, _ = run(renderer, RICH, request, make_context("openrouter", request.model))
    assert streamed == whole
    assert streamed.text == "Voilà — 42 🎉"
    assert streamed.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="Thinking about 日本…",
            provider_metadata={
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
                "signature": "sig-1==",
            },
        ),
        ReasoningPart(
            kind="encrypted",
            text="",
            provider_metadata={
                "type": "reasoning.encrypted",
                "format": "openai-responses-v1",
                "id": "rs_1",
                "index": 1,
                "data": "gAAAA==",
            },
        ),
        ReasoningPart(
            kind="raw",
            text="raw → text",
            provider_metadata={"type": "reasoning.text", "format": "unknown", "index": 2},
        ),
        ReasoningPart(
            kind="encrypted",
            text="",
            provider_metadata={
                "type": "reasoning.encrypted",
                "format": "anthropic-claude-v1",
                "index": 3,
                "data": "redacted==",
            },
        ),
    )
    assert streamed.usage == Usage(
        input_tokens=12,
        output_tokens=350,
        reasoning_tokens=300,
        cached_input_tokens=0,
        total_tokens=362,
    )
    assert streamed.finish == Finish(reason="stop", raw_reason="stop")
    assert streamed.response_id == "gen-rt-1"


def test_openrouter_hidden_returns_no_reasoning_but_counts_it() -> None:
    renderer = OpenAIChatRenderer(dialect="openrouter")
    request = request_for("anthropic/claude-sonnet-4.6", ReasoningRequest())
    streamed, whole, body = run(renderer, RICH, request, make_context("openrouter", request.model))
    assert body["reasoning"] == {"exclude": True}
    assert streamed == whole
    assert streamed.reasoning_parts == ()
    assert streamed.text == "Voilà — 42 🎉"
    assert streamed.usage.reasoning_tokens == 300


def test_openai_chat_never_returns_reasoning_text() -> None:
    renderer = OpenAIChatRenderer(dialect="openai")
    request = request_for("gpt-5.5", ReasoningRequest(enabled=True, effort="high"))
    context = make_context("openai", "gpt-5.5", wire_api="openai-chat")
    streamed, whole, body = run(renderer, RICH, request, context)
    assert body["reasoning_effort"] == "high"
    assert streamed == whole
    assert streamed.reasoning_parts == ()
    assert streamed.text == "Voilà — 42 🎉"
    assert streamed.usage.reasoning_tokens == 300
    assert streamed.usage.output_tokens == 350


@pytest.mark.parametrize(
    ("endpoint", "field"),
    [("deepseek", "reasoning_content"), ("vllm", "reasoning"), ("llamacpp", "think_tags")],
)
def test_raw_servers_with_tools(endpoint: str, field: str) -> None:
    renderer = OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field=field)  # type: ignore[arg-type]
    request = request_for("qwen3-32b", ReasoningRequest(enabled=True))
    context = make_context(
        endpoint, "qwen3-32b", reasoning_field="think_tags" if field == "think_tags" else None
    )
    streamed, whole, _ = run(renderer, TOOLS, request, context)
    assert streamed == whole
    assert streamed.reasoning_parts == (ReasoningPart(kind="raw", text="Need the tool <now>."),)
    assert streamed.text == ""
    assert streamed.tool_calls == (
        ToolCall(tool_call_id="call_a", name="lookup", arguments='{"q": "café"}'),
        ToolCall(tool_call_id="call_b", name="clock", arguments="{}"),
    )
    assert streamed.finish == Finish(reason="tool_calls", raw_reason="tool_calls")
    assert streamed.usage.reasoning_tokens == TOOLS.effective_reasoning_tokens()


def test_raw_server_hidden_reasons_only_by_default() -> None:
    request = request_for("deepseek-reasoner", ReasoningRequest())
    context = make_context("deepseek", "deepseek-reasoner")
    by_default = OpenAIChatRenderer(dialect="raw-reasoning", reasons_by_default=True)
    streamed, _, _ = run(by_default, RICH, request, context)
    assert streamed.reasoning_parts == (
        ReasoningPart(kind="raw", text="Thinking about 日本…raw → text"),
    )
    off = OpenAIChatRenderer(dialect="raw-reasoning")
    streamed, whole, _ = run(off, RICH, request, context)
    assert streamed == whole
    assert streamed.reasoning_parts == ()
    assert streamed.usage.reasoning_tokens is None


def test_think_tags_auto_mode_round_trip() -> None:
    renderer = OpenAIChatRenderer(dialect="raw-reasoning", reasoning_field="think_tags")
    request = request_for("qwen3", ReasoningRequest(enabled=True))
    transcript = Transcript(
        answer="Use <think> literally? No.",
        reasoning=(SimReasoning(kind="raw", text="Tags <b> inside"),),
        chunk_chars=3,
    )
    context = make_context("llamacpp", "qwen3", reasoning_field="auto")
    streamed, whole, _ = run(renderer, transcript, request, context)
    assert streamed == whole
    assert streamed.reasoning_parts == (ReasoningPart(kind="raw", text="Tags <b> inside"),)
    assert streamed.text == "Use <think> literally? No."


def test_refusal_becomes_refusal_finish() -> None:
    renderer = OpenAIChatRenderer(dialect="openai")
    request = request_for("gpt-5.5", ReasoningRequest())
    context = make_context("openai", "gpt-5.5", wire_api="openai-chat")
    transcript = Transcript(answer="I can't help with that.", finish="refusal")
    streamed, whole, _ = run(renderer, transcript, request, context)
    assert streamed == whole
    assert streamed.text == "I can't help with that."
    assert streamed.text_metadata == ({"refusal": True},)
    assert streamed.finish == Finish(reason="refusal", raw_reason="stop")


@pytest.mark.parametrize(
    ("dialect", "endpoint", "kind", "code"),
    [
        ("openrouter", "openrouter", "overloaded", "PROVIDER_OVERLOADED"),
        ("openrouter", "openrouter", "server_error", "PROVIDER_SERVER_ERROR"),
        ("openrouter", "openrouter", "rate_limited", "PROVIDER_RATE_LIMITED"),
        ("raw-reasoning", "deepseek", "overloaded", "PROVIDER_OVERLOADED"),
        ("raw-reasoning", "deepseek", "server_error", "PROVIDER_SERVER_ERROR"),
        ("raw-reasoning", "deepseek", "rate_limited", "PROVIDER_RATE_LIMITED"),
    ],
)
def test_injected_stream_error_after_reasoning(
    dialect: str, endpoint: str, kind: str, code: str
) -> None:
    renderer = OpenAIChatRenderer(dialect=dialect)  # type: ignore[arg-type]
    model = "deepseek-reasoner" if endpoint == "deepseek" else "deepseek/deepseek-r1"
    request = request_for(model, ReasoningRequest(enabled=True))
    context = make_context(endpoint, model)
    wire = ADAPTER.build_request(request, context)
    sim = SimRequest(
        method="POST",
        path="/chat/completions",
        query={},
        headers={},
        body=wire.body,
        profile=endpoint,
        model=model,
        stream=True,
    )
    frames = renderer.stream_frames(RICH, sim)
    cut = next(i for i, frame in enumerate(frames) if frame.role == "text")
    data = b"".join(frame.data for frame in frames[:cut])
    data += renderer.stream_error_frame(kind, "simulated")  # type: ignore[arg-type]
    decoder = ADAPTER.new_decoder(request, context)
    events = [*decoder.feed(data), *decoder.close()]
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == code
    assert last.retryable is True
    response = accumulate(events)
    # Raw servers have one reasoning field, so the blocks arrive as one part.
    expected = (
        "Thinking about 日本…" if dialect == "openrouter" else "Thinking about 日本…raw → text"
    )
    assert response.reasoning_parts[0].text == expected
    assert response.reasoning_parts[-1].complete is False


def test_malformed_frame_from_renderer() -> None:
    renderer = OpenAIChatRenderer(dialect="openai")
    request = request_for("gpt-5.5", ReasoningRequest())
    context = make_context("openai", "gpt-5.5", wire_api="openai-chat")
    decoder = ADAPTER.new_decoder(request, context)
    events = [*decoder.feed(renderer.malformed_frame()), *decoder.close()]
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize("dialect", ["openai", "openrouter", "raw-reasoning"])
@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "PROVIDER_RATE_LIMITED"),
        (400, "PROVIDER_BAD_REQUEST"),
        (401, "PROVIDER_AUTH_ERROR"),
        (500, "PROVIDER_SERVER_ERROR"),
    ],
)
def test_renderer_error_bodies_parse(dialect: str, status: int, code: str) -> None:
    renderer = OpenAIChatRenderer(dialect=dialect)  # type: ignore[arg-type]
    error = ADAPTER.parse_error(status, {}, renderer.error_body(status, "simulated failure"))
    assert error.code == code
    assert "simulated failure" in error.message

"""Fixtures, simulator output and request bodies validated against the official SDK types.

This proves the recorded fixtures and the simulator speak the real wire shapes: each
payload must validate *and* resolve to the expected SDK class, not a fallback.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pydantic
import pytest

from thoughtline.model.requests import Effort, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, SimToolCall, Transcript
from thoughtline.wire import SSEDecoder, loads_object

from .expected import BODIES, STREAMS
from .helpers import ADAPTER, context, fixture

if TYPE_CHECKING:
    import anthropic.types as sdk


@functools.cache
def sdk_types() -> SimpleNamespace:
    """The SDK's types and the tables of them, imported when a test first needs them (the
    anthropic package takes a second to import, which collecting the suite should not pay)."""
    import anthropic.types as sdk
    from anthropic.types import message_create_params

    return SimpleNamespace(
        sdk=sdk,
        stream_event=pydantic.TypeAdapter(sdk.RawMessageStreamEvent),
        streaming_params=pydantic.TypeAdapter(message_create_params.MessageCreateParamsStreaming),
        non_streaming_params=pydantic.TypeAdapter(
            message_create_params.MessageCreateParamsNonStreaming
        ),
        event_classes={
            "message_start": sdk.RawMessageStartEvent,
            "message_delta": sdk.RawMessageDeltaEvent,
            "message_stop": sdk.RawMessageStopEvent,
            "content_block_start": sdk.RawContentBlockStartEvent,
            "content_block_delta": sdk.RawContentBlockDeltaEvent,
            "content_block_stop": sdk.RawContentBlockStopEvent,
        },
        block_classes={
            "thinking": sdk.ThinkingBlock,
            "redacted_thinking": sdk.RedactedThinkingBlock,
            "text": sdk.TextBlock,
            "tool_use": sdk.ToolUseBlock,
            "server_tool_use": sdk.ServerToolUseBlock,
            "web_search_tool_result": sdk.WebSearchToolResultBlock,
        },
        delta_classes={
            "thinking_delta": sdk.ThinkingDelta,
            "signature_delta": sdk.SignatureDelta,
            "text_delta": sdk.TextDelta,
            "input_json_delta": sdk.InputJSONDelta,
            "citations_delta": sdk.CitationsDelta,
        },
        error_classes={
            "invalid_request_error": sdk.InvalidRequestErrorObject,
            "authentication_error": sdk.AuthenticationErrorObject,
            "billing_error": sdk.BillingErrorObject,
            "permission_error": sdk.PermissionErrorObject,
            "not_found_error": sdk.NotFoundErrorObject,
            "rate_limit_error": sdk.RateLimitErrorObject,
            "timeout_error": sdk.GatewayTimeoutErrorObject,
            "api_error": sdk.APIErrorObject,
            "overloaded_error": sdk.OverloadedErrorObject,
        },
    )


def payloads(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    decoder = SSEDecoder()
    frames = [*decoder.feed(raw), *decoder.flush()]
    return [(frame.event, loads_object(frame.data)) for frame in frames]


def assert_message(body: dict[str, Any]) -> sdk.Message:
    types = sdk_types()
    message = types.sdk.Message.model_validate(body)
    assert [type(block) for block in message.content] == [
        types.block_classes[block["type"]] for block in body["content"]
    ]
    return message


def assert_stream_payload(event_name: str, payload: dict[str, Any]) -> None:
    """One SSE frame: the event name repeats the payload type, and the SDK resolves it."""
    assert event_name == payload["type"]
    if payload["type"] == "ping":  # the SDK skips pings before validating
        assert payload == {"type": "ping"}
        return
    if payload["type"] == "error":
        assert_error(payload)
        return
    types = sdk_types()
    event = types.stream_event.validate_python(payload)
    assert type(event) is types.event_classes[payload["type"]]
    if isinstance(event, types.sdk.RawContentBlockStartEvent):
        assert type(event.content_block) is types.block_classes[payload["content_block"]["type"]]
    if isinstance(event, types.sdk.RawContentBlockDeltaEvent):
        assert type(event.delta) is types.delta_classes[payload["delta"]["type"]]


def assert_error(payload: dict[str, Any]) -> None:
    types = sdk_types()
    error = types.sdk.ErrorResponse.model_validate(payload)
    assert type(error.error) is types.error_classes[payload["error"]["type"]]


# ---------------------------------------------------------------- recorded fixtures


@pytest.mark.parametrize("name", sorted(BODIES))
def test_recorded_bodies_are_sdk_messages(name: str) -> None:
    body = loads_object(fixture(f"{name}_body.json"))
    message = assert_message(body)
    assert message.usage.input_tokens > 0


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_recorded_stream_payloads_are_sdk_events(name: str) -> None:
    frames = payloads(fixture(f"{name}_stream.sse"))
    assert len(frames) >= 4
    for event_name, payload in frames:
        assert_stream_payload(event_name, payload)


@pytest.mark.parametrize(
    "name",
    ["error_overloaded_529.json", "error_rate_limit_429.json", "error_invalid_request_400.json"],
)
def test_recorded_error_bodies_are_sdk_error_responses(name: str) -> None:
    assert_error(loads_object(fixture(name)))


# ---------------------------------------------------------------- request bodies


@pytest.mark.parametrize(
    ("model", "enabled", "effort"),
    [
        ("claude-sonnet-4-5", True, "high"),
        ("claude-sonnet-4-5", False, "provider-default"),
        ("claude-sonnet-4-6", True, "max"),
        ("claude-opus-4-7", False, "low"),
        ("claude-sonnet-5", True, "xhigh"),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_request_bodies_are_sdk_create_params(
    model: str, enabled: bool, effort: Effort, stream: bool
) -> None:
    request = ModelRequest(
        model=model,
        system="Sei präzise.",
        messages=ModelRequest.simple(model, "Wie spät ist es in 東京?").messages,
        tools=(ToolSpec(name="get_time", description="Local time"),),
        reasoning=ReasoningRequest(enabled=enabled, effort=effort),
        stream=stream,
    )
    body = dict(ADAPTER.build_request(request, context(model)).body)
    types = sdk_types()
    adapter = types.streaming_params if stream else types.non_streaming_params
    validated = adapter.validate_python(body)
    assert set(validated) == set(body)  # nothing the SDK does not know was sent
    assert validated.get("stream", False) is stream


# ---------------------------------------------------------------- simulator output


RENDERER = AnthropicRenderer()

TRANSCRIPTS = {
    "summary": Transcript(
        answer="Réponse : 42 ✅",
        reasoning=(SimReasoning(kind="summary", text="Étape 1 → étape 2, 日本 🙂"),),
    ),
    "redacted_and_tools": Transcript(
        answer="Calling tools.",
        reasoning=(
            SimReasoning(kind="summary", text="Need tools."),
            SimReasoning(kind="redacted", signature="EmwKAhgBEgy3va3pzix=="),
        ),
        tool_calls=(
            SimToolCall(call_id="toolu_1", name="get_weather", arguments='{"city": "Zürich"}'),
            SimToolCall(call_id="toolu_2", name="get_time", arguments="{}"),
        ),
        finish="tool_calls",
    ),
    "length": Transcript(answer="Cut off mid", finish="length", chunk_chars=3),
}


def sim_request(body: dict[str, Any]) -> SimRequest:
    return SimRequest(
        method="POST",
        path="/anthropic/v1/messages",
        query={},
        headers={},
        body=body,
        profile="anthropic",
        model=body["model"],
        stream=bool(body.get("stream")),
    )


SIM_BODIES = [
    {"model": "claude-sonnet-4-6", "thinking": {"type": "adaptive", "display": "summarized"}},
    {"model": "claude-opus-4-7", "thinking": {"type": "adaptive"}},
    {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 2048}},
    {"model": "claude-sonnet-5"},
    {"model": "claude-sonnet-4-6"},
]


@pytest.mark.parametrize("transcript_name", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("body", SIM_BODIES, ids=lambda body: str(sorted(body.items())))
def test_renderer_output_is_sdk_shaped(transcript_name: str, body: dict[str, Any]) -> None:
    transcript = TRANSCRIPTS[transcript_name]
    request = sim_request({**body, "max_tokens": 9000, "messages": [], "stream": True})
    assert_message(loads_object(RENDERER.body(transcript, request)))
    frames = RENDERER.stream_frames(transcript, request)
    decoded = payloads(b"".join(frame.data for frame in frames))
    assert len(decoded) == len(frames)
    for event_name, payload in decoded:
        assert_stream_payload(event_name, payload)


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 429, 500, 504, 529])
def test_renderer_error_bodies_are_sdk_error_responses(status: int) -> None:
    assert_error(loads_object(RENDERER.error_body(status, "Nope")))


@pytest.mark.parametrize("kind", ["overloaded", "server_error", "rate_limited"])
def test_renderer_stream_error_frames_are_sdk_error_responses(kind: Any) -> None:
    [(event_name, payload)] = payloads(RENDERER.stream_error_frame(kind, "Overloaded"))
    assert event_name == "error"
    assert_error(payload)

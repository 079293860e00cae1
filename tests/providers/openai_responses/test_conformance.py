"""Fixtures, renderer output and request bodies validated against the official SDK types.

This proves the recorded-style fixtures and the simulator speak the real wire shape:
every payload must resolve to the SDK class its ``type`` names, never a fallback.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, get_args

import pydantic
import pytest

from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

from ._helpers import ADAPTER, FIXTURES, context, fixture, sim_request

if TYPE_CHECKING:
    from openai.types.responses import Response


@functools.cache
def sdk() -> SimpleNamespace:
    """The SDK's types and the tables of them, imported when a test first needs them (the
    openai package takes a while to import, which collecting the suite should not pay)."""
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseReasoningItem,
        ResponseStreamEvent,
    )
    from openai.types.responses.response_create_params import (
        ResponseCreateParamsNonStreaming,
        ResponseCreateParamsStreaming,
    )
    from openai.types.shared import ErrorObject

    return SimpleNamespace(
        Response=Response,
        ErrorObject=ErrorObject,
        stream_events=pydantic.TypeAdapter(ResponseStreamEvent),
        stream_classes={
            get_args(cls.model_fields["type"].annotation)[0]: cls
            for cls in get_args(get_args(ResponseStreamEvent)[0])
        },
        item_classes={
            "reasoning": ResponseReasoningItem,
            "message": ResponseOutputMessage,
            "function_call": ResponseFunctionToolCall,
        },
        streaming_params=pydantic.TypeAdapter(ResponseCreateParamsStreaming),
        non_streaming_params=pydantic.TypeAdapter(ResponseCreateParamsNonStreaming),
        function_tool=pydantic.TypeAdapter(FunctionToolParam),
        param_keys=(
            ResponseCreateParamsStreaming.__required_keys__
            | ResponseCreateParamsStreaming.__optional_keys__
        ),
    )


BODIES = sorted(path.name for path in FIXTURES.glob("*.json") if not path.name.startswith("error_"))
ERROR_BODIES = sorted(path.name for path in FIXTURES.glob("error_*.json"))
STREAMS = sorted(path.name for path in FIXTURES.glob("*.sse"))
# Deliberately unknown to the SDK: the adapter must warn about them.
UNKNOWN_TYPES = {"response.future_feature.delta"}


def _payloads(raw: bytes) -> list[dict[str, Any]]:
    payloads = []
    for frame in raw.decode("utf-8").split("\n\n"):
        for line in frame.split("\n"):
            if line.startswith("data: "):
                payloads.append(json.loads(line[len("data: ") :]))
    return payloads


def _check_response(document: dict[str, Any]) -> Response:
    response = sdk().Response.model_validate(document)
    assert type(response) is sdk().Response
    for item, raw_item in zip(response.output, document["output"], strict=True):
        assert type(item) is sdk().item_classes[raw_item["type"]]
    return response


def _check_event(payload: dict[str, Any]) -> None:
    event = sdk().stream_events.validate_python(payload)
    assert type(event) is sdk().stream_classes[payload["type"]]
    item = getattr(event, "item", None)
    if item is not None:
        assert type(item) is sdk().item_classes[payload["item"]["type"]]
    response = getattr(event, "response", None)
    if response is not None:
        assert type(response) is sdk().Response


def test_the_sdk_union_is_what_we_think() -> None:
    assert sdk().stream_classes["response.reasoning_summary_text.delta"].__name__ == (
        "ResponseReasoningSummaryTextDeltaEvent"
    )
    assert len(sdk().stream_classes) > 40


@pytest.mark.parametrize("name", BODIES)
def test_body_fixtures_are_sdk_responses(name: str) -> None:
    _check_response(json.loads(fixture(name)))


@pytest.mark.parametrize("name", ERROR_BODIES)
def test_error_fixtures_are_sdk_error_objects(name: str) -> None:
    document = json.loads(fixture(name))
    assert set(document) == {"error"}
    assert type(sdk().ErrorObject.model_validate(document["error"])) is sdk().ErrorObject


@pytest.mark.parametrize("name", STREAMS)
def test_stream_fixture_events_are_sdk_events(name: str) -> None:
    payloads = _payloads(fixture(name))
    assert payloads
    skipped = set()
    for number, payload in enumerate(payloads):
        if payload["type"] in UNKNOWN_TYPES:
            skipped.add(payload["type"])
            continue
        assert payload["sequence_number"] == number
        _check_event(payload)
    assert skipped == (UNKNOWN_TYPES if name == "unknown_events.sse" else set())


def test_sse_event_names_match_payload_types() -> None:
    for name in STREAMS:
        for frame in fixture(name).decode("utf-8").split("\n\n"):
            if not frame:
                continue
            event_line, data_line = frame.split("\n")
            assert event_line == f"event: {json.loads(data_line[6:])['type']}"


# ---------------------------------------------------------------- simulator output

TRANSCRIPTS: dict[str, Transcript] = {
    "summary": Transcript(
        answer="Take the TGV → Lyon ☕",
        reasoning=(
            SimReasoning(kind="summary", text="**Plan** compare trains 日本"),
            SimReasoning(kind="summary", text="**Check** prices €"),
        ),
    ),
    "raw": Transcript(answer="4", reasoning=(SimReasoning(kind="raw", text="2+2 → 4"),)),
    "tools": Transcript(
        reasoning=(SimReasoning(kind="summary", text="need data", signature="gAAAA_sig"),),
        tool_calls=(
            SimToolCall(call_id="call_1", name="get_weather", arguments='{"city":"Zürich"}'),
        ),
        finish="tool_calls",
    ),
    "refusal": Transcript(answer="I can\u2019t help with that.", finish="refusal"),
    "length": Transcript(reasoning=(SimReasoning(kind="summary", text="long…"),), finish="length"),
    "filtered": Transcript(answer="partial", finish="content_filter"),
}
REQUESTS: dict[str, ModelRequest] = {
    "shown": ModelRequest.simple(
        "gpt-5.5", "hi", reasoning=ReasoningRequest(enabled=True, effort="high")
    ),
    "hidden": ModelRequest.simple("gpt-5.5", "hi"),
    "gpt-4.1": ModelRequest.simple("gpt-4.1", "hi", system="be brief", max_output_tokens=99),
    "tools": ModelRequest(
        model="o4-mini",
        messages=(Message(role="user", content="weather?"),),
        reasoning=ReasoningRequest(enabled=True),
        tools=(ToolSpec(name="get_weather", description="Current weather"),),
    ),
}


@pytest.mark.parametrize("transcript_name", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("request_name", sorted(REQUESTS))
def test_renderer_output_is_sdk_shaped(transcript_name: str, request_name: str) -> None:
    renderer = OpenAIResponsesRenderer()
    transcript = TRANSCRIPTS[transcript_name]
    request = sim_request(REQUESTS[request_name])
    _check_response(json.loads(renderer.body(transcript, request)))
    frames = renderer.stream_frames(transcript, request)
    payloads = _payloads(b"".join(frame.data for frame in frames))
    assert [payload["sequence_number"] for payload in payloads] == list(range(len(payloads)))
    for payload in payloads:
        _check_event(payload)


@pytest.mark.parametrize("kind", ["overloaded", "server_error", "rate_limited"])
def test_renderer_error_frames_are_sdk_events(kind: str) -> None:
    frame = OpenAIResponsesRenderer().stream_error_frame(kind, "try later")  # type: ignore[arg-type]
    (payload,) = _payloads(frame)
    _check_event(payload)


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503, 418])
def test_renderer_error_bodies_are_sdk_error_objects(status: int) -> None:
    document = json.loads(OpenAIResponsesRenderer().error_body(status, "nope"))
    error = sdk().ErrorObject.model_validate(document["error"])
    assert error.message == "nope"


# ---------------------------------------------------------------- request bodies


@pytest.mark.parametrize("request_name", sorted(REQUESTS))
@pytest.mark.parametrize("stream", [True, False])
def test_request_bodies_are_sdk_create_params(request_name: str, stream: bool) -> None:
    base = REQUESTS[request_name]
    request = ModelRequest(
        model=base.model,
        messages=base.messages,
        system=base.system,
        reasoning=base.reasoning,
        max_output_tokens=base.max_output_tokens,
        tools=base.tools,
        stream=stream,
    )
    body = dict(ADAPTER.build_request(request, context(request.model)).body)
    assert set(body) <= sdk().param_keys
    params = sdk().streaming_params if stream else sdk().non_streaming_params
    validated = params.validate_python(body)
    assert validated["stream"] is stream
    for tool in body.get("tools", []):
        assert sdk().function_tool.validate_python(tool) == tool

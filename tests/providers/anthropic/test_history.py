"""A history with reasoning and tool calls → the next Messages request: thinking and
redacted blocks go back unmodified before their ``tool_use``, only to their model."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

from thoughtline.model.accumulator import ModelResponse, ResponseAccumulator
from thoughtline.model.events import StreamEvent
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec

from .helpers import ADAPTER, context, decode_body, decode_stream, fixture

MODEL = "claude-sonnet-4-6"
ORIGIN = {"provider": "anthropic", "model": MODEL}
WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def two_step_history(**origin: Any) -> tuple[Message, ...]:
    """user → assistant (thinking, omitted thinking, redacted, text, tool call) →
    tool result."""
    origin = origin or ORIGIN
    return (
        Message(role="user", content="Wetter in Zürich?"),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(
                    kind="summary",
                    text="Need the weather → tool.",
                    provider_metadata={"signature": "EpMC/sig+1=="},
                    **origin,
                ),
                ReasoningPart(
                    kind="encrypted",
                    text="",
                    provider_metadata={"signature": "Eo0=omitted"},
                    **origin,
                ),
                ReasoningPart(
                    kind="redacted", text="", provider_metadata={"data": "EmwK/opaque"}, **origin
                ),
                TextPart(text="Ich schaue nach."),
                ToolCallPart(
                    tool_call_id="toolu_01",
                    name="get_weather",
                    arguments='{"city":"Zürich"}',
                    **origin,
                ),
            ],
        ),
        Message(
            role="user",
            parts=[ToolResultPart(tool_call_id="toolu_01", name="get_weather", content="12 °C")],
        ),
    )


def next_body(messages: tuple[Message, ...], *, model: str = MODEL) -> dict[str, Any]:
    request = ModelRequest(
        model=model,
        system="Sei präzise.",
        messages=messages,
        tools=(WEATHER,),
        reasoning=ReasoningRequest(enabled=True),
    )
    return dict(ADAPTER.build_request(request, context(model)).body)


def test_two_step_history_makes_the_exact_next_body() -> None:
    assert next_body(two_step_history()) == {
        "model": MODEL,
        "max_tokens": 8192,
        "system": "Sei präzise.",
        "messages": [
            {"role": "user", "content": "Wetter in Zürich?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "Need the weather → tool.",
                        "signature": "EpMC/sig+1==",
                    },
                    {"type": "thinking", "thinking": "", "signature": "Eo0=omitted"},
                    {"type": "redacted_thinking", "data": "EmwK/opaque"},
                    {"type": "text", "text": "Ich schaue nach."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "get_weather",
                        "input": {"city": "Zürich"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "12 °C"}],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "thinking": {"type": "adaptive", "display": "summarized"},
        "stream": True,
    }


def test_a_failed_tool_result_is_marked_as_an_error() -> None:
    history = (
        *two_step_history()[:2],
        Message(
            role="user",
            parts=[
                ToolResultPart(
                    tool_call_id="toolu_01", name="get_weather", content="timed out", is_error=True
                )
            ],
        ),
    )
    assert next_body(history)["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "timed out", "is_error": True}
    ]


@pytest.mark.parametrize(
    "origin",
    [
        {"provider": "anthropic", "model": "claude-opus-4-7"},
        {"provider": "openrouter", "model": MODEL},
        {},
    ],
    ids=["another model", "another endpoint", "unknown origin"],
)
def test_reasoning_from_elsewhere_is_not_sent_but_text_and_calls_stay(
    origin: dict[str, Any],
) -> None:
    history = two_step_history(**origin) if origin else _without_origin(two_step_history())
    assert next_body(history)["messages"][1]["content"] == [
        {"type": "text", "text": "Ich schaue nach."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Zürich"}},
    ]


def _without_origin(history: tuple[Message, ...]) -> tuple[Message, ...]:
    assistant = history[1]
    parts = [
        ReasoningPart(kind=part.kind, text=part.text, provider_metadata=part.provider_metadata)
        if isinstance(part, ReasoningPart)
        else part
        for part in assistant.parts
    ]
    return (history[0], Message(role="assistant", parts=parts), history[2])


@pytest.mark.parametrize("stream", [True, False])
def test_two_step_body_is_sdk_create_params(stream: bool) -> None:
    from anthropic.types import MessageParam, message_create_params

    message_param = pydantic.TypeAdapter(MessageParam)
    request = ModelRequest(
        model=MODEL,
        messages=two_step_history(),
        tools=(WEATHER,),
        reasoning=ReasoningRequest(enabled=True),
        stream=stream,
    )
    body = dict(ADAPTER.build_request(request, context(MODEL)).body)
    params = (
        message_create_params.MessageCreateParamsStreaming
        if stream
        else message_create_params.MessageCreateParamsNonStreaming
    )
    validated = pydantic.TypeAdapter(params).validate_python(body)
    assert set(validated) == set(body)
    # Message iterables are validated lazily: walk each message's blocks right away.
    for message in body["messages"]:
        checked = message_param.validate_python(message)
        content = checked["content"]
        blocks = content if isinstance(content, str) else [dict(block) for block in content]
        assert blocks == message["content"]


def stamped(events: list[StreamEvent], model: str) -> ModelResponse:
    accumulator = ResponseAccumulator(provider="anthropic", model=model)
    accumulator.add_all(events)
    return accumulator.result()


@pytest.mark.parametrize("name", ["tool_use", "omitted", "redacted", "summary"])
@pytest.mark.parametrize("decode", [decode_stream, decode_body], ids=["stream", "body"])
def test_a_recorded_response_goes_back_exactly_as_it_came(name: str, decode: Any) -> None:
    recorded = json.loads(fixture(f"{name}_body.json"))
    model = recorded["model"]
    response = stamped(
        decode(fixture(f"{name}_{'stream.sse' if decode is decode_stream else 'body.json'}")), model
    )
    history = (Message(role="user", content="hi"), response.to_message())
    sent = next_body(history, model=model)["messages"][1]
    # Signatures, redacted data, empty omitted thinking and tool inputs: byte for byte.
    assert sent == {"role": "assistant", "content": recorded["content"]}

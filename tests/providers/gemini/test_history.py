"""A history with thoughts, signatures and function calls → the next Gemini request:
each ``thoughtSignature`` back on the part it came on, only to its model."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from thoughtline.model.accumulator import ResponseAccumulator
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec

from .helpers import ADAPTER, context, fixture_bytes, fixture_json

MODEL = "gemini-3-pro-preview"
ORIGIN = {"provider": "gemini", "model": MODEL}


def two_step_history(**origin: Any) -> tuple[Message, ...]:
    """Two parallel calls; only the first carries a signature, as Gemini sends them."""
    origin = origin or ORIGIN
    signature = {"thought_signature": "CiQB/sig+A=="}
    return (
        Message(role="user", content="Wetter in Zürich und 東京?"),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(kind="summary", text="**Zwei Städte**", **origin),
                ToolCallPart(
                    tool_call_id="call_0",
                    name="get_weather",
                    arguments='{"city":"Zürich"}',
                    provider_metadata=signature,
                    **origin,
                ),
                ReasoningPart(
                    kind="encrypted",
                    text="",
                    provider_metadata={**signature, "attached_to": "function_call"},
                    **origin,
                ),
                ToolCallPart(
                    tool_call_id="fc-2",
                    name="get_weather",
                    arguments='{"city":"東京"}',
                    **origin,
                ),
            ],
        ),
        Message(
            role="user",
            parts=[
                ToolResultPart(tool_call_id="call_0", name="get_weather", content="12 °C"),
                ToolResultPart(
                    tool_call_id="fc-2", name="get_weather", content="no data", is_error=True
                ),
            ],
        ),
    )


def next_body(messages: tuple[Message, ...], *, model: str = MODEL) -> dict[str, Any]:
    request = ModelRequest(
        model=model,
        messages=messages,
        tools=(ToolSpec(name="get_weather"),),
        reasoning=ReasoningRequest(enabled=True),
    )
    return dict(ADAPTER.build_request(request, context(model)).body)


def test_two_step_history_makes_the_exact_next_contents() -> None:
    assert next_body(two_step_history())["contents"] == [
        {"role": "user", "parts": [{"text": "Wetter in Zürich und 東京?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "**Zwei Städte**", "thought": True},
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Zürich"}},
                    "thoughtSignature": "CiQB/sig+A==",
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "東京"}, "id": "fc-2"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "12 °C"}}},
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "id": "fc-2",
                        "response": {"error": "no data"},
                    }
                },
            ],
        },
    ]


@pytest.mark.parametrize(
    "origin",
    [{"provider": "gemini", "model": "gemini-2.5-pro"}, {"provider": "openrouter", "model": MODEL}],
    ids=["another model", "another endpoint"],
)
def test_signatures_from_elsewhere_are_not_sent_but_the_calls_stay(
    origin: dict[str, Any],
) -> None:
    model_turn = next_body(two_step_history(**origin))["contents"][1]
    assert model_turn["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}}},
        {"functionCall": {"name": "get_weather", "args": {"city": "東京"}, "id": "fc-2"}},
    ]


def test_a_signature_on_text_goes_back_on_that_text() -> None:
    turn = Message(
        role="assistant",
        parts=[
            TextPart(text="42."),
            ReasoningPart(
                kind="encrypted",
                text="",
                provider_metadata={"thought_signature": "CiQB/t", "attached_to": "text"},
                **ORIGIN,
            ),
        ],
    )
    contents = next_body((Message(role="user", content="?"), turn))["contents"]
    assert contents[1]["parts"] == [{"text": "42.", "thoughtSignature": "CiQB/t"}]


def test_contents_are_sdk_contents() -> None:
    from google.genai import types

    for content in next_body(two_step_history())["contents"]:
        validated = types.Content.model_validate(content)
        dumped = validated.model_dump(mode="json", by_alias=True, exclude_none=True)
        # The SDK holds a signature as bytes and writes it back URL-safe: compare bytes.
        assert signatures_as_bytes(dumped, base64.urlsafe_b64decode) == signatures_as_bytes(
            content, base64.b64decode
        )


def signatures_as_bytes(content: dict[str, Any], decode: Any) -> dict[str, Any]:
    parts = [
        {**part, "thoughtSignature": decode(part["thoughtSignature"])}
        if "thoughtSignature" in part
        else part
        for part in content["parts"]
    ]
    return {**content, "parts": parts}


@pytest.mark.parametrize("name", ["tool_call", "late_signature", "signature_only", "summary"])
@pytest.mark.parametrize("source", ["body.json", "stream.sse"])
def test_a_recorded_turn_goes_back_exactly_as_it_came(name: str, source: str) -> None:
    recorded = fixture_json(f"{name}_body.json")
    model = recorded["modelVersion"]
    data = fixture_bytes(f"{name}_{source}")
    request = ModelRequest.simple(model, "hi", reasoning=ReasoningRequest(enabled=True))
    events = (
        ADAPTER.decode_body(data, request, context(model))
        if source == "body.json"
        else [
            *(decoder := ADAPTER.new_decoder(request, context(model))).feed(data),
            *decoder.close(),
        ]
    )
    accumulator = ResponseAccumulator(provider="gemini", model=model)
    accumulator.add_all(events)
    history = (*request.messages, accumulator.result().to_message())
    sent = next_body(history, model=model)["contents"][1]
    # Thoughts, text and every signature on the part it came on, byte for byte.
    assert sent == json.loads(json.dumps(recorded["candidates"][0]["content"]))

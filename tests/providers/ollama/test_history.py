"""A history with thinking and tool calls → the next ``/api/chat`` request: ``thinking``
and ``tool_calls`` on the assistant message, results as ``tool`` messages."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.accumulator import ResponseAccumulator
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec

from .helpers import ADAPTER, context, decode_body, decode_stream, fixture_json

MODEL = "qwen3:8b"
ORIGIN = {"provider": "ollama", "model": MODEL}


def two_step_history(**origin: Any) -> tuple[Message, ...]:
    origin = origin or ORIGIN
    return (
        Message(role="user", content="Wetter in Zürich?"),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(kind="raw", text="Tool first → then answer.", **origin),
                TextPart(text="Moment."),
                ToolCallPart(
                    tool_call_id="call_0",
                    name="get_weather",
                    arguments='{"city":"Zürich"}',
                    provider_metadata={"index": 0},
                    **origin,
                ),
            ],
        ),
        Message(
            role="user",
            parts=[ToolResultPart(tool_call_id="call_0", name="get_weather", content="12 °C")],
        ),
    )


def next_messages(messages: tuple[Message, ...], *, model: str = MODEL) -> list[dict[str, Any]]:
    request = ModelRequest(
        model=model,
        system="Kurz.",
        messages=messages,
        tools=(ToolSpec(name="get_weather"),),
        reasoning=ReasoningRequest(enabled=True),
    )
    body = ADAPTER.build_request(request, context(model)).body
    sent: list[dict[str, Any]] = body["messages"]
    return sent


def test_two_step_history_makes_the_exact_next_messages() -> None:
    assert next_messages(two_step_history()) == [
        {"role": "system", "content": "Kurz."},
        {"role": "user", "content": "Wetter in Zürich?"},
        {
            "role": "assistant",
            "content": "Moment.",
            "thinking": "Tool first → then answer.",
            "tool_calls": [
                {"function": {"name": "get_weather", "index": 0, "arguments": {"city": "Zürich"}}}
            ],
        },
        {"role": "tool", "content": "12 °C", "tool_name": "get_weather"},
    ]


def test_thinking_from_another_model_is_not_sent() -> None:
    assistant = next_messages(two_step_history(provider="ollama", model="gpt-oss:20b"))[2]
    assert "thinking" not in assistant
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("decode", [decode_stream, decode_body], ids=["stream", "body"])
@pytest.mark.parametrize("name", ["tool_call", "thinking"])
def test_a_recorded_turn_goes_back_as_it_came(name: str, decode: Any) -> None:
    recorded = fixture_json(f"{name}_body.json")
    source = f"{name}_stream.ndjson" if decode is decode_stream else f"{name}_body.json"
    accumulator = ResponseAccumulator(provider="ollama", model=recorded["model"])
    accumulator.add_all(decode(source))
    history = (Message(role="user", content="hi"), accumulator.result().to_message())
    assert next_messages(history, model=recorded["model"])[2] == recorded["message"]

"""A history with reasoning and tool calls → the next Responses request: reasoning items
with their ``encrypted_content`` right before the calls they led to, only to their model."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

from tests.support import call_context
from thoughtline.model.accumulator import ResponseAccumulator
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.endpoints import EndpointSettings

from ._helpers import ADAPTER, context, decode_body, decode_stream, fixture

MODEL = "gpt-5.5"
ORIGIN = {"provider": "openai", "model": MODEL}
CARRIER = "gAAAAABp/carrier+bytes=="


def two_step_history(**origin: Any) -> tuple[Message, ...]:
    origin = origin or ORIGIN
    item = {"item_id": "rs_1"}
    return (
        Message(role="user", content="Wetter in Zürich?"),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(
                    kind="summary",
                    text="**Wetter** nachsehen",
                    provider_metadata={**item, "summary_index": 0},
                    **origin,
                ),
                ReasoningPart(
                    kind="summary",
                    text="dann antworten",
                    provider_metadata={**item, "summary_index": 1},
                    **origin,
                ),
                ReasoningPart(
                    kind="encrypted",
                    text="",
                    provider_metadata={**item, "encrypted_content": CARRIER},
                    **origin,
                ),
                TextPart(
                    text="Ich schaue nach.",
                    provider_metadata={"item_id": "msg_1", "phase": "commentary"},
                ),
                ToolCallPart(
                    tool_call_id="call_1",
                    name="get_weather",
                    arguments='{"city":"Zürich"}',
                    provider_metadata={"item_id": "fc_1"},
                    **origin,
                ),
            ],
        ),
        Message(
            role="user",
            parts=[ToolResultPart(tool_call_id="call_1", name="get_weather", content="12 °C")],
        ),
    )


def next_input(messages: tuple[Message, ...], *, model: str = MODEL) -> list[dict[str, Any]]:
    request = ModelRequest(
        model=model,
        messages=messages,
        tools=(ToolSpec(name="get_weather"),),
        reasoning=ReasoningRequest(enabled=True),
    )
    body = ADAPTER.build_request(request, context(model)).body
    items: list[dict[str, Any]] = body["input"]
    return items


def test_two_step_history_makes_the_exact_next_input() -> None:
    assert next_input(two_step_history()) == [
        {"role": "user", "content": "Wetter in Zürich?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "**Wetter** nachsehen"},
                {"type": "summary_text", "text": "dann antworten"},
            ],
            "encrypted_content": CARRIER,
        },
        {"role": "assistant", "content": "Ich schaue nach.", "phase": "commentary"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Zürich"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "12 °C"},
    ]


def test_every_input_item_is_an_sdk_input_item() -> None:
    from openai.types.responses import ResponseInputItemParam

    input_item = pydantic.TypeAdapter(ResponseInputItemParam)
    for item in next_input(two_step_history()):
        validated = input_item.validate_python(item)
        # Lists are validated lazily: walking them validates their entries.
        walked = {
            key: value if isinstance(value, str) else [dict(entry) for entry in value]
            for key, value in validated.items()
        }
        assert walked == item


@pytest.mark.parametrize(
    "origin",
    [{"provider": "openai", "model": "gpt-5-mini"}, {"provider": "openrouter", "model": MODEL}],
    ids=["another model", "another endpoint"],
)
def test_reasoning_from_elsewhere_is_not_sent_but_text_and_calls_stay(
    origin: dict[str, Any],
) -> None:
    items = next_input(two_step_history(**origin))
    assert [item.get("type", item.get("role")) for item in items] == [
        "user",
        "assistant",
        "function_call",
        "function_call_output",
    ]


def test_reasoning_without_a_carrier_is_not_sent() -> None:
    # Hidden mode asks for no encrypted_content: with store false, an item without it
    # could only be looked up by id, which fails.
    summary_only = Message(
        role="assistant",
        parts=[
            ReasoningPart(
                kind="summary", text="kurz", provider_metadata={"item_id": "rs_9"}, **ORIGIN
            ),
            TextPart(text="12 °C", provider_metadata={"item_id": "msg_9"}),
        ],
    )
    assert next_input((Message(role="user", content="?"), summary_only))[1:] == [
        {"role": "assistant", "content": "12 °C"}
    ]


def test_raw_reasoning_goes_back_before_its_call_without_a_carrier() -> None:
    """A server that returns raw ``reasoning_text`` and no ``encrypted_content`` (gpt-oss
    behind vLLM, DeepSeek's /responses) takes the item back before the call it led to,
    as its accepted requests show; OpenAI's API never returns raw content."""
    gateway = {"local": EndpointSettings(wire_api="openai-responses", base_url="http://x/v1")}
    origin = {"provider": "local", "model": "openai/gpt-oss-20b"}
    raw_then_call = Message(
        role="assistant",
        parts=[
            ReasoningPart(
                kind="raw",
                text="Need the weather tool.",
                provider_metadata={"item_id": "rs_7"},
                **origin,
            ),
            ToolCallPart(
                tool_call_id="call_7",
                name="get_weather",
                arguments='{"city":"Bern"}',
                provider_metadata={"item_id": "fc_7"},
                **origin,
            ),
        ],
    )
    request = ModelRequest(
        model=origin["model"],
        messages=(Message(role="user", content="Bern?"), raw_then_call),
        tools=(ToolSpec(name="get_weather"),),
        reasoning=ReasoningRequest(enabled=True),
    )
    built = ADAPTER.build_request(request, call_context("local", origin["model"], settings=gateway))
    assert built.body["input"][1:] == [
        {
            "type": "reasoning",
            "id": "rs_7",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "Need the weather tool."}],
        },
        {
            "type": "function_call",
            "call_id": "call_7",
            "name": "get_weather",
            "arguments": '{"city":"Bern"}',
        },
    ]


@pytest.mark.parametrize("source", ["tool_call.sse", "tool_call.json"])
def test_a_recorded_tool_call_goes_back_with_its_carrier_unchanged(source: str) -> None:
    recorded = json.loads(fixture("tool_call.json"))["output"]
    decode = decode_stream if source.endswith(".sse") else decode_body
    accumulator = ResponseAccumulator(provider="openai", model=MODEL)
    accumulator.add_all(decode(fixture(source)))
    history = (Message(role="user", content="hi"), accumulator.result().to_message())
    sent = next_input(history)[1:]
    assert sent[0] == recorded[0]  # id, summary and encrypted_content byte for byte
    assert sent[1:] == [
        {
            "type": "function_call",
            "call_id": item["call_id"],
            "name": item["name"],
            "arguments": item["arguments"],
        }
        for item in recorded[1:]
    ]

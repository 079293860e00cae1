"""A history with reasoning and tool calls → the next Chat Completions request, per
dialect: OpenRouter ``reasoning_details``, DeepSeek ``reasoning_content`` on tool-call
turns, vLLM / llama.cpp ``reasoning_content``, nothing to hosted OpenAI."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

from thoughtline.model.accumulator import ResponseAccumulator
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec

from .helpers import ADAPTER, decode_stream, fixture_context, make_context, read_fixture

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'},
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "12 °C"}


def two_step_history(
    provider: str, model: str, reasoning: tuple[ReasoningPart, ...], text: str = ""
) -> tuple[Message, ...]:
    parts: list[Any] = [
        *reasoning,
        ToolCallPart(
            tool_call_id="call_1",
            name="get_weather",
            arguments='{"city":"Zürich"}',
            provider=provider,
            model=model,
        ),
    ]
    if text:
        parts.insert(len(reasoning), TextPart(text=text))
    return (
        Message(role="user", content="Wetter in Zürich?"),
        Message(role="assistant", parts=parts),
        Message(
            role="user",
            parts=[ToolResultPart(tool_call_id="call_1", name="get_weather", content="12 °C")],
        ),
    )


def raw(text: str, provider: str, model: str) -> ReasoningPart:
    return ReasoningPart(kind="raw", text=text, provider=provider, model=model)


def next_messages(
    endpoint: str, model: str, history: tuple[Message, ...], *, system: str | None = None
) -> list[dict[str, Any]]:
    request = ModelRequest(
        model=model,
        system=system,
        messages=history,
        tools=(ToolSpec(name="get_weather"),),
        reasoning=ReasoningRequest(enabled=True),
    )
    wire_api = "openai-chat" if endpoint == "openai" else None
    body = ADAPTER.build_request(request, make_context(endpoint, model, wire_api=wire_api)).body
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def test_deepseek_gets_reasoning_content_on_the_tool_call_turn() -> None:
    history = two_step_history(
        "deepseek", "deepseek-v4-pro", (raw("Need the weather.", "deepseek", "deepseek-v4-pro"),)
    )
    assert next_messages("deepseek", "deepseek-v4-pro", history, system="Kurz.") == [
        {"role": "system", "content": "Kurz."},
        {"role": "user", "content": "Wetter in Zürich?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Need the weather.",
            "tool_calls": [CALL],
        },
        RESULT,
    ]


def test_deepseek_gets_empty_reasoning_content_when_a_tool_call_turn_had_none() -> None:
    history = two_step_history("deepseek", "deepseek-v4-pro", (), text="Moment.")
    assistant = next_messages("deepseek", "deepseek-v4-pro", history)[1]
    assert assistant == {
        "role": "assistant",
        "content": "Moment.",
        "reasoning_content": "",
        "tool_calls": [CALL],
    }


def test_deepseek_plain_turns_get_no_reasoning_content() -> None:
    origin = {"provider": "deepseek", "model": "deepseek-v4-pro"}
    plain_turn = Message(
        role="assistant",
        parts=[ReasoningPart(kind="raw", text="Easy.", **origin), TextPart(text="4")],
    )
    history = (Message(role="user", content="2+2?"), plain_turn)
    assert next_messages("deepseek", "deepseek-v4-pro", history)[1] == {
        "role": "assistant",
        "content": "4",
    }


def test_deepseek_reasoner_gets_reasoning_content_back_on_a_tool_turn() -> None:
    # deepseek-reasoner names the thinking mode (since V3.1), which calls tools and
    # needs the turn's reasoning back; the R1 model that refused it is gone.
    reasoner = two_step_history(
        "deepseek", "deepseek-reasoner", (raw("Hm.", "deepseek", "deepseek-reasoner"),)
    )
    turn = next_messages("deepseek", "deepseek-reasoner", reasoner)[1]
    assert turn["reasoning_content"] == "Hm."


@pytest.mark.parametrize(
    ("endpoint", "model"), [("vllm", "Qwen/Qwen3-8B"), ("llamacpp", "qwen3-8b-q4_k_m.gguf")]
)
def test_template_servers_get_reasoning_content_back(endpoint: str, model: str) -> None:
    history = two_step_history(endpoint, model, (raw("Tool first.", endpoint, model),))
    assert next_messages(endpoint, model, history)[1:] == [
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "Tool first.",
            "tool_calls": [CALL],
        },
        RESULT,
    ]


def test_hosted_openai_gets_no_reasoning_back() -> None:
    history = two_step_history("openai", "gpt-5.5", (raw("x", "openai", "gpt-5.5"),))
    assert next_messages("openai", "gpt-5.5", history)[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [CALL],
    }


def test_reasoning_from_another_model_is_not_sent() -> None:
    history = two_step_history(
        "deepseek", "deepseek-flash", (raw("secret", "deepseek", "deepseek-flash"),)
    )
    assistant = next_messages("deepseek", "deepseek-v4-pro", history)[1]
    assert assistant["reasoning_content"] == ""  # still required on the turn, but not theirs
    openrouter = two_step_history(
        "openrouter",
        "anthropic/claude-sonnet-4.6",
        (
            ReasoningPart(
                kind="summary",
                text="t",
                provider_metadata={"type": "reasoning.text", "signature": "s", "index": 0},
                provider="openrouter",
                model="anthropic/claude-sonnet-4.6",
            ),
        ),
    )
    assert (
        "reasoning_details" not in next_messages("openrouter", "google/gemini-3-pro", openrouter)[1]
    )


@pytest.mark.parametrize(
    "stem", ["openrouter_gemini_tool_calls", "openrouter_anthropic_summary", "deepseek_tool_calls"]
)
def test_a_recorded_turn_goes_back_with_its_reasoning_unchanged(stem: str) -> None:
    recorded = json.loads(read_fixture(f"{stem}.json"))["choices"][0]["message"]
    request, context = fixture_context(stem)
    accumulator = ResponseAccumulator(provider=context.endpoint.name, model=request.model)
    accumulator.add_all(decode_stream(stem))
    history = (*request.messages, accumulator.result().to_message())
    sent = next_messages(context.endpoint.name, request.model, history)[1]
    if "reasoning_details" in recorded:
        # Signatures and encrypted data byte for byte, every field as it came.
        assert sent["reasoning_details"] == recorded["reasoning_details"]
    else:
        assert sent["reasoning_content"] == recorded["reasoning_content"]
    calls = [
        {key: call[key] for key in ("id", "type", "function")}
        for call in recorded.get("tool_calls", [])
    ]
    assert sent.get("tool_calls", []) == calls
    assert (sent["content"] or "") == recorded["content"]


@pytest.mark.parametrize(
    ("endpoint", "model"),
    [
        ("openrouter", "google/gemini-3-pro"),
        ("deepseek", "deepseek-v4-pro"),
        ("vllm", "Qwen/Qwen3-8B"),
    ],
)
def test_every_message_is_an_sdk_chat_message(endpoint: str, model: str) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    chat_message = pydantic.TypeAdapter(ChatCompletionMessageParam)
    reasoning = ReasoningPart(
        kind="encrypted",
        text="",
        provider_metadata={
            "type": "reasoning.encrypted",
            "data": "CiQB",
            "format": "google-gemini-v1",
            "index": 0,
        },
        provider=endpoint,
        model=model,
    )
    for message in next_messages(endpoint, model, two_step_history(endpoint, model, (reasoning,))):
        validated = chat_message.validate_python(message)
        assert validated["role"] == message["role"]
        assert [dict(call) for call in validated.get("tool_calls", [])] == message.get(
            "tool_calls", []
        )

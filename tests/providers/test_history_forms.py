"""Each wire's history conversion builds a message's wire form once per endpoint and
model and keeps it on the message: a long tool loop converts only its new turns, and a
carrier still goes back only to the provider and model that made it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx2
import orjson
import pytest

from thoughtline.model.parts import ReasoningPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest, ToolSpec
from thoughtline.providers.anthropic._history import anthropic_messages
from thoughtline.providers.base import CallContext
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.gemini._history import gemini_contents
from thoughtline.providers.ollama._history import ollama_messages
from thoughtline.providers.openai_chat._history import chat_messages
from thoughtline.providers.openai_responses._history import responses_input
from thoughtline.providers.registry import wire_for
from thoughtline.wire.jsonio import EncodedItems, dumps_body, dumps_bytes


def history(provider: str, model: str) -> list[Message]:
    thinking = ReasoningPart(
        kind="summary",
        text="Look it up.",
        provider_metadata={"signature": "sig-1", "encrypted_content": "enc-1", "id": "rs_1"},
        provider=provider,
        model=model,
    )
    call = ToolCallPart(tool_call_id="call_1", name="python__lookup", arguments='{"key": "k"}')
    result = ToolResultPart(tool_call_id="call_1", name="python__lookup", content="k=7")
    return [
        Message(role="user", content="Look up k."),
        Message(role="assistant", parts=(thinking, call)),
        Message(role="user", parts=(result,)),
    ]


def test_each_message_is_converted_once_per_endpoint_and_model() -> None:
    messages = history("anthropic", "claude-sonnet-4-6")
    first = anthropic_messages(messages, provider="anthropic", model="claude-sonnet-4-6")
    again = anthropic_messages(
        [*messages, Message(role="user", content="And k2?")],
        provider="anthropic",
        model="claude-sonnet-4-6",
    )
    # The earlier turns are the very objects built before (converted once), so they are
    # sent with the same bytes; only the new turn was converted.
    assert all(a is b for a, b in zip(first, again[:3], strict=True))
    assert again[3] == {"role": "user", "content": "And k2?"}
    assert first[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Look it up.",
        "signature": "sig-1",
    }
    # Another model gets its own form: the carrier is not its to receive.
    other = anthropic_messages(messages, provider="anthropic", model="claude-opus-4-6")
    assert [block["type"] for block in other[1]["content"]] == ["tool_use"]
    # And the first model's form is unchanged by that.
    assert anthropic_messages(messages, provider="anthropic", model="claude-sonnet-4-6") == first


# Each wire's history conversion, as (messages, provider, model) -> its items.
CONVERSIONS: dict[str, Callable[[list[Message], str, str], Any]] = {
    "anthropic": lambda m, p, mo: anthropic_messages(m, provider=p, model=mo),
    "gemini": lambda m, p, mo: gemini_contents(m, provider=p, model=mo),
    "ollama": lambda m, p, mo: ollama_messages(m, provider=p, model=mo),
    "openai": lambda m, p, mo: responses_input(m, provider=p, model=mo),
    "openai-chat": lambda m, p, mo: chat_messages(m, provider=p, model=mo, echo="content"),
}


def test_every_wire_gives_the_same_bytes_from_its_kept_forms() -> None:
    for provider, convert in CONVERSIONS.items():
        messages = history(provider, "m1")
        fresh = orjson.dumps(convert(history(provider, "m1"), provider, "m1"))
        assert orjson.dumps(convert(messages, provider, "m1")) == fresh, provider
        assert orjson.dumps(convert(messages, provider, "m1")) == fresh, provider
        assert b"python__lookup" in fresh, provider
        assert b"k=7" in fresh, provider


def test_a_message_sent_again_is_not_encoded_again() -> None:
    # Each kept item's JSON is made once: the next step's body copies it.
    messages = history("anthropic", "claude-sonnet-4-6")
    first = anthropic_messages(messages, provider="anthropic", model="claude-sonnet-4-6")
    again = anthropic_messages(
        [*messages, Message(role="user", content="And k2?")],
        provider="anthropic",
        model="claude-sonnet-4-6",
    )
    assert isinstance(first, EncodedItems) and isinstance(again, EncodedItems)
    assert all(a is b for a, b in zip(first.encoded, again.encoded[:3], strict=True))
    assert len(again.encoded) == 4


def test_every_wire_body_from_kept_json_is_the_plain_encoding() -> None:
    for provider, convert in CONVERSIONS.items():
        messages = history(provider, "m1")
        convert(messages, provider, "m1")  # kept now: the next body copies their JSON
        body = {"model": "m1", "items": convert(messages, provider, "m1"), "stream": True}
        plain = {**body, "items": list(convert(history(provider, "m1"), provider, "m1"))}
        assert dumps_body(body) == dumps_bytes(plain), provider


LOOKUP = ToolSpec(
    name="python__lookup",
    description="Look a key up.",
    parameters={"type": "object", "properties": {"key": {"type": "string"}}},
)


ENVIRON = {
    "ANTHROPIC_API_KEY": "sk-test-0000",
    "OPENAI_API_KEY": "sk-test-0000",
    "GEMINI_API_KEY": "test-0000",
    "DEEPSEEK_API_KEY": "sk-test-0000",
}


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("anthropic", "claude-sonnet-4-6"),
        ("openai", "gpt-5"),
        ("gemini", "gemini-2.5-pro"),
        ("deepseek", "deepseek-chat"),
        ("ollama", "qwen3:8b"),
    ],
)
async def test_a_loops_request_goes_out_with_the_bytes_of_its_whole_body(
    name: str, model: str
) -> None:
    # Through the client, a system prompt and three steps of one history: each request's
    # bytes are the plain encoding of its whole body (the earlier turns' JSON copied).
    sent: list[bytes] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(400, json={"error": {"message": "no"}})

    endpoint = EndpointRegistry(environ=ENVIRON).resolve(name)
    wire = wire_for(endpoint.wire_api)
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(refuse))
    messages = history(name, model)
    async with ProviderClient(endpoint, http_client=http) as client:
        context = CallContext(endpoint=endpoint, capability=client.capabilities.lookup(name, model))
        for step in range(3):
            request = ModelRequest(
                model=model, system="Be brief.", messages=tuple(messages), tools=(LOOKUP,)
            )
            await client.complete(request)
            fresh = [Message(role=m.role, parts=m.parts) for m in messages]
            body = wire.build_request(replace(request, messages=tuple(fresh)), context).body
            assert sent[-1] == dumps_bytes(body), (name, step)
            messages += [Message(role="user", content=f"And k{step}?")]
        kept = wire.build_request(request, context).body
    assert any(
        isinstance(value, EncodedItems) and len(value.encoded) == len(value) > 0
        for value in kept.values()
    ), name

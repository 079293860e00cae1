"""Each wire's history conversion builds a message's wire form once per endpoint and
model and keeps it on the message: a long tool loop converts only its new turns, and a
carrier still goes back only to the provider and model that made it."""

from __future__ import annotations

import orjson

from thoughtline.model.parts import ReasoningPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message
from thoughtline.providers.anthropic._history import anthropic_messages
from thoughtline.providers.gemini._history import gemini_contents
from thoughtline.providers.ollama._history import ollama_messages
from thoughtline.providers.openai_chat._history import chat_messages
from thoughtline.providers.openai_responses._history import responses_input


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


def test_every_wire_gives_the_same_bytes_from_its_kept_forms() -> None:
    conversions = {
        "anthropic": lambda m, p, mo: anthropic_messages(m, provider=p, model=mo),
        "gemini": lambda m, p, mo: gemini_contents(m, provider=p, model=mo),
        "ollama": lambda m, p, mo: ollama_messages(m, provider=p, model=mo),
        "openai": lambda m, p, mo: responses_input(m, provider=p, model=mo),
        "openai-chat": lambda m, p, mo: chat_messages(m, provider=p, model=mo, echo="content"),
    }
    for provider, convert in conversions.items():
        messages = history(provider, "m1")
        fresh = orjson.dumps(convert(history(provider, "m1"), provider, "m1"))
        assert orjson.dumps(convert(messages, provider, "m1")) == fresh, provider
        assert orjson.dumps(convert(messages, provider, "m1")) == fresh, provider
        assert b"python__lookup" in fresh, provider
        assert b"k=7" in fresh, provider

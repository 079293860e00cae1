"""Exact Ollama /api/chat request bodies for every reasoning request."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import EndpointRegistry

from .helpers import ADAPTER, context, request

MESSAGES = [{"role": "user", "content": "How do I get from Paris to Lyon?"}]


def body_for(**kwargs: Any) -> dict[str, Any]:
    return dict(ADAPTER.build_request(request(**kwargs), context()).body)


def test_url_and_headers() -> None:
    wire = ADAPTER.build_request(request(), context())
    assert wire.url == "http://127.0.0.1:11434/api/chat"
    assert dict(wire.headers) == {}
    assert wire.warnings == ()


def test_ollama_host_without_scheme() -> None:
    endpoint = EndpointRegistry(environ={"OLLAMA_HOST": "10.0.0.5:11434"}).resolve("ollama")
    ctx = CallContext(endpoint=endpoint, capability=context().capability)
    assert ADAPTER.build_request(request(), ctx).url == "http://10.0.0.5:11434/api/chat"


def test_hidden_sends_think_false() -> None:
    assert body_for() == {"model": "qwen3:8b", "messages": MESSAGES, "stream": True, "think": False}


def test_enabled_sends_think_true() -> None:
    assert body_for(enabled=True, stream=False) == {
        "model": "qwen3:8b",
        "messages": MESSAGES,
        "stream": False,
        "think": True,
    }


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_enabled_with_effort_sends_the_level(effort: str) -> None:
    wire = ADAPTER.build_request(request(enabled=True, effort=effort), context())
    assert wire.body == {"model": "qwen3:8b", "messages": MESSAGES, "stream": True, "think": effort}
    assert wire.warnings == ()


@pytest.mark.parametrize("effort", ["none", "minimal", "xhigh", "max"])
def test_unsupported_effort_sends_think_true_and_warns(effort: str) -> None:
    wire = ADAPTER.build_request(request(enabled=True, effort=effort), context())
    assert wire.body == {"model": "qwen3:8b", "messages": MESSAGES, "stream": True, "think": True}
    assert len(wire.warnings) == 1
    warning = wire.warnings[0]
    assert warning.code == "EFFORT_UNSUPPORTED"
    assert repr(effort) in warning.message
    assert "qwen3:8b" in warning.message
    assert "Sent think: true instead" in warning.message


def test_hidden_with_effort_sends_nothing_and_warns() -> None:
    wire = ADAPTER.build_request(request(effort="low"), context())
    assert wire.body == {"model": "qwen3:8b", "messages": MESSAGES, "stream": True}
    assert [warning.code for warning in wire.warnings] == ["EFFORT_UNSUPPORTED"]
    assert "reasoning is hidden" in wire.warnings[0].message


def test_model_without_thinking() -> None:
    capability = ModelCapability(
        family="ollama-plain",
        label="Ollama models without thinking",
        endpoints=("ollama",),
        match=("llama3",),
        thinking_control="none",
        efforts=(),
        returns=(),
        reasoning_by_default=False,
    )
    ctx = CallContext(endpoint=context().endpoint, capability=capability)
    wire = ADAPTER.build_request(request("llama3.2", enabled=True), ctx)
    assert wire.body == {"model": "llama3.2", "messages": MESSAGES, "stream": True}
    assert wire.warnings == (
        StreamWarning(
            code="REASONING_UNSUPPORTED",
            message="llama3.2 (Ollama models without thinking) does not think; no think "
            "parameter was sent.",
        ),
    )


def test_full_request() -> None:
    model_request = ModelRequest(
        model="gpt-oss:20b",
        system="You are a travel agent. Réponds en français.",
        messages=(
            Message(role="user", content="Weather in Zürich?"),
            Message(role="assistant", content="Which day?"),
            Message(role="user", content="Tomorrow."),
        ),
        reasoning=ReasoningRequest(enabled=True, effort="high"),
        max_output_tokens=512,
        tools=(
            ToolSpec(
                name="get_weather",
                description="Weather for a city",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            ),
        ),
    )
    wire = ADAPTER.build_request(model_request, context("gpt-oss:20b"))
    assert wire.body == {
        "model": "gpt-oss:20b",
        "messages": [
            {"role": "system", "content": "You are a travel agent. Réponds en français."},
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "Which day?"},
            {"role": "user", "content": "Tomorrow."},
        ],
        "stream": True,
        "think": "high",
        "options": {"num_predict": 512},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
    }


def test_generation_settings_are_model_options() -> None:
    model_request = ModelRequest.simple("qwen3:8b", "Hi", max_output_tokens=99, temperature=0)
    body = ADAPTER.build_request(model_request, context()).body
    assert body["options"] == {"num_predict": 99, "temperature": 0}

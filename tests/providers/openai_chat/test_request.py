"""Exact request bodies per dialect, reasoning request and model family."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings

from .helpers import ADAPTER, make_context

HIDDEN = ReasoningRequest()
ENABLED = ReasoningRequest(enabled=True)


def body_for(
    endpoint: str,
    model: str,
    reasoning: ReasoningRequest,
    *,
    stream: bool = True,
    max_output_tokens: int | None = None,
    context: CallContext | None = None,
) -> tuple[dict[str, Any], tuple[StreamWarning, ...]]:
    request = ModelRequest.simple(
        model,
        "Why is the sky blue?",
        system="Be brief.",
        reasoning=reasoning,
        max_output_tokens=max_output_tokens,
        stream=stream,
    )
    wire_api = "openai-chat" if endpoint == "openai" else None
    ctx = context or make_context(endpoint, model, wire_api=wire_api)
    wire = ADAPTER.build_request(request, ctx)
    return dict(wire.body), wire.warnings


def base(model: str, *, stream: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Why is the sky blue?"},
        ],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def test_url_and_protocol_headers_only() -> None:
    request = ModelRequest.simple("deepseek-reasoner", "hi")
    context = make_context("deepseek", "deepseek-reasoner")
    wire = ADAPTER.build_request(request, context)
    assert wire.url == "https://api.deepseek.com/chat/completions"
    assert wire.method == "POST"
    assert dict(wire.headers) == {
        "content-type": "application/json",
        "accept": "text/event-stream",
    }


def test_openrouter_url() -> None:
    wire = ADAPTER.build_request(
        ModelRequest.simple("openai/gpt-5.5", "hi", stream=False),
        make_context("openrouter", "openai/gpt-5.5"),
    )
    assert wire.url == "https://openrouter.ai/api/v1/chat/completions"
    assert dict(wire.headers) == {"content-type": "application/json"}


# ---------------------------------------------------------------- openai dialect


def test_openai_hidden_sends_no_reasoning() -> None:
    assert body_for("openai", "gpt-5.5", HIDDEN) == (base("gpt-5.5"), ())


def test_openai_enabled_requests_nothing_more_and_does_not_warn() -> None:
    # Chat Completions never returns reasoning text; the runtime reports "unsupported".
    assert body_for("openai", "gpt-5.5", ENABLED) == (base("gpt-5.5"), ())


@pytest.mark.parametrize("enabled", [False, True])
def test_openai_effort_is_top_level_reasoning_effort(enabled: bool) -> None:
    reasoning = ReasoningRequest(enabled=enabled, effort="xhigh")
    assert body_for("openai", "gpt-5.5", reasoning) == (
        {**base("gpt-5.5"), "reasoning_effort": "xhigh"},
        (),
    )


def test_openai_gpt5_minimal_effort_and_max_completion_tokens() -> None:
    reasoning = ReasoningRequest(enabled=True, effort="minimal")
    body, warnings = body_for(
        "openai", "gpt-5-mini", reasoning, stream=False, max_output_tokens=900
    )
    assert body == {
        **base("gpt-5-mini", stream=False),
        "max_completion_tokens": 900,
        "reasoning_effort": "minimal",
    }
    assert warnings == ()


def test_openai_unsupported_effort_warns_and_is_not_sent() -> None:
    body, warnings = body_for(
        "openai", "gpt-5-mini", ReasoningRequest(enabled=True, effort="xhigh")
    )
    assert body == base("gpt-5-mini")
    assert warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'xhigh' is not accepted by model 'gpt-5-mini' (GPT-5 (minimal..high); "
            "accepts: minimal, low, medium, high). No effort was sent, so the provider's "
            "default effort applies.",
        ),
    )


def test_openai_o_series_effort() -> None:
    body, warnings = body_for("openai", "o3", ReasoningRequest(effort="high"))
    assert body == {**base("o3"), "reasoning_effort": "high"}
    assert warnings == ()


def test_openai_non_reasoning_model_warns_reasoning_unsupported() -> None:
    body, warnings = body_for("openai", "gpt-4.1", ReasoningRequest(enabled=True, effort="low"))
    assert body == base("gpt-4.1")
    assert [warning.code for warning in warnings] == ["REASONING_UNSUPPORTED", "EFFORT_UNSUPPORTED"]
    assert warnings[0].message == (
        "Model 'gpt-4.1' (GPT-4.1 and older GPT-4 (no reasoning)) does not reason; no reasoning "
        "was requested."
    )


def test_openai_non_reasoning_model_hidden_is_silent() -> None:
    assert body_for("openai", "gpt-4.1", HIDDEN) == (base("gpt-4.1"), ())


# ---------------------------------------------------------------- openrouter


MODEL = "anthropic/claude-sonnet-4.6"


def test_openrouter_hidden_excludes() -> None:
    assert body_for("openrouter", MODEL, HIDDEN) == (
        {**base(MODEL), "reasoning": {"exclude": True}},
        (),
    )


def test_openrouter_hidden_with_effort_keeps_effort() -> None:
    assert body_for("openrouter", MODEL, ReasoningRequest(effort="low")) == (
        {**base(MODEL), "reasoning": {"exclude": True, "effort": "low"}},
        (),
    )


def test_openrouter_enabled() -> None:
    assert body_for("openrouter", MODEL, ENABLED) == (
        {**base(MODEL), "reasoning": {"enabled": True}},
        (),
    )


@pytest.mark.parametrize("effort", ["none", "minimal", "low", "medium", "high", "xhigh", "max"])
def test_openrouter_effort_implies_enabled(effort: str) -> None:
    reasoning = ReasoningRequest(enabled=True, effort=effort)  # type: ignore[arg-type]
    assert body_for("openrouter", MODEL, reasoning) == (
        {**base(MODEL), "reasoning": {"effort": effort}},
        (),
    )


def test_openrouter_budget_tokens_become_max_tokens() -> None:
    reasoning = ReasoningRequest(enabled=True, budget_tokens=2000)
    body, warnings = body_for("openrouter", MODEL, reasoning, max_output_tokens=4000)
    assert body == {**base(MODEL), "max_tokens": 4000, "reasoning": {"max_tokens": 2000}}
    assert warnings == ()


def test_openrouter_effort_wins_over_budget() -> None:
    reasoning = ReasoningRequest(enabled=True, effort="high", budget_tokens=2000)
    assert body_for("openrouter", MODEL, reasoning)[0]["reasoning"] == {"effort": "high"}


# ---------------------------------------------------------------- raw-reasoning


def test_deepseek_enabled_with_effort() -> None:
    reasoning = ReasoningRequest(enabled=True, effort="high")
    assert body_for("deepseek", "deepseek-reasoner", reasoning, max_output_tokens=800) == (
        {
            **base("deepseek-reasoner"),
            "max_tokens": 800,
            "thinking": {"type": "enabled"},
            "reasoning_effort": "high",
        },
        (),
    )


def test_deepseek_enabled_default_effort() -> None:
    assert body_for("deepseek", "deepseek-chat", ENABLED) == (
        {**base("deepseek-chat"), "thinking": {"type": "enabled"}},
        (),
    )


def test_deepseek_reasoner_hidden_sends_nothing_reasoning_related() -> None:
    # deepseek-reasoner always thinks: there is no switch to send.
    assert body_for("deepseek", "deepseek-reasoner", HIDDEN) == (base("deepseek-reasoner"), ())


def test_deepseek_chat_hidden_switches_thinking_off() -> None:
    assert body_for("deepseek", "deepseek-chat", HIDDEN) == (
        {**base("deepseek-chat"), "thinking": {"type": "disabled"}},
        (),
    )


def test_deepseek_unsupported_effort() -> None:
    body, warnings = body_for(
        "deepseek", "deepseek-reasoner", ReasoningRequest(enabled=True, effort="max")
    )
    assert body == {**base("deepseek-reasoner"), "thinking": {"type": "enabled"}}
    assert [warning.code for warning in warnings] == ["EFFORT_UNSUPPORTED"]
    assert "'max'" in warnings[0].message and "'deepseek-reasoner'" in warnings[0].message


@pytest.mark.parametrize("endpoint", ["vllm", "llamacpp"])
def test_toggle_servers_enabled(endpoint: str) -> None:
    assert body_for(endpoint, "Qwen/Qwen3-8B", ENABLED) == (
        {**base("Qwen/Qwen3-8B"), "chat_template_kwargs": {"enable_thinking": True}},
        (),
    )


def test_toggle_server_enabled_with_effort() -> None:
    reasoning = ReasoningRequest(enabled=True, effort="low")
    assert body_for("vllm", "openai/gpt-oss-20b", reasoning) == (
        {
            **base("openai/gpt-oss-20b"),
            "chat_template_kwargs": {"enable_thinking": True},
            "reasoning_effort": "low",
        },
        (),
    )


@pytest.mark.parametrize("endpoint", ["vllm", "llamacpp"])
def test_toggle_servers_hidden(endpoint: str) -> None:
    assert body_for(endpoint, "Qwen/Qwen3-8B", HIDDEN) == (
        {**base("Qwen/Qwen3-8B"), "chat_template_kwargs": {"enable_thinking": False}},
        (),
    )


def test_toggle_server_unsupported_effort() -> None:
    body, warnings = body_for("llamacpp", "qwen3", ReasoningRequest(enabled=True, effort="xhigh"))
    assert body == {**base("qwen3"), "chat_template_kwargs": {"enable_thinking": True}}
    assert [warning.code for warning in warnings] == ["EFFORT_UNSUPPORTED"]


def test_user_defined_endpoint_uses_its_base_url_and_raw_dialect() -> None:
    registry = EndpointRegistry(
        {
            "my-vllm": EndpointSettings(
                base_url="http://127.0.0.1:9000/v1/", reasoning_field="reasoning"
            )
        },
        environ={},
    )
    endpoint = registry.resolve("my-vllm")
    context = CallContext(
        endpoint=endpoint, capability=builtin_capabilities().lookup("my-vllm", "m")
    )
    request = ModelRequest.simple(
        "m", "Why is the sky blue?", system="Be brief.", reasoning=ENABLED
    )
    wire = ADAPTER.build_request(request, context)
    assert wire.url == "http://127.0.0.1:9000/v1/chat/completions"
    assert dict(wire.body) == {**base("m"), "chat_template_kwargs": {"enable_thinking": True}}


# ---------------------------------------------------------------- messages and tools


def test_multi_turn_messages_and_tools() -> None:
    request = ModelRequest(
        model="gpt-5.5",
        messages=(
            Message(role="user", content="Weather in Zürich?"),
            Message(role="assistant", content="Which unit?"),
            Message(role="user", content="Celsius"),
        ),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Current weather for a city.",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}},
            ),
            ToolSpec(name="noop"),
        ),
        stream=False,
    )
    wire = ADAPTER.build_request(request, make_context("openai", "gpt-5.5", wire_api="openai-chat"))
    assert dict(wire.body) == {
        "model": "gpt-5.5",
        "messages": [
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "Which unit?"},
            {"role": "user", "content": "Celsius"},
        ],
        "stream": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            },
            {
                "type": "function",
                "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}},
            },
        ],
    }


def generation_body(
    endpoint: str, model: str, temperature: float
) -> tuple[dict[str, Any], tuple[StreamWarning, ...]]:
    request = ModelRequest.simple(model, "Why?", max_output_tokens=64, temperature=temperature)
    wire_api = "openai-chat" if endpoint == "openai" else None
    wire = ADAPTER.build_request(request, make_context(endpoint, model, wire_api=wire_api))
    return dict(wire.body), wire.warnings


@pytest.mark.parametrize(
    ("endpoint", "model", "key"),
    [
        ("openai", "gpt-4.1", "max_completion_tokens"),
        ("openrouter", "anthropic/claude-sonnet-4.6", "max_tokens"),
        ("deepseek", "deepseek-chat", "max_tokens"),
        ("vllm", "qwen3", "max_tokens"),
    ],
)
def test_generation_settings_in_each_dialects_shape(endpoint: str, model: str, key: str) -> None:
    body, warnings = generation_body(endpoint, model, 0.7)
    assert body[key] == 64
    assert body["temperature"] == 0.7
    assert warnings == ()


def test_openai_reasoning_models_get_no_temperature_and_a_warning() -> None:
    body, warnings = generation_body("openai", "gpt-5-mini", 0.7)
    assert body["max_completion_tokens"] == 64
    assert "temperature" not in body
    assert [warning.code for warning in warnings] == ["TEMPERATURE_UNSUPPORTED"]

"""Exact request bodies for every reasoning request and model family."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings

from .helpers import ADAPTER, context

MESSAGES = [{"role": "user", "content": "Wie groß ist π?"}]


def build(
    model: str,
    *,
    enabled: bool = False,
    effort: Effort = "provider-default",
    budget_tokens: int | None = None,
    max_output_tokens: int | None = None,
    stream: bool = True,
) -> tuple[dict[str, Any], tuple[StreamWarning, ...]]:
    model_request = ModelRequest.simple(
        model,
        "Wie groß ist π?",
        reasoning=ReasoningRequest(enabled=enabled, effort=effort, budget_tokens=budget_tokens),
        max_output_tokens=max_output_tokens,
        stream=stream,
    )
    wire = ADAPTER.build_request(model_request, context(model))
    return dict(wire.body), wire.warnings


def test_url_and_protocol_headers_without_credentials() -> None:
    wire = ADAPTER.build_request(
        ModelRequest.simple("claude-sonnet-4-6", "hi"), context("claude-sonnet-4-6")
    )
    assert wire.url == "https://api.anthropic.com/v1/messages"
    assert wire.method == "POST"
    assert dict(wire.headers) == {
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert "sk-ant-test-secret" not in repr(wire)


def test_base_url_override_is_used() -> None:
    registry = EndpointRegistry(environ={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999/anthropic/"})
    ctx = CallContext(
        endpoint=registry.resolve("anthropic"),
        capability=builtin_capabilities().lookup("anthropic", "claude-sonnet-4-6"),
    )
    wire = ADAPTER.build_request(ModelRequest.simple("claude-sonnet-4-6", "hi"), ctx)
    assert wire.url == "http://127.0.0.1:9999/anthropic/v1/messages"


# ---------------------------------------------------------------- hidden mode


@pytest.mark.parametrize(
    "model",
    [
        "claude-3-7-sonnet-20250219",
        "claude-haiku-4-5-20251001",
        "claude-sonnet-4-5",
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-opus-5",
    ],
)
def test_hidden_requests_nothing_on_every_family(model: str) -> None:
    body, warnings = build(model)
    assert body == {"model": model, "max_tokens": 8192, "messages": MESSAGES, "stream": True}
    assert warnings == ()


def test_hidden_with_effort_on_adaptive_family_sends_effort_only() -> None:
    body, warnings = build("claude-opus-4-7", effort="low")
    assert body == {
        "model": "claude-opus-4-7",
        "max_tokens": 8192,
        "messages": MESSAGES,
        "output_config": {"effort": "low"},
        "stream": True,
    }
    assert warnings == ()


def test_hidden_with_effort_on_budget_family_warns_and_sends_nothing() -> None:
    body, warnings = build("claude-sonnet-4-5", effort="high")
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "messages": MESSAGES,
        "stream": True,
    }
    assert warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'high' only applies with thinking on claude-sonnet-4-5 "
            "(Claude Haiku/Sonnet/Opus 4.5 and older), which sets effort through a thinking "
            "budget; thinking is not requested, so no effort was sent.",
        ),
    )


# ---------------------------------------------------------------- adaptive families


@pytest.mark.parametrize(
    "model", ["claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-8", "claude-sonnet-5"]
)
def test_adaptive_enabled_asks_for_summarized_display(model: str) -> None:
    body, warnings = build(model, enabled=True)
    assert body == {
        "model": model,
        "max_tokens": 8192,
        "messages": MESSAGES,
        "thinking": {"type": "adaptive", "display": "summarized"},
        "stream": True,
    }
    assert warnings == ()


@pytest.mark.parametrize(
    ("model", "effort"),
    [
        ("claude-sonnet-4-6", "low"),
        ("claude-sonnet-4-6", "medium"),
        ("claude-sonnet-4-6", "high"),
        ("claude-sonnet-4-6", "max"),
        ("claude-opus-4-7", "xhigh"),
        ("claude-opus-5", "max"),
    ],
)
def test_adaptive_enabled_with_effort_uses_output_config(model: str, effort: Effort) -> None:
    body, warnings = build(model, enabled=True, effort=effort, max_output_tokens=2000)
    assert body == {
        "model": model,
        "max_tokens": 2000,
        "messages": MESSAGES,
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": effort},
        "stream": True,
    }
    assert warnings == ()


def test_adaptive_unsupported_effort_warns_and_is_not_sent() -> None:
    body, warnings = build("claude-sonnet-4-6", enabled=True, effort="xhigh")
    assert body == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8192,
        "messages": MESSAGES,
        "thinking": {"type": "adaptive", "display": "summarized"},
        "stream": True,
    }
    assert warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'xhigh' is not accepted by claude-sonnet-4-6 (Claude Sonnet 4.6; "
            "accepted: low, medium, high, max); sent no effort (the model's default) instead.",
        ),
    )


@pytest.mark.parametrize("effort", ["none", "minimal"])
def test_efforts_no_claude_accepts_warn_in_hidden_mode_too(effort: Effort) -> None:
    body, warnings = build("claude-opus-4-8", effort=effort)
    assert "output_config" not in body
    assert "thinking" not in body
    assert [warning.code for warning in warnings] == ["EFFORT_UNSUPPORTED"]
    assert f"Effort {effort!r}" in warnings[0].message
    assert "claude-opus-4-8" in warnings[0].message


def test_adaptive_ignores_a_token_budget_with_a_warning() -> None:
    body, warnings = build("claude-opus-4-7", enabled=True, budget_tokens=5000)
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["max_tokens"] == 8192
    assert warnings == (
        StreamWarning(
            code="BUDGET_UNSUPPORTED",
            message="budget_tokens=5000 does not apply to claude-opus-4-7 (Claude Opus 4.7, "
            "Opus 4.8): it uses adaptive thinking, controlled by effort. The budget was not "
            "sent.",
        ),
    )


# ---------------------------------------------------------------- budget families


@pytest.mark.parametrize(
    ("effort", "budget"),
    [
        ("provider-default", 4096),
        ("low", 1024),
        ("medium", 4096),
        ("high", 8192),
        ("xhigh", 16384),
        ("max", 32768),
    ],
)
def test_budget_enabled_derives_budget_from_effort(effort: Effort, budget: int) -> None:
    body, warnings = build("claude-sonnet-4-5", enabled=True, effort=effort)
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192 + budget,
        "messages": MESSAGES,
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "stream": True,
    }
    assert warnings == ()


def test_budget_explicit_tokens_win_and_max_tokens_exceeds_budget() -> None:
    body, warnings = build(
        "claude-3-7-sonnet-20250219",
        enabled=True,
        effort="max",
        budget_tokens=2000,
        max_output_tokens=1000,
    )
    assert body == {
        "model": "claude-3-7-sonnet-20250219",
        "max_tokens": 3000,
        "messages": MESSAGES,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "stream": True,
    }
    assert body["thinking"]["budget_tokens"] < body["max_tokens"]
    assert warnings == ()


def test_budget_below_minimum_is_raised_with_a_warning() -> None:
    body, warnings = build("claude-haiku-4-5", enabled=True, budget_tokens=500)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 8192 + 1024
    assert warnings == (
        StreamWarning(
            code="BUDGET_ADJUSTED",
            message="budget_tokens=500 is below Anthropic's minimum for claude-haiku-4-5; "
            "sent budget_tokens=1024 instead.",
        ),
    )


def test_max_tokens_stays_within_the_models_max_output_and_the_budget_shrinks_to_fit() -> None:
    # claude-opus-4-1 writes 32,000 tokens at most: 8,192 + effort max's 32,768 would be
    # 40,960, which Anthropic refuses.
    body, warnings = build("claude-opus-4-1", enabled=True, effort="max")
    assert body["max_tokens"] == 32_000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16_000}
    assert warnings == (
        StreamWarning(
            code="BUDGET_ADJUSTED",
            message="budget_tokens=32768 does not fit max_tokens=32,000 (the budget's output "
            "cap, or the model's max output); sent budget_tokens=16000 instead.",
        ),
    )
    # Thinking off, the answer's allowance alone is within it and sent as is.
    assert build("claude-opus-4-1", max_output_tokens=32_000)[0]["max_tokens"] == 32_000


def test_budget_unsupported_effort_falls_back_to_default_budget() -> None:
    body, warnings = build("claude-opus-4-5", enabled=True, effort="minimal")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 8192 + 4096
    assert "output_config" not in body
    assert warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'minimal' is not accepted by claude-opus-4-5 (Claude Haiku/Sonnet/"
            "Opus 4.5 and older; accepted: low, medium, high, xhigh, max); sent the default "
            "thinking budget (4096 tokens) instead.",
        ),
    )


# ---------------------------------------------------------------- other shapes


def test_system_tools_and_non_streaming_body() -> None:
    model_request = ModelRequest(
        model="claude-opus-4-8",
        system="Du bist ein Prüfer.",
        messages=(
            Message(role="user", content="Wetter in Zürich?"),
            Message(role="assistant", content="Einen Moment."),
            Message(role="user", content="Bitte mit °C."),
        ),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Current weather for a city",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            ),
            ToolSpec(name="get_time"),
        ),
        reasoning=ReasoningRequest(enabled=True, effort="high"),
        max_output_tokens=1234,
        stream=False,
    )
    wire = ADAPTER.build_request(model_request, context("claude-opus-4-8"))
    assert wire.body == {
        "model": "claude-opus-4-8",
        "max_tokens": 1234,
        "system": "Du bist ein Prüfer.",
        "messages": [
            {"role": "user", "content": "Wetter in Zürich?"},
            {"role": "assistant", "content": "Einen Moment."},
            {"role": "user", "content": "Bitte mit °C."},
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
            {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
        ],
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "high"},
    }


def test_unknown_claude_model_uses_the_fallback_family() -> None:
    body, warnings = build("claude-future-9", enabled=True, effort="xhigh")
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "xhigh"}
    assert warnings == ()


def test_user_defined_endpoint_is_shaped_by_the_claude_table() -> None:
    # A proxy speaking this wire API gets the generic "toggle" family from the table;
    # the adapter shapes by the built-in Claude family instead.
    registry = EndpointRegistry(
        {"my-proxy": EndpointSettings(wire_api="anthropic-messages", base_url="http://proxy")},
        environ={},
    )
    capability = builtin_capabilities().lookup("my-proxy", "claude-sonnet-4-5")
    assert capability.thinking_control == "toggle"
    ctx = CallContext(endpoint=registry.resolve("my-proxy"), capability=capability)
    request = ModelRequest.simple(
        "claude-sonnet-4-5", "Wie groß ist π?", reasoning=ReasoningRequest(enabled=True)
    )
    wire = ADAPTER.build_request(request, ctx)
    assert wire.url == "http://proxy/v1/messages"
    assert wire.body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert wire.body["max_tokens"] == 8192 + 4096


def test_model_that_does_not_reason_warns_and_sends_nothing() -> None:
    base = builtin_capabilities().lookup("anthropic", "claude-sonnet-4-6")
    no_reasoning = replace(
        base,
        family="claude-plain",
        label="Claude (no thinking)",
        thinking_control="none",
        efforts=(),
    )
    ctx = CallContext(endpoint=context("claude-sonnet-4-6").endpoint, capability=no_reasoning)
    request = ModelRequest.simple(
        "claude-plain-1", "Wie groß ist π?", reasoning=ReasoningRequest(enabled=True, effort="low")
    )
    wire = ADAPTER.build_request(request, ctx)
    assert wire.body == {
        "model": "claude-plain-1",
        "max_tokens": 8192,
        "messages": MESSAGES,
        "stream": True,
    }
    assert wire.warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'low' is not accepted by claude-plain-1 (Claude (no thinking); "
            "accepted: no effort setting); sent nothing instead.",
        ),
        StreamWarning(
            code="REASONING_UNSUPPORTED",
            message="claude-plain-1 (Claude (no thinking)) does not reason; no thinking was "
            "requested.",
        ),
    )


def generation_body(
    model: str, *, enabled: bool, temperature: float
) -> tuple[dict[str, Any], tuple[StreamWarning, ...]]:
    model_request = ModelRequest.simple(
        model,
        "Wie groß ist π?",
        reasoning=ReasoningRequest(enabled=enabled),
        max_output_tokens=300,
        temperature=temperature,
    )
    wire = ADAPTER.build_request(model_request, context(model))
    return dict(wire.body), wire.warnings


def test_temperature_and_max_tokens_reach_a_model_that_is_not_thinking() -> None:
    body, warnings = generation_body("claude-sonnet-4-6", enabled=False, temperature=0.2)
    assert body["max_tokens"] == 300
    assert body["temperature"] == 0.2
    assert warnings == ()


@pytest.mark.parametrize(
    ("model", "enabled"),
    [("claude-sonnet-4-6", True), ("claude-sonnet-4-5", True), ("claude-sonnet-5", False)],
)
def test_temperature_is_left_out_with_a_warning_while_the_model_thinks(
    model: str, enabled: bool
) -> None:
    body, warnings = generation_body(model, enabled=enabled, temperature=0.2)
    assert "temperature" not in body
    assert [warning.code for warning in warnings] == ["TEMPERATURE_UNSUPPORTED"]
    assert "temperature=0.2 was not sent" in warnings[0].message


def test_the_default_temperature_with_thinking_is_left_out_quietly() -> None:
    body, warnings = generation_body("claude-sonnet-4-6", enabled=True, temperature=1)
    assert "temperature" not in body
    assert warnings == ()

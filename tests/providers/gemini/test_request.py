"""Exact Gemini request bodies for every reasoning request and model family."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import ModelCapability

from .helpers import ADAPTER, BASE_URL, context, request

CONTENTS = [{"role": "user", "parts": [{"text": "How do I get from Paris to Lyon?"}]}]


def body_for(model: str, **kwargs: Any) -> dict[str, Any]:
    return dict(ADAPTER.build_request(request(model, **kwargs), context(model)).body)


def test_streaming_url_and_no_credentials() -> None:
    wire = ADAPTER.build_request(request("gemini-2.5-flash"), context())
    assert wire.url == f"{BASE_URL}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert wire.method == "POST"
    assert dict(wire.headers) == {}
    assert "key=" not in wire.url
    assert wire.warnings == ()


def test_non_streaming_url_and_models_prefix() -> None:
    wire = ADAPTER.build_request(request("models/gemini-3-pro-preview", stream=False), context())
    assert wire.url == f"{BASE_URL}/v1beta/models/gemini-3-pro-preview:generateContent"


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_hidden_requests_nothing(model: str) -> None:
    assert body_for(model) == {"contents": CONTENTS}


@pytest.mark.parametrize("model", ["gemini-2.5-pro", "gemini-3-flash-preview"])
def test_enabled_asks_for_thoughts(model: str) -> None:
    assert body_for(model, enabled=True) == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }


@pytest.mark.parametrize(
    ("effort", "level"),
    [("minimal", "MINIMAL"), ("low", "LOW"), ("medium", "MEDIUM"), ("high", "HIGH")],
)
def test_gemini_3_effort_is_a_thinking_level(effort: str, level: str) -> None:
    assert body_for("gemini-3-pro-preview", enabled=True, effort=effort) == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": level}},
    }


@pytest.mark.parametrize(
    ("effort", "budget"), [("none", 0), ("low", 1024), ("medium", 8192), ("high", 24576)]
)
def test_gemini_2_5_effort_is_a_thinking_budget(effort: str, budget: int) -> None:
    assert body_for("gemini-2.5-flash", enabled=True, effort=effort) == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": budget}},
    }


def test_hidden_with_effort_sends_effort_only() -> None:
    assert body_for("gemini-3-pro-preview", effort="low") == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "LOW"}},
    }
    assert body_for("gemini-2.5-flash", effort="none") == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}},
    }


def test_explicit_budget_wins_on_budget_models() -> None:
    assert body_for("gemini-2.5-flash", enabled=True, effort="high", budget_tokens=2048) == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048}},
    }


def test_budget_on_level_model_is_a_warning() -> None:
    wire = ADAPTER.build_request(
        request("gemini-3-pro-preview", enabled=True, effort="high", budget_tokens=2048),
        context("gemini-3-pro-preview"),
    )
    assert wire.body == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "HIGH"}},
    }
    assert [warning.code for warning in wire.warnings] == ["BUDGET_UNSUPPORTED"]


@pytest.mark.parametrize(
    ("model", "effort", "field"),
    [
        ("gemini-3-pro-preview", "none", "thinkingLevel"),
        ("gemini-3-pro-preview", "max", "thinkingLevel"),
        ("gemini-2.5-flash", "minimal", "thinkingBudget"),
        ("gemini-2.5-flash", "xhigh", "thinkingBudget"),
    ],
)
def test_unsupported_effort_is_a_warning_and_not_sent(model: str, effort: str, field: str) -> None:
    wire = ADAPTER.build_request(request(model, enabled=True, effort=effort), context(model))
    assert wire.body == {
        "contents": CONTENTS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }
    assert len(wire.warnings) == 1
    warning = wire.warnings[0]
    assert warning.code == "EFFORT_UNSUPPORTED"
    assert repr(effort) in warning.message
    assert model in warning.message
    assert f"No {field} was sent" in warning.message


def test_unsupported_effort_when_hidden_sends_nothing() -> None:
    wire = ADAPTER.build_request(
        request("gemini-3-pro-preview", effort="none"), context("gemini-3-pro-preview")
    )
    assert wire.body == {"contents": CONTENTS}
    assert [warning.code for warning in wire.warnings] == ["EFFORT_UNSUPPORTED"]


def test_model_without_reasoning_gets_a_warning() -> None:
    capability = ModelCapability(
        family="gemini-lite",
        label="Gemini Flash-Lite without thinking",
        endpoints=("gemini",),
        match=("gemini-lite",),
        thinking_control="none",
        efforts=(),
        returns=(),
        reasoning_by_default=False,
    )
    ctx = CallContext(endpoint=context().endpoint, capability=capability)
    wire = ADAPTER.build_request(request("gemini-lite", enabled=True, effort="low"), ctx)
    assert wire.body == {"contents": CONTENTS}
    assert wire.warnings == (
        StreamWarning(
            code="REASONING_UNSUPPORTED",
            message="gemini-lite (Gemini Flash-Lite without thinking) does not reason; "
            "no thinkingConfig was sent.",
        ),
    )


def test_full_request_with_system_history_limits_and_tools() -> None:
    from google.genai import types

    model_request = ModelRequest(
        model="gemini-3-pro-preview",
        system="You are a travel agent. Réponds en français.",
        messages=(
            Message(role="user", content="Weather in Zürich?"),
            Message(role="assistant", content="Which day?"),
            Message(role="user", content="Tomorrow."),
        ),
        reasoning=ReasoningRequest(enabled=True, effort="medium"),
        max_output_tokens=1024,
        tools=(
            ToolSpec(
                name="get_weather",
                description="Weather for a city",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
            ),
            ToolSpec(name="now"),
        ),
    )
    wire = ADAPTER.build_request(model_request, context("gemini-3-pro-preview"))
    assert wire.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Zürich?"}]},
            {"role": "model", "parts": [{"text": "Which day?"}]},
            {"role": "user", "parts": [{"text": "Tomorrow."}]},
        ],
        "systemInstruction": {"parts": [{"text": "You are a travel agent. Réponds en français."}]},
        "generationConfig": {
            "maxOutputTokens": 1024,
            "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "MEDIUM"},
        },
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                            "additionalProperties": False,
                        },
                    },
                    {"name": "now", "parametersJsonSchema": {"type": "object", "properties": {}}},
                ]
            }
        ],
    }
    # The body's parts are shaped as the SDK's own wire types (extra fields are forbidden).
    for content in wire.body["contents"]:
        assert isinstance(types.Content.model_validate(content), types.Content)
    assert isinstance(types.Content.model_validate(wire.body["systemInstruction"]), types.Content)
    config = types.GenerationConfig.model_validate(wire.body["generationConfig"])
    assert config.thinking_config is not None
    assert config.thinking_config.thinking_level == types.ThinkingLevel.MEDIUM
    assert config.thinking_config.include_thoughts is True
    tool = types.Tool.model_validate(wire.body["tools"][0])
    assert tool.function_declarations is not None
    assert [declaration.name for declaration in tool.function_declarations] == [
        "get_weather",
        "now",
    ]


@pytest.mark.parametrize(
    ("model", "effort"),
    [("gemini-2.5-flash", "low"), ("gemini-2.5-pro", "high"), ("gemini-3-pro-preview", "minimal")],
)
def test_thinking_configs_validate_against_the_sdk(model: str, effort: str) -> None:
    from google.genai import types

    body = body_for(model, enabled=True, effort=effort)
    config = types.GenerationConfig.model_validate(body["generationConfig"])
    assert config.thinking_config is not None
    # Never both: the API rejects a request that sets budget and level together.
    assert (config.thinking_config.thinking_budget is None) != (
        config.thinking_config.thinking_level is None
    )


def test_generation_settings_go_into_generation_config() -> None:
    model_request = ModelRequest.simple(
        "gemini-3-pro", "Hi", max_output_tokens=128, temperature=1.5
    )
    body = ADAPTER.build_request(model_request, context("gemini-3-pro")).body
    assert body["generationConfig"] == {"maxOutputTokens": 128, "temperature": 1.5}

"""Exact request bodies for every reasoning request and model family."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import Effort, Message, ModelRequest, ReasoningRequest, ToolSpec

from ._helpers import ADAPTER, context

HIDDEN = ReasoningRequest(enabled=False)
SHOWN = ReasoningRequest(enabled=True)


def _request(
    model: str, reasoning: ReasoningRequest, **overrides: Any
) -> tuple[dict[str, Any], tuple[StreamWarning, ...]]:
    request = ModelRequest.simple(model, "Plan the trip → Zürich", reasoning=reasoning, **overrides)
    wire = ADAPTER.build_request(request, context(model))
    return dict(wire.body), wire.warnings


def _base(model: str, *, stream: bool = True) -> dict[str, Any]:
    return {
        "model": model,
        "input": [{"role": "user", "content": "Plan the trip → Zürich"}],
        "stream": stream,
        "store": False,
    }


def test_url_and_headers_carry_no_credentials() -> None:
    request = ModelRequest.simple("gpt-5.5", "hi")
    wire = ADAPTER.build_request(request, context())
    assert wire.url == "https://api.openai.com/v1/responses"
    assert wire.method == "POST"
    assert dict(wire.headers) == {"content-type": "application/json"}
    assert wire.warnings == ()


def test_url_follows_a_base_url_override() -> None:
    request = ModelRequest.simple("gpt-oss-120b", "hi")
    wire = ADAPTER.build_request(request, context(base_url="http://127.0.0.1:8000/v1"))
    assert wire.url == "http://127.0.0.1:8000/v1/responses"


def test_adapter_names_its_wire_api() -> None:
    assert ADAPTER.wire_api == "openai-responses"


# ---------------------------------------------------------------- GPT-5.1+ family


def test_hidden_requests_nothing_reasoning_related() -> None:
    body, warnings = _request("gpt-5.5", HIDDEN)
    assert body == _base("gpt-5.5")
    assert warnings == ()


@pytest.mark.parametrize("effort", ["none", "low", "medium", "high", "xhigh"])
def test_hidden_still_sends_an_accepted_effort(effort: Effort) -> None:
    body, warnings = _request("gpt-5.5", ReasoningRequest(enabled=False, effort=effort))
    assert body == {**_base("gpt-5.5"), "reasoning": {"effort": effort}}
    assert warnings == ()


def test_enabled_with_provider_default_effort_asks_for_summary_and_carrier() -> None:
    body, warnings = _request("gpt-5.5", SHOWN)
    assert body == {
        **_base("gpt-5.5"),
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert warnings == ()


@pytest.mark.parametrize("effort", ["none", "low", "medium", "high", "xhigh"])
def test_enabled_with_each_accepted_effort(effort: Effort) -> None:
    body, warnings = _request("gpt-5.5", ReasoningRequest(enabled=True, effort=effort))
    assert body == {
        **_base("gpt-5.5"),
        "reasoning": {"effort": effort, "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert warnings == ()


def test_unsupported_effort_becomes_a_warning_and_is_not_sent() -> None:
    body, warnings = _request("gpt-5.5", ReasoningRequest(enabled=True, effort="max"))
    assert body == {
        **_base("gpt-5.5"),
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert warnings == (
        StreamWarning(
            code="EFFORT_UNSUPPORTED",
            message="Effort 'max' is not accepted by model 'gpt-5.5' (GPT-5.1 and later "
            "(none..xhigh); accepted: none, low, medium, high, xhigh); no effort was sent, "
            "so the provider's default applies.",
        ),
    )


def test_unsupported_effort_in_hidden_mode_sends_no_reasoning_object() -> None:
    body, warnings = _request("gpt-5.5", ReasoningRequest(enabled=False, effort="minimal"))
    assert body == _base("gpt-5.5")
    assert [warning.code for warning in warnings] == ["EFFORT_UNSUPPORTED"]


# ---------------------------------------------------------------- GPT-5 family


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high"])
def test_gpt_5_accepts_minimal_to_high(effort: Effort) -> None:
    body, warnings = _request("gpt-5-mini", ReasoningRequest(enabled=True, effort=effort))
    assert body == {
        **_base("gpt-5-mini"),
        "reasoning": {"effort": effort, "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert warnings == ()


@pytest.mark.parametrize("effort", ["none", "xhigh", "max"])
def test_gpt_5_rejects_efforts_outside_its_range(effort: Effort) -> None:
    body, warnings = _request("gpt-5", ReasoningRequest(enabled=True, effort=effort))
    assert body == {
        **_base("gpt-5"),
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert len(warnings) == 1
    assert warnings[0].code == "EFFORT_UNSUPPORTED"
    assert f"Effort {effort!r}" in warnings[0].message
    assert "'gpt-5'" in warnings[0].message


# ---------------------------------------------------------------- o-series


def test_o_series_effort_and_summary() -> None:
    body, warnings = _request("o4-mini", ReasoningRequest(enabled=True, effort="high"))
    assert body == {
        **_base("o4-mini"),
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert warnings == ()


def test_o_series_hidden_with_unsupported_effort() -> None:
    body, warnings = _request("o3", ReasoningRequest(enabled=False, effort="none"))
    assert body == _base("o3")
    assert [warning.code for warning in warnings] == ["EFFORT_UNSUPPORTED"]


# ---------------------------------------------------------------- non-reasoning models


def test_non_reasoning_model_hidden_is_plain() -> None:
    body, warnings = _request("gpt-4.1", HIDDEN)
    assert body == _base("gpt-4.1")
    assert warnings == ()


def test_non_reasoning_model_warns_and_sends_nothing() -> None:
    body, warnings = _request("gpt-4o", SHOWN)
    assert body == _base("gpt-4o")
    assert warnings == (
        StreamWarning(
            code="REASONING_UNSUPPORTED",
            message="Model 'gpt-4o' (GPT-4o (no reasoning)) does not reason; "
            "no reasoning was requested.",
        ),
    )


def test_non_reasoning_model_with_effort_warns_about_both_axes() -> None:
    body, warnings = _request("gpt-4.1", ReasoningRequest(enabled=True, effort="high"))
    assert body == _base("gpt-4.1")
    assert [warning.code for warning in warnings] == ["REASONING_UNSUPPORTED", "EFFORT_UNSUPPORTED"]
    assert "accepted: none" in warnings[1].message


# ---------------------------------------------------------------- everything else


def test_full_request_with_instructions_turns_budget_and_tools() -> None:
    request = ModelRequest(
        model="gpt-5.5",
        messages=(
            Message(role="user", content="Weather in 東京?"),
            Message(role="assistant", content="Which day?"),
            Message(role="user", content="Today ☀️"),
        ),
        system="You are a careful engineer.",
        reasoning=ReasoningRequest(enabled=True, effort="low"),
        max_output_tokens=2048,
        tools=(
            ToolSpec(
                name="get_weather",
                description="Current weather",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            ),
            ToolSpec(name="now"),
        ),
        stream=False,
    )
    wire = ADAPTER.build_request(request, context())
    assert wire.body == {
        "model": "gpt-5.5",
        "input": [
            {"role": "user", "content": "Weather in 東京?"},
            {"role": "assistant", "content": "Which day?"},
            {"role": "user", "content": "Today ☀️"},
        ],
        "instructions": "You are a careful engineer.",
        "max_output_tokens": 2048,
        "stream": False,
        "store": False,
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
                "strict": False,
            },
            {
                "type": "function",
                "name": "now",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            },
        ],
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    assert wire.warnings == ()


def test_max_output_tokens_and_temperature_reach_a_model_that_takes_them() -> None:
    body, warnings = _request("gpt-4.1", HIDDEN, max_output_tokens=256, temperature=0.3)
    assert body["max_output_tokens"] == 256
    assert body["temperature"] == 0.3
    assert warnings == ()


def test_reasoning_models_get_no_temperature_and_a_warning() -> None:
    body, warnings = _request("gpt-5.5", SHOWN, max_output_tokens=256, temperature=0.3)
    assert body["max_output_tokens"] == 256
    assert "temperature" not in body
    assert [warning.code for warning in warnings] == ["TEMPERATURE_UNSUPPORTED"]

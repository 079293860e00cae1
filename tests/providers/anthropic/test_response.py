"""Non-streaming bodies (same events as the stream) and HTTP error bodies."""

from __future__ import annotations

import json

import pytest

from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import ReasoningEnd, ReasoningStart, StreamError

from .expected import BODIES, CITATIONS_WARNING, STREAMS
from .helpers import ADAPTER, context, decode_body, decode_stream, fixture, request


@pytest.mark.parametrize("name", sorted(BODIES))
def test_recorded_body_decodes_to_exact_events(name: str) -> None:
    assert decode_body(fixture(f"{name}_body.json")) == BODIES[name]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_body_and_stream_accumulate_to_the_same_response(name: str) -> None:
    streamed = accumulate(decode_stream(fixture(f"{name}_stream.sse")))
    whole = accumulate(decode_body(fixture(f"{name}_body.json")))
    assert whole == streamed
    assert whole.error is None
    assert whole.finish is not None


@pytest.mark.parametrize("name", sorted(BODIES))
def test_body_and_stream_have_the_same_event_shape(name: str) -> None:
    # Same event kinds in the same order once consecutive deltas are merged.
    def shape(events: list[object]) -> list[str]:
        kinds: list[str] = []
        for event in events:
            kind = type(event).__name__
            if not (kind.endswith("Delta") and kinds and kinds[-1] == kind):
                kinds.append(kind)
        return kinds

    # Citations come first in the stream and after the text in the body.
    streamed = shape([event for event in STREAMS[name] if event != CITATIONS_WARNING])
    whole = shape([event for event in BODIES[name] if event != CITATIONS_WARNING])
    assert whole == streamed


def test_tool_use_body_accumulates_tool_calls() -> None:
    response = accumulate(decode_body(fixture("tool_use_body.json")))
    assert [(call.tool_call_id, call.name, call.arguments) for call in response.tool_calls] == [
        ("toolu_01WeatherZrh", "get_weather", '{"city":"Zürich","unit":"°C"}'),
        ("toolu_01ClockNow", "get_time", "{}"),
    ]
    assert [part.kind for part in response.reasoning_parts] == ["summary", "summary"]


def test_malformed_body_is_a_malformed_response_error() -> None:
    events = decode_body(b'{"type":"message","content":[')
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


def test_error_shaped_body_under_http_200_is_an_error_event() -> None:
    events = decode_body(fixture("error_overloaded_529.json"))
    assert events == [
        StreamError(
            code="PROVIDER_OVERLOADED",
            message="Anthropic stream error (overloaded_error): Overloaded. The provider is "
            "overloaded; try again shortly.",
            retryable=True,
            provider_error_type="overloaded_error",
        )
    ]


def test_body_with_unknown_fields_and_missing_optionals_is_read() -> None:
    body = (
        b'{"id":"msg_z","type":"message","role":"assistant","model":"claude-opus-5",'
        b'"content":[{"type":"text","text":"hi","future_field":1}],"stop_reason":"end_turn",'
        b'"usage":{"input_tokens":3,"output_tokens":2},"brand_new":{"x":1}}'
    )
    response = accumulate(decode_body(body))
    assert response.text == "hi"
    assert response.usage.input_tokens == 3
    assert response.usage.output_tokens == 2
    assert response.usage.reasoning_tokens is None
    assert response.usage.cached_input_tokens is None
    assert response.warnings == ()


# ---------------------------------------------------------------- HTTP error bodies


def test_overloaded_529_fixture() -> None:
    error = ADAPTER.parse_error(529, {}, fixture("error_overloaded_529.json"))
    assert error.code == "PROVIDER_OVERLOADED"
    assert error.retryable is True
    assert error.status == 529
    assert error.provider_error_type == "overloaded_error"
    assert error.request_id == "req_011CAnthropicOverload1"
    assert error.message == (
        "Anthropic returned HTTP 529: Overloaded. The provider is overloaded; try again shortly."
    )


def test_rate_limit_429_fixture_with_retry_after() -> None:
    error = ADAPTER.parse_error(
        429,
        {"retry-after": "17", "request-id": "req_header_wins"},
        fixture("error_rate_limit_429.json"),
    )
    assert error.code == "PROVIDER_RATE_LIMITED"
    assert error.retryable is True
    assert error.retry_after_s == 17.0
    assert error.request_id == "req_header_wins"
    assert "rate limit of 50 requests per minute" in error.message


def test_invalid_request_400_fixture() -> None:
    error = ADAPTER.parse_error(400, {}, fixture("error_invalid_request_400.json"))
    assert error.code == "PROVIDER_BAD_REQUEST"
    assert error.retryable is False
    assert error.provider_error_type == "invalid_request_error"
    assert '"thinking.type.enabled" is not supported for this model' in error.message


@pytest.mark.parametrize(
    ("status", "error_type", "code", "retryable"),
    [
        (400, "invalid_request_error", "PROVIDER_BAD_REQUEST", False),
        (401, "authentication_error", "PROVIDER_AUTH_ERROR", False),
        (402, "billing_error", "PROVIDER_PAYMENT_REQUIRED", False),
        (403, "permission_error", "PROVIDER_PERMISSION_DENIED", False),
        (404, "not_found_error", "PROVIDER_NOT_FOUND", False),
        (413, "request_too_large", "PROVIDER_REQUEST_TOO_LARGE", False),
        (429, "rate_limit_error", "PROVIDER_RATE_LIMITED", True),
        (500, "api_error", "PROVIDER_SERVER_ERROR", True),
        (504, "timeout_error", "PROVIDER_TIMEOUT", True),
        (529, "overloaded_error", "PROVIDER_OVERLOADED", True),
        (500, "overloaded_error", "PROVIDER_OVERLOADED", True),
        (504, "api_error", "PROVIDER_TIMEOUT", True),
        (400, "overloaded_error", "PROVIDER_OVERLOADED", False),
        (418, "teapot_error", "PROVIDER_ERROR", False),
    ],
)
def test_error_statuses_and_types(status: int, error_type: str, code: str, retryable: bool) -> None:
    body = json.dumps(
        {
            "type": "error",
            "error": {"type": error_type, "message": "Nope \u2013 réessayez"},
            "request_id": "req_1",
        }
    ).encode()
    error = ADAPTER.parse_error(status, {}, body)
    assert (error.code, error.retryable, error.status) == (code, retryable, status)
    assert error.provider_error_type == error_type
    assert error.request_id == "req_1"
    assert error.message.startswith(f"Anthropic returned HTTP {status}: Nope \u2013 réessayez")


def test_retry_after_ms_and_should_retry_header() -> None:
    error = ADAPTER.parse_error(
        529,
        {"retry-after-ms": "1500", "x-should-retry": "false"},
        fixture("error_overloaded_529.json"),
    )
    assert error.retry_after_s == 1.5
    assert error.retryable is False


def test_non_json_error_body_still_gives_a_usable_error() -> None:
    error = ADAPTER.parse_error(502, {}, b"<html><body>Bad gateway</body></html>")
    assert error.code == "PROVIDER_SERVER_ERROR"
    assert error.retryable is True
    assert error.provider_error_type is None
    assert "Bad gateway" in error.message


def test_empty_error_body() -> None:
    error = ADAPTER.parse_error(401, {}, b"")
    assert error.code == "PROVIDER_AUTH_ERROR"
    assert error.message == (
        "Anthropic returned HTTP 401: HTTP 401. Check the API key for this provider."
    )


def test_claude_3_7_thinking_is_raw_not_a_summary() -> None:
    # Claude 3.7 Sonnet returns its full thinking; Claude 4+ a summary (capability data).
    events = ADAPTER.decode_body(
        fixture("summary_body.json"),
        request("claude-3-7-sonnet-20250219"),
        context("claude-3-7-sonnet-20250219"),
    )
    kinds = [event.kind for event in events if isinstance(event, ReasoningStart | ReasoningEnd)]
    assert kinds == ["raw", "raw"]

"""HTTP error bodies, in-stream errors, truncation and malformed data."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import ReasoningDelta, ReasoningStart, ResponseStarted, StreamError

from .helpers import ADAPTER, decode_body, decode_stream, make_context, read_fixture


def test_openai_400_unsupported_value() -> None:
    error = ADAPTER.parse_error(
        400, {"x-request-id": "req_abc"}, read_fixture("openai_error_400.json")
    )
    assert error.code == "PROVIDER_BAD_REQUEST"
    assert error.retryable is False
    assert error.status == 400
    assert error.provider_error_type == "invalid_request_error"
    assert error.request_id == "req_abc"
    assert error.message.startswith(
        "The OpenAI-compatible provider returned HTTP 400: Unsupported value: 'reasoning_effort'"
    )


def test_openai_429_with_retry_after() -> None:
    body = b'{"error":{"message":"Rate limit reached for gpt-5.5","type":"requests","param":null,"code":"rate_limit_exceeded"}}'
    context = make_context("openai", "gpt-5.5", wire_api="openai-chat")
    error = ADAPTER.parse_error(429, {"Retry-After": "7"}, body, context)
    assert error.code == "PROVIDER_RATE_LIMITED"
    assert error.retryable is True
    assert error.retry_after_s == 7.0
    assert error.provider_error_type == "requests"
    assert error.message == (
        "OpenAI returned HTTP 429: Rate limit reached for gpt-5.5. "
        "Wait and try again, or lower max_concurrency."
    )


def test_openai_insufficient_quota_is_not_retryable() -> None:
    body = b'{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}'
    error = ADAPTER.parse_error(429, {}, body)
    assert error.code == "PROVIDER_PAYMENT_REQUIRED"
    assert error.retryable is False


def test_openai_context_length_is_request_too_large() -> None:
    body = b'{"error":{"message":"maximum context length is 128000 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}'
    error = ADAPTER.parse_error(400, {}, body)
    assert error.code == "PROVIDER_REQUEST_TOO_LARGE"
    assert error.retryable is False


def test_openrouter_402_credits() -> None:
    error = ADAPTER.parse_error(402, {}, read_fixture("openrouter_error_402.json"))
    assert error.code == "PROVIDER_PAYMENT_REQUIRED"
    assert error.retryable is False
    assert error.provider_error_type == "402"


def test_openrouter_403_moderation_is_content_filtered() -> None:
    error = ADAPTER.parse_error(403, {}, read_fixture("openrouter_error_403_moderation.json"))
    assert error.code == "PROVIDER_CONTENT_FILTERED"
    assert error.retryable is False
    assert "(upstream provider: OpenRouter Moderation)" in error.message


def test_openrouter_403_without_moderation_metadata_is_permission() -> None:
    error = ADAPTER.parse_error(403, {}, b'{"error":{"code":403,"message":"Key disabled"}}')
    assert error.code == "PROVIDER_PERMISSION_DENIED"


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (408, "PROVIDER_TIMEOUT", True),
        (429, "PROVIDER_RATE_LIMITED", True),
        (502, "PROVIDER_SERVER_ERROR", True),
        (503, "PROVIDER_OVERLOADED", True),
        (401, "PROVIDER_AUTH_ERROR", False),
    ],
)
def test_openrouter_status_codes(status: int, code: str, retryable: bool) -> None:
    body = f'{{"error":{{"code":{status},"message":"failure {status}"}}}}'.encode()
    error = ADAPTER.parse_error(status, {"retry-after": "3"} if status == 429 else {}, body)
    assert (error.code, error.retryable, error.status) == (code, retryable, status)
    if status == 429:
        assert error.retry_after_s == 3.0


def test_openrouter_502_names_the_upstream() -> None:
    error = ADAPTER.parse_error(502, {}, read_fixture("openrouter_error_502.json"))
    assert error.code == "PROVIDER_SERVER_ERROR"
    assert error.message.startswith(
        "The OpenAI-compatible provider returned HTTP 502: Provider returned error "
        "(upstream provider: Anthropic)"
    )


def test_vllm_top_level_error_shape() -> None:
    error = ADAPTER.parse_error(400, {}, read_fixture("vllm_error_400.json"))
    # A prompt over the context is named as such: shorten it, do not retry it.
    assert error.code == "PROVIDER_REQUEST_TOO_LARGE"
    assert error.retryable is False
    assert error.provider_error_type == "BadRequestError"
    assert "maximum context length is 32768 tokens" in error.message


def test_fastapi_detail_and_html_bodies() -> None:
    detail = ADAPTER.parse_error(404, {}, b'{"detail":"Not Found"}')
    assert detail.code == "PROVIDER_NOT_FOUND"
    assert "Not Found" in detail.message
    html = ADAPTER.parse_error(504, {}, b"<html><body>Gateway Timeout</body></html>")
    assert html.code == "PROVIDER_TIMEOUT"
    assert html.retryable is True
    assert "Gateway Timeout" in html.message


def test_x_should_retry_header_wins() -> None:
    error = ADAPTER.parse_error(500, {"x-should-retry": "false"}, b'{"error":{"message":"x"}}')
    assert error.code == "PROVIDER_SERVER_ERROR"
    assert error.retryable is False


def test_truncated_stream_is_interrupted_and_keeps_partial_reasoning() -> None:
    data = read_fixture("openrouter_anthropic_summary.sse")
    cut = data.index(
        b'data: {"id":"gen-1767225600-AbCdEf","provider":"Anthropic","model":"anthropic/claude-sonnet-4.6","object":"chat.completion.chunk","created":1767225600,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"2+2'
    )
    events = decode_stream("openrouter_anthropic_summary", data[:cut])
    assert events[:3] == [
        ResponseStarted(response_id="gen-1767225600-AbCdEf", model="anthropic/claude-sonnet-4.6"),
        ReasoningStart(
            part_id="reasoning-0",
            kind="summary",
            provider_metadata={
                "type": "reasoning.text",
                "format": "anthropic-claude-v1",
                "index": 0,
            },
        ),
        ReasoningDelta(part_id="reasoning-0", text="The user asks → "),
    ]
    assert len(events) == 4
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_STREAM_INTERRUPTED", True)
    response = accumulate(events)
    assert response.reasoning_parts[0].text == "The user asks → "
    assert response.reasoning_parts[0].complete is False


def test_stream_without_done_after_finish_is_interrupted() -> None:
    data = read_fixture("deepseek_reasoning_content.sse").replace(b"data: [DONE]\n\n", b"")
    events = decode_stream("deepseek_reasoning_content", data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_STREAM_INTERRUPTED"


def test_cut_inside_a_frame_is_malformed_or_interrupted() -> None:
    data = read_fixture("vllm_reasoning.sse")
    events = decode_stream("vllm_reasoning", data[: data.index(b"greet back") + 3])
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code in ("PROVIDER_STREAM_INTERRUPTED", "PROVIDER_MALFORMED_RESPONSE")


def test_malformed_json_frame() -> None:
    data = read_fixture("vllm_reasoning.sse")
    broken = data.replace(b'{"content":"Hello! \xf0\x9f\x91\x8b"}', b'{"content":"Hello!', 1)
    assert broken != data
    events = decode_stream("vllm_reasoning", broken)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_MALFORMED_RESPONSE"
    assert last.retryable is False
    assert sum(isinstance(event, StreamError) for event in events) == 1


def test_malformed_and_shapeless_bodies() -> None:
    events = decode_body("vllm_reasoning", b'{"id": "x", "choices": [')
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"
    events = decode_body("vllm_reasoning", b'{"id": "x", "object": "chat.completion"}')
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ('{"code":429,"message":"slow down"}', "PROVIDER_RATE_LIMITED"),
        ('{"code":503,"message":"no providers"}', "PROVIDER_OVERLOADED"),
        ('{"code":"overloaded","message":"busy"}', "PROVIDER_OVERLOADED"),
        ('{"code":"rate_limit_exceeded","message":"slow"}', "PROVIDER_RATE_LIMITED"),
        ('{"code":400,"message":"bad"}', "PROVIDER_BAD_REQUEST"),
        ('{"code":"weird","message":"?"}', "PROVIDER_ERROR"),
        ('"plain string error"', "PROVIDER_ERROR"),
    ],
)
def test_in_stream_error_codes(error: str, code: str) -> None:
    data = f'data: {{"id":"gen-1","model":"m","choices":[],"error":{error}}}\n\ndata: [DONE]\n\n'
    events = decode_stream("openrouter_raw", data.encode())
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == code
    assert sum(isinstance(event, StreamError) for event in events) == 1

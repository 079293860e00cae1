"""Gemini error bodies, in-stream errors, truncated and malformed streams."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import accumulate
from thoughtline.model.events import StreamError, TextEnd
from thoughtline.providers.base import decode_whole

from .helpers import ADAPTER, context, fixture_bytes, request


def test_rate_limit_uses_retry_info_when_no_header() -> None:
    error = ADAPTER.parse_error(429, {"x-request-id": "r-1"}, fixture_bytes("error_429.json"))
    assert error.code == "PROVIDER_RATE_LIMITED"
    assert error.retryable is True
    assert error.status == 429
    assert error.retry_after_s == 12.0
    assert error.provider_error_type == "RESOURCE_EXHAUSTED"
    assert error.request_id == "r-1"
    assert error.message == (
        "Gemini returned HTTP 429: You exceeded your current quota, please check your plan and "
        "billing details. Wait and try again, or lower max_concurrency."
    )


def test_retry_after_header_wins_over_retry_info() -> None:
    error = ADAPTER.parse_error(429, {"Retry-After": "3"}, fixture_bytes("error_429.json"))
    assert error.retry_after_s == 3.0


def test_invalid_api_key_is_an_auth_error() -> None:
    error = ADAPTER.parse_error(400, {}, fixture_bytes("error_400_api_key.json"))
    assert (error.code, error.retryable, error.provider_error_type) == (
        "PROVIDER_AUTH_ERROR",
        False,
        "INVALID_ARGUMENT",
    )
    assert "API key not valid" in error.message
    assert error.retry_after_s is None


def test_unavailable_is_overloaded_and_retryable() -> None:
    error = ADAPTER.parse_error(503, {}, fixture_bytes("error_503.json"))
    assert (error.code, error.retryable, error.status) == ("PROVIDER_OVERLOADED", True, 503)


def test_unknown_model_is_not_found() -> None:
    error = ADAPTER.parse_error(404, {}, fixture_bytes("error_404.json"))
    assert (error.code, error.retryable) == ("PROVIDER_NOT_FOUND", False)
    assert "gemini-9-ultra" in error.message


@pytest.mark.parametrize(
    ("status", "rpc", "code", "retryable"),
    [
        (400, "INVALID_ARGUMENT", "PROVIDER_BAD_REQUEST", False),
        (400, "FAILED_PRECONDITION", "PROVIDER_BAD_REQUEST", False),
        (401, "UNAUTHENTICATED", "PROVIDER_AUTH_ERROR", False),
        (403, "PERMISSION_DENIED", "PROVIDER_PERMISSION_DENIED", False),
        (500, "INTERNAL", "PROVIDER_SERVER_ERROR", True),
        (504, "DEADLINE_EXCEEDED", "PROVIDER_TIMEOUT", True),
    ],
)
def test_rpc_status_mapping(status: int, rpc: str, code: str, retryable: bool) -> None:
    body = f'{{"error":{{"code":{status},"message":"m","status":"{rpc}"}}}}'.encode()
    error = ADAPTER.parse_error(status, {}, body)
    assert (error.code, error.retryable, error.provider_error_type) == (code, retryable, rpc)


def test_non_json_error_body() -> None:
    error = ADAPTER.parse_error(502, {}, b"<html><body>Bad Gateway</body></html>")
    assert (error.code, error.retryable, error.provider_error_type) == (
        "PROVIDER_SERVER_ERROR",
        True,
        None,
    )
    assert "Bad Gateway" in error.message


@pytest.mark.parametrize(
    ("code", "status", "expected", "retryable"),
    [
        (429, "RESOURCE_EXHAUSTED", "PROVIDER_RATE_LIMITED", True),
        (503, "UNAVAILABLE", "PROVIDER_OVERLOADED", True),
        (500, "INTERNAL", "PROVIDER_SERVER_ERROR", True),
        (400, "INVALID_ARGUMENT", "PROVIDER_BAD_REQUEST", False),
        (499, "SOMETHING_NEW", "PROVIDER_ERROR", False),
    ],
)
def test_in_stream_error_codes(code: int, status: str, expected: str, retryable: bool) -> None:
    data = (
        b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}\r\n\r\n'
        + f'data: {{"error":{{"code":{code},"message":"boom","status":"{status}"}}}}\r\n\r\n'.encode()
    )
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable, last.status, last.provider_error_type) == (
        expected,
        retryable,
        code,
        status,
    )
    assert sum(isinstance(event, StreamError) for event in events) == 1


def test_stream_cut_between_chunks_is_interrupted_and_keeps_what_arrived() -> None:
    data = fixture_bytes("summary_stream.sse")
    cut = data.rindex(b"data: ")  # drop the final chunk (finishReason) entirely
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data[:cut])
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_STREAM_INTERRUPTED", True)
    assert not any(isinstance(event, TextEnd) for event in events)
    response = accumulate(events)
    assert response.text == "Take the TGV — about 2 hours"
    assert [(part.kind, part.complete) for part in response.reasoning_parts] == [
        ("summary", True),
        ("encrypted", True),
    ]
    assert response.finish is None


def test_empty_stream_is_interrupted() -> None:
    events = decode_whole(ADAPTER.new_decoder(request(), context()), b"")
    assert [(event.type, getattr(event, "code", None)) for event in events] == [
        ("error", "PROVIDER_STREAM_INTERRUPTED")
    ]


def test_malformed_json_chunk() -> None:
    data = fixture_bytes("summary_stream.sse")
    cut = data.index(b"data: ", 10)
    broken = data[:cut] + b'data: {"candidates":[{"content":\r\n\r\n' + data[cut:]
    events = decode_whole(ADAPTER.new_decoder(request(), context()), broken)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_MALFORMED_RESPONSE", False)
    assert [event.type for event in events[:-1]] == [
        "response_started",
        "reasoning_start",
        "reasoning_delta",
        "usage",
    ]


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'{"candidates": [}'])
def test_malformed_non_streaming_body(body: bytes) -> None:
    events = ADAPTER.decode_body(body, request(stream=False), context())
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


def test_error_object_in_a_200_body() -> None:
    events = ADAPTER.decode_body(fixture_bytes("error_503.json"), request(stream=False), context())
    assert [(event.type, getattr(event, "code", None)) for event in events] == [
        ("error", "PROVIDER_OVERLOADED")
    ]

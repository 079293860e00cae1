"""HTTP error bodies, in-stream errors, broken streams and malformed data."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import ReasoningPart, accumulate
from thoughtline.model.events import (
    ProviderMetadata,
    ReasoningDelta,
    ReasoningStart,
    ResponseStarted,
    StreamError,
)
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer

from ._helpers import ADAPTER, decode_body, decode_stream, fixture

SUMMARY_META: ProviderMetadata = {"item_id": "rs_summary_01", "summary_index": 0}


@pytest.mark.parametrize(
    ("name", "status", "headers", "code", "retryable", "retry_after", "error_type"),
    [
        (
            "error_unsupported_effort.json",
            400,
            {"x-request-id": "req_123"},
            "PROVIDER_BAD_REQUEST",
            False,
            None,
            "invalid_request_error",
        ),
        (
            "error_rate_limit.json",
            429,
            {"retry-after-ms": "120", "retry-after": "1"},
            "PROVIDER_RATE_LIMITED",
            True,
            0.12,
            "requests",
        ),
        (
            "error_insufficient_quota.json",
            429,
            {},
            "PROVIDER_PAYMENT_REQUIRED",
            False,
            None,
            "insufficient_quota",
        ),
        (
            "error_server.json",
            500,
            {"retry-after": "3"},
            "PROVIDER_SERVER_ERROR",
            True,
            3.0,
            "server_error",
        ),
        (
            "error_invalid_key.json",
            401,
            {},
            "PROVIDER_AUTH_ERROR",
            False,
            None,
            "invalid_request_error",
        ),
    ],
)
def test_http_error_bodies(
    name: str,
    status: int,
    headers: dict[str, str],
    code: str,
    retryable: bool,
    retry_after: float | None,
    error_type: str,
) -> None:
    error = ADAPTER.parse_error(status, headers, fixture(name))
    assert error.code == code
    assert error.retryable is retryable
    assert error.retry_after_s == retry_after
    assert error.status == status
    assert error.provider_error_type == error_type


def test_unsupported_effort_message_names_the_parameter() -> None:
    error = ADAPTER.parse_error(
        400, {"x-request-id": "req_123"}, fixture("error_unsupported_effort.json")
    )
    assert error.message == (
        "OpenAI Responses API returned HTTP 400: Unsupported value: 'reasoning.effort' does not "
        "support 'max' with this model. Supported values are: 'minimal', 'low', 'medium', and "
        "'high'. (param=reasoning.effort, code=unsupported_value). The provider rejected the "
        "request as sent."
    )
    assert error.request_id == "req_123"


def test_x_should_retry_wins() -> None:
    error = ADAPTER.parse_error(500, {"x-should-retry": "false"}, fixture("error_server.json"))
    assert error.code == "PROVIDER_SERVER_ERROR"
    assert error.retryable is False


def test_overloaded_http_error() -> None:
    body = OpenAIResponsesRenderer().error_body(503, "Our servers are currently overloaded.")
    error = ADAPTER.parse_error(503, {}, body)
    assert error.code == "PROVIDER_OVERLOADED"
    assert error.retryable is True
    assert "Our servers are currently overloaded." in error.message


def test_non_json_error_body_keeps_the_text() -> None:
    error = ADAPTER.parse_error(502, {}, b"<html><body>Bad gateway</body></html>")
    assert error.code == "PROVIDER_SERVER_ERROR"
    assert error.retryable is True
    assert error.message.startswith(
        "OpenAI Responses API returned HTTP 502: <html><body>Bad gateway</body></html>"
    )


def test_empty_error_body() -> None:
    error = ADAPTER.parse_error(404, {}, b"")
    assert error.code == "PROVIDER_NOT_FOUND"
    assert error.message.startswith("OpenAI Responses API returned HTTP 404: HTTP 404")


# ---------------------------------------------------------------- broken streams


def _cut(raw: bytes, marker: bytes) -> bytes:
    return raw[: raw.index(marker)]


def test_truncated_stream_is_interrupted_and_keeps_what_arrived() -> None:
    raw = fixture("summary_reasoning.sse")
    cut = _cut(raw, b"event: response.reasoning_summary_text.done")
    events = decode_stream(cut)
    assert events[:5] == [
        ResponseStarted(response_id="resp_summary_01", model="gpt-5.5"),
        ReasoningStart(
            part_id="rs_summary_01/summary/0", kind="summary", provider_metadata=SUMMARY_META
        ),
        ReasoningDelta(part_id="rs_summary_01/summary/0", text="**Planning the café route**\n\n"),
        ReasoningDelta(part_id="rs_summary_01/summary/0", text="Compare Paris → Lyon "),
        ReasoningDelta(part_id="rs_summary_01/summary/0", text="travel times first."),
    ]
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_STREAM_INTERRUPTED"
    assert last.retryable is True
    assert len(events) == 6
    # The summary never closed: it is kept, marked incomplete.
    response = accumulate(events)
    assert response.reasoning_parts == (
        ReasoningPart(
            kind="summary",
            text="**Planning the café route**\n\nCompare Paris → Lyon travel times first.",
            provider_metadata=SUMMARY_META,
            complete=False,
        ),
    )


def test_stream_cut_inside_a_frame_is_interrupted() -> None:
    # The connection broke mid-frame: the provider did not send bad data.
    raw = fixture("summary_reasoning.sse")
    cut = raw[: raw.index(b"travel times first.")]
    events = decode_stream(cut)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == "PROVIDER_STREAM_INTERRUPTED"
    assert last.retryable is True
    assert [event.type for event in events[:-1]] == [
        "response_started",
        "reasoning_start",
        "reasoning_delta",
        "reasoning_delta",
    ]


def test_malformed_json_frame_is_the_last_event() -> None:
    raw = fixture("summary_reasoning.sse")
    head = raw[: raw.index(b"event: response.output_item.added")]
    events = decode_stream(head + OpenAIResponsesRenderer().malformed_frame() + raw[len(head) :])
    assert events[0] == ResponseStarted(response_id="resp_summary_01", model="gpt-5.5")
    assert len(events) == 2
    assert isinstance(events[1], StreamError)
    assert events[1].code == "PROVIDER_MALFORMED_RESPONSE"
    assert events[1].retryable is False


def test_malformed_body() -> None:
    events = decode_body(b'{"output": [')
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


def test_nothing_is_decoded_after_an_error_event() -> None:
    raw = fixture("error_event.sse") + fixture("summary_reasoning.sse")
    events = decode_stream(raw)
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_RATE_LIMITED"
    assert sum(isinstance(event, ResponseStarted) for event in events) == 1


# ---------------------------------------------------------------- in-stream error shapes


def _sse(*payloads: str) -> bytes:
    return b"".join(f"event: x\ndata: {payload}\n\n".encode() for payload in payloads)


@pytest.mark.parametrize(
    ("payload", "code", "retryable", "error_type"),
    [
        (
            '{"type":"error","sequence_number":3,"code":"server_is_overloaded","message":"busy"}',
            "PROVIDER_OVERLOADED",
            True,
            "server_is_overloaded",
        ),
        (
            '{"type":"error","error":{"type":"service_unavailable_error","code":"server_is_overloaded",'
            '"message":"Our servers are currently overloaded."}}',
            "PROVIDER_OVERLOADED",
            True,
            "server_is_overloaded",
        ),
        (
            '{"type":"error","code":"invalid_prompt","message":"Invalid prompt","param":null}',
            "PROVIDER_BAD_REQUEST",
            False,
            "invalid_prompt",
        ),
        (
            '{"type":"error","code":"something_new","message":"??"}',
            "PROVIDER_ERROR",
            False,
            "something_new",
        ),
        (
            '{"type":"response.failed","sequence_number":5,"response":{"id":"resp_1","status":"failed",'
            '"error":{"code":"rate_limit_exceeded","message":"slow down"},"usage":null}}',
            "PROVIDER_RATE_LIMITED",
            True,
            "rate_limit_exceeded",
        ),
        (
            '{"type":"response.failed","response":{"id":"resp_1","status":"failed",'
            '"error":{"code":"bio_policy","message":"blocked"}}}',
            "PROVIDER_CONTENT_FILTERED",
            False,
            "bio_policy",
        ),
        (
            '{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":null}}',
            "PROVIDER_ERROR",
            False,
            None,
        ),
    ],
)
def test_in_stream_error_shapes(
    payload: str, code: str, retryable: bool, error_type: str | None
) -> None:
    events = decode_stream(_sse(payload))
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable, last.provider_error_type) == (code, retryable, error_type)


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("overloaded", "PROVIDER_OVERLOADED"),
        ("server_error", "PROVIDER_SERVER_ERROR"),
        ("rate_limited", "PROVIDER_RATE_LIMITED"),
    ],
)
def test_renderer_stream_error_frames_decode_to_stable_codes(kind: str, code: str) -> None:
    frame = OpenAIResponsesRenderer().stream_error_frame(kind, "try later")  # type: ignore[arg-type]
    raw = fixture("summary_reasoning.sse")
    head = raw[: raw.index(b"event: response.output_text.delta")]
    events = decode_stream(head + frame)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.code == code
    assert last.retryable is True
    assert "try later" in last.message
    # The open text part stays open (incomplete); the error is last.
    assert events[-2].type == "text_start"


def test_http_200_error_document_as_a_body() -> None:
    events = decode_body(
        b'{"error":{"message":"Internal error","type":"server_error","code":"server_error"}}'
    )
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_SERVER_ERROR"

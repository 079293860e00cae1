"""Ollama error bodies, in-stream error lines, truncated and malformed streams."""

from __future__ import annotations

import pytest

from thoughtline.model.events import StreamError
from thoughtline.providers.base import decode_whole
from thoughtline.providers.ollama._errors import code_for_message

from .helpers import ADAPTER, context, fixture_bytes, request


def test_missing_model_says_how_to_pull_it() -> None:
    error = ADAPTER.parse_error(404, {}, fixture_bytes("error_404.json"))
    assert (error.code, error.retryable, error.status) == ("PROVIDER_NOT_FOUND", False, 404)
    assert error.message == (
        'Ollama returned HTTP 404: model "qwen3:32b" not found, try pulling it first. Download '
        "it on the Ollama host with `ollama pull qwen3:32b` (or check the model name). Check the "
        "model name and the base URL."
    )


def test_model_that_cannot_think() -> None:
    error = ADAPTER.parse_error(400, {}, fixture_bytes("error_400_think.json"))
    assert (error.code, error.retryable) == ("PROVIDER_BAD_REQUEST", False)
    assert "does not support thinking" in error.message
    assert "chain_of_thought = hidden" in error.message


def test_runner_crash_is_retryable() -> None:
    error = ADAPTER.parse_error(500, {}, fixture_bytes("error_500.json"))
    assert (error.code, error.retryable) == ("PROVIDER_SERVER_ERROR", True)
    assert "llama runner process has terminated" in error.message


def test_busy_server() -> None:
    body = b'{"error":"server busy, please try again.  maximum pending requests exceeded"}'
    error = ADAPTER.parse_error(503, {"retry-after": "2"}, body)
    assert (error.code, error.retryable, error.retry_after_s) == ("PROVIDER_OVERLOADED", True, 2.0)


def test_non_json_error_body() -> None:
    error = ADAPTER.parse_error(502, {}, b"Bad Gateway")
    assert (error.code, error.retryable) == ("PROVIDER_SERVER_ERROR", True)
    assert "Bad Gateway" in error.message


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("server busy, please try again. maximum pending requests exceeded", "PROVIDER_OVERLOADED"),
        ("too many requests", "PROVIDER_RATE_LIMITED"),
        ('model "x" not found, try pulling it first', "PROVIDER_NOT_FOUND"),
        ("invalid options: num_predict", "PROVIDER_BAD_REQUEST"),
        ('"llama3" does not support tools', "PROVIDER_BAD_REQUEST"),
        ("an error was encountered while running the model: CUDA error", "PROVIDER_SERVER_ERROR"),
        ("unexpected EOF", "PROVIDER_SERVER_ERROR"),
    ],
)
def test_in_stream_message_classification(message: str, code: str) -> None:
    assert code_for_message(message) == code


def test_in_stream_bad_request_is_not_retryable() -> None:
    data = b'{"model":"q","message":{"role":"assistant","content":"hi"},"done":false}\n{"error":"invalid input"}\n'
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_BAD_REQUEST", False)


def test_stream_cut_between_lines_is_interrupted() -> None:
    data = fixture_bytes("thinking_stream.ndjson")
    cut = data.rindex(b"\n", 0, len(data) - 1) + 1  # drop the done line
    events = decode_whole(ADAPTER.new_decoder(request(), context()), data[:cut])
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_STREAM_INTERRUPTED", True)
    assert [event.type for event in events].count("text_end") == 0


def test_malformed_line() -> None:
    data = fixture_bytes("thinking_stream.ndjson")
    first = data.index(b"\n") + 1
    broken = data[:first] + b'{"model":"qwen3","message":\n' + data[first:]
    events = decode_whole(ADAPTER.new_decoder(request(), context()), broken)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert (last.code, last.retryable) == ("PROVIDER_MALFORMED_RESPONSE", False)
    assert [event.type for event in events[:-1]] == [
        "response_started",
        "reasoning_start",
        "reasoning_delta",
    ]


@pytest.mark.parametrize("body", [b"", b"nope", b"[]"])
def test_malformed_non_streaming_body(body: bytes) -> None:
    events = ADAPTER.decode_body(body, request(stream=False), context())
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].code == "PROVIDER_MALFORMED_RESPONSE"


def test_error_object_in_a_200_body() -> None:
    events = ADAPTER.decode_body(fixture_bytes("error_500.json"), request(stream=False), context())
    assert [(event.type, getattr(event, "code", None)) for event in events] == [
        ("error", "PROVIDER_SERVER_ERROR")
    ]

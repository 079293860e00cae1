"""The transport over a mock HTTP transport: retries, interruptions, exchange capture and
redaction. Bytes come from the simulator's Anthropic renderer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2
import pytest

from thoughtline.model.events import ReasoningDelta, StreamError, StreamWarning, TextDelta
from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.client import ProviderClient, RetryPolicy
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, Transcript

CANARY_KEY = "sk-ant-canary-0123456789abcdefXYZ"
MODEL = "claude-sonnet-4-6"
TRANSCRIPT = Transcript(
    reasoning=(
        SimReasoning(kind="summary", text="Thinking about é and 日本 carefully.", signature="sigX"),
    ),
    answer="The answer is 42.",
    chunk_chars=5,
)
REQUEST = ModelRequest.simple(MODEL, "What is 6*7?", reasoning=ReasoningRequest(enabled=True))


def stream_bytes() -> bytes:
    sim_request = SimRequest(
        method="POST",
        path="/v1/messages",
        query={},
        headers={},
        body={
            "model": MODEL,
            "stream": True,
            "thinking": {"type": "adaptive", "display": "summarized"},
        },
        profile="anthropic",
        model=MODEL,
        stream=True,
    )
    return b"".join(
        frame.data for frame in AnthropicRenderer().stream_frames(TRANSCRIPT, sim_request)
    )


class BrokenStream(httpx2.AsyncByteStream):
    """Yields some bytes, then fails like a dropped connection."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.data
        raise httpx2.ReadError("connection reset by peer")


Handler = Callable[[httpx2.Request], httpx2.Response]


def make_client(
    handler: Handler, *, sleeps: list[float], key: str | None = CANARY_KEY
) -> ProviderClient:
    environ = {"ANTHROPIC_BASE_URL": "http://sim.test/anthropic"}
    if key:
        environ["ANTHROPIC_API_KEY"] = key

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return ProviderClient(
        EndpointRegistry(environ=environ).resolve("anthropic"),
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        retry=RetryPolicy(max_retries=2, initial_delay_s=0.5, jitter=0.0),
        sleep=fake_sleep,
    )


def ok_stream() -> httpx2.Response:
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=stream_bytes()
    )


def error_response(
    status: int, error_type: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    body = {"type": "error", "error": {"type": error_type, "message": f"echo {CANARY_KEY}"}}
    return httpx2.Response(status, headers=headers or {}, json=body)


async def test_success_streams_events_and_captures_a_redacted_exchange() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return ok_stream()

    call = await make_client(handler, sleeps=[]).complete(REQUEST)
    response = call.response
    assert response.text == "The answer is 42."
    assert response.reasoning_text == "Thinking about é and 日本 carefully."
    assert response.reasoning_parts[0].provider_metadata["signature"] == "sigX"
    assert response.error is None
    assert seen[0].headers["x-api-key"] == CANARY_KEY
    exchange = call.exchange
    assert exchange is not None
    assert exchange.request_headers["x-api-key"] == "[REDACTED]"
    assert exchange.status == 200
    assert exchange.response_body == stream_bytes()
    assert CANARY_KEY not in str(exchange.to_dict())
    assert exchange.timings.first_reasoning_ms is not None
    assert exchange.timings.first_text_ms is not None
    assert exchange.timings.first_reasoning_ms <= exchange.timings.first_text_ms
    assert [attempt.status for attempt in exchange.attempts] == [200]


async def test_rate_limit_is_retried_honouring_retry_after_ms() -> None:
    responses = [error_response(429, "rate_limit_error", {"retry-after-ms": "250"}), ok_stream()]
    sleeps: list[float] = []
    call = await make_client(lambda request: responses.pop(0), sleeps=sleeps).complete(REQUEST)
    assert call.response.text == "The answer is 42."
    assert sleeps == [0.25]
    assert call.exchange is not None
    assert [(a.status, a.error_code) for a in call.exchange.attempts] == [
        (429, "PROVIDER_RATE_LIMITED"),
        (200, None),
    ]


async def test_overloaded_then_server_error_then_gives_up_with_backoff() -> None:
    sleeps: list[float] = []
    responses = [
        error_response(529, "overloaded_error"),
        error_response(500, "api_error"),
        error_response(529, "overloaded_error"),
    ]
    call = await make_client(lambda request: responses.pop(0), sleeps=sleeps).complete(REQUEST)
    error = call.response.error
    assert error is not None
    assert (error.code, error.retryable, error.status) == ("PROVIDER_OVERLOADED", True, 529)
    assert CANARY_KEY not in error.message  # the echoed key is redacted from the message
    assert sleeps == [0.5, 1.0]  # exponential backoff, jitter disabled in this test


async def test_bad_request_is_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        return error_response(400, "invalid_request_error")

    call = await make_client(handler, sleeps=[]).complete(REQUEST)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_BAD_REQUEST"
    assert len(calls) == 1


async def test_retry_after_longer_than_allowed_is_reported_not_waited() -> None:
    sleeps: list[float] = []
    call = await make_client(
        lambda r: error_response(429, "rate_limit_error", {"retry-after": "3600"}), sleeps=sleeps
    ).complete(REQUEST)
    assert sleeps == []
    assert call.response.error is not None
    assert "asked to wait 3600s" in call.response.error.message


async def test_connection_error_before_content_is_retried() -> None:
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        if len(attempts) == 1:
            raise httpx2.ConnectError("connection refused")
        return ok_stream()

    call = await make_client(handler, sleeps=[]).complete(REQUEST)
    assert call.response.text == "The answer is 42."
    assert len(attempts) == 2


async def test_stream_broken_after_content_keeps_what_arrived_and_is_not_retried() -> None:
    data = stream_bytes()
    cut = data.index(b"thinking_delta") + 200
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=BrokenStream(data[:cut])
        )

    events = []
    async with make_client(handler, sleeps=[]).call(REQUEST) as call:
        async for event in call:
            events.append(event)
    assert len(attempts) == 1
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_STREAM_INTERRUPTED"
    assert "connection lost" in events[-1].message
    assert any(isinstance(event, ReasoningDelta) for event in events)
    assert not any(isinstance(event, TextDelta) for event in events)
    part = call.response.reasoning_parts[0]
    assert part.complete is False
    assert part.text


async def test_in_stream_error_before_content_is_retried() -> None:
    overloaded = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    responses = [httpx2.Response(200, content=overloaded), ok_stream()]
    sleeps: list[float] = []
    call = await make_client(lambda request: responses.pop(0), sleeps=sleeps).complete(REQUEST)
    assert call.response.error is None
    assert call.response.text == "The answer is 42."
    assert len(sleeps) == 1


async def test_missing_key_fails_without_sending_anything() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("nothing may be sent without a key")

    call = await make_client(handler, sleeps=[], key=None).complete(REQUEST)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_KEY_MISSING"
    assert "ANTHROPIC_API_KEY" in call.response.error.message


async def test_unsupported_effort_warning_is_the_first_event() -> None:
    request = ModelRequest.simple(
        MODEL, "hi", reasoning=ReasoningRequest(enabled=True, effort="minimal")
    )
    events = []
    async with make_client(lambda r: ok_stream(), sleeps=[]).call(request) as call:
        async for event in call:
            events.append(event)
    assert isinstance(events[0], StreamWarning)
    assert events[0].code == "EFFORT_UNSUPPORTED"


@pytest.mark.parametrize("capture", [True, False])
async def test_capture_can_be_turned_off(capture: bool) -> None:
    client = make_client(lambda r: ok_stream(), sleeps=[])
    client.capture_body = capture
    call = await client.complete(REQUEST)
    assert call.exchange is not None
    assert (call.exchange.response_body is not None) is capture
    assert call.response.text == "The answer is 42."


class ChunkStream(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def test_gzip_encoded_stream_is_decoded_and_raw_stream_read_directly() -> None:
    import gzip

    data = stream_bytes()
    compressed = gzip.compress(data)
    responses = [
        httpx2.Response(
            200,
            headers={"content-encoding": "gzip"},
            stream=ChunkStream([compressed[:50], compressed[50:]]),
        ),
        httpx2.Response(200, stream=ChunkStream([data[i : i + 7] for i in range(0, len(data), 7)])),
    ]
    for _ in range(2):
        call = await make_client(lambda request: responses.pop(0), sleeps=[]).complete(REQUEST)
        assert call.response.text == "The answer is 42."
        assert call.exchange is not None
        assert call.exchange.response_body == data  # decoded bytes, as the adapter read them


async def test_error_body_is_read_up_to_its_cap_only() -> None:
    from thoughtline.providers.client import MAX_ERROR_BODY_BYTES

    served: list[int] = []

    class HugeErrorBody(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(64):  # 64 MB on offer
                served.append(1)
                yield b"x" * 1_000_000

    call = await make_client(
        lambda request: httpx2.Response(401, stream=HugeErrorBody()), sleeps=[]
    ).complete(REQUEST)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_AUTH_ERROR"
    assert call.exchange is not None and call.exchange.response_body is not None
    assert len(call.exchange.response_body) == MAX_ERROR_BODY_BYTES
    assert len(served) <= 2  # reading stopped at the cap


async def test_captured_stream_is_capped_and_says_so() -> None:
    data = stream_bytes()
    client = make_client(
        lambda request: httpx2.Response(
            200, stream=ChunkStream([data[i : i + 64] for i in range(0, len(data), 64)])
        ),
        sleeps=[],
    )
    client.max_body_bytes = 256
    call = await client.complete(REQUEST)
    assert call.response.text == "The answer is 42."  # decoding goes on past the cap
    assert call.exchange is not None
    assert call.exchange.response_body == data[:256]
    assert call.exchange.response_body_truncated is True
    assert call.exchange.to_dict()["response_body_truncated"] is True


async def test_reading_stops_at_the_first_error() -> None:
    data = stream_bytes()
    broken = data[: data.index(b"event: content_block_start")] + (
        b'event: error\ndata: {"type":"error","error":{"type":"invalid_request_error",'
        b'"message":"bad"}}\n\n'
    )
    pulled: list[int] = []

    class EndlessAfterError(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield broken
            for _ in range(10_000):
                pulled.append(1)
                yield b": keep-alive\n\n"

    call = await make_client(
        lambda request: httpx2.Response(200, stream=EndlessAfterError()), sleeps=[]
    ).complete(REQUEST)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_BAD_REQUEST"
    assert len(pulled) <= 1

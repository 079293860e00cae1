"""A local OpenAI-compatible server (llama.cpp) that fails mid-stream: an error no retry
can fix is not retried and is reported in the server's words; an interruption before any
content never claims that output was kept."""

from __future__ import annotations

import httpx2

from thoughtline.model.events import StreamError
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.client import ProviderClient, RetryPolicy
from thoughtline.providers.endpoints import EndpointRegistry

REQUEST = ModelRequest.simple("gemma-3-270m", "Fasse dieses lange Dokument zusammen …")
HEAD = (
    b'data: {"id":"chatcmpl-l1","object":"chat.completion.chunk","created":1767232000,'
    b'"model":"gemma-3-270m","choices":[{"index":0,"delta":{"role":"assistant",'
    b'"content":null},"finish_reason":null}]}\n\n'
)
# llama-cpp-python reports the overflow as a 500 inside the HTTP-200 stream.
OVERFLOW = (
    b'data: {"error":{"message":"Requested tokens (2358) exceed context window of 2048",'
    b'"type":"internal_server_error","code":500}}\n\n'
)


def _client(handler: httpx2.MockTransport, sleeps: list[float]) -> ProviderClient:
    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return ProviderClient(
        EndpointRegistry(environ={}).resolve("llamacpp"),
        http_client=httpx2.AsyncClient(transport=handler),
        retry=RetryPolicy(max_retries=3, initial_delay_s=0.5, jitter=0.0),
        sleep=fake_sleep,
    )


async def test_context_overflow_mid_stream_is_not_retried_and_says_what_the_server_said() -> None:
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=HEAD + OVERFLOW
        )

    sleeps: list[float] = []
    call = await _client(httpx2.MockTransport(handler), sleeps).complete(REQUEST)
    assert attempts == [1]
    assert sleeps == []
    error = call.response.error
    assert error == StreamError(
        code="PROVIDER_REQUEST_TOO_LARGE",
        message="llamacpp reported an error during the response (500): Requested tokens "
        "(2358) exceed context window of 2048. Shorten the request.",
        retryable=False,
        status=500,
        provider_error_type="internal_server_error",
    )


async def test_llama_server_overflow_shape_is_not_retried_either() -> None:
    body = (
        b'data: {"error":{"code":400,"message":"the request exceeds the available context '
        b'size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":2358,'
        b'"n_ctx":2048}}\n\n'
    )
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    call = await _client(httpx2.MockTransport(handler), []).complete(REQUEST)
    assert attempts == [1]
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_REQUEST_TOO_LARGE"
    assert "exceeds the available context size" in call.response.error.message


async def test_interruption_before_any_content_does_not_claim_kept_output() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=HEAD)

    sleeps: list[float] = []
    call = await _client(httpx2.MockTransport(handler), sleeps).complete(REQUEST)
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert "What arrived is kept" not in error.message
    assert error.message.endswith("Nothing of the answer had arrived; try again.")
    assert len(sleeps) == 3  # a broken connection may be transient: retried

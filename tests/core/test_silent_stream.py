"""A server that accepts a streamed request and closes without a byte (llama-cpp-python
when the prompt exceeds its context window) is asked once unstreamed, and what it says
then is the error: no retries of what cannot succeed, and no claim that anything arrived.
Against a real loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from thoughtline.model.requests import ModelRequest
from thoughtline.providers.client import ProviderClient, RetryPolicy
from thoughtline.providers.endpoints import EndpointRegistry, EndpointSettings

OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you "
        "requested 29006 tokens (28974 in the messages, 32 in the completion).",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@asynccontextmanager
async def silent_when_streamed(
    unstreamed_status: int, error_body: dict[str, object] = OVERFLOW
) -> AsyncIterator[tuple[str, list[dict]]]:
    """Streamed requests get 200 and an empty body; unstreamed ones ``unstreamed_status``
    with the overflow error (or a tiny answer when it is 200). Yields the base URL and
    the bodies received."""
    received: list[dict] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = json.loads(await reader.readexactly(length))
        received.append(body)
        if body.get("stream"):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        else:
            answer = (
                error_body
                if unstreamed_status >= 400
                else {
                    "choices": [
                        {"index": 0, "message": {"content": "H"}, "finish_reason": "length"}
                    ]
                }
            )
            payload = json.dumps(answer).encode()
            writer.write(
                f"HTTP/1.1 {unstreamed_status} X\r\ncontent-type: application/json\r\n"
                f"content-length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", received
    finally:
        server.close()
        await server.wait_closed()


def client_for(base_url: str) -> ProviderClient:
    registry = EndpointRegistry({"llamacpp": EndpointSettings(base_url=base_url)}, environ={})
    return ProviderClient(
        registry.resolve("llamacpp"),
        retry=RetryPolicy(max_retries=2, initial_delay_s=0.01, max_delay_s=0.02),
    )


async def test_the_unstreamed_answer_says_why_and_nothing_is_retried() -> None:
    async with silent_when_streamed(400) as (base_url, received):
        client = client_for(base_url)
        try:
            call = await client.complete(ModelRequest.simple("local", "word " * 10_000))
        finally:
            await client.aclose()
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_REQUEST_TOO_LARGE"
    assert "maximum context length is 2048 tokens" in error.message
    assert "closed the stream without a byte" in error.message
    assert "kept" not in error.message
    assert call.response.text == ""
    # One streamed attempt, then one unstreamed question asking for a single token.
    assert [body.get("stream") for body in received] == [True, False]
    assert received[1]["max_tokens"] == 1 or received[1].get("max_completion_tokens") == 1
    assert call.exchange is not None and len(call.exchange.attempts) == 1


async def test_a_server_that_answers_unstreamed_gets_its_stream_retried_as_usual() -> None:
    async with silent_when_streamed(200) as (base_url, received):
        client = client_for(base_url)
        try:
            call = await client.complete(ModelRequest.simple("local", "hello"))
        finally:
            await client.aclose()
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert "Nothing of the answer had arrived" in error.message
    # Asked unstreamed once only; the stream itself is retried under the retry policy.
    assert [body.get("stream") for body in received] == [True, False, True, True]


async def test_a_key_the_server_echoes_in_its_answer_is_redacted() -> None:
    key = "sk-silent-canary-0123456789abcdef"
    echo = {"error": {"message": f"maximum context length exceeded for key {key}"}}
    async with silent_when_streamed(400, echo) as (base_url, _):
        registry = EndpointRegistry(
            {"llamacpp": EndpointSettings(base_url=base_url, api_key_env="LOCAL_KEY")},
            environ={"LOCAL_KEY": key},
        )
        client = ProviderClient(registry.resolve("llamacpp"), retry=RetryPolicy(max_retries=0))
        try:
            call = await client.complete(ModelRequest.simple("local", "word " * 10))
        finally:
            await client.aclose()
    error = call.response.error
    assert error is not None and "maximum context length" in error.message
    assert key not in error.message
    assert call.exchange is not None and key not in str(call.exchange.to_dict())

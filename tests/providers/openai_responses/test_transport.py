"""The adapter behind the real transport, served by the renderer through a mock HTTP layer."""

from __future__ import annotations

import json

import httpx2

from thoughtline.model.requests import ModelRequest, ReasoningRequest
from thoughtline.providers.client import ProviderClient, RetryPolicy
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.transcript import SimReasoning, SimRequest, Transcript

KEY = "sk-test-openai-responses-0000"
RENDERER = OpenAIResponsesRenderer()
TRANSCRIPT = Transcript(
    answer="Bonjour → monde 🌍",
    reasoning=(SimReasoning(kind="summary", text="**Greeting** in French é"),),
    reasoning_tokens=64,
    response_id="resp_e2e",
)


def _client(handler: httpx2.MockTransport) -> ProviderClient:
    endpoint = EndpointRegistry(environ={"OPENAI_API_KEY": KEY}).resolve("openai")
    return ProviderClient(
        endpoint,
        http_client=httpx2.AsyncClient(transport=handler),
        retry=RetryPolicy(max_retries=0),
    )


def _serve(seen: list[httpx2.Request], status: int = 200) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        body = json.loads(request.content)
        sim = SimRequest(
            method=request.method,
            path=request.url.path,
            query={},
            headers=dict(request.headers),
            body=body,
            profile="openai",
            model=body["model"],
            stream=body["stream"],
        )
        if status != 200:
            return httpx2.Response(status, content=RENDERER.error_body(status, "Slow down."))
        if RENDERER.is_stream(sim):
            data = b"".join(frame.data for frame in RENDERER.stream_frames(TRANSCRIPT, sim))
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)
        return httpx2.Response(
            200,
            headers={"content-type": "application/json"},
            content=RENDERER.body(TRANSCRIPT, sim),
        )

    return httpx2.MockTransport(handler)


async def test_stream_and_body_through_the_transport_agree() -> None:
    seen: list[httpx2.Request] = []
    client = _client(_serve(seen))
    shown = ReasoningRequest(enabled=True, effort="high")
    streamed = await client.complete(ModelRequest.simple("gpt-5.5", "Say hi", reasoning=shown))
    whole = await client.complete(
        ModelRequest.simple("gpt-5.5", "Say hi", reasoning=shown, stream=False)
    )
    assert streamed.response == whole.response
    response = streamed.response
    assert response.error is None
    assert response.text == "Bonjour → monde 🌍"
    assert [part.kind for part in response.reasoning_parts] == ["summary", "encrypted"]
    assert response.reasoning_parts[0].text == "**Greeting** in French é"
    assert response.usage.reasoning_tokens == 64
    assert [request.url.path for request in seen] == ["/v1/responses", "/v1/responses"]
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(seen[0].content)["reasoning"] == {"effort": "high", "summary": "auto"}


async def test_http_error_through_the_transport() -> None:
    client = _client(_serve([], status=429))
    call = await client.complete(ModelRequest.simple("gpt-5.5", "Say hi"))
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_RATE_LIMITED"
    assert error.retryable is True
    assert "Slow down." in error.message

"""A provider's own token count (the gateway's ``count_tokens``) through the transport,
on a mock HTTP layer: the count of the call's input, and each way a count can fail
as a call's error with its code, the key never in the message."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from thoughtline.errors import ProviderError
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.counting import count_input_tokens, counting_wires
from thoughtline.providers.endpoints import EndpointRegistry

KEY = "sk-ant-test-count-0000"
REQUEST = ModelRequest.simple("claude-sonnet-4-6", "Hi", max_output_tokens=100)


def _count(endpoint: str, answer: httpx2.Response, seen: list[httpx2.Request]) -> int | None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answer

    environ = {"ANTHROPIC_API_KEY": KEY, "DEEPSEEK_API_KEY": KEY}
    resolved = EndpointRegistry(environ=environ).resolve(endpoint)
    client = ProviderClient(
        resolved, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    )
    return asyncio.run(count_input_tokens(client, REQUEST))


def test_a_count_sends_the_calls_input_without_generation_fields() -> None:
    seen: list[httpx2.Request] = []
    assert _count("anthropic", httpx2.Response(200, json={"input_tokens": 12}), seen) == 12
    (sent,) = seen
    assert sent.url.path == "/v1/messages/count_tokens"
    assert sent.headers["x-api-key"] == KEY
    assert json.loads(sent.content) == {
        "model": "claude-sonnet-4-6",
        "messages": [{"role": "user", "content": "Hi"}],
    }


def test_an_answer_without_a_count_is_a_malformed_response() -> None:
    with pytest.raises(ProviderError) as failed:
        _count("anthropic", httpx2.Response(200, json={"tokens": "many"}), [])
    assert failed.value.code == "PROVIDER_MALFORMED_RESPONSE"
    assert "without a count" in failed.value.message


def test_a_refused_count_has_the_calls_code_and_no_key_in_its_message() -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"bad {KEY}"}}
    with pytest.raises(ProviderError) as failed:
        _count("anthropic", httpx2.Response(401, json=body), [])
    assert failed.value.code == "PROVIDER_AUTH_ERROR"
    assert KEY not in failed.value.message


def test_a_wire_without_a_count_api_is_asked_nothing() -> None:
    seen: list[httpx2.Request] = []
    assert _count("deepseek", httpx2.Response(200, json={"input_tokens": 1}), seen) is None
    assert seen == []
    assert counting_wires() == ("anthropic-messages", "gemini")

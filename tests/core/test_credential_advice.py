"""Every adapter's error mapping: a rejected key names the endpoint and the variable the
key came from (one shared advice in http_errors), never the key."""

from __future__ import annotations

import json

import pytest

from tests.support import call_context
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.providers.http_errors import provider_error
from thoughtline.providers.registry import wire_for

SECRET = "sk-secret-00aa11bb22cc"

# endpoint -> (wire API, model, variable, a 401 body in the provider's own shape)
CASES: dict[str, tuple[str, str, str, bytes]] = {
    "anthropic": (
        "anthropic-messages",
        "claude-sonnet-4-6",
        "ANTHROPIC_API_KEY",
        b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    ),
    "openai": (
        "openai-responses",
        "gpt-5.5",
        "OPENAI_API_KEY",
        b'{"error":{"message":"Incorrect API key provided","type":"invalid_request_error",'
        b'"param":null,"code":"invalid_api_key"}}',
    ),
    "openrouter": (
        "openai-chat",
        "anthropic/claude-sonnet-4.6",
        "OPENROUTER_API_KEY",
        b'{"error":{"code":401,"message":"No auth credentials found"}}',
    ),
    "gemini": (
        "gemini",
        "gemini-3-pro",
        "GEMINI_API_KEY",
        b'{"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}',
    ),
}


@pytest.mark.parametrize("endpoint", list(CASES))
def test_each_adapter_names_the_variable_on_401(endpoint: str) -> None:
    wire_api, model, variable, body = CASES[endpoint]
    context = call_context(endpoint, model, environ={variable: SECRET})
    error = wire_for(wire_api).parse_error(401, {}, body, context)
    assert error.code == "PROVIDER_AUTH_ERROR"
    assert f"Endpoint {endpoint!r} rejected the API key from {variable}" in error.message
    assert SECRET not in error.message
    # Without a context (a direct caller) the generic advice stays.
    generic = wire_for(wire_api).parse_error(401, {}, body)
    assert "Check the API key for this provider." in generic.message


def test_gemini_invalid_key_reported_as_400_names_the_variable() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                    }
                ],
            }
        }
    ).encode()
    context = call_context("gemini", "gemini-3-pro", environ={"GEMINI_API_KEY": SECRET})
    error = wire_for("gemini").parse_error(400, {}, body, context)
    assert error.code == "PROVIDER_AUTH_ERROR"
    assert "GEMINI_API_KEY" in error.message


def test_ollama_behind_a_keyed_proxy_names_its_variable() -> None:
    settings = {
        "remote-ollama": EndpointSettings(
            wire_api="ollama", base_url="http://127.0.0.1:9", api_key_env="REMOTE_OLLAMA_KEY"
        )
    }
    context = call_context(
        "remote-ollama",
        "qwen3:8b",
        environ={"REMOTE_OLLAMA_KEY": SECRET},
        settings=settings,
        capability_endpoint="ollama",
    )
    error = wire_for("ollama").parse_error(403, {}, b'{"error":"forbidden"}', context)
    assert error.code == "PROVIDER_PERMISSION_DENIED"
    assert "The API key from REMOTE_OLLAMA_KEY is not allowed to do this" in error.message
    assert "endpoint 'remote-ollama'" in error.message


def test_a_401_whose_body_says_bad_request_is_still_about_the_key() -> None:
    context = call_context("openai", "gpt-5.5", environ={"OPENAI_API_KEY": SECRET})
    error = provider_error(
        403,
        {},
        provider="OpenAI",
        message="not allowed",
        code="PROVIDER_BAD_REQUEST",
        endpoint=context.endpoint,
    )
    assert error.code == "PROVIDER_PERMISSION_DENIED"
    assert "OPENAI_API_KEY" in error.message
    other = provider_error(500, {}, provider="OpenAI", message="x", endpoint=context.endpoint)
    assert "OPENAI_API_KEY" not in other.message

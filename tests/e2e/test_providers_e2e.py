"""Every endpoint, end to end over real HTTP against the simulator on 127.0.0.1:
request shaping as received by the server, reasoning parts as decoded, every fault."""

from __future__ import annotations

import pytest

from thoughtline import (
    EndpointRegistry,
    ModelRequest,
    ProviderCall,
    ProviderClient,
    ReasoningDelta,
    ReasoningRequest,
    RetryPolicy,
    StreamError,
    Timeouts,
)
from thoughtline.testing import Fault, Simulator

from .conftest import CANARY_KEY, ENDPOINT_MODELS

ANSWER = "Here is a short, direct answer from the simulated model."
REASONING = "The user wants a short, direct answer."

# What each endpoint returns when reasoning is requested (the default transcript has one
# reasoning block with a signature), and what it sends anyway when nothing is requested.
REQUESTED_KINDS = {
    "anthropic": ["summary"],
    "openai": ["summary", "encrypted"],
    "openrouter": ["summary"],
    "gemini": ["summary", "encrypted"],
    "deepseek": ["raw"],
    "vllm": ["raw"],
    "llamacpp": ["raw"],
    "ollama": ["raw"],
}
UNREQUESTED_KINDS = {
    "anthropic": [],
    "openai": [],
    "openrouter": [],
    "gemini": ["encrypted"],  # Gemini 3 thinks by default and signs its answer
    "deepseek": ["raw"],  # DeepSeek reasoner always returns reasoning_content
    "vllm": [],
    "llamacpp": [],
    "ollama": [],  # hidden mode tells a thinking model think: false
}
# The request keys that carry a reasoning request on each wire, as the server saw them.
REASONING_KEYS = {
    "anthropic": ("thinking",),
    "openai": ("reasoning", "include"),
    "openrouter": ("reasoning",),
    "gemini": ("generationConfig",),
    "deepseek": ("thinking",),
    "vllm": ("chat_template_kwargs",),
    "llamacpp": ("chat_template_kwargs",),
    "ollama": ("think",),
}


def client_for(environ: dict[str, str], endpoint: str, **options: object) -> ProviderClient:
    options.setdefault("retry", RetryPolicy(max_retries=2, initial_delay_s=0.01, max_delay_s=0.05))
    return ProviderClient(EndpointRegistry(environ=environ).resolve(endpoint), **options)  # type: ignore[arg-type]


async def run(client: ProviderClient, request: ModelRequest) -> tuple[ProviderCall, list[object]]:
    events: list[object] = []
    async with client, client.call(request) as call:
        async for event in call:
            events.append(event)
    return call, events


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_reasoning_requested(
    sim: Simulator, environ: dict[str, str], endpoint: str, stream: bool
) -> None:
    request = ModelRequest.simple(
        ENDPOINT_MODELS[endpoint], "Why?", reasoning=ReasoningRequest(enabled=True), stream=stream
    )
    call, _events = await run(client_for(environ, endpoint), request)
    response = call.response
    assert response.error is None
    assert response.text == ANSWER
    assert [part.kind for part in response.reasoning_parts] == REQUESTED_KINDS[endpoint]
    assert response.reasoning_parts[0].text.startswith(REASONING)
    if endpoint != "ollama":  # Ollama reports no separate reasoning count
        assert response.usage.reasoning_tokens == 96
    received = sim.requests[-1]
    assert received.stream is stream
    assert any(key in (received.body or {}) for key in REASONING_KEYS[endpoint])
    if endpoint in ("anthropic",):
        assert received.headers["x-api-key"] == CANARY_KEY
    elif endpoint == "gemini":
        assert received.headers["x-goog-api-key"] == CANARY_KEY
        assert "key" not in received.query
    elif endpoint != "ollama":
        assert received.headers["authorization"] == f"Bearer {CANARY_KEY}"
    exchange = call.exchange
    assert exchange is not None
    assert CANARY_KEY not in str(exchange.to_dict())
    assert exchange.status == 200
    assert exchange.timings.first_byte_ms is not None


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_hidden_asks_for_no_reasoning_and_reports_what_arrives_anyway(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    request = ModelRequest.simple(
        ENDPOINT_MODELS[endpoint], "Why?", reasoning=ReasoningRequest(enabled=False)
    )
    call, _ = await run(client_for(environ, endpoint), request)
    body = sim.requests[-1].body or {}
    if endpoint == "openrouter":
        assert body["reasoning"] == {"exclude": True}
    elif endpoint == "gemini":
        assert "thinkingConfig" not in body.get("generationConfig", {})
    elif endpoint in ("vllm", "llamacpp"):  # the server's switch: do not think
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
    elif endpoint == "ollama":
        assert body["think"] is False
    else:
        assert not any(key in body for key in REASONING_KEYS[endpoint])
    assert [part.kind for part in call.response.reasoning_parts] == UNREQUESTED_KINDS[endpoint]
    assert call.response.text == ANSWER


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_rate_limit_with_retry_after_is_retried(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.rate_limited(retry_after_s=0.05))
    request = ModelRequest.simple(
        ENDPOINT_MODELS[endpoint], "Why?", reasoning=ReasoningRequest(enabled=True)
    )
    call, _ = await run(client_for(environ, endpoint), request)
    assert call.response.error is None
    assert call.response.text == ANSWER
    assert len(sim.requests) == 2
    assert call.exchange is not None
    assert [a.status for a in call.exchange.attempts] == [429, 200]
    assert call.exchange.attempts[1].waited_before_s == pytest.approx(0.05)


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_overloaded_until_retries_run_out(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.overloaded(), times=3)
    request = ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?")
    call, events = await run(client_for(environ, endpoint), request)
    error = call.response.error
    assert error is not None
    assert events[-1] == error
    assert (error.code, error.retryable, error.status) == ("PROVIDER_OVERLOADED", True, 529)
    assert endpoint in error.message.lower()  # the message names the endpoint
    assert len(sim.requests) == 3


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_server_error_then_success(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.server_error(500))
    call, _ = await run(
        client_for(environ, endpoint), ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?")
    )
    assert call.response.error is None
    assert call.response.text == ANSWER


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_connection_cut_mid_reasoning_keeps_what_arrived(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.cut_mid_reasoning())
    request = ModelRequest.simple(
        ENDPOINT_MODELS[endpoint], "Why?", reasoning=ReasoningRequest(enabled=True)
    )
    call, events = await run(client_for(environ, endpoint), request)
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert any(isinstance(event, ReasoningDelta) for event in events)
    assert call.response.text == ""
    part = call.response.reasoning_parts[0]
    assert part.complete is False
    assert REASONING.startswith(part.text[:10])
    assert len(sim.requests) == 1  # content had been delivered: no retry


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_malformed_json_frame(sim: Simulator, environ: dict[str, str], endpoint: str) -> None:
    sim.inject(Fault.malformed_json())
    _call, events = await run(
        client_for(environ, endpoint), ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?")
    )
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_MALFORMED_RESPONSE"
    assert events[-1].retryable is False
    assert len(sim.requests) == 1


@pytest.mark.parametrize("endpoint", list(ENDPOINT_MODELS))
async def test_error_event_inside_a_200_stream(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.stream_error("overloaded", "Overloaded (simulated)."))
    request = ModelRequest.simple(
        ENDPOINT_MODELS[endpoint], "Why?", reasoning=ReasoningRequest(enabled=True)
    )
    call, events = await run(client_for(environ, endpoint), request)
    assert isinstance(events[-1], StreamError)
    assert events[-1].code == "PROVIDER_OVERLOADED"
    assert events[-1].retryable is True
    assert call.response.reasoning_parts  # what arrived before the error is kept
    assert len(sim.requests) == 1


async def test_error_event_before_any_content_is_retried(
    sim: Simulator, environ: dict[str, str]
) -> None:
    # Hidden mode on Anthropic: no reasoning frames, so the error comes before content.
    sim.inject(Fault.stream_error("overloaded", "Overloaded (simulated)."))
    call, _ = await run(
        client_for(environ, "anthropic"), ModelRequest.simple("claude-sonnet-4-6", "Why?")
    )
    assert call.response.error is None
    assert call.response.text == ANSWER
    assert len(sim.requests) == 2


@pytest.mark.parametrize("endpoint", ["anthropic", "gemini", "ollama"])
async def test_slow_first_byte_times_out_then_retries(
    sim: Simulator, environ: dict[str, str], endpoint: str
) -> None:
    sim.inject(Fault.slow_first_byte(1.0))
    client = client_for(environ, endpoint, timeouts=Timeouts(read=0.2))
    call, _ = await run(client, ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?"))
    assert call.response.error is None
    assert call.response.text == ANSWER
    assert call.exchange is not None
    assert [a.error_code for a in call.exchange.attempts] == ["PROVIDER_TIMEOUT", None]


async def test_unreachable_server_says_what_to_do(environ: dict[str, str]) -> None:
    environ = {**environ, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    client = client_for(
        environ, "anthropic", retry=RetryPolicy(max_retries=1, initial_delay_s=0.01)
    )
    call, _ = await run(client, ModelRequest.simple("claude-sonnet-4-6", "Why?"))
    error = call.response.error
    assert error is not None
    assert error.code == "PROVIDER_UNREACHABLE"
    assert "Cannot reach anthropic at http://127.0.0.1:9" in error.message
    assert "Check that the server is running" in error.message


async def test_think_tags_server_splits_reasoning_from_content(
    sim_server: object, sim: Simulator, environ: dict[str, str]
) -> None:
    from thoughtline.providers.endpoints import EndpointSettings

    base_url = sim_server.base_url_for("llamacpp-think-tags")  # type: ignore[attr-defined]
    settings = {
        "tagged": EndpointSettings(
            wire_api="openai-chat", base_url=base_url, reasoning_field="think_tags"
        )
    }
    endpoint = EndpointRegistry(settings, environ=environ).resolve("tagged")
    request = ModelRequest.simple("qwen3", "Why?", reasoning=ReasoningRequest(enabled=True))
    call, _ = await run(ProviderClient(endpoint), request)
    assert call.response.text == ANSWER
    assert [part.kind for part in call.response.reasoning_parts] == ["raw"]
    assert call.response.reasoning_parts[0].text.startswith(REASONING)
    assert "<think>" in (call.exchange.response_body or b"").decode()  # type: ignore[union-attr]


async def test_connection_cut_mid_answer_keeps_reasoning_whole(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.cut_mid_answer())
    request = ModelRequest.simple(
        "claude-sonnet-4-6", "Why?", reasoning=ReasoningRequest(enabled=True)
    )
    call, _ = await run(client_for(environ, "anthropic"), request)
    assert call.response.error is not None
    assert call.response.error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert call.response.reasoning_parts[0].complete is True
    assert ANSWER.startswith(call.response.text)
    assert 0 < len(call.response.text) < len(ANSWER)

"""How each endpoint authenticates, and what a rejected key says: over real HTTP against
the simulator, asserting the headers and bodies the server received."""

from __future__ import annotations

import pytest

from thoughtline import (
    EndpointRegistry,
    ModelRequest,
    ProviderCall,
    ProviderClient,
    ReasoningRequest,
    RetryPolicy,
)
from thoughtline.providers.endpoints import AuthStyle, EndpointSettings
from thoughtline.testing import Fault, Simulator, SimulatorServer

from .conftest import CANARY_KEY, ENDPOINT_MODELS

PROXY_KEY = "proxy-key-7d1c0aa95e3b"
ANSWER = "Here is a short, direct answer from the simulated model."

# wire API -> (simulator profile, a model it serves)
WIRES: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("anthropic", "claude-sonnet-4-6"),
    "openai-responses": ("openai", "gpt-5.5"),
    "openai-chat": ("vllm", "qwen3-32b"),
    "gemini": ("gemini", "gemini-3-pro"),
    "ollama": ("ollama", "qwen3:8b"),
}
# The key as each wire API's own SDK sends it: header name -> value.
KEY_HEADERS: dict[str, tuple[str, str]] = {
    "anthropic-messages": ("x-api-key", PROXY_KEY),
    "openai-responses": ("authorization", f"Bearer {PROXY_KEY}"),
    "openai-chat": ("authorization", f"Bearer {PROXY_KEY}"),
    "gemini": ("x-goog-api-key", PROXY_KEY),
    "ollama": ("authorization", f"Bearer {PROXY_KEY}"),
}
CREDENTIAL_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")


def proxy_registry(
    sim_server: SimulatorServer,
    wire_api: str,
    *,
    environ: dict[str, str],
    api_key_env: str | None = "MY_PROXY_KEY",
    auth: AuthStyle | None = None,
) -> EndpointRegistry:
    profile, _ = WIRES[wire_api]
    settings = {
        "my-proxy": EndpointSettings(
            wire_api=wire_api,
            base_url=sim_server.base_url_for(profile),
            api_key_env=api_key_env,
            auth=auth,
        )
    }
    return EndpointRegistry(settings, environ=environ)


async def run(client: ProviderClient, request: ModelRequest) -> ProviderCall:
    async with client, client.call(request) as call:
        async for _ in call:
            pass
    return call


def retry() -> RetryPolicy:
    return RetryPolicy(max_retries=0)


@pytest.mark.parametrize("wire_api", list(WIRES))
async def test_user_defined_endpoint_sends_the_key_the_way_its_wire_api_expects(
    sim: Simulator, sim_server: SimulatorServer, wire_api: str
) -> None:
    environ = {"MY_PROXY_KEY": PROXY_KEY}
    endpoint = proxy_registry(sim_server, wire_api, environ=environ).resolve("my-proxy")
    call = await run(
        ProviderClient(endpoint, retry=retry()),
        ModelRequest.simple(WIRES[wire_api][1], "Why?"),
    )
    assert call.response.error is None
    assert call.response.text == ANSWER
    headers = sim.requests[-1].headers
    name, value = KEY_HEADERS[wire_api]
    assert headers[name] == value
    assert [h for h in CREDENTIAL_HEADERS if h in headers] == [name]  # only that one
    assert "key" not in sim.requests[-1].query
    if wire_api == "anthropic-messages":
        assert headers["anthropic-version"] == "2023-06-01"


async def test_the_endpoint_can_say_otherwise() -> None:
    settings = {
        "bearer-claude": EndpointSettings(
            wire_api="anthropic-messages", base_url="http://127.0.0.1:9", auth="bearer"
        ),
        "open-claude": EndpointSettings(
            wire_api="anthropic-messages", base_url="http://127.0.0.1:9", auth="none"
        ),
    }
    registry = EndpointRegistry(settings, environ={})
    assert registry.resolve("bearer-claude").auth == "bearer"
    assert registry.resolve("open-claude").auth == "none"
    # Built-ins keep their own scheme; one told to speak another wire API follows it.
    assert registry.resolve("anthropic").auth == "x-api-key"
    assert registry.resolve("ollama").auth == "none"
    overridden = EndpointRegistry(
        {"openrouter": EndpointSettings(wire_api="anthropic-messages")}, environ={}
    ).resolve("openrouter")
    assert overridden.auth == "x-api-key"


@pytest.mark.parametrize(
    ("model", "thinking", "family"),
    [
        ("claude-sonnet-4-6", {"type": "adaptive", "display": "summarized"}, "claude-sonnet-4-6"),
        ("claude-opus-4-8", {"type": "adaptive", "display": "summarized"}, "claude-4-7-plus"),
        ("claude-sonnet-4-5", {"type": "enabled", "budget_tokens": 4096}, "claude-legacy-budget"),
    ],
)
async def test_claude_behind_a_user_defined_endpoint_is_shaped_like_anthropic(
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    model: str,
    thinking: dict[str, object],
    family: str,
) -> None:
    request = ModelRequest.simple(model, "Why?", reasoning=ReasoningRequest(enabled=True))
    proxy_environ = {"MY_PROXY_KEY": PROXY_KEY}
    proxy = proxy_registry(sim_server, "anthropic-messages", environ=proxy_environ)
    proxied = await run(ProviderClient(proxy.resolve("my-proxy"), retry=retry()), request)
    proxied_body = sim.requests[-1].body
    direct = await run(
        ProviderClient(EndpointRegistry(environ=environ).resolve("anthropic"), retry=retry()),
        request,
    )
    direct_body = sim.requests[-1].body
    assert proxied_body is not None and proxied_body["thinking"] == thinking
    assert proxied_body == direct_body  # exactly as the anthropic endpoint does
    assert proxied.context.capability == direct.context.capability
    assert proxied.context.capability.family == family
    assert [part.kind for part in proxied.response.reasoning_parts] == ["summary"]


@pytest.mark.parametrize(("wire_api", "builtin"), [("gemini", "gemini"), ("ollama", "ollama")])
async def test_gemini_and_ollama_behind_a_user_defined_endpoint_use_their_capabilities(
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    wire_api: str,
    builtin: str,
) -> None:
    model = WIRES[wire_api][1]
    request = ModelRequest.simple(model, "Why?", reasoning=ReasoningRequest(enabled=True))
    proxy = proxy_registry(sim_server, wire_api, environ={"MY_PROXY_KEY": PROXY_KEY})
    proxied = await run(ProviderClient(proxy.resolve("my-proxy"), retry=retry()), request)
    proxied_body = sim.requests[-1].body
    direct = await run(
        ProviderClient(EndpointRegistry(environ=environ).resolve(builtin), retry=retry()),
        request,
    )
    assert proxied.context.capability == direct.context.capability
    assert proxied_body == sim.requests[-1].body


# -- a rejected key names the endpoint and the variable ------------------------------

KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "vllm": "VLLM_API_KEY",
    "llamacpp": "LLAMACPP_API_KEY",
}


@pytest.mark.parametrize("endpoint", list(KEY_VARIABLES))
@pytest.mark.parametrize(
    ("status", "code"), [(401, "PROVIDER_AUTH_ERROR"), (403, "PROVIDER_PERMISSION_DENIED")]
)
async def test_rejected_key_names_the_endpoint_and_its_variable(
    sim: Simulator, environ: dict[str, str], endpoint: str, status: int, code: str
) -> None:
    sim.inject(Fault.http_error(status, f"invalid key {CANARY_KEY}"))
    client = ProviderClient(EndpointRegistry(environ=environ).resolve(endpoint), retry=retry())
    call = await run(client, ModelRequest.simple(ENDPOINT_MODELS[endpoint], "Why?"))
    error = call.response.error
    assert error is not None
    assert (error.code, error.status, error.retryable) == (code, status, False)
    variable = KEY_VARIABLES[endpoint]
    assert f"endpoint {endpoint!r}" in error.message.lower() or f"{endpoint!r}" in error.message
    assert variable in error.message
    assert CANARY_KEY not in error.message
    assert "Check the API key for this provider" not in error.message


@pytest.mark.parametrize("wire_api", list(WIRES))
async def test_rejected_key_of_a_user_defined_endpoint_names_its_api_key_env(
    sim: Simulator, sim_server: SimulatorServer, wire_api: str
) -> None:
    sim.inject(Fault.http_error(401, "unauthorized"))
    registry = proxy_registry(sim_server, wire_api, environ={"MY_PROXY_KEY": PROXY_KEY})
    call = await run(
        ProviderClient(registry.resolve("my-proxy"), retry=retry()),
        ModelRequest.simple(WIRES[wire_api][1], "Why?"),
    )
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_AUTH_ERROR"
    assert "Endpoint 'my-proxy' rejected the API key from MY_PROXY_KEY" in error.message
    assert "check that MY_PROXY_KEY holds a valid, current key for my-proxy" in error.message
    assert PROXY_KEY not in error.message


@pytest.mark.parametrize(
    ("api_key_env", "expected"),
    [
        ("MY_PROXY_KEY", "sent no API key because MY_PROXY_KEY is not set"),
        (None, "set api_key_env under [providers.my-proxy] in thoughtline.toml"),
    ],
)
async def test_401_without_a_key_says_how_to_give_one(
    sim: Simulator, sim_server: SimulatorServer, api_key_env: str | None, expected: str
) -> None:
    sim.inject(Fault.http_error(401, "unauthorized"))
    registry = proxy_registry(sim_server, "openai-chat", environ={}, api_key_env=api_key_env)
    call = await run(
        ProviderClient(registry.resolve("my-proxy"), retry=retry()),
        ModelRequest.simple("qwen3-32b", "Why?"),
    )
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_AUTH_ERROR"
    assert expected in error.message
    assert not any(h in sim.requests[-1].headers for h in CREDENTIAL_HEADERS)


async def test_ollama_401_says_no_key_was_sent(sim: Simulator, environ: dict[str, str]) -> None:
    sim.inject(Fault.http_error(401, "unauthorized"))
    client = ProviderClient(EndpointRegistry(environ=environ).resolve("ollama"), retry=retry())
    call = await run(client, ModelRequest.simple("qwen3:8b", "Why?"))
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_AUTH_ERROR"
    assert "Endpoint 'ollama' sent no API key" in error.message
    assert "[providers.ollama]" in error.message

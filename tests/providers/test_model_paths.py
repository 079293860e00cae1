"""A model id never moves a request off its wire's path, even one planning would refuse
(the provider layer takes any ``ModelRequest``): Gemini's URL carries the id as one
percent-encoded segment under ``/v1beta/models/``, every other wire keeps it in the body,
and Anthropic's model API is asked at ``/v1/models/{id}`` the same way."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import httpx2
import pytest

from tests.conftest import CANARY_KEY
from tests.support import HOSTILE_MODEL_IDS, call_context
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.discovery import refresh_models
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.registry import wire_for
from thoughtline.testing import Simulator

ENDPOINTS = (
    "anthropic",
    "openai",
    "openrouter",
    "gemini",
    "deepseek",
    "vllm",
    "llamacpp",
    "ollama",
)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("stream", [True, False])
def test_each_wire_keeps_any_model_id_inside_its_model_path(endpoint: str, stream: bool) -> None:
    environ = {"OLLAMA_HOST": "http://127.0.0.1:11434"}
    plain = call_context(endpoint, "plain-model", environ=environ)
    adapter = wire_for(plain.endpoint.wire_api)
    expected = urlsplit(
        adapter.build_request(ModelRequest.simple("plain-model", "hi", stream=stream), plain).url
    )
    for model in HOSTILE_MODEL_IDS:
        context = call_context(endpoint, model, environ=environ)
        url = urlsplit(
            adapter.build_request(ModelRequest.simple(model, "hi", stream=stream), context).url
        )
        assert (url.scheme, url.netloc, url.query, url.fragment) == (
            expected.scheme,
            expected.netloc,
            expected.query,
            expected.fragment,
        ), model
        if endpoint != "gemini":
            assert url.path == expected.path, model
            continue
        base = urlsplit(plain.endpoint.base_url).path
        prefix, verb = f"{base}/v1beta/models/", expected.path.rpartition(":")[2]
        assert url.path.startswith(prefix) and url.path.endswith(f":{verb}"), model
        segment = url.path[len(prefix) : -len(f":{verb}")]
        assert "/" not in segment and "?" not in segment and "#" not in segment, model
        assert unquote(segment) == model.removeprefix("models/"), model


async def test_a_gemini_call_with_any_model_id_reaches_only_the_model_route(
    sim: Simulator, environ: dict[str, str]
) -> None:
    endpoint = EndpointRegistry(environ=environ).resolve("gemini")
    async with ProviderClient(endpoint) as client:
        for model in HOSTILE_MODEL_IDS:
            async with client.call(ModelRequest.simple(model, "hi")) as call:
                async for _event in call:
                    pass
    assert sim.unrouted == []
    assert [request.model for request in sim.requests] == list(HOSTILE_MODEL_IDS)
    for request in sim.requests:
        assert request.profile == "gemini"
        assert request.headers["x-goog-api-key"] == CANARY_KEY
        assert request.path.startswith("/gemini/v1beta/models/"), request.path
        assert request.path.count("/") == 4, request.path
        assert request.path.endswith(":streamGenerateContent"), request.path
        assert request.query == {"alt": "sse"}


async def test_the_model_api_is_asked_about_each_listed_id_under_v1_models(
    sim: Simulator, environ: dict[str, str]
) -> None:
    listed = ("claude-future-9", "../../v1/messages", "x/../../v1/files?q=")
    capabilities = {"thinking": {"types": {"adaptive": {"supported": True}}}, "effort": {}}
    sim.anthropic_models = dict.fromkeys(listed, capabilities)
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    async with httpx2.AsyncClient() as http:
        entries = await refresh_models(endpoint, http)
    assert list(entries) == list(listed)
    assert {entry["thinking_control"] for entry in entries.values()} == {"adaptive"}
    assert sim.unrouted == [] and sim.requests == []

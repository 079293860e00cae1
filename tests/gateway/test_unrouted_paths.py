"""A gateway path no route serves, or a method its route does not take, answers in the
client API's error shape with thoughtline's code inside and a sentence naming what the
gateway serves there, so the SDK raises its own error with it; the daemon's own paths
keep thoughtline's shape."""

from __future__ import annotations

import anthropic
import openai
import pytest

from tests.gateway.conftest import StartGateway
from thoughtline.testing import Simulator


def test_an_openai_path_the_gateway_does_not_serve_is_openais_not_found(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(openai.NotFoundError) as missing:
        gateway.openai().embeddings.create(model="deepseek/deepseek-v4-pro", input="Hi")
    assert missing.value.code == "NOT_FOUND"
    assert missing.value.response.json()["error"]["message"] == (
        "The gateway does not serve POST /openai/v1/embeddings; under /openai/v1 it serves "
        "POST /chat/completions, POST /responses, GET /models and GET /models/{model}."
    )
    assert missing.value.response.json()["error"]["type"] == "invalid_request_error"
    assert sim.requests == []


def test_an_anthropic_path_the_gateway_does_not_serve_is_anthropics_not_found(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    client = anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic", api_key=gateway.tokens["app"], max_retries=0
    )
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.models.list()
    assert missing.value.response.json() == {
        "type": "error",
        "error": {
            "type": "not_found_error",
            "message": "The gateway does not serve GET /anthropic/v1/models; under "
            "/anthropic it serves POST /v1/messages and POST /v1/messages/count_tokens.",
            "code": "NOT_FOUND",
        },
    }
    assert sim.requests == []


def test_a_method_a_gateway_route_does_not_take_is_405_in_the_clients_shape(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(openai.APIStatusError) as refused:
        gateway.openai().get("/chat/completions", cast_to=object)
    assert refused.value.status_code == 405
    assert refused.value.response.headers["allow"] == "POST"
    assert refused.value.response.json()["error"] == {
        "message": "The gateway does not take GET on /openai/v1/chat/completions; send POST "
        "there (under /openai/v1 it serves POST /chat/completions, POST /responses, GET "
        "/models and GET /models/{model}).",
        "type": "invalid_request_error",
        "param": None,
        "code": "METHOD_NOT_ALLOWED",
    }
    assert sim.requests == []


def test_the_daemons_own_unknown_path_keeps_thoughtlines_shape(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    response = gateway.daemon.client().get("/openaix/v1/embeddings")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "NOT_FOUND", "message": "No route GET /openaix/v1/embeddings."}
    }

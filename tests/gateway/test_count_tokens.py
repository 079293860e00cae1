"""``POST /anthropic/v1/messages/count_tokens`` through the Anthropic SDK: the gateway
never estimates a count, so a count it may not ask of a provider is refused in
Anthropic's shape with thoughtline's code, after the client, body and model are checked."""

from __future__ import annotations

import anthropic
import pytest

from tests.gateway.conftest import Gateway, StartGateway
from thoughtline.testing import Simulator


def _anthropic(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic", api_key=gateway.tokens["app"], max_retries=0
    )


def test_a_count_is_refused_with_a_code_and_never_estimated(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(anthropic.BadRequestError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
        )
    body = refused.value.response.json()
    assert body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "The gateway does not count tokens for 'deepseek/deepseek-v4-pro': it "
            "asks no provider for a count and never estimates one; count with the provider's "
            "own API, or go without the count.",
            "code": "GATEWAY_REQUEST_UNSUPPORTED",
        },
    }
    assert sim.requests == []


def test_a_count_for_an_unknown_model_is_refused_as_a_call_would_be(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(anthropic.NotFoundError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model="nowhere/model", messages=[{"role": "user", "content": "Hi"}]
        )
    assert refused.value.response.json()["error"]["code"] == "GATEWAY_MODEL_UNKNOWN"
    assert sim.requests == []


def test_a_count_body_with_a_generation_field_is_refused_naming_it(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(anthropic.BadRequestError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model="deepseek/deepseek-v4-pro",
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"max_tokens": 100},
        )
    error = refused.value.response.json()["error"]
    assert error["code"] == "REQUEST_INVALID"
    assert "max_tokens" in error["message"]
    assert sim.requests == []


def test_a_count_without_a_client_token_is_refused_401(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    client = anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic", api_key="tlgw_wrong", max_retries=0
    )
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client.messages.count_tokens(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
        )
    assert refused.value.response.json()["error"]["code"] == "UNAUTHORIZED"
    assert sim.requests == []

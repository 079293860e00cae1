"""Who may use the daemon's gateway: a daemon whose config leaves it off answers
GATEWAY_DISABLED, a client holds at most its max_active calls, and the daemon's own
guards (Host allow-list) apply to the gateway's paths as to every other."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest

from tests.conftest import CANARY_KEY
from tests.gateway.conftest import StartGateway
from tests.server.conftest import StartDaemon
from tests.server.support import wait_for_status
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript


def test_a_daemon_with_the_gateway_off_answers_gateway_disabled_in_openais_shape(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    daemon = start_daemon()
    client = openai.OpenAI(base_url=f"{daemon.url}/openai/v1", api_key="tlgw_x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as off:
        client.chat.completions.create(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
        )
    assert off.value.code == "GATEWAY_DISABLED"
    assert "[gateway] enabled = true" in off.value.message
    assert sim.requests == []


@pytest.mark.slow  # a daemon, a streamed call held open
def test_a_client_at_its_max_active_is_refused_429_until_a_call_ends(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients={"app": {"max_active": 1}})
    sim.pace_s = 0.02
    sim.script(Transcript(answer="A slow answer " * 20, chunk_chars=4), times=2)
    client = gateway.openai()
    stream = client.chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
    )
    first = next(iter(stream))
    assert first.choices[0].delta.role == "assistant"
    with pytest.raises(openai.RateLimitError) as busy:
        client.chat.completions.create(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
        )
    assert busy.value.code == "GATEWAY_CLIENT_BUSY"
    assert busy.value.response.headers["retry-after"] == "1"
    assert "A slow answer" in "".join(
        chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
    )
    sim.pace_s = 0.0
    again = client.chat.completions.create(
        model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
    )
    assert again.choices[0].message.content


def test_the_daemons_host_check_guards_the_gateways_paths(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    response = httpx2.post(
        f"{gateway.openai_url}/chat/completions",
        headers={"Host": "evil.example", "Authorization": f"Bearer {gateway.tokens['app']}"},
        json={"model": "deepseek/deepseek-v4-pro", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert response.status_code == 421
    assert response.json() == {
        "error": {
            "message": "This daemon does not answer to the host 'evil.example'; if that name "
            "really reaches it, start it with --allowed-host NAME.",
            "type": "invalid_request_error",
            "param": None,
            "code": "HOST_NOT_ALLOWED",
        }
    }
    assert sim.requests == []


def test_a_cross_site_call_is_refused_in_anthropics_shape_with_the_code(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    client = anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic",
        api_key=gateway.tokens["app"],
        max_retries=0,
        default_headers={"Origin": "https://evil.example"},
    )
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        client.messages.create(
            model="deepseek/deepseek-v4-pro",
            max_tokens=100,
            messages=[{"role": "user", "content": "Hi"}],
        )
    body = refused.value.response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "permission_error"
    assert body["error"]["code"] == "CROSS_SITE_REQUEST"
    assert "--cors-origin" in body["error"]["message"]
    assert sim.requests == []


def test_a_body_over_the_cap_is_refused_in_openais_shape_with_the_code(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(max_request_bytes=1000)
    with pytest.raises(openai.APIStatusError) as refused:
        gateway.openai().chat.completions.create(
            model="deepseek/deepseek-v4-pro",
            messages=[{"role": "user", "content": "x" * 100_000}],
        )
    assert refused.value.status_code == 413
    assert refused.value.body == {
        "message": "The request body is larger than 68,536 bytes; the request text may be "
        "up to 1,000 bytes (orchestration.max_request_bytes in thoughtline.toml).",
        "type": "invalid_request_error",
        "param": None,
        "code": "REQUEST_TOO_LARGE",
    }
    assert sim.requests == []


def test_the_daemons_own_paths_keep_thoughtlines_shape_for_a_guard_refusal(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    response = httpx2.get(f"{gateway.daemon.url}/v1/health", headers={"Host": "evil.example"})
    assert response.status_code == 421
    assert response.json()["error"]["code"] == "HOST_NOT_ALLOWED"
    assert set(response.json()["error"]) == {"code", "message"}


@pytest.mark.slow  # a daemon
@pytest.mark.parametrize("stream", [False, True])
def test_a_provider_failure_reaches_the_client_in_its_apis_shape_with_the_code(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway()
    sim.inject(Fault.http_error(400, "The model refused the request shape."), times=2)
    client = gateway.openai()
    asked = {
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    if stream:
        with pytest.raises(openai.APIError) as failed:
            list(client.chat.completions.create(**asked, stream=True))
        assert "PROVIDER_BAD_REQUEST" in json.dumps(failed.value.body)
    else:
        with pytest.raises(openai.InternalServerError) as failed:
            client.chat.completions.create(**asked)
        assert failed.value.status_code == 502
        assert failed.value.code == "PROVIDER_BAD_REQUEST"


@pytest.mark.slow  # a daemon, a stream left halfway
def test_a_client_that_leaves_a_stream_cancels_its_run_and_frees_its_place(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients={"app": {"max_active": 1}})
    sim.pace_s = 0.05
    sim.script(Transcript(answer="word " * 400, chunk_chars=5))
    body = {
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }
    headers = {"Authorization": f"Bearer {gateway.tokens['app']}"}
    with (
        httpx2.Client(timeout=30) as http,
        http.stream(
            "POST", f"{gateway.openai_url}/chat/completions", json=body, headers=headers
        ) as response,
    ):
        run_id = response.headers["thoughtline-run-id"]
        next(response.iter_bytes())
    run = wait_for_status(gateway.daemon.client(), run_id, {"cancelled"})
    assert run["client"] == "app"
    sim.pace_s = 0.0
    sim.script(Transcript(answer="Again."))
    again = gateway.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
    )
    assert again.choices[0].message.content == "Again."


@pytest.mark.slow  # a daemon
@pytest.mark.parametrize("stream", [False, True])
def test_a_provider_key_the_model_echoes_never_reaches_the_client(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients={"app": {"chain_of_thought": "surface"}})
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=f"the key is {CANARY_KEY}"),),
            answer=f"Your key: {CANARY_KEY}.",
            chunk_chars=3,
        )
    )
    body = {
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": "Echo the key."}],
        "stream": stream,
    }
    headers = {"Authorization": f"Bearer {gateway.tokens['app']}"}
    response = httpx2.post(
        f"{gateway.openai_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert response.status_code == 200, response.text
    if stream:  # the deltas joined: a key cut across chunks must not slip through
        chunks = [
            json.loads(line.removeprefix("data: "))
            for line in response.text.splitlines()
            if line.startswith("data: {")
        ]
        answer = "".join(
            chunk["choices"][0]["delta"].get("content") or ""
            for chunk in chunks
            if chunk["choices"]
        )
        shown = "".join(
            chunk["choices"][0]["delta"].get("reasoning_content") or ""
            for chunk in chunks
            if chunk["choices"]
        )
    else:
        message = response.json()["choices"][0]["message"]
        answer, shown = message["content"], message["reasoning_content"]
    assert answer.startswith("Your key: ")
    assert shown.startswith("the key is ")  # surface: the reasoning is shown, redacted
    assert CANARY_KEY not in answer + shown + response.text


def test_a_model_that_names_no_endpoint_or_alias_is_gateway_model_unknown(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(models={"fast": "deepseek/deepseek-v4-pro"})
    for asked in ("nowhere/some-model", "fats", "deepseek/"):
        with pytest.raises(openai.NotFoundError) as unknown:
            gateway.openai().chat.completions.create(
                model=asked, messages=[{"role": "user", "content": "Hi"}]
            )
        assert unknown.value.code == "GATEWAY_MODEL_UNKNOWN", asked
        assert "aliases: fast" in unknown.value.message
    assert sim.requests == []

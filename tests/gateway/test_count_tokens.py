"""``POST /anthropic/v1/messages/count_tokens`` through the Anthropic SDK: a route to an
Anthropic-wire endpoint gets that provider's own count of the input a call would send
(not a run, not billed), a route whose wire API has no count API is refused naming it,
and nothing is ever estimated. The count is checked as a call is (token, body, model),
and a client whose mode hides reasoning gets no count of it."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from tests.gateway.conftest import Gateway, StartGateway, mode_client
from thoughtline.records import ChainOfThought
from thoughtline.testing import Fault, SimReasoning, SimToolCall, Simulator, Transcript

MODEL = "anthropic/claude-sonnet-4-6"
WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _anthropic(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic", api_key=gateway.tokens["app"], max_retries=0
    )


def _counts(sim: Simulator) -> list[dict[str, Any]]:
    return [
        dict(request.body or {})
        for request in sim.requests
        if request.path.endswith("/v1/messages/count_tokens")
    ]


def test_a_count_on_an_anthropic_route_is_the_providers_own_and_no_run(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    counted = _anthropic(gateway).messages.with_raw_response.count_tokens(
        model=MODEL,
        system="You are terse.",  # 14 characters: 3 simulated tokens
        messages=[{"role": "user", "content": "Hi there, how are you?"}],  # 22: 5
    )
    assert counted.parse().input_tokens == 8
    assert counted.headers["thoughtline-chain-of-thought"] == "hidden"
    (sent,) = _counts(sim)
    # The input a call would send, less what only generation takes.
    assert sent == {
        "model": "claude-sonnet-4-6",
        "system": "You are terse.",
        "messages": [{"role": "user", "content": "Hi there, how are you?"}],
    }
    assert len(sim.requests) == 1
    assert gateway.daemon.client().get("/v1/runs").json()["runs"] == []


def test_a_count_on_a_gemini_route_is_geminis_own_count_tokens(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    counted = _anthropic(gateway).messages.count_tokens(
        model="gemini/gemini-2.5-flash",
        system="You are terse.",
        messages=[{"role": "user", "content": "Hi there, how are you?"}],
    )
    assert counted.input_tokens == 8
    (sent,) = sim.requests
    assert sent.path == "/gemini/v1beta/models/gemini-2.5-flash:countTokens"
    assert sent.headers["x-goog-api-key"]
    whole = dict((sent.body or {})["generateContentRequest"])
    assert whole["model"] == "models/gemini-2.5-flash"
    assert whole["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert whole["contents"] == [{"role": "user", "parts": [{"text": "Hi there, how are you?"}]}]
    assert gateway.daemon.client().get("/v1/runs").json()["runs"] == []


def test_a_count_on_a_route_without_a_count_api_is_refused_naming_it(
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
            "message": "The gateway counts tokens only with the provider's own count API, "
            "and deepseek speaks openai-chat, which has none; it never estimates a count. Go "
            "without the count for 'deepseek/deepseek-v4-pro', or count with a model of an "
            "endpoint that speaks anthropic-messages or gemini.",
            "code": "GATEWAY_REQUEST_UNSUPPORTED",
        },
    }
    assert sim.requests == []


def test_a_providers_refusal_of_a_count_reaches_the_client_with_its_code(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    sim.inject(Fault.overloaded(), profile="anthropic")
    with pytest.raises(anthropic.APIStatusError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}]
        )
    assert refused.value.status_code == 503
    error = refused.value.response.json()["error"]
    assert error["code"] == "PROVIDER_OVERLOADED"
    assert error["type"] == "api_error"
    assert len(_counts(sim)) == 1


def _tool_turn(gateway: Gateway, sim: Simulator, canary: str) -> list[dict[str, Any]]:
    """A call that answers with reasoning (holding ``canary``, signed) and a tool call;
    the history the client sends next: its question, the turn as it got it, the result."""
    thought = SimReasoning(kind="summary", text=f"thinking {canary}", signature="EqQBsigCount==")
    call = SimToolCall(call_id="toolu_oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script(Transcript(reasoning=(thought,), tool_calls=(call,), finish="tool_calls"), times=1)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    message = _anthropic(gateway).messages.create(
        model=MODEL, max_tokens=2000, messages=history, tools=[WEATHER]
    )
    turn = [block.model_dump(exclude_none=True) for block in message.content]
    history.append({"role": "assistant", "content": turn})
    history.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_oslo", "content": "18C"}],
        }
    )
    return history


@pytest.mark.parametrize("mode", ["hidden", "telemetry_only"])
def test_a_count_for_a_client_that_does_not_see_reasoning_counts_none_of_it(
    start_gateway: StartGateway, sim: Simulator, mode: ChainOfThought
) -> None:
    gateway = start_gateway(clients=mode_client(mode))
    canary = "CANARY-COUNT-HIDDEN-51c7"
    history = _tool_turn(gateway, sim, canary)
    assert canary not in json.dumps(history)
    # Thinking the client sends back itself goes upstream on no call: not counted either.
    forged = {"type": "thinking", "thinking": f"forged {canary}", "signature": "Zm9yZ2Vk"}
    history[1]["content"].insert(0, forged)
    counted = _anthropic(gateway).messages.count_tokens(
        model=MODEL, messages=history, tools=[WEATHER]
    )
    (sent,) = _counts(sim)
    assert canary not in json.dumps(sent)
    assert all(block["type"] == "tool_use" for block in sent["messages"][1]["content"])
    without_thinking = _anthropic(gateway).messages.count_tokens(
        model=MODEL,
        messages=[history[0], {**history[1], "content": history[1]["content"][1:]}, history[2]],
        tools=[WEATHER],
    )
    assert counted.input_tokens == without_thinking.input_tokens


def test_a_count_for_a_surface_client_counts_the_turns_thinking_as_the_call_sends_it(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    canary = "CANARY-COUNT-SURFACE-8d20"
    history = _tool_turn(gateway, sim, canary)
    counted = _anthropic(gateway).messages.count_tokens(
        model=MODEL, messages=history, tools=[WEATHER]
    )
    (sent,) = _counts(sim)
    thinking = sent["messages"][1]["content"][0]
    assert thinking == {
        "type": "thinking",
        "thinking": f"thinking {canary}",
        "signature": "EqQBsigCount==",
    }
    plain = [history[0], {**history[1], "content": history[1]["content"][1:]}, history[2]]
    assert plain[1]["content"][0]["type"] == "tool_use"
    sim.requests.clear()
    # Sent back without its thinking, the kept turn goes upstream whole all the same.
    again = _anthropic(gateway).messages.count_tokens(model=MODEL, messages=plain, tools=[WEATHER])
    assert again.input_tokens == counted.input_tokens
    assert _counts(sim)[0]["messages"][1]["content"][0] == thinking


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


def test_a_count_of_a_model_the_client_may_not_call_is_refused_403(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients={"app": {"endpoints": ["deepseek"]}})
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}]
        )
    assert refused.value.response.json()["error"]["code"] == "GATEWAY_MODEL_NOT_ALLOWED"
    assert sim.requests == []


def test_a_count_body_with_a_generation_field_is_refused_naming_it(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    with pytest.raises(anthropic.BadRequestError) as refused:
        _anthropic(gateway).messages.count_tokens(
            model=MODEL,
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
        client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assert refused.value.response.json()["error"]["code"] == "UNAUTHORIZED"
    assert sim.requests == []


@pytest.mark.slow  # two daemons
def test_a_count_after_a_restart_counts_the_thinking_a_surface_client_sends_back_itself(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    """Nothing kept in memory after a restart: the count goes by the blocks the client
    sends, accepted as the next call would accept them (the gateway handed them out)."""
    gateway = start_gateway(clients=mode_client("surface"))
    canary = "CANARY-COUNT-OWN-3f9a"
    history = _tool_turn(gateway, sim, canary)
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    counted = _anthropic(again).messages.count_tokens(
        model=MODEL, messages=history, tools=[WEATHER]
    )
    (sent,) = _counts(sim)
    assert sent["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": f"thinking {canary}",
        "signature": "EqQBsigCount==",
    }
    plain = [history[0], {**history[1], "content": history[1]["content"][1:]}, history[2]]
    without = _anthropic(again).messages.count_tokens(model=MODEL, messages=plain, tools=[WEATHER])
    assert counted.input_tokens > without.input_tokens

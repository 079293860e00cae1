"""Anthropic's official SDK and OpenAI's Responses API, unmodified, against the daemon's
gateway: an Anthropic client's tool loop on DeepSeek (any wire serves any client API),
thinking shown only when its client's mode shows it, and a Responses call as a run."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from tests.gateway.conftest import StartGateway, mode_client
from tests.support import all_bytes_under
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon per test

WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def anthropic_client(gateway: Any) -> anthropic.Anthropic:
    client: anthropic.Anthropic = gateway.anthropic()
    return client


def script(sim: Simulator, canary: str) -> None:
    thought = (SimReasoning(kind="raw", text=f"thinking {canary}"),)
    sim.script(Transcript(reasoning=thought, answer="Oslo 18C."))
    call = SimToolCall(call_id="call_oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script(Transcript(reasoning=thought, tool_calls=(call,)), times=1)


@pytest.mark.parametrize("stream", [False, True])
def test_an_anthropic_client_runs_a_hidden_tool_loop_on_deepseek(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-MSG-4e12"
    script(sim, canary)
    client = anthropic_client(gateway)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    received: list[str] = []
    for _ in range(2):
        asked: dict[str, Any] = {
            "model": "deepseek/deepseek-v4-pro",
            "max_tokens": 2000,
            "messages": history,
            "tools": [WEATHER],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        }
        if stream:
            with client.messages.stream(**asked) as events:
                received += [event.model_dump_json() for event in events]
                message = events.get_final_message()
        else:
            message = client.messages.create(**asked)
        received.append(message.model_dump_json())
        assert all(block.type != "thinking" for block in message.content)
        history.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            break
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "Oslo: 18C"}
                    for use in uses
                ],
            }
        )
    assert history[-1]["content"][0]["text"] == "Oslo 18C."
    assert canary in json.dumps(sim.requests[1].body)  # DeepSeek got its reasoning back
    assert not any(canary in item for item in received)
    gateway.daemon.close()
    assert canary.encode() not in all_bytes_under(gateway.daemon.home)


@pytest.mark.parametrize("stream", [False, True])
def test_a_surface_anthropic_client_sees_thinking_blocks(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    sim.script(
        Transcript(reasoning=(SimReasoning(kind="raw", text="Let me think."),), answer="Paris.")
    )
    asked: dict[str, Any] = {
        "model": "deepseek/deepseek-v4-pro",
        "max_tokens": 2000,
        "messages": [{"role": "user", "content": "Capital of France?"}],
    }
    if stream:
        with anthropic_client(gateway).messages.stream(**asked) as events:
            message = events.get_final_message()
    else:
        message = anthropic_client(gateway).messages.create(**asked)
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text"]
    assert message.content[0].thinking == "Let me think."  # type: ignore[union-attr]


def test_a_bad_token_is_refused_in_anthropics_error_shape(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    client = anthropic.Anthropic(
        base_url=f"{gateway.daemon.url}/anthropic", api_key="tlgw_nobody", max_retries=0
    )
    with pytest.raises(anthropic.AuthenticationError) as refused:
        client.messages.create(
            model="deepseek/deepseek-v4-pro",
            max_tokens=100,
            messages=[{"role": "user", "content": "Hi"}],
        )
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert "UNAUTHORIZED" in json.dumps(body)
    assert sim.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_call_is_a_run_and_hides_reasoning_from_a_hidden_client(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-RESP-9a01"
    sim.script(Transcript(reasoning=(SimReasoning(kind="raw", text=canary),), answer="Paris."))
    client = gateway.openai()
    if stream:
        with client.responses.stream(
            model="deepseek/deepseek-v4-pro",
            input="Capital of France?",
            reasoning={"effort": "high", "summary": "detailed"},
        ) as events:
            received = [event.model_dump_json(warnings=False) for event in events]
            response = events.get_final_response()
    else:
        response = client.responses.create(
            model="deepseek/deepseek-v4-pro",
            input="Capital of France?",
            reasoning={"effort": "high", "summary": "detailed"},
        )
        received = [response.model_dump_json(warnings=False)]
    assert response.output_text == "Paris."
    assert all(item.type != "reasoning" for item in response.output)
    assert not any(canary in item for item in received)
    (run,) = gateway.daemon.client().get("/v1/runs").json()["runs"]
    assert gateway.daemon.client().get(f"/v1/runs/{run['id']}").json()["client"] == "app"

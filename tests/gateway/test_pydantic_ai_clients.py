"""pydantic-ai's agents, unmodified, as gateway clients: each of its OpenAI Chat
Completions, OpenAI Responses and Anthropic models, pointed at the daemon by base URL,
runs a three-step tool loop on a hidden DeepSeek model whose reasoning must go back
upstream; the loop completes and the reasoning canary reaches neither the agent's
messages nor any file under the home."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from tests.gateway.conftest import Gateway, StartGateway, mode_client
from tests.support import all_bytes_under
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon, an agent's three calls

MODEL = "deepseek/deepseek-v4-pro"


def chat(gateway: Gateway) -> Any:
    provider = OpenAIProvider(base_url=gateway.openai_url, api_key=gateway.tokens["app"])
    return OpenAIChatModel(MODEL, provider=provider)


def responses(gateway: Gateway) -> Any:
    provider = OpenAIProvider(base_url=gateway.openai_url, api_key=gateway.tokens["app"])
    return OpenAIResponsesModel(MODEL, provider=provider)


def anthropic(gateway: Gateway) -> Any:
    provider = AnthropicProvider(
        base_url=f"{gateway.daemon.url}/anthropic", api_key=gateway.tokens["app"]
    )
    return AnthropicModel(MODEL, provider=provider)


@pytest.mark.parametrize("model", [chat, responses, anthropic])
def test_an_agents_tool_loop_through_the_gateway(
    start_gateway: StartGateway, sim: Simulator, model: Any
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = f"CANARY-GATEWAY-AGENT-{model.__name__}"
    thought = (SimReasoning(kind="raw", text=f"thinking {canary}"),)
    rome = SimToolCall(call_id="call_rome", name="weather", arguments='{"city": "Rome"}')
    oslo = SimToolCall(call_id="call_oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script_turns(
        Transcript(reasoning=thought, tool_calls=(oslo,), finish="tool_calls"),
        Transcript(reasoning=thought, tool_calls=(rome,), finish="tool_calls"),
        Transcript(reasoning=thought, answer="Oslo 18C, Rome 18C."),
    )
    agent = Agent(model(gateway))
    asked: list[str] = []

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        asked.append(city)
        return f"{city}: 18C"

    result = agent.run_sync("Weather in Oslo and Rome?")
    assert result.output == "Oslo 18C, Rome 18C."
    assert asked == ["Oslo", "Rome"]
    assert len(sim.requests) == 3
    # DeepSeek wants its reasoning back on tool-call turns: the gateway kept it.
    assert canary in json.dumps(sim.requests[2].body)
    assert canary not in result.all_messages_json().decode()
    gateway.daemon.close()
    assert canary.encode() not in all_bytes_under(gateway.daemon.home)

"""OpenAI's official SDK, unmodified, against the daemon's gateway: each call is a run of
the client's, its tools offered and never run by thoughtline, its reasoning as the
client's mode says, its carriers kept server-side between the steps of a tool loop."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx2
import openai
import pytest

from tests.gateway.conftest import StartGateway, mode_client
from tests.support import all_bytes_under
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

# $4 per million output tokens, input free, whatever the hour (DeepSeek's own prices have
# peak hours): a call capped at 5 output tokens may cost $0.00002, so a $0.00003 day
# pays for one such call that used its 5 tokens, and not for a second.
DAY_PRICES = {"deepseek/deepseek-v4-pro": ConfiguredPrice(input=Decimal(0), output=Decimal(4))}

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def tool_loop(
    client: openai.OpenAI, model: str, *, stream: bool, **extra: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    """Three steps as an agent runs them: two tool calls answered by the client, then the
    answer; every byte the client received, and the messages it sent."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo, Rome?"}]
    received: list[str] = []
    for _ in range(3):
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model=model,
                    messages=messages,  # type: ignore[arg-type]
                    tools=[WEATHER],  # type: ignore[list-item]
                    stream=True,
                    stream_options={"include_usage": True},
                    **extra,
                )
            )
            received += [chunk.model_dump_json() for chunk in chunks]
            content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            calls: dict[int, dict[str, Any]] = {}
            for chunk in chunks:
                for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    entry = calls.setdefault(
                        delta.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    entry["id"] = delta.id or entry["id"]
                    if delta.function is not None:
                        entry["function"]["name"] += delta.function.name or ""
                        entry["function"]["arguments"] += delta.function.arguments or ""
            tool_calls = [calls[index] for index in sorted(calls)]
        else:
            completion = client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                tools=[WEATHER],  # type: ignore[list-item]
                **extra,
            )
            received.append(completion.model_dump_json())
            message = completion.choices[0].message
            content = message.content or ""
            tool_calls = [call.model_dump() for call in message.tool_calls or []]
        if not tool_calls:
            messages.append({"role": "assistant", "content": content})
            break
        # What most agents send back: the text and the calls, not the reasoning.
        messages.append({"role": "assistant", "content": content or None, "tool_calls": tool_calls})
        for call in tool_calls:
            city = json.loads(call["function"]["arguments"])["city"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{city}: 18C"})
    return messages, received


def streamed_text(received: list[str], key: str) -> str:
    """Every chunk's delta ``key`` (``content``, ``reasoning_content``) joined: a text cut
    across chunks is whole here."""
    text = ""
    for item in received:
        chunk = json.loads(item)
        if chunk.get("object") == "chat.completion.chunk" and chunk["choices"]:
            text += chunk["choices"][0]["delta"].get(key) or ""
    return text


def script_loop(sim: Simulator, canary: str, kind: str = "raw") -> None:
    thought = (SimReasoning(kind=kind, text=f"thinking {canary}", signature=f"sig-{canary}"),)  # type: ignore[arg-type]
    sim.script(Transcript(reasoning=thought, answer="Oslo 18C, Rome 18C."))
    second = SimToolCall(call_id="call_rome", name="weather", arguments='{"city": "Rome"}')
    sim.script(Transcript(reasoning=thought, tool_calls=(second,)), times=1)
    first = SimToolCall(call_id="call_oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script(Transcript(reasoning=thought, tool_calls=(first,)), times=1)


@pytest.mark.slow  # a daemon, three runs
@pytest.mark.parametrize("stream", [False, True])
def test_a_hidden_deepseek_tool_loop_gets_its_carriers_back_and_no_reasoning_leaks(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-DS-7f31"
    script_loop(sim, canary)
    messages, received = tool_loop(
        gateway.openai(), "deepseek/deepseek-v4-pro", stream=stream, reasoning_effort="high"
    )
    assert messages[-1] == {"role": "assistant", "content": "Oslo 18C, Rome 18C."}
    assert len(sim.requests) == 3
    # DeepSeek wants reasoning_content back on its tool-call turns: the gateway kept it.
    assert canary in json.dumps(sim.requests[1].body)
    assert canary in json.dumps(sim.requests[2].body)
    if stream:  # stream_options.include_usage: a last chunk with the usage
        assert any('"choices":[]' in item and '"prompt_tokens":' in item for item in received)
    # Hidden: nothing of the reasoning reached the client, not even its token count.
    assert not any(canary in item for item in received)
    assert canary not in streamed_text(received, "content")
    assert not any('"reasoning_content":"' in item for item in received)
    assert not any(
        '"reasoning_tokens":' in item and '"reasoning_tokens":null' not in item for item in received
    )
    # Each call was a run of the client's.
    runs = gateway.daemon.client().get("/v1/runs").json()["runs"]
    assert len(runs) == 3
    for summary in runs:
        run = gateway.daemon.client().get(f"/v1/runs/{summary['id']}").json()
        assert (run["source"], run["client"], run["chain_of_thought"]) == (
            "gateway",
            "app",
            "hidden",
        )
        assert run["tasks"][0]["provider"] == "deepseek"
    gateway.daemon.close()
    assert canary.encode() not in all_bytes_under(gateway.daemon.home)


@pytest.mark.slow  # a daemon, three runs
def test_a_surface_claude_loop_shows_reasoning_and_gets_its_signatures_back(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    canary = "CANARY-GATEWAY-CLAUDE-2c9e"
    script_loop(sim, canary, kind="summary")
    messages, received = tool_loop(gateway.openai(), "anthropic/claude-sonnet-4-6", stream=True)
    assert messages[-1] == {"role": "assistant", "content": "Oslo 18C, Rome 18C."}
    # The client saw the reasoning as Chat Completions carries it...
    assert canary in streamed_text(received, "reasoning_content")
    # ...but sent back only text and tool calls: the gateway put each turn's thinking
    # block, signature and all, back before its tool_use (Anthropic's rule).
    for request in sim.requests[1:]:
        turns = [m for m in request.body["messages"] if m["role"] == "assistant"]
        assert all(turn["content"][0]["type"] == "thinking" for turn in turns)
        assert all(turn["content"][0]["signature"] == f"sig-{canary}" for turn in turns)


@pytest.mark.slow  # two daemons
def test_a_restart_between_two_steps_ends_the_loop_with_carriers_gone_not_a_raw_400(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    canary = "CANARY-GATEWAY-RESTART-51d0"
    script_loop(sim, canary, kind="summary")
    first = gateway.openai().chat.completions.create(
        model="anthropic/claude-sonnet-4-6",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    (call,) = first.choices[0].message.tool_calls or []
    gateway.daemon.close()
    # The same config and store, a new process's memory: the carriers are gone.
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    with pytest.raises(openai.ConflictError) as refused:
        again.openai().chat.completions.create(
            model="anthropic/claude-sonnet-4-6",
            messages=[
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},  # type: ignore[list-item]
                {"role": "tool", "tool_call_id": call.id, "content": "Oslo: 18C"},
            ],
            tools=[WEATHER],  # type: ignore[list-item]
        )
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["code"] == "GATEWAY_CARRIERS_GONE"
    assert "start the tool loop again" in error["message"]
    assert refused.value.response.headers["thoughtline-chain-of-thought"] == "surface"


@pytest.mark.slow  # a daemon
def test_a_hidden_client_asking_for_reasoning_gets_its_mode_and_the_run_records_both(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-POLICY-0b77"
    sim.script(Transcript(reasoning=(SimReasoning(kind="raw", text=canary),), answer="Paris."))
    raw = gateway.openai().chat.completions.with_raw_response.create(
        model="deepseek/deepseek-v4-pro",
        messages=[{"role": "user", "content": "Capital of France?"}],
        reasoning_effort="high",
        extra_body={"thinking": {"type": "enabled"}},
    )
    assert raw.headers["thoughtline-chain-of-thought"] == "hidden"
    completion = raw.parse()
    assert completion.choices[0].message.content == "Paris."
    assert canary not in raw.http_response.text
    assert "reasoning_content" not in raw.http_response.text
    run = gateway.daemon.client().get(f"/v1/runs/{raw.headers['thoughtline-run-id']}").json()
    assert run["chain_of_thought"] == "hidden"
    assert run["client_asked"] == "enabled=true, effort=high"
    assert canary not in json.dumps(run)


@pytest.mark.slow  # a daemon
def test_a_bad_token_a_model_not_allowed_and_a_spent_day_are_refused_in_openais_shape(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(
        clients={"app": {"models": ["cheap"], "max_cost": 0.00003}},
        models={"cheap": "deepseek/deepseek-v4-pro"},
        prices=DAY_PRICES,
    )
    with pytest.raises(openai.AuthenticationError) as unauthorized:
        gateway.openai(api_key="tlgw_not-a-client").models.list()
    assert unauthorized.value.status_code == 401
    assert unauthorized.value.code == "UNAUTHORIZED"
    assert "The API key sent is no client's token" in unauthorized.value.message
    missing = httpx2.get(f"{gateway.openai_url}/models", timeout=10)
    assert missing.status_code == 401
    assert missing.json()["error"]["message"].startswith("No client token was sent: ")
    assert [model.id for model in gateway.openai().models.list()] == ["cheap"]
    assert gateway.openai().models.retrieve("cheap").id == "cheap"
    with pytest.raises(openai.PermissionDeniedError):
        gateway.openai().models.retrieve("anthropic/claude-sonnet-4-6")
    with pytest.raises(openai.PermissionDeniedError) as denied:
        gateway.openai().chat.completions.create(
            model="anthropic/claude-sonnet-4-6", messages=[{"role": "user", "content": "Hi"}]
        )
    assert denied.value.code == "GATEWAY_MODEL_NOT_ALLOWED"
    assert sim.requests == []
    sim.script(Transcript(answer="Hello.", output_tokens=5))
    first = gateway.openai().chat.completions.create(
        model="cheap", messages=[{"role": "user", "content": "Hi"}], max_tokens=5
    )
    assert first.choices[0].message.content == "Hello."
    with pytest.raises(openai.RateLimitError) as spent:
        gateway.openai().chat.completions.create(
            model="cheap", messages=[{"role": "user", "content": "Hi"}], max_tokens=5
        )
    assert spent.value.code == "GATEWAY_BUDGET_EXCEEDED"
    assert "is $0.00003 a day (UTC" in spent.value.message
    assert 0 < int(spent.value.response.headers["retry-after"]) <= 86_400
    assert len(sim.requests) == 1


@pytest.mark.slow  # a daemon
def test_one_clients_kept_carriers_never_reach_another_clients_call(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients={"alice": {}, "mallory": {}})
    canary = "CANARY-GATEWAY-ALICE-88c2"
    script_loop(sim, canary)
    asked = [{"role": "user", "content": "Weather in Oslo, Rome?"}]
    first = gateway.openai("alice").chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=asked,
        tools=[WEATHER],  # type: ignore[list-item]
    )
    (call,) = first.choices[0].message.tool_calls or []
    # Another client replays alice's turn, tool call id and all.
    gateway.openai("mallory").chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=[
            *asked,
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "Oslo: 18C"},
        ],  # type: ignore[list-item]
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert canary not in json.dumps(sim.requests[1].body)


@pytest.mark.slow  # a daemon, three runs
def test_a_hidden_claude_tool_loop_completes_and_shows_nothing_of_reasoning(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-CLAUDE-HIDDEN-3d5a"
    script_loop(sim, canary, kind="summary")
    messages, received = tool_loop(
        gateway.openai(), "anthropic/claude-sonnet-4-6", stream=True, reasoning_effort="high"
    )
    assert messages[-1] == {"role": "assistant", "content": "Oslo 18C, Rome 18C."}
    assert len(sim.requests) == 3
    assert not any(canary in item or "reasoning_content" in item for item in received)
    assert canary not in streamed_text(received, "content")
    gateway.daemon.close()
    assert canary.encode() not in all_bytes_under(gateway.daemon.home)


FORCED = {"type": "function", "function": {"name": "weather"}}


@pytest.mark.slow  # a daemon
@pytest.mark.parametrize(
    ("model", "field", "sent"),
    [
        ("anthropic/claude-sonnet-4-6", "tool_choice", {"type": "tool", "name": "weather"}),
        ("deepseek/deepseek-v4-pro", "tool_choice", FORCED),
        ("openai/gpt-5", "tool_choice", {"type": "function", "name": "weather"}),
        (
            "gemini/gemini-2.5-flash",
            "toolConfig",
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}},
        ),
    ],
)
def test_a_clients_tool_choice_reaches_each_wire_as_its_api_spells_it(
    start_gateway: StartGateway, sim: Simulator, model: str, field: str, sent: object
) -> None:
    gateway = start_gateway()
    call = SimToolCall(call_id="call_1", name="weather", arguments='{"city": "Oslo"}')
    sim.script(Transcript(tool_calls=(call,), finish="tool_calls"))
    completion = gateway.openai().chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice=FORCED,  # type: ignore[arg-type]
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert sim.requests[0].body[field] == sent


@pytest.mark.slow  # a daemon
def test_tool_choice_none_and_required_reach_the_wire(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway()
    sim.script(Transcript(answer="No tools."), times=2)
    for choice, sent in (("none", {"type": "none"}), ("auto", {"type": "auto"})):
        gateway.openai().chat.completions.create(
            model="anthropic/claude-sonnet-4-6",
            messages=[{"role": "user", "content": "Hi"}],
            tools=[WEATHER],  # type: ignore[list-item]
            tool_choice=choice,  # type: ignore[arg-type]
        )
        assert sim.requests[-1].body["tool_choice"] == sent


@pytest.mark.slow  # two daemons
def test_a_clients_day_spend_survives_a_restart(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    clients = {"app": {"max_cost": 0.00003}}
    gateway = start_gateway(clients=clients, prices=DAY_PRICES)
    sim.script(Transcript(answer="Hello.", output_tokens=5), times=2)
    asked = {
        "model": "deepseek/deepseek-v4-pro",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 5,
    }
    gateway.openai().chat.completions.create(**asked)
    gateway.daemon.close()
    again = start_gateway(clients=clients, tokens=gateway.tokens, prices=DAY_PRICES)
    with pytest.raises(openai.RateLimitError) as spent:
        again.openai().chat.completions.create(**asked)
    assert spent.value.code == "GATEWAY_BUDGET_EXCEEDED"
    assert len(sim.requests) == 1

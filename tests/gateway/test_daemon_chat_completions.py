"""OpenAI's official SDK, unmodified, against the daemon's gateway: each call is a run of
the client's, its tools offered and never run by thoughtline, its reasoning as the
client's mode says, its carriers kept server-side between the steps of a tool loop."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.gateway.conftest import StartGateway, mode_client
from tests.support import all_bytes_under
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

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
    # Hidden: nothing of the reasoning reached the client, not even its token count.
    assert not any(canary in item for item in received)
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

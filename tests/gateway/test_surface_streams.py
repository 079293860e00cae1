"""A streamed answer carries the carriers a client whose mode shows reasoning is owed,
where its API streams them (the official SDKs against the daemon, the simulator
upstream): each Messages ``thinking`` block ends with its ``signature_delta``, a
``redacted_thinking`` block keeps its ``data``, a Responses reasoning item carries its
``encrypted_content`` when ``include`` asks; a hidden client's stream carries none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import CANARY_KEY
from tests.gateway.conftest import StartGateway, mode_client
from tests.gateway.test_surface_carriers import (
    CLAUDE,
    FUNCTION,
    RESPONSES_MODEL,
    messages_step,
    steps,
)
from thoughtline.records import ChainOfThought
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon per test


def test_a_streamed_messages_answer_ends_each_thinking_block_with_its_signature(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "live", redacted=True)
    message, received = messages_step(gateway, [{"role": "user", "content": "Oslo, Rome?"}])
    blocks = [block.model_dump() for block in message.content]
    assert [block["type"] for block in blocks][:2] == ["thinking", "redacted_thinking"]
    assert blocks[0]["thinking"] == "step 0 live"
    assert blocks[0]["signature"] == "sig-live-0"  # as Anthropic streams it: signature_delta
    assert blocks[1]["data"] == "data-live-0"
    deltas = [json.loads(item) for item in received]
    assert any(
        event.get("type") == "content_block_delta"
        and event["delta"].get("type") == "signature_delta"
        for event in deltas
    )


@pytest.mark.parametrize("include", [True, False])
def test_a_streamed_responses_answer_carries_encrypted_content_when_include_asks(
    start_gateway: StartGateway, sim: Simulator, include: bool
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "enc")
    extra: dict[str, Any] = {"include": ["reasoning.encrypted_content"]} if include else {}
    with gateway.openai().responses.stream(
        model=RESPONSES_MODEL,
        input="Oslo, Rome?",
        tools=[FUNCTION],  # type: ignore[list-item]
        reasoning={"effort": "high", "summary": "detailed"},
        store=False,
        **extra,
    ) as events:
        received = [event.model_dump(warnings=False) for event in events]
    done = [
        event["item"]
        for event in received
        if event["type"] == "response.output_item.done" and event["item"]["type"] == "reasoning"
    ]
    (completed,) = [event for event in received if event["type"] == "response.completed"]
    final = [item for item in completed["response"]["output"] if item["type"] == "reasoning"]
    assert len(done) == len(final) == 1
    assert done[0]["summary"][0]["text"] == "step 0 enc"
    carried = {done[0].get("encrypted_content"), final[0].get("encrypted_content")}
    if include:
        (value,) = carried
        assert isinstance(value, str) and value
    else:
        assert carried == {None}


@pytest.mark.parametrize("mode", ["hidden", "telemetry_only"])
@pytest.mark.parametrize("dialect", ["messages", "responses"])
def test_a_hidden_clients_stream_carries_no_signature_redacted_block_or_encrypted_item(
    start_gateway: StartGateway, sim: Simulator, dialect: str, mode: ChainOfThought
) -> None:
    gateway = start_gateway(clients=mode_client(mode))
    steps(sim, "CANARY-HIDDEN-CARRIER-77e1", redacted=True)
    if dialect == "messages":
        message, received = messages_step(gateway, [{"role": "user", "content": "Oslo?"}])
        received.append(message.model_dump_json())
    else:
        with gateway.openai().responses.stream(
            model=RESPONSES_MODEL,
            input="Oslo, Rome?",
            tools=[FUNCTION],  # type: ignore[list-item]
            reasoning={"effort": "high", "summary": "detailed"},
            include=["reasoning.encrypted_content"],
            store=False,
        ) as events:
            received = [event.model_dump_json(warnings=False) for event in events]
    seen = "\n".join(received)
    assert sim.requests  # the provider answered with its carriers...
    # ...and the client got none of them: no text, signature, data or encrypted item.
    assert "CANARY-HIDDEN-CARRIER-77e1" not in seen
    for word in ("signature", "redacted_thinking", "encrypted_content", '"type":"reasoning"'):
        assert word not in seen, word


@pytest.mark.parametrize("stream", [True, False])
def test_a_carrier_holding_a_loaded_key_is_never_handed_to_a_surface_client(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    thought = SimReasoning(kind="summary", text="Let me think.", signature=f"sig-{CANARY_KEY}")
    sim.script(Transcript(reasoning=(thought,), answer="Paris."))
    asked: dict[str, Any] = {
        "model": CLAUDE,
        "max_tokens": 4000,
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    if stream:
        with gateway.anthropic().messages.stream(**asked) as events:
            received = [event.model_dump_json() for event in events]
            message = events.get_final_message()
    else:
        message = gateway.anthropic().messages.create(**asked)
        received = []
    received.append(message.model_dump_json())
    assert message.content[-1].text == "Paris."
    assert CANARY_KEY not in "\n".join(received)

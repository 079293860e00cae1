"""A client whose mode shows reasoning sends its carriers back itself, with the official
SDKs against the daemon (the simulator upstream, strict round-trip rules on): its tool
loop goes on across a daemon restart with the signatures and encrypted items it got, and
the gateway forwards them only to the endpoint and model that made them (never one made
by another model, nor an altered one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.gateway.conftest import Gateway, StartGateway, mode_client
from tests.gateway.test_daemon_messages_responses import WEATHER
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon (or two) per test

CLAUDE = "anthropic/claude-sonnet-4-6"
RESPONSES_MODEL = "openai/gpt-5"
FUNCTION = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def steps(sim: Simulator, tag: str, *, redacted: bool = False) -> None:
    """Three steps of a tool loop (Oslo, Rome, then the answer), each with reasoning of
    its own signature (and redacted data)."""
    turns = []
    for step, city in enumerate(("Oslo", "Rome", None)):
        reasoning = [
            SimReasoning(kind="summary", text=f"step {step} {tag}", signature=f"sig-{tag}-{step}")
        ]
        if redacted:
            reasoning.append(SimReasoning(kind="redacted", signature=f"data-{tag}-{step}"))
        calls = ()
        if city is not None:
            arguments = json.dumps({"city": city})
            calls = (SimToolCall(call_id=f"call_{city}", name="weather", arguments=arguments),)
        answer = "" if city is not None else "Oslo 18C, Rome 18C."
        turns.append(
            Transcript(
                reasoning=tuple(reasoning),
                tool_calls=calls,
                answer=answer,
                response_id=f"{tag}_{step}",
            )
        )
    sim.script_turns(*turns)


def messages_step(
    gateway: Gateway, history: list[dict[str, Any]], model: str = CLAUDE
) -> tuple[Any, list[str]]:
    """One streamed Messages call as an agent makes it; the final message and every
    event the client received."""
    asked: dict[str, Any] = {
        "model": model,
        "max_tokens": 4000,
        "messages": history,
        "tools": [WEATHER],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    with gateway.anthropic().messages.stream(**asked) as events:
        received = [event.model_dump_json() for event in events]
        return events.get_final_message(), received


def answer_tools(history: list[dict[str, Any]], message: Any) -> bool:
    """The assistant turn as the client got it (its thinking blocks, signatures and all)
    and the tool results; whether the loop goes on."""
    history.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
    uses = [block for block in message.content if block.type == "tool_use"]
    if uses:
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "18C"} for use in uses
                ],
            }
        )
    return bool(uses)


def sent_signatures(sim: Simulator, index: int) -> list[str]:
    """The signatures and redacted data request ``index`` sent upstream."""
    return [
        block.get("signature") or block.get("data")
        for message in sim.requests[index].body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] in ("thinking", "redacted_thinking")
    ]


def test_a_surface_clients_own_signatures_carry_its_loop_across_a_daemon_restart(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "own", redacted=True)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Oslo, Rome?"}]
    message, _ = messages_step(gateway, history)
    assert answer_tools(history, message)
    gateway.daemon.close()
    # A new process: nothing kept in memory, only the key and digests under the home.
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    for _ in range(2):
        message, _ = messages_step(again, history)
        if not answer_tools(history, message):
            break
    assert history[-1]["content"][-1]["text"] == "Oslo 18C, Rome 18C."
    # The blocks went upstream as the client sent them, byte for byte.
    assert sent_signatures(sim, 1) == ["sig-own-0", "data-own-0"]
    assert sent_signatures(sim, 2) == ["sig-own-0", "data-own-0", "sig-own-1", "data-own-1"]
    # What binds them: a key only its owner reads, and digests that hold no carrier.
    home = again.daemon.home
    assert (home / "gateway.key").stat().st_mode & 0o777 == 0o600
    digests = (home / "gateway-carriers").read_bytes()
    assert digests and len(digests) % 16 == 0
    assert b"sig-own" not in digests and b"data-own" not in digests


def test_a_surface_clients_own_encrypted_items_carry_its_loop_across_a_restart(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "resp")
    items: list[Any] = [{"role": "user", "content": "Oslo, Rome?"}]

    def step(on: Gateway) -> bool:
        with on.openai().responses.stream(
            model=RESPONSES_MODEL,
            input=items,
            tools=[FUNCTION],  # type: ignore[list-item]
            reasoning={"effort": "high", "summary": "detailed"},
            include=["reasoning.encrypted_content"],
            store=False,
        ) as events:
            response = events.get_final_response()
        output = [item.model_dump(exclude_none=True, warnings=False) for item in response.output]
        items.extend(output)
        calls = [item for item in output if item["type"] == "function_call"]
        items.extend(
            {"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}
            for call in calls
        )
        return bool(calls)

    assert step(gateway)
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    assert step(again)
    assert not step(again)
    assert items[-1]["content"][0]["text"] == "Oslo 18C, Rome 18C."
    upstream = [item for item in sim.requests[2].body["input"] if item.get("type") == "reasoning"]
    assert len(upstream) == 2  # both earlier steps' items, from the client itself
    assert all(item["encrypted_content"] for item in upstream)
    # Each under the id the upstream gave it, as the client got it (not one of the
    # gateway's own), so the server that made the item finds it under its own id.
    ids = [item["id"] for item in upstream]
    assert ids == ["rs_resp_0", "rs_resp_1"]
    assert [item["id"] for item in items if item.get("type") == "reasoning"][:2] == ids


def test_a_signature_made_by_one_model_is_not_forwarded_to_another(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "moved")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Oslo, Rome?"}]
    message, _ = messages_step(gateway, history)
    assert answer_tools(history, message)
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    import anthropic

    with pytest.raises(anthropic.APIStatusError) as refused:  # in the stream, after a 200
        messages_step(again, history, model="anthropic/claude-opus-4-6")
    error = refused.value.body["error"]  # type: ignore[index]
    assert error["code"] == "GATEWAY_CARRIERS_GONE"
    assert "did not forward 1 reasoning part" in error["message"]
    assert "sig-moved-0" not in json.dumps(sim.requests[-1].body)


def test_a_forged_signature_is_not_forwarded(start_gateway: StartGateway, sim: Simulator) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "forged")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Oslo, Rome?"}]
    message, _ = messages_step(gateway, history)
    assert answer_tools(history, message)
    thinking = history[1]["content"][0]
    assert thinking["signature"] == "sig-forged-0"
    thinking["signature"] = "sig-forged-0-but-altered"
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    import anthropic

    with pytest.raises(anthropic.APIStatusError) as refused:
        messages_step(again, history)
    error = refused.value.body["error"]  # type: ignore[index]
    assert error["code"] == "GATEWAY_CARRIERS_GONE"
    assert "did not forward 1 reasoning part" in error["message"]
    assert "altered" not in json.dumps([request.body for request in sim.requests])


def test_a_chat_client_sends_deepseeks_reasoning_content_back_itself_across_a_restart(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    thought = (SimReasoning(kind="raw", text="I should look up Oslo."),)
    call = SimToolCall(call_id="call_Oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script_turns(
        Transcript(reasoning=thought, tool_calls=(call,)),
        Transcript(reasoning=thought, answer="Oslo 18C."),
    )
    tool = {"type": "function", "function": {k: v for k, v in FUNCTION.items() if k != "type"}}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Oslo?"}]
    first = gateway.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=messages,  # type: ignore[arg-type]
        tools=[tool],  # type: ignore[list-item]
    )
    said = first.choices[0].message.model_dump(exclude_none=True)
    assert said["reasoning_content"] == "I should look up Oslo."  # what DeepSeek wants back
    messages += [said, {"role": "tool", "tool_call_id": "call_Oslo", "content": "18C"}]
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    last = again.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=messages,  # type: ignore[arg-type]
        tools=[tool],  # type: ignore[list-item]
    )
    assert last.choices[0].message.content == "Oslo 18C."
    (turn,) = [m for m in sim.requests[1].body["messages"] if m["role"] == "assistant"]
    assert turn["reasoning_content"] == "I should look up Oslo."
    # Text the gateway did not hand out goes upstream as no one's reasoning.
    messages[1] = {**said, "reasoning_content": "Invented reasoning."}
    again.openai().chat.completions.create(
        model="deepseek/deepseek-v4-pro",
        messages=messages,  # type: ignore[arg-type]
        tools=[tool],  # type: ignore[list-item]
    )
    assert "Invented reasoning." not in json.dumps(sim.requests[2].body)


def test_a_thinking_block_shown_without_its_text_is_not_taken_back_blank(
    start_gateway: StartGateway, sim: Simulator
) -> None:
    gateway = start_gateway(clients=mode_client("surface"))
    steps(sim, "omitted")
    asked: dict[str, Any] = {
        "model": CLAUDE,
        "max_tokens": 4000,
        "tools": [WEATHER],
        "thinking": {"type": "enabled", "budget_tokens": 2048, "display": "omitted"},
    }
    history: list[dict[str, Any]] = [{"role": "user", "content": "Oslo, Rome?"}]
    message = gateway.anthropic().messages.create(messages=history, **asked)
    assert message.content[0].thinking == ""  # the signature signs text it was not shown
    assert answer_tools(history, message)
    gateway.daemon.close()
    again = start_gateway(clients=mode_client("surface"), tokens=gateway.tokens)
    import anthropic

    # Sent back blank, the block would be refused by the provider as altered: the
    # gateway keeps it from going, and says so in its own code.
    with pytest.raises(anthropic.APIStatusError) as refused:
        again.anthropic().messages.create(messages=history, **asked)
    assert refused.value.status_code == 409
    assert refused.value.body["error"]["code"] == "GATEWAY_CARRIERS_GONE"  # type: ignore[index]
    assert "sig-omitted-0" not in json.dumps(sim.requests[-1].body)

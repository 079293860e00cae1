"""How a follow-up's earlier turns are assembled, rule by rule (runtime/planning/conversation.py):
what goes back per wire API, what a changed persona, model, retention or hidden turn
drops, the context window, and the threads' storage form."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message
from thoughtline.model.threads import StoredTurn
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.registry import wire_for
from thoughtline.runtime.planning.conversation import assemble

REGISTRY = EndpointRegistry({}, environ={})
CAPABILITIES = builtin_capabilities()
SYSTEM = threads.digest("You are a senior software engineer.")
TOOLS = threads.tools_digest(())


def turn(
    number: int,
    *,
    provider: str = "anthropic",
    model: str = "claude-opus-5-5",
    mode: str = "surface",
    system: str = SYSTEM,
    carriers: bool = True,
    cleared: bool = False,
    tools: bool = False,
) -> StoredTurn:
    reasoning = ReasoningPart(
        kind="summary",
        text=f"thought {number}",
        provider_metadata={"signature": f"sig-{number}"},
        provider=provider,
        model=model,
    )
    messages: list[Message] = [Message(role="user", content=f"ask {number}")]
    if tools:
        call = ToolCallPart(
            tool_call_id=f"c{number}", name="t", arguments="{}", provider=provider, model=model
        )
        messages += [
            Message(role="assistant", parts=[reasoning, call]),
            Message(
                role="user",
                parts=[ToolResultPart(tool_call_id=f"c{number}", name="t", content="r")],
            ),
        ]
    messages.append(Message(role="assistant", parts=[reasoning, TextPart(text=f"answer {number}")]))
    full = tuple(messages)
    return StoredTurn(
        run_id=f"run_{number}",
        provider=provider,
        model=model,
        mode=mode,
        answer_json=threads.encode(threads.answer_layer(full)),
        carriers_json=threads.encode(full) if carriers and not cleared else None,
        carriers_cleared=cleared,
        system_digest=system,
        tools_digest=TOOLS,
    )


def build(
    turns: list[StoredTurn],
    *,
    endpoint: str = "anthropic",
    model: str = "claude-opus-5-5",
    system: str = SYSTEM,
    requests_reasoning: bool = True,
    fixed_bytes: int = 10,
    max_output_tokens: int | None = None,
    context_window: int | None = -1,
):  # type: ignore[no-untyped-def]
    capability = CAPABILITIES.lookup(endpoint, model)
    if context_window != -1:
        capability = replace(capability, context_window=context_window)
    return assemble(
        turns,
        Message(role="user", content="now"),
        endpoint=REGISTRY.resolve(endpoint),
        capability=capability,
        model=model,
        system_digest=system,
        tools_digest=TOOLS,
        requests_reasoning=requests_reasoning,
        fixed_bytes=fixed_bytes,
        max_output_tokens=max_output_tokens,
    )


def signatures(messages: list[Message]) -> list[str]:
    return [
        str(part.provider_metadata["signature"])
        for message in messages
        for part in message.parts
        if isinstance(part, ReasoningPart)
    ]


def test_each_wire_has_its_rule_for_earlier_turns() -> None:
    rules = {
        (endpoint, model): wire_for(REGISTRY.resolve(endpoint).wire_api).earlier_reasoning(
            REGISTRY.resolve(endpoint), CAPABILITIES.lookup(endpoint, model)
        )
        for endpoint, model in [
            ("anthropic", "claude-opus-5-5"),
            ("anthropic", "claude-sonnet-4-6"),
            ("openai", "gpt-5.5"),
            ("gemini", "gemini-3-pro"),
            ("openrouter", "anthropic/claude-sonnet-4.6"),
            ("deepseek", "deepseek-v4-pro"),
            ("deepseek", "deepseek-reasoner"),
            ("ollama", "qwen3"),
        ]
    }
    assert rules == {
        ("anthropic", "claude-opus-5-5"): "prefix",
        ("anthropic", "claude-sonnet-4-6"): "never",
        ("openai", "gpt-5.5"): "always",
        ("gemini", "gemini-3-pro"): "always",
        ("openrouter", "anthropic/claude-sonnet-4.6"): "always",
        ("deepseek", "deepseek-v4-pro"): "always",
        ("deepseek", "deepseek-reasoner"): "always",
        ("ollama", "qwen3"): "never",
    }


def test_an_unchanged_prefix_sends_every_turns_blocks_back() -> None:
    built = build([turn(1), turn(2, tools=True)])
    assert signatures(built.messages) == ["sig-1", "sig-2", "sig-2"]
    assert built.history == {"turns": 2, "dropped_turns": 0, "reasoning_turns": 2, "note": None}
    assert built.messages[-1].content == "now"


def test_a_changed_persona_drops_every_block_made_under_the_old_one_and_says_so() -> None:
    built = build([turn(1), turn(2)], system=threads.digest("You are a poet."))
    assert signatures(built.messages) == []
    assert built.history["reasoning_turns"] == 0
    note = built.history["note"]
    assert note is not None and "persona or the tools changed" in note
    assert "turns 1 and 2" in note


def test_after_a_dropped_block_no_later_block_goes_back() -> None:
    # Turn 1's blocks were made under another persona: turn 2's (made after them) are
    # bound to a prefix that held them, so they go too.
    built = build([turn(1, system=threads.digest("old")), turn(2), turn(3)])
    assert signatures(built.messages) == []
    note = built.history["note"]
    assert note is not None
    assert "turn 1 is not sent back" in note
    assert "turns 2 and 3 is not sent back: a turn before it changed" in note


def test_a_hidden_turn_keeps_later_blocks_valid_and_is_named() -> None:
    built = build([turn(1, mode="hidden", carriers=False), turn(2)])
    assert signatures(built.messages) == ["sig-2"]
    assert built.history["reasoning_turns"] == 1
    assert built.history["note"] == (
        "Turn 1 ran with chain_of_thought hidden, so its reasoning was never kept and is "
        "not sent back (nor reconstructed)."
    )


def test_retention_cleared_carriers_drop_that_turn_and_every_later_block() -> None:
    built = build([turn(1, cleared=True), turn(2)])
    assert signatures(built.messages) == []
    note = built.history["note"]
    assert note is not None and "removed by the reasoning retention" in note


def test_on_a_model_without_preserved_thinking_nothing_earlier_goes_back_silently() -> None:
    turns = [turn(1, model="claude-sonnet-4-6"), turn(2, model="claude-sonnet-4-6")]
    built = build(turns, model="claude-sonnet-4-6")
    assert signatures(built.messages) == []
    assert built.history["note"] is None


def test_another_model_or_provider_gets_the_text_only() -> None:
    built = build([turn(1, provider="openai", model="gpt-5.5"), turn(2)])
    assert signatures(built.messages) == ["sig-2"]
    note = built.history["note"]
    assert note is not None and "Turn 1 was answered by another provider or model" in note
    assert [m.content for m in built.messages] == ["ask 1", "answer 1", "ask 2", "answer 2", "now"]


def test_a_task_that_requests_no_reasoning_sends_none_back() -> None:
    built = build([turn(1), turn(2)], requests_reasoning=False)
    assert signatures(built.messages) == []
    assert built.history == {"turns": 2, "dropped_turns": 0, "reasoning_turns": 0, "note": None}


def test_the_oldest_turns_are_left_out_whole_to_fit_the_window() -> None:
    turns = [turn(n, tools=n == 2) for n in range(1, 6)]
    one = math.ceil(turns[0].size / 3)
    # Room for about three turns beside the fixed part.
    window = 100 + 3 * one + 8_192 + one // 2
    built = build(turns, fixed_bytes=300, context_window=window)  # 100 tokens
    assert built.history["dropped_turns"] == 2
    assert built.history["turns"] == 3
    assert built.messages[0].content == "ask 3"  # never in the middle of a tool exchange
    # The prefix changed: preserved blocks of the kept turns go too, and it is said.
    assert signatures(built.messages) == []
    note = built.history["note"]
    assert note is not None and note.startswith(
        "The oldest 2 turns of the conversation were left out"
    )


def test_one_turn_left_out_is_said_in_the_singular() -> None:
    turns = [turn(n) for n in range(1, 6)]
    one = math.ceil(turns[0].size / 3)
    window = 100 + 4 * one + 8_192 + one // 2  # room for about four turns
    built = build(turns, fixed_bytes=300, context_window=window)
    assert built.history["dropped_turns"] == 1
    note = built.history["note"]
    assert note is not None and note.startswith(
        "The oldest turn of the conversation was left out to fit claude-"
    )


def test_a_turn_larger_than_the_window_fails_in_one_sentence() -> None:
    with pytest.raises(ThoughtlineError) as refused:
        build([turn(1)], fixed_bytes=800_000)  # over 191,808 tokens even at 4 B a token
    assert refused.value.code == "CONTEXT_WINDOW_EXCEEDED"
    assert "200,000-token context window" in refused.value.message


def test_an_unanswered_last_exchange_is_left_out() -> None:
    cut = turn(1, tools=True)
    # No final answer came.
    stopped = replace(cut, answer_json=threads.encode(cut.answer[:-1]), carriers_json=None)
    built = build([stopped], requests_reasoning=False)
    # The turn's prompt had no answer: the new prompt joins it in one user message.
    assert [[p.text for p in m.parts if isinstance(p, TextPart)] for m in built.messages] == [
        ["ask 1", "now"]
    ]
    assert not any(
        isinstance(part, ToolCallPart | ToolResultPart)
        for message in built.messages
        for part in message.parts
    )


def test_threads_round_trip_byte_for_byte_and_the_answer_layer_holds_no_carrier() -> None:
    gemini_call = ToolCallPart(
        tool_call_id="c",
        name="t",
        arguments='{"a": 1}',
        provider_metadata={"thought_signature": "gsig"},
        provider="gemini",
        model="gemini-3-pro",
    )
    messages = (
        Message(role="user", content="q \ud800 lone"),
        Message(role="assistant", parts=[turn(1).carriers[-1].parts[0], gemini_call]),  # type: ignore[index]
    )
    decoded = threads.decode(threads.encode(messages))
    assert decoded == messages
    assert [
        dict(p.provider_metadata)
        for m in decoded
        for p in m.parts
        if not isinstance(p, ToolResultPart)
    ] == [
        dict(p.provider_metadata)
        for m in messages
        for p in m.parts
        if not isinstance(p, ToolResultPart)
    ]
    answer = threads.encode(threads.answer_layer(messages))
    assert "gsig" not in answer and "sig-1" not in answer and "thought 1" not in answer
    with pytest.raises(threads.ThreadDecodeError):
        threads.decode('{"not": "a list"}')
    with pytest.raises(threads.ThreadDecodeError):
        threads.decode('[{"role": "system", "parts": []}]')

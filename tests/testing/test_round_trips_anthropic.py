"""The simulated Anthropic API refuses a tool loop whose thinking blocks did not come back
as they were made, with the status and message the real API sends."""

from __future__ import annotations

import pytest

from thoughtline import ReasoningRequest
from thoughtline.model.parts import Part, ToolResultPart
from thoughtline.model.requests import Message
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript
from thoughtline.testing.round_trips.anthropic import BINDING_BETA

from .loop import (
    CALL,
    CLOCK,
    FINAL_STEP,
    SECOND_CALL,
    TOOL_STEP,
    WEATHER,
    Loop,
    assert_refused,
    calls_first,
    post_raw,
    reasoning_of,
    with_metadata,
    with_reasoning_text,
    without_reasoning,
)

UNBOUND = "claude-opus-4-7"  # adaptive thinking, blocks not bound to their conversation
BOUND = "claude-opus-5-5"  # reasons by default; a block is bound to all before it
INVALID = "Invalid `signature` in `thinking` block"
MODIFIED = (
    "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified"
)
TWO_BLOCKS = Transcript(
    reasoning=(
        SimReasoning(kind="summary", text="First, the city."),
        SimReasoning(kind="redacted", signature="EmwKsimulatedRedactedData=="),
    ),
    tool_calls=(CALL,),
    finish="tool_calls",
    response_id="step_1_two_blocks",
)

SECOND_TOOL_STEP = Transcript(
    reasoning=(SimReasoning(kind="summary", text="Now Bern as well."),),
    tool_calls=(SECOND_CALL,),
    finish="tool_calls",
    response_id="step_2_tool",
)


def loop(environ: dict[str, str], model: str, **options: object) -> Loop:
    return Loop(environ=environ, endpoint="anthropic", model=model, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("model", [UNBOUND, BOUND])
async def test_blocks_sent_back_as_made_are_accepted(
    sim: Simulator, environ: dict[str, str], model: str, stream: bool
) -> None:
    steps = loop(environ, model, stream=stream)
    first = await steps.first(sim)
    signature = reasoning_of(first.parts)[0].provider_metadata["signature"]
    second = await steps.second(first)
    assert second.error is None
    assert second.text == FINAL_STEP.answer
    assert [(c.kind, c.value) for c in sim.carriers.returned] == [("signature", signature)]


async def test_an_altered_signature_is_invalid(sim: Simulator, environ: dict[str, str]) -> None:
    steps = loop(environ, UNBOUND)
    first = await steps.first(sim)
    second = await steps.second(first, with_metadata("signature", "EqForgedSignature=="))
    assert_refused(second, 400, f"messages.1.content.0: {INVALID}")


@pytest.mark.parametrize(
    "edit", [without_reasoning, calls_first], ids=["dropped", "after its tool_use"]
)
async def test_a_turn_that_no_longer_starts_with_thinking_is_refused(
    sim: Simulator, environ: dict[str, str], edit: object
) -> None:
    steps = loop(environ, UNBOUND)
    first = await steps.first(sim)
    second = await steps.second(first, edit)  # type: ignore[arg-type]
    assert_refused(
        second,
        400,
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start "
        "with a thinking block",
    )


def _swap_blocks(parts: tuple[Part, ...]) -> list[Part]:
    reasoning = reasoning_of(parts)
    return [*reversed(reasoning), *(p for p in parts if p not in reasoning)]


def _drop_second_block(parts: tuple[Part, ...]) -> list[Part]:
    return [part for part in parts if part is not reasoning_of(parts)[1]]


@pytest.mark.parametrize(
    "edit",
    [_swap_blocks, _drop_second_block, with_reasoning_text("")],
    ids=["reordered", "one dropped", "blanked"],
)
async def test_modified_blocks_of_the_latest_turn_are_refused(
    sim: Simulator, environ: dict[str, str], edit: object
) -> None:
    steps = loop(environ, UNBOUND)
    first = await steps.first(sim, TWO_BLOCKS)
    assert [part.kind for part in reasoning_of(first.parts)] == ["summary", "redacted"]
    second = await steps.second(first, edit)  # type: ignore[arg-type]
    assert_refused(second, 400, MODIFIED)


async def test_hidden_mode_signature_only_blocks_must_come_back(
    sim: Simulator, environ: dict[str, str]
) -> None:
    """A model that reasons by default sends empty-text blocks even in hidden mode; the
    loop stays valid only when they go back."""
    steps = loop(environ, BOUND, reasoning=ReasoningRequest(enabled=False))
    first = await steps.first(sim)
    assert [part.text for part in reasoning_of(first.parts)] == [""]
    assert (await steps.second(first)).error is None
    sim.reset()
    first = await steps.first(sim)
    assert_refused(await steps.second(first, without_reasoning), 400, "Expected `thinking`")


async def test_a_bound_block_refuses_a_changed_system_prompt(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, BOUND)
    first = await steps.first(sim)
    second = await steps.second(first, system="Answer briefly. Reminder: be kind.")
    assert_refused(
        second,
        400,
        f"messages.1.content.0: {INVALID}. The block is bound to a different conversation.",
        "The `system` prompt differs from the one this block was created with.",
    )


async def test_a_bound_block_refuses_an_edited_earlier_message(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, BOUND)
    first = await steps.first(sim)
    history = list(steps.history(first))
    history[0] = type(history[0])(role="user", content="Weather, please?")
    second = await steps.call(steps.request(history))
    assert_refused(
        second,
        400,
        "The block is bound to a different conversation",
        "messages.0 differs from the one this block was created with.",
    )


async def test_a_bound_block_refuses_reordered_tools(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, BOUND)
    first = await steps.first(sim)
    second = await steps.second(first, tools=(CLOCK, WEATHER))
    assert_refused(
        second, 400, "The `tools` list differs from the one this block was created with."
    )


async def test_a_bound_loop_must_stay_append_only(sim: Simulator, environ: dict[str, str]) -> None:
    """Step 3 sends step 2's blocks back; a step-1 tool result shown differently (e.g.
    redacted another way) changes what they are bound to."""
    steps = loop(environ, BOUND)
    sim.script_turns(TOOL_STEP, SECOND_TOOL_STEP, FINAL_STEP, profile="anthropic")
    first = await steps.call(steps.request([Message(role="user", content="Weather?")]))
    second = await steps.call(steps.request(steps.history(first)))
    assert second.error is None
    result = Message(
        role="user",
        parts=[ToolResultPart(tool_call_id="call_w2", name="get_weather", content="9 °C")],
    )
    history = [*steps.history(first), second.to_message(), result]
    third = await steps.call(steps.request(history))
    assert third.error is None
    assert third.text == FINAL_STEP.answer
    history[2] = Message(
        role="user",
        parts=[ToolResultPart(tool_call_id="call_w1", name="get_weather", content="[redacted]")],
    )
    again = await steps.call(steps.request(history))
    assert_refused(
        again,
        400,
        f"messages.3.content.0: {INVALID}. The block is bound to a different conversation.",
        "messages.2 differs from the one this block was created with.",
    )


async def test_an_unbound_block_survives_a_changed_system_prompt(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, UNBOUND)
    first = await steps.first(sim)
    second = await steps.second(first, system="Answer briefly. Reminder: be kind.")
    assert second.error is None


async def test_strict_round_trips_can_be_switched_off(
    sim: Simulator, environ: dict[str, str]
) -> None:
    sim.strict_round_trips = False
    steps = loop(environ, UNBOUND)
    first = await steps.first(sim)
    second = await steps.second(first, with_metadata("signature", "EqForgedSignature=="))
    assert second.error is None
    assert TOOL_STEP.tool_calls[0].call_id in str(sim.requests[-1].body)


@pytest.mark.parametrize("beta", [True, False], ids=["with the beta header", "without"])
async def test_drop_block_answers_and_lists_the_dropped_block(
    sim: Simulator, environ: dict[str, str], sim_server: SimulatorServer, beta: bool
) -> None:
    steps = loop(environ, BOUND)
    first = await steps.first(sim)
    assert (await steps.second(first)).error is None
    sim.script(FINAL_STEP, profile="anthropic", times=1)
    body = dict(sim.requests[-1].body or {})
    body["system"] = "Answer briefly. Today is Tuesday."
    body["thinking"] = {
        "type": "adaptive",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }
    headers = {"anthropic-beta": BINDING_BETA} if beta else {}
    status, answer = post_raw(sim_server, sim.requests[-1].path, body, headers)
    if not beta:
        assert status == 400
        assert "The block is bound to a different conversation" in answer["error"]["message"]
        return
    assert status == 200
    assert answer["input_transformations"] == [
        {
            "type": "thinking_dropped",
            "path": "messages.1.content.0",
            "reason": "prefix_binding_mismatch",
        }
    ]
    assert answer["content"] == [{"type": "text", "text": FINAL_STEP.answer}]


@pytest.mark.parametrize(
    ("thinking", "status"),
    [({"type": "adaptive"}, 400), ({"type": "enabled", "budget_tokens": 1024}, 400), (None, 200)],
    ids=["adaptive", "enabled", "no thinking"],
)
def test_a_forced_tool_is_refused_with_thinking_on(
    sim: Simulator, sim_server: SimulatorServer, thinking: dict[str, object] | None, status: int
) -> None:
    body: dict[str, object] = {
        "model": UNBOUND,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
    }
    if thinking is not None:
        body["thinking"] = thinking
    answered, answer = post_raw(sim_server, "/anthropic/v1/messages", body)
    assert answered == status
    if status == 400:
        assert answer["error"] == {
            "type": "invalid_request_error",
            "message": "Thinking may not be enabled when tool_choice forces tool use.",
        }


@pytest.mark.parametrize("tools", [None, []], ids=["no tools", "empty tools"])
def test_tool_blocks_in_a_request_that_defines_no_tools_are_refused(
    sim: Simulator, sim_server: SimulatorServer, tools: list[object] | None
) -> None:
    body: dict[str, object] = {
        "model": UNBOUND,
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sun"}],
            },
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And tomorrow?"},
        ],
    }
    if tools is not None:
        body["tools"] = tools
    answered, answer = post_raw(sim_server, "/anthropic/v1/messages", body)
    assert answered == 400
    assert answer["error"] == {
        "type": "invalid_request_error",
        "message": "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    }
    body["tools"] = [{"name": "w", "input_schema": {"type": "object"}}]
    answered, _ = post_raw(sim_server, "/anthropic/v1/messages", body)
    assert answered == 200

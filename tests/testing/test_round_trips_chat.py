"""Chat Completions servers: DeepSeek thinking mode demands ``reasoning_content`` back on
tool-call turns (``deepseek-reasoner`` with its own wording), OpenRouter relays Gemini's refusal of a turn without its
``reasoning_details``; llama.cpp, vLLM and Ollama take anything and record it."""

from __future__ import annotations

import pytest

from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

from .loop import CALL, FINAL_STEP, Loop, assert_refused, post_raw, without_reasoning

RAW_STEP = Transcript(
    reasoning=(SimReasoning(kind="raw", text="The user wants the weather; call the tool."),),
    tool_calls=(CALL,),
    finish="tool_calls",
    response_id="step_1_raw",
)
THINKING_MODE = "The `reasoning_content` in the thinking mode must be passed back to the API."


def loop(environ: dict[str, str], endpoint: str, model: str) -> Loop:
    return Loop(environ=environ, endpoint=endpoint, model=model)


def assistant_turns(sim: Simulator) -> list[dict[str, object]]:
    messages = (sim.requests[-1].body or {})["messages"]
    return [message for message in messages if message["role"] == "assistant"]


@pytest.mark.parametrize("model", ["deepseek-v4-pro", "deepseek-flash"])
async def test_deepseek_thinking_mode_accepts_reasoning_content_back(
    sim: Simulator, environ: dict[str, str], model: str
) -> None:
    steps = loop(environ, "deepseek", model)
    first = await steps.first(sim, RAW_STEP)
    second = await steps.second(first)
    assert second.error is None
    assert second.text == FINAL_STEP.answer
    assert [(c.kind, c.value) for c in sim.carriers.returned] == [
        ("reasoning_content", RAW_STEP.reasoning[0].text)
    ]


async def test_deepseek_thinking_mode_accepts_empty_reasoning_content(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, "deepseek", "deepseek-v4-pro")
    first = await steps.first(sim, RAW_STEP)
    second = await steps.second(first, without_reasoning)
    assert second.error is None
    assert assistant_turns(sim)[0]["reasoning_content"] == ""


async def test_deepseek_thinking_mode_refuses_a_tool_turn_without_reasoning_content(
    sim: Simulator, environ: dict[str, str], sim_server: SimulatorServer
) -> None:
    steps = loop(environ, "deepseek", "deepseek-v4-pro")
    first = await steps.first(sim, RAW_STEP)
    assert (await steps.second(first)).error is None
    body = dict(sim.requests[-1].body or {})
    body["messages"] = [
        {key: value for key, value in message.items() if key != "reasoning_content"}
        for message in body["messages"]
    ]
    status, answer = post_raw(sim_server, sim.requests[-1].path, body)
    assert (status, answer["error"]["message"]) == (400, THINKING_MODE)
    assert answer["error"]["type"] == "invalid_request_error"


async def test_deepseek_reasoner_refuses_a_tool_turn_without_reasoning_content(
    sim: Simulator, environ: dict[str, str], sim_server: SimulatorServer
) -> None:
    steps = loop(environ, "deepseek", "deepseek-reasoner")
    first = await steps.first(sim, RAW_STEP)
    assert (await steps.second(first)).error is None
    assert assistant_turns(sim)[0]["reasoning_content"] == RAW_STEP.reasoning[0].text
    body = dict(sim.requests[-1].body or {})
    body["messages"] = [
        {key: value for key, value in message.items() if key != "reasoning_content"}
        for message in body["messages"]
    ]
    status, answer = post_raw(sim_server, sim.requests[-1].path, body)
    assert status == 400
    assert answer["error"]["message"].startswith(
        "Missing `reasoning_content` field in the assistant message at message index 2."
    )
    assert answer["error"]["code"] == "invalid_request_error"


OPENROUTER_GEMINI = "google/gemini-3-pro"
SIGNED_STEP = Transcript(
    reasoning=(SimReasoning(kind="encrypted", signature="CiQBsimulatedGeminiSignature=="),),
    tool_calls=(CALL,),
    finish="tool_calls",
    response_id="step_1_openrouter",
)


async def test_openrouter_accepts_reasoning_details_back(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, "openrouter", OPENROUTER_GEMINI)
    first = await steps.first(sim, SIGNED_STEP)
    second = await steps.second(first)
    assert second.error is None
    assert "reasoning_details" in assistant_turns(sim)[0]
    assert [c.kind for c in sim.carriers.returned] == ["reasoning_details"]


async def test_openrouter_relays_gemini_refusing_a_turn_without_reasoning_details(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, "openrouter", OPENROUTER_GEMINI)
    first = await steps.first(sim, SIGNED_STEP)
    second = await steps.second(first, without_reasoning)
    assert_refused(second, 400, "Provider returned error", "Google AI Studio")
    assert "reasoning_details" not in assistant_turns(sim)[0]


async def test_openrouter_claude_takes_a_turn_without_reasoning_details(
    sim: Simulator, environ: dict[str, str]
) -> None:
    steps = loop(environ, "openrouter", "anthropic/claude-sonnet-4.6")
    first = await steps.first(sim, SIGNED_STEP)
    assert (await steps.second(first, without_reasoning)).error is None


@pytest.mark.parametrize(
    ("endpoint", "model", "field"),
    [("llamacpp", "qwen3-8b", "reasoning_content"), ("ollama", "qwen3:8b", "thinking")],
)
async def test_local_servers_take_any_history_and_record_what_came_back(
    sim: Simulator, environ: dict[str, str], endpoint: str, model: str, field: str
) -> None:
    steps = loop(environ, endpoint, model)
    first = await steps.first(sim, RAW_STEP)
    assert (await steps.second(first)).error is None
    assert [(c.kind, c.value) for c in sim.carriers.returned] == [
        (field, RAW_STEP.reasoning[0].text)
    ]
    sim.reset()
    first = await steps.first(sim, RAW_STEP)
    assert (await steps.second(first, without_reasoning)).error is None
    assert sim.carriers.returned == []

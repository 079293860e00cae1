"""The simulator's token count APIs answer as Anthropic's and Gemini's do: the count of
a request's input (the thinking of the current assistant turn only), and each
provider's own refusal of a body or model it would refuse."""

from __future__ import annotations

from typing import Any

import httpx2

from thoughtline.testing import Simulator, SimulatorServer

ANTHROPIC = "/anthropic/v1/messages/count_tokens"
GEMINI = "/gemini/v1beta/models/gemini-2.5-flash:countTokens"


def _post(server: SimulatorServer, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    answer = httpx2.post(server.url + path, json=body, timeout=10)
    return answer.status_code, answer.json()


def _tool_turn(thinking: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": thinking, "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        ],
    }


def test_anthropics_count_counts_the_current_turns_thinking_and_not_earlier_ones(
    sim: Simulator, sim_server: SimulatorServer
) -> None:
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}
    question = {"role": "user", "content": "Weather?"}  # 8 characters: 2 tokens
    body: dict[str, Any] = {"model": "claude-sonnet-4-6", "messages": [question]}
    assert _post(sim_server, ANTHROPIC, body) == (200, {"input_tokens": 2})
    thought = "x" * 400  # 100 tokens
    body["messages"] = [question, _tool_turn(thought), {"role": "user", "content": [result]}]
    status, current = _post(sim_server, ANTHROPIC, body)
    assert status == 200
    body["messages"] += [{"role": "assistant", "content": "Mild."}, question]
    status, later = _post(sim_server, ANTHROPIC, body)
    assert status == 200
    # Once a later assistant turn follows, the tool turn's thinking counts no more.
    assert current["input_tokens"] - 100 == later["input_tokens"] - 1 - 2  # "Mild.", "Weather?"


def test_anthropics_count_refuses_a_generation_field_as_the_api_does(
    sim: Simulator, sim_server: SimulatorServer
) -> None:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": [{"role": "user"}]}
    status, refused = _post(sim_server, ANTHROPIC, body)
    assert status == 400
    assert refused["error"] == {
        "type": "invalid_request_error",
        "message": "max_tokens: Extra inputs are not permitted",
    }


def test_a_count_for_a_model_the_provider_does_not_serve_is_its_not_found(
    sim: Simulator, sim_server: SimulatorServer
) -> None:
    sim.any_model = False
    body = {"model": "claude-sonet-4-6", "messages": [{"role": "user", "content": "Hi"}]}
    status, refused = _post(sim_server, ANTHROPIC, body)
    assert status == 404
    assert refused["error"]["type"] == "not_found_error"


def test_geminis_count_takes_one_of_contents_or_a_whole_request(
    sim: Simulator, sim_server: SimulatorServer
) -> None:
    contents = [{"role": "user", "parts": [{"text": "Weather?"}]}]
    assert _post(sim_server, GEMINI, {"contents": contents}) == (200, {"totalTokens": 2})
    whole = {"model": "models/gemini-2.5-flash", "contents": contents}
    assert _post(sim_server, GEMINI, {"generateContentRequest": whole}) == (
        200,
        {"totalTokens": 2},
    )
    status, refused = _post(
        sim_server, GEMINI, {"contents": contents, "generateContentRequest": whole}
    )
    assert status == 400
    assert refused["error"]["status"] == "INVALID_ARGUMENT"
    assert "Exactly one of contents or generateContentRequest" in refused["error"]["message"]

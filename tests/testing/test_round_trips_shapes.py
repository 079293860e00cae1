"""The round-trip rules read only what they check: a history in shapes they do not know
is answered, never a simulator crash."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.testing import Simulator, SimulatorServer

from .loop import post_raw

ODD_HISTORIES: dict[str, tuple[str, dict[str, Any]]] = {
    "anthropic": (
        "/anthropic/v1/messages",
        {
            "model": "claude-opus-5-5",
            "max_tokens": 16,
            "messages": [
                "junk",
                {"role": "assistant", "content": "plain"},
                {"role": "assistant", "content": [1, {"type": "text"}]},
                {"role": "user", "content": "hi"},
            ],
        },
    ),
    "openai": (
        "/openai/v1/responses",
        {
            "model": "gpt-5.5",
            "store": False,
            "input": ["junk", {"type": "function_call", "call_id": "x"}, "hi"],
        },
    ),
    "gemini": (
        "/gemini/v1beta/models/gemini-3-pro:generateContent",
        {"contents": ["junk", {"role": "model", "parts": [3, {"text": "x"}]}, {"parts": 1}]},
    ),
    "deepseek": (
        "/deepseek/chat/completions",
        {"model": "deepseek-v4-pro", "messages": ["junk", {"role": "assistant", "content": "x"}]},
    ),
    "openrouter": (
        "/openrouter/api/v1/chat/completions",
        {"model": "google/gemini-3-pro", "messages": [{"role": "assistant", "tool_calls": ["x"]}]},
    ),
}


@pytest.mark.parametrize("profile", list(ODD_HISTORIES))
def test_odd_histories_are_answered(
    sim: Simulator, sim_server: SimulatorServer, profile: str
) -> None:
    path, body = ODD_HISTORIES[profile]
    status, _answer = post_raw(sim_server, path, body)
    assert status == 200
    assert sim.requests[-1].profile == profile

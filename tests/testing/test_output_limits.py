"""The simulator refuses an output field above the model's max output (the capability
data's ``max_output_tokens``) with each provider's own status and wording, over HTTP on
127.0.0.1, and answers the same request at the max."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from thoughtline.testing import SimulatorServer

MESSAGES = [{"role": "user", "content": "Hi."}]
CASES: dict[str, tuple[str, str, dict[str, Any], int, str]] = {
    # name: profile, path, body without the field, the model's max, the refusal
    "anthropic": (
        "anthropic",
        "/v1/messages",
        {"model": "claude-sonnet-4-5", "messages": MESSAGES, "max_tokens": "{}"},
        64_000,
        "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens "
        "for claude-sonnet-4-5",
    ),
    "openai chat": (
        "openai",
        "/chat/completions",
        {"model": "gpt-4o", "messages": MESSAGES, "max_completion_tokens": "{}"},
        16_384,
        "max_completion_tokens is too large: 16385. This model supports at most 16384 "
        "completion tokens, whereas you provided 16385.",
    ),
    "openai responses": (
        "openai",
        "/responses",
        {"model": "o4-mini", "input": "Hi.", "max_output_tokens": "{}"},
        100_000,
        "Invalid 'max_output_tokens': integer above maximum value. Expected a value <= "
        "100000, but got 100001 instead.",
    ),
    "gemini": (
        "gemini",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": "Hi."}]}],
            "generationConfig": {"maxOutputTokens": "{}"},
        },
        65_536,
        "Unable to submit request because it has a maxOutputTokens value of 65537 but the "
        "supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and "
        "try again.",
    ),
}


def with_tokens(body: dict[str, Any], tokens: int) -> dict[str, Any]:
    """``body`` with its ``"{}"`` placeholder set to ``tokens``."""
    return {
        key: with_tokens(value, tokens)
        if isinstance(value, dict)
        else (tokens if value == "{}" else value)
        for key, value in body.items()
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_field_above_the_models_max_gets_the_providers_own_400(
    case: str, sim_server: SimulatorServer
) -> None:
    profile, path, body, most, refusal = CASES[case]
    url = sim_server.base_url_for(profile) + path
    headers = {"authorization": "Bearer k", "x-api-key": "k", "x-goog-api-key": "k"}
    with httpx2.Client(timeout=10) as client:
        refused = client.post(url, json=with_tokens(body, most + 1), headers=headers)
        answered = client.post(url, json=with_tokens(body, most), headers=headers)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["message"] == refusal
    assert answered.status_code == 200, answered.text

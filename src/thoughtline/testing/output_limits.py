"""Each simulated provider's refusal of a request that asks for more output than its model
writes.

The model's max output is thoughtline's capability data (``max_output_tokens`` in
``providers/capabilities.toml``); a request whose output field is above it gets what that
provider really answers, status and body, so a test sees the failure a real call would
meet (and its absence):

- Anthropic (``max_tokens``): 400 ``invalid_request_error``, "max_tokens: N > M, which is
  the maximum allowed number of output tokens for MODEL";
- OpenAI Chat Completions (``max_completion_tokens``, or the older ``max_tokens``): 400
  ``invalid_value``, "max_completion_tokens is too large: N. This model supports at most M
  completion tokens, whereas you provided N.";
- OpenAI Responses (``max_output_tokens``): 400 ``integer_above_max_value``, "Invalid
  'max_output_tokens': integer above maximum value. Expected a value <= M, but got N
  instead.";
- Gemini (``generationConfig.maxOutputTokens``): 400 ``INVALID_ARGUMENT``, "Unable to
  submit request because it has a maxOutputTokens value of N but the supported range is
  from 1 (inclusive) to M+1 (exclusive). Update the value and try again.".

DeepSeek, OpenRouter, Ollama, vLLM and llama.cpp models have no max output in the data
(see ``capabilities.toml``; the upstream or the server decides), so those profiles
refuse none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from thoughtline.testing.transcript import SimRequest

__all__ = ["output_refusal"]

Refusal = Callable[[str, int, int, str], tuple[int, dict[str, Any]]]
"""(field, asked, most, model) → status and body."""


def output_refusal(request: SimRequest) -> tuple[int, bytes] | None:
    """The provider's status and body for ``request`` when its output field asks for more
    than its model writes; ``None`` when it does not (or the model's max is unknown)."""
    from thoughtline.providers.capabilities import builtin_capabilities

    field = _output_field(request)
    refusal = _REFUSALS.get(request.profile)
    if field is None or refusal is None or request.model is None:
        return None
    name, asked = field
    most = builtin_capabilities().lookup(request.profile, request.model).max_output_tokens
    if most is None or asked <= most:
        return None
    status, body = refusal(name, asked, most, request.model)
    return status, json.dumps(body).encode()


def _output_field(request: SimRequest) -> tuple[str, int] | None:
    """The request's output field, as its wire API names it, and its value."""
    body: Mapping[str, Any] = request.body or {}
    if request.profile == "gemini":
        config = body.get("generationConfig")
        return _tokens(config if isinstance(config, dict) else {}, "maxOutputTokens")
    if request.path.endswith("/responses"):
        return _tokens(body, "max_output_tokens")
    return _tokens(body, "max_completion_tokens") or _tokens(body, "max_tokens")


def _tokens(body: Mapping[str, Any], name: str) -> tuple[str, int] | None:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return name, value


def _anthropic(name: str, asked: int, most: int, model: str) -> tuple[int, dict[str, Any]]:
    return 400, {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"max_tokens: {asked} > {most}, which is the maximum allowed number "
            f"of output tokens for {model}",
        },
        "request_id": "req_simulated_max_tokens",
    }


def _openai(name: str, asked: int, most: int, model: str) -> tuple[int, dict[str, Any]]:
    if name == "max_output_tokens":  # the Responses API's bound check
        message = (
            f"Invalid 'max_output_tokens': integer above maximum value. Expected a value "
            f"<= {most}, but got {asked} instead."
        )
        code = "integer_above_max_value"
    else:
        message = (
            f"{name} is too large: {asked}. This model supports at most {most} completion "
            f"tokens, whereas you provided {asked}."
        )
        code = "invalid_value"
    error = {"message": message, "type": "invalid_request_error", "param": name, "code": code}
    return 400, {"error": error}


def _gemini(name: str, asked: int, most: int, model: str) -> tuple[int, dict[str, Any]]:
    return 400, {
        "error": {
            "code": 400,
            "message": (
                f"Unable to submit request because it has a maxOutputTokens value of {asked} "
                f"but the supported range is from 1 (inclusive) to {most + 1} (exclusive). "
                "Update the value and try again."
            ),
            "status": "INVALID_ARGUMENT",
        }
    }


_REFUSALS: dict[str, Refusal] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "gemini": _gemini,
}

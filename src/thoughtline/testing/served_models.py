"""Which model ids each simulated provider serves, and its own answer to any other.

A simulated provider knows the ids thoughtline's data knows for its endpoint: the
capability catalogue's (``providers/capabilities.toml``: its ``models`` and its ``match``
ids) and those the pinned price data prices there. A request naming another model gets
what that provider really answers for an unknown model, status and body, so that a typo
(``claude-sonet-4-6``) fails as it would in production instead of running unpriced:

- Anthropic: 404 ``not_found_error``;
- OpenAI (Responses and Chat Completions): 404 ``model_not_found``;
- OpenRouter: 400 "... is not a valid model ID";
- Gemini: 404 ``NOT_FOUND`` ("models/... is not found for API version v1beta");
- DeepSeek: 400 "Model Not Exist";
- vLLM: 404 ``NotFoundError`` ("The model `...` does not exist."). A vLLM server
  serves the model it was started with; the simulated one was started with
  ``Qwen/Qwen3-8B`` (:data:`VLLM_SERVED_MODEL`), as by ``vllm serve Qwen/Qwen3-8B``;
- Ollama: 404 "model '...' not found".

llama.cpp's server loads one model and answers whatever id a request names, so its
profiles serve any. :meth:`~thoughtline.testing.simulator.Simulator.add_models` adds ids
(a test's own, a ``--script`` file's), and ``Simulator(any_model=True)`` serves every id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["VLLM_SERVED_MODEL", "ModelCatalogue", "catalogue"]

VLLM_SERVED_MODEL = "Qwen/Qwen3-8B"

Refusal = Callable[[str], tuple[int, dict[str, Any]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCatalogue:
    """The model ids a simulated provider serves, from the data of ``endpoint``, and
    how it refuses any other."""

    endpoint: str
    refusal: Refusal
    served: frozenset[str] = frozenset()  # ids served beyond the data's (a server's own)

    def knows(self, model: str) -> bool:
        if self.endpoint == "ollama":
            model = model.removesuffix(":latest")  # Ollama's default tag
        return (
            model in self.served
            or model in _catalogued(self.endpoint)
            or _priced(self.endpoint, model)
        )

    def refuse(self, model: str) -> tuple[int, bytes]:
        """The provider's status and body for a request naming ``model``, which it does
        not serve."""
        status, body = self.refusal(model)
        return status, json.dumps(body).encode()


@cache
def _catalogued(endpoint: str) -> frozenset[str]:
    from thoughtline.providers.capabilities import builtin_capabilities

    families = builtin_capabilities().for_endpoint(endpoint)
    return frozenset(
        {model for family in families for model in family.models}
        | {prefix for family in families for prefix in family.match}
    )


@cache
def _priced(endpoint: str, model: str) -> bool:
    from thoughtline.config.pricing import DATA_PROVIDERS, Pricer, Prices

    if endpoint not in DATA_PROVIDERS:
        return False
    return isinstance(Pricer().prices(endpoint, model), Prices)


def _anthropic(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {
        "type": "error",
        "error": {"type": "not_found_error", "message": f"model: {model}"},
        "request_id": "req_simulated_not_found",
    }


def _openai(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {
        "error": {
            "message": f"The model `{model}` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def _openrouter(model: str) -> tuple[int, dict[str, Any]]:
    return 400, {"error": {"message": f"{model} is not a valid model ID", "code": 400}}


def _gemini(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {
        "error": {
            "code": 404,
            "message": (
                f"models/{model} is not found for API version v1beta, or is not supported "
                "for generateContent. Call ListModels to see the list of available models "
                "and their supported methods."
            ),
            "status": "NOT_FOUND",
        }
    }


def _deepseek(model: str) -> tuple[int, dict[str, Any]]:
    return 400, {
        "error": {
            "message": "Model Not Exist",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    }


def _vllm(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {
        "object": "error",
        "message": f"The model `{model}` does not exist.",
        "type": "NotFoundError",
        "param": None,
        "code": 404,
    }


def _ollama(model: str) -> tuple[int, dict[str, Any]]:
    return 404, {"error": f"model '{model}' not found"}


_REFUSALS: dict[str, Refusal] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "openrouter": _openrouter,
    "gemini": _gemini,
    "deepseek": _deepseek,
    "vllm": _vllm,
    "ollama": _ollama,
}


def catalogue(endpoint: str) -> ModelCatalogue:
    """The models the simulated ``endpoint`` serves (a built-in endpoint's name)."""
    served = frozenset({VLLM_SERVED_MODEL}) if endpoint == "vllm" else frozenset()
    return ModelCatalogue(endpoint=endpoint, refusal=_REFUSALS[endpoint], served=served)

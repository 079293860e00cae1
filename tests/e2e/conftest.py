"""Constants of the provider end-to-end tests (fixtures live in tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import CANARY_KEY

# Endpoint → a model of it
ENDPOINT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.5",
    "openrouter": "anthropic/claude-sonnet-4.6",
    "gemini": "gemini-3-pro",
    "deepseek": "deepseek-reasoner",
    "vllm": "qwen3-32b",
    "llamacpp": "qwen3-8b",
    "ollama": "qwen3:8b",
}

__all__ = ["CANARY_KEY", "ENDPOINT_MODELS"]

"""One simulator server for the end-to-end tests; each test starts from a clean script."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from thoughtline.testing import Simulator, SimulatorServer

CANARY_KEY = "tl-canary-key-0c4f9e27d1b8a653"

# Endpoint → (a model of it, the simulator profile that stands in for it)
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


@pytest.fixture(scope="session")
def sim_server() -> Iterator[SimulatorServer]:
    with SimulatorServer(Simulator()) as server:
        yield server


@pytest.fixture
def sim(sim_server: SimulatorServer) -> Iterator[Simulator]:
    sim_server.simulator.reset()
    yield sim_server.simulator
    sim_server.simulator.reset()


@pytest.fixture
def environ(sim_server: SimulatorServer) -> dict[str, str]:
    """Base URLs pointing at the simulator and the same canary key for every provider."""
    env = sim_server.environ()
    for variable in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "VLLM_API_KEY",
        "LLAMACPP_API_KEY",
    ):
        env[variable] = CANARY_KEY
    return env

"""Fixtures shared by the suites: one provider simulator server for the whole session;
each test starts from a clean script."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from thoughtline.testing import Simulator, SimulatorServer

CANARY_KEY = "tl-canary-key-0c4f9e27d1b8a653"
KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "VLLM_API_KEY",
    "LLAMACPP_API_KEY",
)


@pytest.fixture(scope="session")
def sim_server() -> Iterator[SimulatorServer]:
    with SimulatorServer(Simulator()) as server:
        yield server


@pytest.fixture
def sim(sim_server: SimulatorServer) -> Iterator[Simulator]:
    sim_server.simulator.reset()
    sim_server.simulator.pace_s = 0.0
    yield sim_server.simulator
    sim_server.simulator.reset()
    sim_server.simulator.pace_s = 0.0


@pytest.fixture
def environ(sim_server: SimulatorServer) -> dict[str, str]:
    """Base URLs pointing at the simulator and the same canary key for every provider."""
    env = sim_server.environ()
    for variable in KEY_VARIABLES:
        env[variable] = CANARY_KEY
    return env

"""Fixtures shared by the suites: one provider simulator server for the whole session
(for each xdist worker), each test starting from a clean script.

A test that costs seconds (processes, browsers, fuzzers, long streams) is marked ``slow``
where it is written, ``pytestmark = pytest.mark.slow`` at the top of its file or
``@pytest.mark.slow`` on it, so ``pytest -m "not slow"`` is the quick loop and a plain
``pytest`` runs everything."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from thoughtline.testing import DEFAULT_TRANSCRIPT, Simulator, SimulatorServer

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
    # One fixed answer for the library's own tests; the default model has tests of its own.
    # Any model id is served: many tests name made-up models (the served ids have tests
    # of their own, which turn ``any_model`` off).
    simulator = Simulator(default_transcript=DEFAULT_TRANSCRIPT, any_model=True)
    with SimulatorServer(simulator) as server:
        yield server


@pytest.fixture
def sim(sim_server: SimulatorServer) -> Iterator[Simulator]:
    simulator = sim_server.simulator
    default_transcript = simulator.default_transcript  # a test may set its own
    simulator.reset()
    simulator.pace_s = 0.0
    yield simulator
    simulator.reset()
    simulator.pace_s = 0.0
    simulator.strict_round_trips = True
    simulator.any_model = True
    simulator.default_transcript = default_transcript


@pytest.fixture
def environ(sim_server: SimulatorServer) -> dict[str, str]:
    """Base URLs pointing at the simulator and the same canary key for every provider."""
    env = sim_server.environ()
    for variable in KEY_VARIABLES:
        env[variable] = CANARY_KEY
    return env

"""What a hidden task asks each server for, through the real runtime and the simulator:
the server's switch not to reason where it has one, and none where the model always
reasons or a tool loop needs the reasoning's carriers back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.test_disclosure_e2e import all_bytes_under, make_runtime
from tests.runtime.test_tool_loop import FINAL, calling, requests_of, tooled_runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

CANARY = "CANARY-HIDDEN-SWITCH-41d0"
THINKING = Transcript(
    reasoning=(SimReasoning(kind="raw", text=f"Thinking it over; {CANARY}."),),
    answer="Done.",
)
ABSENT = object()

# (endpoint, model) -> the body keys a hidden call sends (ABSENT: the key is left out)
ASKS: dict[tuple[str, str], dict[str, Any]] = {
    ("ollama", "qwen3:8b"): {"think": False},
    ("ollama", "gpt-oss:20b"): {"think": ABSENT},  # think takes levels only
    ("vllm", "Qwen/Qwen3-8B"): {"chat_template_kwargs": {"enable_thinking": False}},
    ("llamacpp", "qwen3-8b"): {"chat_template_kwargs": {"enable_thinking": False}},
    ("deepseek", "deepseek-chat"): {"thinking": {"type": "disabled"}},
    ("deepseek", "deepseek-reasoner"): {"thinking": ABSENT},  # always thinks
    ("openrouter", "deepseek/deepseek-r1"): {"reasoning": {"exclude": True}},
}

# With tools: what changes. DeepSeek keeps thinking (its thinking mode wants
# reasoning_content back on every tool-call turn) and OpenRouter leaves exclude out (the
# upstream's reasoning_details must come back for the next step); the rest switch off.
LOOP_ASKS: dict[tuple[str, str], dict[str, Any]] = {
    **ASKS,
    ("deepseek", "deepseek-chat"): {"thinking": ABSENT},
    ("openrouter", "google/gemini-3-pro"): {"reasoning": ABSENT},
}
del LOOP_ASKS[("openrouter", "deepseek/deepseek-r1")]


def _asked(body: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    return {key: body.get(key, ABSENT) for key in expected}


@pytest.mark.parametrize(("endpoint", "model"), list(ASKS))
async def test_a_hidden_call_asks_the_server_not_to_reason_where_it_can(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    endpoint: str,
    model: str,
) -> None:
    sim.script(THINKING)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    spec = RunSpec(
        request="Explain.",
        tasks=(TaskSpec(name="t", role="engineer", provider=endpoint, model=model),),
    )
    try:
        run = await runtime.run(spec, explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    assert run.tasks[0].output == "Done."
    (request,) = sim.requests
    assert _asked(dict(request.body or {}), ASKS[endpoint, model]) == ASKS[endpoint, model]
    assert CANARY not in json.dumps(run.snapshot())
    assert CANARY.encode() not in all_bytes_under(tmp_path / "home")


@pytest.mark.slow
async def test_a_hidden_tool_loop_switches_off_or_keeps_the_carriers_it_needs(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    step = calling("repeat", {"text": "ab", "times": 2})
    for endpoint, model in LOOP_ASKS:
        sim.script_turns(step, FINAL, profile=endpoint, model=model)
    home = tmp_path / "home"
    runtime, store = tooled_runtime(home, sim_server, environ)
    spec = RunSpec(
        request="Use the tool.",
        tasks=tuple(
            TaskSpec(
                name=f"{endpoint}-{index}",
                role="engineer",
                provider=endpoint,
                model=model,
                tools=("probe",),
            )
            for index, (endpoint, model) in enumerate(LOOP_ASKS)
        ),
    )
    try:
        run = await runtime.run(spec, explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    for endpoint, model in LOOP_ASKS:
        first, second = requests_of(sim, endpoint, model)
        expected = LOOP_ASKS[endpoint, model]
        for request in (first, second):
            assert _asked(dict(request.body or {}), expected) == expected, (endpoint, model)
    # DeepSeek thinks in a tool loop: its reasoning went back as the carrier its thinking
    # mode demands (the simulator refuses a history without it), and nowhere else.
    for model in ("deepseek-chat", "deepseek-reasoner"):
        assert "CANARY-LOOP" in json.dumps(requests_of(sim, "deepseek", model)[1].body)
    # Ollama, switched off, did not think: nothing to carry.
    assert "CANARY-LOOP" not in json.dumps(requests_of(sim, "ollama", "qwen3:8b")[1].body)
    for task in run.tasks:
        assert task.output == "The tool said abab.", task.name
    assert CANARY not in json.dumps(run.snapshot())
    assert b"CANARY-LOOP" not in all_bytes_under(home)

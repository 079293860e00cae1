"""After the disclosure gate, a response's parts are the only truth: through the real
runtime, store, simulator and a real MCP server, a tool step and a follow-up turn in each
mode, where the model writes a loaded key in its answer, its tool call's arguments and
its reasoning. Every response the gate hands on agrees with its own views, holds the key
nowhere, and holds the reasoning exactly where the mode allows; the history, the stored
thread and the run take those parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import MODES
from tests.runtime.test_tool_loop import requests_of, tooled_runtime
from thoughtline.model import threads
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, unstorable
from thoughtline.providers.redaction import REDACTED
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.runtime.policy.disclosure import Captured, DisclosureGate
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # the tool step starts a tool server process

CANARY = "CANARY-GATE-3b8e"

# task name -> (endpoint, model): a signature bound to the thinking text, reasoning text
# the thinking mode wants back, and an encrypted carrier.
WIRES = {
    "anthropic": ("anthropic", "claude-opus-5-5"),
    "deepseek": ("deepseek", "deepseek-v4-pro"),
    "openai-responses": ("openai", "gpt-5.5"),
}


def thought(step: str) -> tuple[SimReasoning, ...]:
    text = f"Step {step}: the prompt carried {CANARY_KEY}; {CANARY}."
    return (SimReasoning(kind="summary", text=text, signature=f"sig-{step}"),)


CALLING = Transcript(
    reasoning=thought("1"),
    tool_calls=(
        SimToolCall(
            call_id="call_1",
            name="probe__repeat",
            arguments=json.dumps({"text": f"{CANARY_KEY}!", "times": 1}),
        ),
    ),
    reasoning_tokens=20,
)
ANSWERED = Transcript(reasoning=thought("2"), answer=f"Done; key {CANARY_KEY}.", reasoning_tokens=9)
FOLLOWED = Transcript(reasoning=thought("3"), answer="Again.", reasoning_tokens=9)


def agrees_with_its_parts(response: ModelResponse) -> None:
    parts = response.parts
    assert response.text == "".join(p.text for p in parts if isinstance(p, TextPart))
    assert response.reasoning_parts == tuple(p for p in parts if isinstance(p, ReasoningPart))
    assert response.tool_calls == tuple(p for p in parts if isinstance(p, ToolCallPart))
    assert response.to_message().parts == parts


@pytest.mark.parametrize("mode", MODES)
async def test_the_gates_parts_and_views_agree_and_hold_reasoning_only_where_the_mode_allows(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real gate, watched: what it was given and what it handed on.
    seen: list[tuple[ModelResponse, Captured]] = []
    capture = DisclosureGate.capture

    def watched(gate: DisclosureGate, response: ModelResponse) -> Captured:
        captured = capture(gate, response)
        seen.append((response, captured))
        return captured

    monkeypatch.setattr(DisclosureGate, "capture", watched)
    for endpoint, model in WIRES.values():
        profile = "openai" if endpoint == "openai-chat" else endpoint
        sim.script_turns(CALLING, ANSWERED, FOLLOWED, profile=profile, model=model)
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    tasks = tuple(
        TaskSpec(name=name, role="engineer", provider=endpoint, model=model, tools=("probe",))
        for name, (endpoint, model) in WIRES.items()
    )
    try:
        first = await runtime.run(RunSpec(request="Use it.", tasks=tasks), explicit_mode=mode)
        assert first.status == "completed", [(t.name, t.error) for t in first.tasks]
        second = await runtime.run(
            RunSpec(request="Again?", tasks=tasks, continues=first.id), explicit_mode=mode
        )
        assert second.status == "completed", [(t.name, t.error) for t in second.tasks]
    finally:
        await runtime.aclose()
        store.close()

    assert len(seen) == 3 * len(WIRES)  # a tool step, its answer, the follow-up's answer
    # Even hidden, DeepSeek's thinking mode reasons in a tool loop and sends its text.
    assert any(CANARY in raw.reasoning_text for raw, _ in seen)
    for raw, captured in seen:
        cleaned = captured.response
        agrees_with_its_parts(cleaned)
        held = json.dumps(threads.encode([cleaned.to_message()]))
        assert CANARY_KEY not in held
        assert (CANARY in held) is (mode != "hidden" and CANARY in raw.reasoning_text)
        assert len(cleaned.reasoning_parts) == len(raw.reasoning_parts)
        for part, arrived in zip(cleaned.reasoning_parts, raw.reasoning_parts, strict=True):
            assert part.provider_metadata == arrived.provider_metadata  # carriers kept
            if mode == "hidden":
                assert part.text == ""
            else:
                assert part.text == arrived.text.replace(CANARY_KEY, REDACTED)
            # What arrived stays in memory, for the task's next call to its maker only.
            assert part.as_arrived == arrived.text
        for call in cleaned.tool_calls:
            assert json.loads(call.arguments) == {"text": f"{REDACTED}!", "times": 1}
        assert cleaned.text in ("", f"Done; key {REDACTED}.", "Again.")

    for run in (first, second):
        snapshot = json.dumps(run.snapshot())
        assert CANARY_KEY not in snapshot
        assert (CANARY in snapshot) is (mode in ("surface", "surface_and_telemetry"))
        for task in run.tasks:
            thread = task.thread
            assert thread is not None
            stored = threads.encode(thread.answer) + threads.encode(thread.carriers or ())
            assert CANARY_KEY not in stored
            # A part whose text held the key is never stored, as its carrier is bound to
            # what arrived: the answer layer keeps no reasoning and no carrier.
            assert CANARY not in stored
            # The thread is the gate's parts: the last answer as the gate handed it on
            # (its answer layer; with the parts that may be stored, when requested).
            last = next(
                c.response
                for _, c in reversed(seen)
                if (c.response.model, c.response.text) == (task.model, task.output)
            )
            assert thread.answer[-1:] == threads.answer_layer([last.to_message()])
            if mode == "hidden":
                assert thread.carriers is None
            else:
                assert thread.carriers is not None
                kept = tuple(part for part in last.parts if not unstorable(part))
                assert thread.carriers[-1].parts == kept

    for endpoint, model in WIRES.values():
        _, step_two, follow_up = requests_of(sim, endpoint, model)
        # The tool step's turn went back to its maker with the arguments cleaned and the
        # reasoning as it arrived (the simulator refuses a changed signed block).
        sent = json.dumps(step_two.body)
        assert f"{REDACTED}!" in sent
        assert f"{CANARY_KEY}!" not in sent
        assert CANARY_KEY not in json.dumps(follow_up.body)

"""A conversation's spans: every span of a follow-up names its conversation
(``gen_ai.conversation.id``) and the run it continues, and a hidden turn's reasoning
reaches no span of a later one, even with content capture on."""

from __future__ import annotations

from pathlib import Path

from tests.telemetry.support import RUN_SPAN, by_name, spans_json, traced_runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

CANARY = "CANARY-CONV-SPAN-31d"


def one(request: str, continues: str | None = None) -> RunSpec:
    task = TaskSpec(name="t", role="engineer", provider="anthropic", model="claude-opus-5-5")
    return RunSpec(request=request, tasks=(task,), continues=continues)


async def test_follow_up_spans_name_the_conversation_and_carry_no_hidden_reasoning(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text=CANARY, signature=f"sig-{CANARY}"),),
            answer="Answer.",
        ),
        profile="anthropic",
    )
    runtime, store, exporter, telemetry = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=True
    )
    try:
        first = await runtime.run(one("First?"), explicit_mode="hidden")
        second = await runtime.run(one("Then?", first.id), explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    spans = exporter.get_finished_spans()
    run_spans = by_name(spans, RUN_SPAN)
    assert [span.attributes.get("thoughtline.run.continues") for span in run_spans] == [
        None,
        first.id,
    ]
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["gen_ai.conversation.id"] == first.id, span.name
    assert second.conversation_id == first.id
    assert CANARY not in spans_json(spans)
    telemetry.shutdown()

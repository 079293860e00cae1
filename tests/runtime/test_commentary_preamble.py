"""A Responses ``commentary`` preamble is not the answer, live or stored: the live answer
stream and the task's output are the final answer alone, and a preamble with no final
answer after it is the answer in both (served by a real loopback server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.test_model_fallback import serving
from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.records.run_events import RunEvent, TaskAnswerDelta
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore

FIXTURE = Path(__file__).parent.parent / "fixtures" / "openai_responses" / "phase_commentary.sse"
PREAMBLE = "Ich schaue kurz nach — dann die Antwort."
FINAL = "Die Hauptstadt ist Bern 🇨🇭."
CUT_BEFORE_FINAL = (
    b'event: response.output_item.added\ndata: {"type":"response.output_item.added",'
    b'"sequence_number":8'
)


@pytest.mark.parametrize("final_arrives", [True, False])
async def test_the_live_answer_and_the_output_are_the_final_answer(
    tmp_path: Path, final_arrives: bool
) -> None:
    body = FIXTURE.read_bytes()
    if not final_arrives:
        body = body[: body.index(CUT_BEFORE_FINAL)]
    async with serving(body) as base_url:
        runtime = Runtime(
            config=Config(
                path=None,
                providers={"openai": EndpointSettings(base_url=base_url)},
            ),
            store=SQLiteStore(tmp_path / "thoughtline.db"),
            environ={"OPENAI_API_KEY": "test-key-commentary"},
            retry=RetryPolicy(max_retries=0),
        )
        seen: list[RunEvent] = []
        spec = RunSpec(
            request="x",
            tasks=(TaskSpec(name="t", role="engineer", provider="openai", model="gpt-5.5"),),
        )
        run = await runtime.run(spec, explicit_mode="surface", observer=seen.append)
        runtime.store.close()
    (task,) = run.tasks
    live = "".join(event.text for event in seen if isinstance(event, TaskAnswerDelta))
    expected = FINAL if final_arrives else PREAMBLE
    assert task.output == expected
    assert live == expected
    if final_arrives:
        assert PREAMBLE not in live

"""``max_cost`` through the Python API: ``thoughtline.run``, ``stream``,
``Conversation.send`` and ``Orchestrator.start`` take a run budget; a call with no room
for 256 output tokens fails its task ``BUDGET_EXCEEDED`` with nothing sent, and a bad value
raises ``REQUEST_INVALID`` before anything is stored."""

from __future__ import annotations

import math

import pytest

import thoughtline
from thoughtline import ThoughtlineError
from thoughtline.testing import Simulator, Transcript

# 256 output tokens at o4-mini's $4.40 per million alone are $0.0011.
PROVIDER, MODEL, LONGEST = "openai", "o4-mini", 1_000


async def test_every_entry_point_takes_a_run_budget(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Done."))
    run = thoughtline.run(
        "Explain.",
        max_cost=0.001,
        environ=user_env,
        provider=PROVIDER,
        model=MODEL,
        max_output_tokens=LONGEST,
    )
    assert run.status == "failed" and run.max_cost == 0.001
    assert run.tasks[0].error is not None and run.tasks[0].error.code == "BUDGET_EXCEEDED"
    with thoughtline.stream(
        "Explain.",
        max_cost=0.001,
        environ=user_env,
        provider=PROVIDER,
        model=MODEL,
        max_output_tokens=LONGEST,
    ) as events:
        for _event in events:
            pass
    assert events.run.tasks[0].error is not None
    assert events.run.tasks[0].error.code == "BUDGET_EXCEEDED"
    with thoughtline.Conversation(environ=user_env) as chat:
        done = chat.send(
            "Explain.", max_cost=0.5, provider=PROVIDER, model=MODEL, max_output_tokens=LONGEST
        )
        refused = chat.send("Then?", max_cost=0.001)
    assert done.status == "completed" and refused.status == "failed"
    assert refused.tasks[0].error is not None
    assert refused.tasks[0].error.code == "BUDGET_EXCEEDED"
    assert len(sim.requests) == 1  # only the run with room for its call sent it
    async with thoughtline.Orchestrator.open(environ=user_env) as orchestrator:
        handle = orchestrator.start(
            "Explain.", max_cost=0.001, provider=PROVIDER, model=MODEL, max_output_tokens=LONGEST
        )
        ended = await handle
    assert ended.tasks[0].error is not None and ended.tasks[0].error.code == "BUDGET_EXCEEDED"
    assert len(sim.requests) == 1


@pytest.mark.parametrize("value", [-0.01, math.nan, math.inf])
def test_a_bad_budget_raises_before_anything_is_stored(
    sim: Simulator, user_env: dict[str, str], value: float
) -> None:
    with pytest.raises(ThoughtlineError) as raised:
        thoughtline.run("Explain.", max_cost=value, environ=user_env)
    assert raised.value.code == "REQUEST_INVALID"
    assert "max_cost must be a number of US dollars" in raised.value.message
    assert sim.requests == []

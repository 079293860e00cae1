"""Thinking blocks the Anthropic API left out of a request (``input_transformations``,
``thinking_dropped``) are told, never passed over: a ``PROVIDER_THINKING_DROPPED`` warning
on the call, and a sentence in the task's reasoning notice and its trace (served by the
simulator, streamed and whole)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import make_runtime
from tests.testing.loop import Loop
from thoughtline.model.requests import Message
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import Simulator, SimulatorServer, Transcript

DROPPED = (
    {
        "type": "thinking_dropped",
        "path": "messages.1.content.0",
        "reason": "prefix_binding_mismatch",
    },
    {
        "type": "thinking_dropped",
        "path": "messages.3.content.0",
        "reason": "model_binding_mismatch",
    },
    {"type": "some_future_change", "path": "messages.5"},  # unknown types are passed over
)
ANSWERED = Transcript(answer="Done.", response_id="msg_dropped", input_transformations=DROPPED)
SAID = (
    "Anthropic left 2 thinking blocks of the request out unread by the model "
    "(messages.1.content.0: prefix_binding_mismatch, "
    "messages.3.content.0: model_binding_mismatch)."
)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_the_call_warns_of_each_dropped_block(
    sim: Simulator, environ: dict[str, str], stream: bool
) -> None:
    sim.script(ANSWERED, profile="anthropic")
    loop = Loop(environ=environ, endpoint="anthropic", model="claude-opus-5-5", stream=stream)
    response = await loop.call(loop.request([Message(role="user", content="Go on.")]))
    assert response.error is None
    assert response.text == "Done."
    dropped = [w for w in response.warnings if w.code == "PROVIDER_THINKING_DROPPED"]
    assert [w.message for w in dropped] == [SAID]


async def test_nothing_dropped_says_nothing(sim: Simulator, environ: dict[str, str]) -> None:
    sim.script(Transcript(answer="Done.", input_transformations=()), profile="anthropic")
    loop = Loop(environ=environ, endpoint="anthropic", model="claude-opus-5-5")
    response = await loop.call(loop.request([Message(role="user", content="Go on.")]))
    assert not [w for w in response.warnings if w.code == "PROVIDER_THINKING_DROPPED"]


async def test_the_notice_and_the_trace_say_what_was_dropped(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(ANSWERED, profile="anthropic")
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    spec = RunSpec(
        request="Go on.",
        tasks=(TaskSpec(name="t", role="engineer", provider="anthropic", model="claude-opus-5-5"),),
    )
    try:
        run = await runtime.run(spec, explicit_mode="surface")
        (task,) = run.tasks
        assert task.status == "done"
        assert task.reasoning_notice is not None
        assert task.reasoning_notice.endswith(f" Step 1: {SAID}")
        (completed,) = [e for e in store.trace(run.id) if e.type == "worker.completed"]
        assert {"code": "PROVIDER_THINKING_DROPPED", "message": SAID} in completed.metadata[
            "warnings"
        ]
    finally:
        store.close()

"""The agent in-process (no subprocess): how failures end a turn, and the event-to-update
mapping for cases a simulator run does not produce on demand (interleaved tasks, a task
that never started)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.helpers import text_block
from acp.meta import PROTOCOL_VERSION
from acp.schema import AgentMessageChunk, AgentThoughtChunk, ToolCallProgress, ToolCallStart

from tests.runtime.test_disclosure_e2e import make_runtime
from thoughtline.integrations.acp import SessionSettings, ThoughtlineAcpAgent, TurnRenderer
from thoughtline.records import Run, Task, TaskError, TaskTimings, ToolCallRecord
from thoughtline.records.run_events import (
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskStarted,
)
from thoughtline.testing import Fault, SimReasoning, Simulator, SimulatorServer, Transcript

AT = "2026-01-01T00:00:00.000Z"


@dataclass
class FakeClient:
    updates: list[Any] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


async def prompt_once(
    tmp_path: Path,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    settings: SessionSettings,
) -> tuple[Any, list[Any]]:
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    try:
        agent = ThoughtlineAcpAgent(runtime, settings)
        client = FakeClient()
        agent.on_connect(client)  # type: ignore[arg-type]
        await agent.initialize(protocol_version=PROTOCOL_VERSION)
        session = await agent.new_session(cwd="/", mcp_servers=[])
        response = await agent.prompt(prompt=[text_block("Do it.")], session_id=session.session_id)
        return response, client.updates
    finally:
        await runtime.aclose()  # its provider connections, as the agent's shutdown does
        store.close()


def message_text(updates: list[Any]) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, AgentMessageChunk))


async def test_a_provider_failure_is_a_failed_tool_call_and_ends_the_turn(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(401, "invalid x-api-key"))
    response, updates = await prompt_once(
        tmp_path, sim_server, environ, SessionSettings(provider="deepseek")
    )
    assert response.stop_reason == "end_turn"
    assert response.field_meta["thoughtline"]["status"] == "failed"
    assert [u.session_update for u in updates] == [
        "tool_call",
        "agent_message_chunk",  # ⓘ notice
        "agent_message_chunk",  # ✗ error
        "tool_call_update",
    ]
    end = updates[-1]
    assert isinstance(end, ToolCallProgress)
    assert end.status == "failed"
    assert end.raw_output["error"]["code"] == "PROVIDER_AUTH_ERROR"
    assert "PROVIDER_AUTH_ERROR: " in end.content[0].content.text
    assert "✗ PROVIDER_AUTH_ERROR: " in message_text(updates)


async def test_a_content_filter_ends_the_turn_as_a_refusal(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="", finish="content_filter"))
    response, updates = await prompt_once(
        tmp_path, sim_server, environ, SessionSettings(provider="deepseek")
    )
    assert response.stop_reason == "refusal"
    assert updates[-1].raw_output["error"]["code"] == "PROVIDER_CONTENT_FILTERED"


async def test_reasoning_without_an_answer_ends_the_turn_at_max_tokens(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            answer="", reasoning=(SimReasoning(kind="raw", text="Long thought."),), finish="length"
        )
    )
    response, updates = await prompt_once(
        tmp_path,
        sim_server,
        environ,
        SessionSettings(provider="deepseek", chain_of_thought="surface"),
    )
    assert response.stop_reason == "max_tokens"
    assert updates[-1].raw_output["error"]["code"] == "PROVIDER_REASONING_ONLY"
    assert any(isinstance(u, AgentThoughtChunk) for u in updates)


def task_dict(task_id: str, role: str, **changes: Any) -> dict[str, Any]:
    task = Task(
        id=task_id,
        run_id="run_1",
        position=0,
        role=role,
        provider="deepseek",
        model="deepseek-reasoner",
        chain_of_thought="hidden",
        chain_of_thought_source="default",
    )
    for name, value in changes.items():
        setattr(task, name, value)
    return task.to_dict()


def started(*tasks: dict[str, Any]) -> RunEvent:
    return RunStarted(
        run_id="run_1", seq=0, at=AT, snapshot={"worker_backend": "provider", "tasks": list(tasks)}
    )


def test_interleaved_tasks_get_a_heading_whenever_the_speaker_changes() -> None:
    a, b = task_dict("task_a", "architect"), task_dict("task_b", "reviewer")
    renderer = TurnRenderer()
    events = [
        started(a, b),
        TaskStarted(run_id="run_1", seq=0, at=AT, task_id="task_a", task=a),
        TaskStarted(run_id="run_1", seq=0, at=AT, task_id="task_b", task=b),
        TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id="task_a", text="A1"),
        TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id="task_a", text="A2"),
        TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id="task_b", text="B1"),
        TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id="task_a", text="A3"),
    ]
    updates = [update for event in events for update in renderer.render(event)]
    assert [type(u) for u in updates[:2]] == [ToolCallStart, ToolCallStart]
    assert message_text(updates) == (
        "**architect · deepseek:deepseek-reasoner**\n\nA1A2"
        "\n\n**reviewer · deepseek:deepseek-reasoner**\n\nB1"
        "\n\n**architect · deepseek:deepseek-reasoner**\n\nA3"
    )


def test_a_task_that_never_started_is_announced_pending_then_failed() -> None:
    design = task_dict("task_a", "architect")
    review = task_dict(
        "task_b",
        "reviewer",
        status="failed",
        reasoning_status="not_applicable",
        reasoning_notice="The task did not run, so no model was called.",
        error=TaskError(
            code="TASK_DEPENDENCY_FAILED", message="Not run: it runs after design.", retryable=False
        ),
    )
    renderer = TurnRenderer()
    renderer.render(started(design, review))
    updates = renderer.render(
        TaskCompleted(run_id="run_1", seq=0, at=AT, task_id="task_b", task=review)
    )
    assert [u.session_update for u in updates] == [
        "tool_call",
        "agent_message_chunk",  # heading (several tasks)
        "agent_message_chunk",  # ⓘ notice
        "agent_message_chunk",  # ✗ error
        "tool_call_update",
    ]
    assert (updates[0].status, updates[-1].status) == ("pending", "failed")
    assert message_text(updates) == (
        "**reviewer · deepseek:deepseek-reasoner**\n\n"
        "ⓘ The task did not run, so no model was called."
        "\n\n✗ TASK_DEPENDENCY_FAILED: Not run: it runs after design."
    )


def test_a_stored_run_replays_as_its_prompt_showed_it_task_after_task() -> None:
    """``session/load``'s replay: the request, then each task (thoughts only from the
    snapshot's reasoning, its tool calls, its answer, the never-started one pending)."""
    design = Task(
        id="task_a",
        run_id="run_1",
        position=0,
        name="architect",
        role="architect",
        provider="deepseek",
        model="deepseek-reasoner",
        chain_of_thought="surface",
        chain_of_thought_source="explicit",
        status="done",
        output="A",
        reasoning="R",
        reasoning_status="shown",
        timings=TaskTimings(started_at=AT, finished_at=AT),
        tool_calls=[
            ToolCallRecord(
                id="call_1",
                step=1,
                server="git",
                name="git_reset",
                arguments="{}",
                started_at=AT,
                status="denied",
                is_error=True,
                result="TOOL_NOT_ALLOWED: rejected",
                error="TOOL_NOT_ALLOWED",
                destructive=True,
            )
        ],
    )
    review = Task(
        id="task_b",
        run_id="run_1",
        position=1,
        name="reviewer",
        role="reviewer",
        provider="deepseek",
        model="deepseek-reasoner",
        chain_of_thought="surface",
        chain_of_thought_source="explicit",
        status="failed",
        reasoning_status="not_applicable",
        reasoning_notice="The task did not run, so no model was called.",
        error=TaskError(code="TASK_DEPENDENCY_FAILED", message="Not run.", retryable=False),
    )
    run = Run(
        id="run_1",
        request="Design it.",
        chain_of_thought="surface",
        chain_of_thought_source="explicit",
        worker_backend="provider",
        tasks=[design, review],
    )
    updates = TurnRenderer().replay(run.snapshot())
    assert [
        (u.session_update, getattr(u, "tool_call_id", None), getattr(u, "status", None))
        for u in updates
    ] == [
        ("user_message_chunk", None, None),
        ("tool_call", "task_a", "in_progress"),
        ("agent_thought_chunk", None, None),  # heading (several tasks)
        ("agent_thought_chunk", None, None),
        ("tool_call", "task_a/call_1", "in_progress"),
        ("tool_call_update", "task_a/call_1", "failed"),
        ("agent_message_chunk", None, None),  # heading
        ("agent_message_chunk", None, None),
        ("tool_call_update", "task_a", "completed"),
        ("tool_call", "task_b", "pending"),
        ("agent_message_chunk", None, None),  # heading
        ("agent_message_chunk", None, None),  # ⓘ notice
        ("agent_message_chunk", None, None),  # ✗ error
        ("tool_call_update", "task_b", "failed"),
    ]
    assert updates[0].content.text == "Design it."
    assert (updates[1].kind, updates[4].kind, updates[4].title) == (
        "think",
        "delete",
        "git.git_reset",
    )
    thought = "".join(u.content.text for u in updates if isinstance(u, AgentThoughtChunk))
    assert thought == "**architect · deepseek:deepseek-reasoner**\n\nR"
    assert message_text(updates) == (
        "**architect · deepseek:deepseek-reasoner**\n\nA"
        "\n\n**reviewer · deepseek:deepseek-reasoner**\n\n"
        "ⓘ The task did not run, so no model was called."
        "\n\n✗ TASK_DEPENDENCY_FAILED: Not run."
    )


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"chain_of_thought": "loud"}, "Unknown chain_of_thought mode 'loud'"),
        ({"effort": "extreme"}, "Unknown effort 'extreme'"),
        ({"roles": "engineer"}, "roles must be a list of role names"),
        ({"model": ""}, r"Model id '' is not valid \(it is empty\)"),
        ({"model": 7}, "model must be a string"),
        ("surface", "must be an object"),
    ],
)
def test_bad_session_meta_is_named(meta: object, message: str) -> None:
    with pytest.raises(Exception, match=message) as caught:
        SessionSettings().with_meta(meta)
    assert getattr(caught.value, "code", None) == -32602

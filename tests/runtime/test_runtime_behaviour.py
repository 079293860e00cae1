"""Runtime behaviour end to end: precedence, per-role modes, handoffs, the inline backend,
interrupted streams, retries, cancellation and the honest failure codes."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT, make_runtime
from tests.support import untimed_deltas
from thoughtline.errors import ProviderError, ThoughtlineError
from thoughtline.records.event_log import from_records, to_records
from thoughtline.records.run_events import TaskAnswerDelta, TaskReasoningDelta
from thoughtline.runtime.engine.runner import RunEvent
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec, load_plan
from thoughtline.testing import Fault, SimReasoning, Simulator, SimulatorServer, Transcript

ANTHROPIC = ("anthropic", "claude-sonnet-4-6")


def one_task(
    name: str = "t",
    role: str = "engineer",
    endpoint: tuple[str, str] = ANTHROPIC,
    after: tuple[str, ...] = (),
) -> TaskSpec:
    return TaskSpec(name=name, role=role, provider=endpoint[0], model=endpoint[1], after=after)


async def test_precedence_flag_over_run_over_role_over_config(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(
        tmp_path,
        sim_server,
        environ,
        chain_of_thought="telemetry_only",
        chain_of_thought_by_role={"reviewer": "surface"},
        sources={"orchestration.chain_of_thought": "thoughtline.toml"},
    )
    tasks = (one_task("a", "engineer"), one_task("b", "reviewer"))
    by_config = await runtime.run(RunSpec(request="x", tasks=tasks))
    assert [(t.chain_of_thought, t.chain_of_thought_source) for t in by_config.tasks] == [
        ("telemetry_only", "config"),
        ("surface", "role_config"),
    ]
    assert (by_config.chain_of_thought, by_config.chain_of_thought_source) == (
        "telemetry_only",
        "config",
    )
    assert [t.reasoning_status for t in by_config.tasks] == ["recorded", "shown"]
    by_run = await runtime.run(RunSpec(request="x", tasks=tasks, chain_of_thought="hidden"))
    assert [(t.chain_of_thought, t.chain_of_thought_source) for t in by_run.tasks] == [
        ("hidden", "run"),
        ("hidden", "run"),
    ]
    by_flag = await runtime.run(
        RunSpec(request="x", tasks=tasks, chain_of_thought="hidden"),
        explicit_mode="surface_and_telemetry",
    )
    assert {(t.chain_of_thought, t.chain_of_thought_source) for t in by_flag.tasks} == {
        ("surface_and_telemetry", "explicit")
    }
    store.close()


async def test_default_is_hidden_and_unknown_mode_is_an_error(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = await runtime.run(RunSpec(request="x", tasks=(one_task(),)))
    assert (run.tasks[0].chain_of_thought, run.tasks[0].chain_of_thought_source) == (
        "hidden",
        "default",
    )
    with pytest.raises(
        ThoughtlineError,
        match=r"Unknown chain_of_thought mode 'loud' \(explicit argument\)\. Allowed values: hidden, surface",
    ):
        runtime.prepare(RunSpec(request="x", tasks=(one_task(),)), explicit_mode="loud")
    store.close()


async def test_handoff_passes_outputs_never_reasoning(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    spec = RunSpec(
        request="Design it.",
        tasks=(one_task("design", "architect"), one_task("review", "reviewer", after=("design",))),
    )
    run = await runtime.run(spec, explicit_mode="surface_and_telemetry")
    assert [t.status for t in run.tasks] == ["done", "done"]
    first, second = sim.requests
    assert "Outputs of the tasks" not in first.raw_body.decode()
    second_body = second.raw_body.decode()
    assert "### design (architect)" in second_body
    assert TRANSCRIPT.answer in second_body
    assert CANARY not in second_body  # reasoning is never handed off
    assert run.tasks[1].after == [run.tasks[0].id]
    store.close()


async def test_failed_dependency_stops_dependents(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(400, "bad request (simulated)"))
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    spec = RunSpec(request="x", tasks=(one_task("a"), one_task("b", after=("a",))))
    run = await runtime.run(spec)
    assert [t.status for t in run.tasks] == ["failed", "failed"]
    assert run.tasks[0].error is not None and run.tasks[0].error.code == "PROVIDER_BAD_REQUEST"
    assert run.tasks[1].error is not None and run.tasks[1].error.code == "TASK_DEPENDENCY_FAILED"
    assert run.status == "failed"
    assert len(sim.requests) == 1
    store.close()


async def test_some_tasks_failing_is_never_plain_completed(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(401, "invalid x-api-key"), profile="openai")
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = await runtime.run(
        RunSpec(request="x", tasks=(one_task("a"), one_task("b", endpoint=("openai", "gpt-5.5"))))
    )
    assert run.status == "completed_with_failures"
    assert run.tasks[1].error is not None and run.tasks[1].error.code == "PROVIDER_AUTH_ERROR"
    store.close()


async def test_inline_backend_prepares_and_calls_nothing(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    spec = RunSpec(request="x", tasks=(one_task("a"), one_task("b", after=("a",))))
    run = await runtime.run(spec, worker_backend="inline", explicit_mode="surface")
    assert sim.requests == []
    assert run.status == "completed_prepare_only"
    assert [(t.status, t.executor, t.reasoning_status) for t in run.tasks] == [
        ("prepared", "inline:prepared", "not_applicable"),
        ("prepared", "inline:prepared", "not_applicable"),
    ]
    assert all(t.reasoning is None and t.output is None for t in run.tasks)
    prepared = [e for e in store.trace(run.id, "answer") if e.type == "worker.prepared"]
    assert len(prepared) == 2
    assert "(prepared only: no output)" in prepared[1].metadata["prompt"]
    store.close()


async def test_interrupted_stream_keeps_partial_reasoning_and_says_so(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            reasoning=(
                SimReasoning(
                    kind="summary", text="step one; step two; step three; step four", signature="s"
                ),
            ),
            answer="done",
            chunk_chars=6,
        )
    )
    sim.inject(Fault.cut_mid_reasoning())
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = await runtime.run(RunSpec(request="x", tasks=(one_task(),)), explicit_mode="surface")
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.error is not None and task.error.code == "PROVIDER_STREAM_INTERRUPTED"
    assert task.reasoning_status == "interrupted"
    assert task.reasoning and "step one; step two; step three; step four".startswith(task.reasoning)
    assert "marked partial" in (task.reasoning_notice or "")
    store.close()


async def test_rate_limit_is_retried_inside_a_run(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.inject(Fault.rate_limited(retry_after_s=0.02))
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = await runtime.run(RunSpec(request="x", tasks=(one_task(),)))
    assert run.status == "completed"
    assert len(sim.requests) == 2
    store.close()


async def test_reasoning_only_and_content_filter_are_failures(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text="thinking only"),),
            answer="",
            finish="length",
        ),
        times=1,
    )
    only = await runtime.run(RunSpec(request="x", tasks=(one_task(),)), explicit_mode="surface")
    assert only.tasks[0].error is not None and only.tasks[0].error.code == "PROVIDER_REASONING_ONLY"
    sim.script(Transcript(answer="partial", finish="content_filter"), profile="openai", times=1)
    filtered = await runtime.run(
        RunSpec(request="x", tasks=(one_task(endpoint=("openai", "gpt-5.5")),))
    )
    assert (
        filtered.tasks[0].error is not None
        and filtered.tasks[0].error.code == "PROVIDER_CONTENT_FILTERED"
    )
    store.close()


async def test_not_returned_states_the_token_count(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="ok", reasoning_tokens=640))  # reasons, returns no text
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    tasks = (
        one_task("openrouter", endpoint=("openrouter", "openai/gpt-5.5")),
        one_task("responses", endpoint=("openai", "gpt-5.5")),
    )
    run = await runtime.run(RunSpec(request="x", tasks=tasks), explicit_mode="surface")
    nothing, carrier = run.tasks
    assert nothing.reasoning_status == "not_returned"
    # With what the tokens cost: gpt-5.5's output is $30 per million tokens (genai-prices
    # 0.2.3, at OpenRouter and at OpenAI), so 640 x 30 = 19,200 µ$.
    assert (
        nothing.reasoning_notice
        == "The model reasoned for 640 tokens ($0.019); this provider does not return the text."
    )
    # OpenAI Responses returns an encrypted carrier of the reasoning, never its text.
    assert carrier.reasoning_status == "omitted_by_provider"
    assert carrier.reasoning_notice == (
        "The provider returned only an encrypted or signed carrier of the reasoning, not its text. "
        "The model reasoned for 640 tokens ($0.019)."
    )
    store.close()


async def test_cancellation_keeps_what_arrived(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text="x" * 400),),
            answer="y" * 400,
            chunk_chars=4,
        )
    )
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = runtime.prepare(
        RunSpec(request="x", tasks=(one_task("a"), one_task("b"))), explicit_mode="surface"
    )
    seen: list[RunEvent] = []

    def observer(event: RunEvent) -> None:
        seen.append(event)
        if sum(1 for e in seen if isinstance(e, TaskReasoningDelta)) >= 5:
            runtime.cancel(run.id)  # called again on every later event: must stay harmless

    final = await asyncio.wait_for(runtime.execute(run, observer=observer), timeout=30)
    assert final.status == "cancelled"
    assert {t.status for t in final.tasks} == {"cancelled"}
    assert any(t.reasoning for t in final.tasks)  # what arrived is kept
    stored = store.get_run(run.id)
    assert stored is not None
    assert stored.status == "cancelled"
    assert [e.type for e in store.trace(run.id)][-1] == "run.cancelled"
    store.close()


async def test_a_task_cancelled_before_it_started_says_no_model_was_called(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(Transcript(answer="y" * 400, chunk_chars=4))
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    first, second = one_task("a"), one_task("b", after=("a",))
    run = runtime.prepare(RunSpec(request="x", tasks=(first, second)), explicit_mode="surface")

    def observer(event: RunEvent) -> None:
        if isinstance(event, TaskAnswerDelta):
            runtime.cancel(run.id)

    final = await asyncio.wait_for(runtime.execute(run, observer=observer), timeout=30)
    started, waiting = final.tasks
    assert (started.status, started.reasoning_status) == ("cancelled", "interrupted")
    assert (waiting.status, waiting.reasoning_status) == ("cancelled", "not_applicable")
    assert waiting.reasoning_notice == (
        "The run was cancelled before this task started, so no model was called."
    )
    assert len(sim.requests) == 1
    store.close()


async def test_missing_key_and_unknown_role_fail_before_running(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    without_key = {k: v for k, v in environ.items() if k != "GEMINI_API_KEY"}
    runtime, store = make_runtime(tmp_path, sim_server, without_key)
    with pytest.raises(ProviderError, match="set GEMINI_API_KEY"):
        runtime.prepare(
            RunSpec(request="x", tasks=(one_task(endpoint=("gemini", "gemini-3-pro")),))
        )
    with pytest.raises(
        ThoughtlineError,
        match=r"Unknown role 'poet'\. Known roles: architect, assistant, engineer, reviewer, security",
    ):
        runtime.prepare(RunSpec(request="x", tasks=(one_task(role="poet"),)))
    assert store.list_runs() == []
    store.close()


def test_plan_file_validation(tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'request = "r"\n[[task]]\nrole = "architect"\nname = "a"\n[[task]]\nrole = "reviewer"\nafter = ["a"]\n'
    )
    spec = load_plan(plan)
    assert [(t.name, t.after) for t in spec.tasks] == [("a", ()), ("reviewer", ("a",))]
    plan.write_text(
        '[[task]]\nrole = "x"\nname = "a"\nafter = ["b"]\n[[task]]\nrole = "y"\nname = "b"\nafter = ["a"]\n'
    )
    with pytest.raises(ThoughtlineError, match="form a cycle"):
        load_plan(plan, request="r")
    plan.write_text('[[task]]\nrole = "x"\nmodle = "m"\n')
    with pytest.raises(ThoughtlineError, match=r"task\[0\]\.modle: unknown key"):
        load_plan(plan, request="r")


def test_snapshot_shape(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = asyncio.run(
        runtime.run(RunSpec(request="x", tasks=(one_task(),)), explicit_mode="surface")
    )
    snapshot = json.loads(json.dumps(run.snapshot()))
    assert snapshot["schema"] == "thoughtline.run/v1"
    assert set(snapshot) >= {
        "id",
        "status",
        "request",
        "chain_of_thought",
        "chain_of_thought_source",
        "worker_backend",
        "created_at",
        "finished_at",
        "tasks",
    }
    task = snapshot["tasks"][0]
    assert set(task) >= {
        "id",
        "role",
        "status",
        "executor",
        "provider",
        "model",
        "chain_of_thought",
        "output",
        "reasoning",
        "reasoning_parts",
        "reasoning_status",
        "reasoning_notice",
        "usage",
        "error",
        "timings",
    }
    assert task["executor"] == "provider:anthropic:claude-sonnet-4-6"
    assert set(task["usage"]) == {
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
    }
    assert task["finish_reason"] == "stop"
    assert task["generation"] == {"max_output_tokens": None, "temperature": None}
    assert task["timings"]["first_reasoning_ms"] <= task["timings"]["first_answer_ms"]
    store.close()


async def test_user_roles_from_specialists_files_and_config(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from thoughtline.config import load_config

    project = tmp_path / "project"
    (project / "specialists").mkdir(parents=True)
    (project / "specialists" / "translator.md").write_text(
        "You translate into French, faithfully.\n"
    )
    (project / "thoughtline.toml").write_text(
        '[roles.poet]\nprompt = "You answer in verse."\n[roles.translator]\nprompt = "overridden by the file"\n'
    )
    monkeypatch.chdir(project)
    config = load_config()
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    from thoughtline.runtime.planning.roles import RoleCatalog

    runtime.roles = RoleCatalog([project / "specialists"], config.roles)
    run = await runtime.run(
        RunSpec(request="Hello", tasks=(one_task("t", "translator"), one_task("p", "poet")))
    )
    assert run.status == "completed"
    systems = sorted(json.dumps(request.body) for request in sim.requests)
    assert any("You translate into French, faithfully." in body for body in systems)
    assert any("You answer in verse." in body for body in systems)
    assert not any("overridden by the file" in body for body in systems)
    store.close()


async def test_live_events_are_numbered_and_logged_for_replay(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    spec = RunSpec(request="x", tasks=(one_task("shown"), one_task("hidden-one", "reviewer")))
    runtime.config = replace(runtime.config, chain_of_thought_by_role={"engineer": "surface"})
    seen: list[RunEvent] = []
    run = await runtime.run(spec, observer=seen.append)
    logged = store.run_events(run.id)
    assert [event.seq for event in seen] == list(range(1, len(seen) + 1))
    assert [(e.seq, e.type, e.task_id) for e in logged] == [
        (e.seq, e.type, e.task_id) for e in to_records(seen)
    ]
    # The log replays the events (consecutive deltas of a task share one record).
    assert untimed_deltas(from_records(logged)) == untimed_deltas(seen)
    assert logged[0].type == "run.started"
    assert logged[-1].type == "run.completed"
    shown, hidden = run.tasks
    reasoning_deltas = [e for e in logged if e.type == "reasoning.delta"]
    assert reasoning_deltas
    assert {e.task_id for e in reasoning_deltas} == {shown.id}  # only the displayed task
    assert CANARY in "".join(e.data["text"] for e in reasoning_deltas)
    hidden_events = json.dumps([e.to_dict() for e in logged if e.task_id == hidden.id])
    assert CANARY not in hidden_events
    assert (
        "".join(
            e.data["text"] for e in logged if e.type == "answer.delta" and e.task_id == hidden.id
        )
        == TRANSCRIPT.answer
    )
    assert store.run_events(run.id, after_seq=logged[-3].seq) == logged[-2:]
    store.close()

"""Budgets end to end: real runs against the provider simulator on 127.0.0.1, with a real
MCP tool server over stdio for the loops. A call whose worst case does not fit what is
left is sent with its output capped to what the rest pays for, and is refused (never
reaching the simulator) only when not even 256 output tokens fit; tasks of one run share
its budget while their calls are in flight, and a budget without a price is refused
before anything is sent.

Prices are configured as $0 input and $10 output per million tokens, so a call's worst
case is its ``max_output_tokens`` x $0.00001 whatever the input estimate, and a step that
generates 1,000 tokens costs exactly $0.01."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import CANARY, make_runtime
from tests.runtime.test_tool_loop import calling, one_task, tooled_runtime
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.model.requests import GenerationSettings
from thoughtline.records import Run
from thoughtline.records.run_events import RunEvent, TaskCompleted
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import Fault, Simulator, SimulatorServer, Transcript

PRICES = {"openai/o4-mini": ConfiguredPrice(input=Decimal(0), output=Decimal(10))}
MODEL = {"provider": "openai", "model": "o4-mini"}
THOUSAND = GenerationSettings(max_output_tokens=1_000)
STEP = replace(calling("repeat", {"text": "x", "times": 1}), output_tokens=1_000)
"""A step that calls the tool and costs $0.01."""
ANSWER = Transcript(answer="Done.", output_tokens=1_000)


async def run_hidden(
    home: Path,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    spec: RunSpec,
    prices: dict[str, ConfiguredPrice] | None = None,
) -> Run:
    """``spec`` run once, hidden, by a runtime of its own, closed afterwards."""
    config = {} if prices is None else {"prices": prices}
    runtime, store = make_runtime(home, sim_server, environ, **config)
    try:
        return await runtime.run(spec, explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()


@pytest.mark.slow
async def test_a_run_budget_stops_a_tool_loop_before_the_call_that_could_overspend(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(STEP)  # every step calls the tool: only the budget ends the loop
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ, prices=PRICES)
    spec = replace(one_task(**MODEL, generation=THOUSAND), max_cost=0.032)
    try:
        run = await runtime.run(spec, explicit_mode="hidden")
    finally:
        await runtime.aclose()
    (task,) = run.tasks
    # Three calls of $0.01 fit $0.032; the $0.002 left pays for 200 output tokens, fewer
    # than the 256 a call is capped at, at the fewest: the fourth is never sent.
    assert len(sim.requests) == 3
    assert task.status == "failed" and run.status == "failed"
    assert task.error is not None and task.error.code == "BUDGET_EXCEEDED"
    assert task.error.message == (
        "Budget exceeded: spent $0.030 of the run's $0.032 budget after 3 model calls; the "
        "next call needs at least $0.0026 (its input and 256 output tokens); what arrived is "
        "kept; raise max_cost, or set max_output_tokens below 256 (a budget caps a call's "
        "output at no fewer than 256 tokens)."
    )
    # The notice says it too, after its account of the steps' reasoning.
    assert task.reasoning_notice is not None
    assert task.reasoning_notice.endswith(task.error.message)
    # What arrived is kept: every step, its cost and its tool call.
    assert task.steps == 3
    assert task.tool_calls is not None
    assert [(call.step, call.status) for call in task.tool_calls] == [
        (1, "done"),
        (2, "done"),
        (3, "done"),
    ]
    snapshot = run.snapshot()
    assert snapshot["max_cost"] == 0.032
    assert snapshot["cost"]["amount"] == pytest.approx(0.03, abs=1e-12)
    assert CANARY not in str(snapshot)  # hidden: the loop's reasoning went nowhere
    stored = store.get_run(run.id)
    store.close()
    assert stored is not None
    assert stored.max_cost == 0.032
    assert stored.tasks[0].error == task.error
    assert stored.snapshot()["cost"] == snapshot["cost"]


@pytest.mark.slow
async def test_a_task_budget_of_its_role_stops_its_loop(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(STEP)
    runtime, store = tooled_runtime(
        tmp_path / "home",
        sim_server,
        environ,
        prices=PRICES,
        role_max_cost={"engineer": 0.022},
    )
    try:
        run = await runtime.run(one_task(**MODEL, generation=THOUSAND), explicit_mode="hidden")
    finally:
        await runtime.aclose()
        store.close()
    (task,) = run.tasks
    assert len(sim.requests) == 2
    assert task.max_cost == 0.022 and run.max_cost is None
    assert task.error is not None and task.error.code == "BUDGET_EXCEEDED"
    assert task.error.message == (
        "Budget exceeded: spent $0.020 of the task's $0.022 budget after 2 model calls; the "
        "next call needs at least $0.0026 (its input and 256 output tokens); what arrived is "
        "kept; raise max_cost, or set max_output_tokens below 256 (a budget caps a call's "
        "output at no fewer than 256 tokens)."
    )
    assert task.to_dict()["max_cost"] == 0.022


async def test_a_first_call_whose_worst_case_is_over_the_budget_is_capped_to_fit_it(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(ANSWER)
    generation = GenerationSettings(max_output_tokens=90_000)  # up to $0.90
    spec = RunSpec(
        request="Explain.",
        tasks=(TaskSpec(name="t", role="engineer", generation=generation, **MODEL),),
        max_cost=0.5,
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, PRICES)
    # $0.50 pays for 50,000 output tokens: the call is sent with that cap, in the
    # Responses API's own field, and the task says so once.
    (request,) = sim.requests
    assert request.body is not None and request.body["max_output_tokens"] == 50_000
    (task,) = run.tasks
    assert task.status == "done" and task.error is None
    assert task.budget_notice == "Output capped at 50,000 tokens to fit the run's $0.50 budget."
    assert run.snapshot()["tasks"][0]["budget_notice"] == task.budget_notice
    assert task.generation.max_output_tokens == 90_000  # what was asked is kept as asked


async def test_a_call_with_no_room_for_256_output_tokens_is_never_sent(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(ANSWER)
    spec = RunSpec(
        request="Explain.", tasks=(TaskSpec(name="t", role="engineer", **MODEL),), max_cost=0.002
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, PRICES)
    assert sim.requests == []
    (task,) = run.tasks
    assert task.status == "failed" and task.output is None and task.budget_notice is None
    assert task.error is not None and task.error.code == "BUDGET_EXCEEDED"
    assert task.error.message == (
        "Budget exceeded: spent $0 of the run's $0.0020 budget after 0 model calls; the next "
        "call needs at least $0.0026 (its input and 256 output tokens); no call was made; "
        "raise max_cost, or set max_output_tokens below 256 (a budget caps a call's output "
        "at no fewer than 256 tokens)."
    )
    assert run.snapshot()["cost"]["amount"] == 0


async def test_an_explicit_max_output_tokens_below_the_cap_wins(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(ANSWER)
    generation = GenerationSettings(max_output_tokens=300)
    spec = RunSpec(
        request="Explain.",
        tasks=(TaskSpec(name="t", role="engineer", generation=generation, **MODEL),),
        max_cost=0.01,  # pays for 1,000 output tokens: more than asked, so no cap
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, PRICES)
    (request,) = sim.requests
    assert request.body is not None and request.body["max_output_tokens"] == 300
    assert run.tasks[0].budget_notice is None
    # Asked for fewer than 256 and even that does not fit: refused, lowering it helps.
    sim.reset()
    sim.script(ANSWER)
    small = GenerationSettings(max_output_tokens=200)
    spec = replace(spec, tasks=(replace(spec.tasks[0], generation=small),), max_cost=0.0015)
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, PRICES)
    assert sim.requests == []
    error = run.tasks[0].error
    assert error is not None and error.message.endswith(
        "the next call needs at least $0.0020 (its input and 200 output tokens); no call was "
        "made; raise max_cost, or lower max_output_tokens."
    )


async def test_a_budget_on_a_model_without_a_price_is_refused_before_the_first_call(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(ANSWER)
    spec = RunSpec(
        request="Explain.",
        tasks=(TaskSpec(name="t", role="engineer", provider="ollama", model="qwen3:8b"),),
        max_cost=5.0,
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec)
    assert sim.requests == []
    (task,) = run.tasks
    assert task.status == "failed"
    assert task.error is not None and task.error.code == "BUDGET_EXCEEDED"
    assert task.error.message == (
        "A budget is set but the price of qwen3:8b is unknown (ollama is a local server with "
        'no configured price; set [prices."ollama/qwen3:8b"] input = 0 and output = 0 in '
        'config if its calls cost nothing); set [prices."ollama/qwen3:8b"] or remove '
        "max_cost. No call was made."
    )


async def test_tasks_of_one_run_share_its_budget_while_their_calls_are_in_flight(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # Each call could cost $0.01; the run may spend $0.012. The first call made stalls at
    # the simulator, so the other task is decided while that call is in flight: only its
    # held worst case can stop it (nothing has been spent yet).
    sim.script(ANSWER)
    sim.inject(Fault.stall(max_s=30.0), times=2)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ, prices=PRICES)
    spec = RunSpec(
        request="Explain.",
        tasks=tuple(
            TaskSpec(name=name, role="engineer", generation=THOUSAND, **MODEL)
            for name in ("a", "b")
        ),
        max_cost=0.012,
    )
    run = runtime.prepare(spec, explicit_mode="hidden")
    refused: list[TaskCompleted] = []

    async def stop_once_the_other_call_arrived() -> None:
        # The simulator records requests on its own thread: polled, not awaited.
        while not sim.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        runtime.cancel(run.id)

    stopping: list[asyncio.Task[None]] = []

    def observe(event: RunEvent) -> None:
        if isinstance(event, TaskCompleted) and event.task["status"] == "failed":
            refused.append(event)
            stopping.append(asyncio.ensure_future(stop_once_the_other_call_arrived()))

    try:
        ended = await runtime.execute(run, observer=observe)
    finally:
        await runtime.aclose()
        store.close()
    assert len(sim.requests) == 1  # the refused task sent nothing
    (event,) = refused
    error = event.task["error"]
    assert error is not None and error["code"] == "BUDGET_EXCEEDED"
    assert error["message"] == (
        "Budget exceeded: spent $0 of the run's $0.012 budget after 0 model calls and "
        "$0.010 held for calls still running; the next call needs at least $0.0026 (its "
        "input and 256 output tokens); no call was made; raise max_cost, or set "
        "max_output_tokens below 256 (a budget caps a call's output at no fewer than 256 "
        "tokens)."
    )
    statuses = sorted(task.status for task in ended.tasks)
    assert statuses == ["cancelled", "failed"]


async def test_a_run_that_spent_its_budget_stops_its_other_tasks_before_their_next_call(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # "first" answers for $0.01 of a $0.012 budget; "second" runs after it and has
    # $0.002 left, too little for 256 output tokens: refused without a call.
    sim.script(ANSWER)
    spec = RunSpec(
        request="Explain.",
        tasks=(
            TaskSpec(name="first", role="engineer", generation=THOUSAND, **MODEL),
            TaskSpec(
                name="second", role="reviewer", generation=THOUSAND, after=("first",), **MODEL
            ),
        ),
        max_cost=0.012,
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, PRICES)
    first, second = run.tasks
    assert first.status == "done" and first.output == "Done."
    assert second.status == "failed" and second.error is not None
    assert second.error.message.startswith(
        "Budget exceeded: spent $0.010 of the run's $0.012 budget after 1 model call;"
    )
    assert len(sim.requests) == 1


@pytest.mark.parametrize(
    ("provider", "model", "field"),
    [
        ("openai", "o4-mini", ("max_output_tokens",)),
        ("anthropic", "claude-sonnet-4-6", ("max_tokens",)),
        ("gemini", "gemini-2.5-flash", ("generationConfig", "maxOutputTokens")),
        ("ollama", "qwen3:8b", ("options", "num_predict")),
        ("deepseek", "deepseek-chat", ("max_tokens",)),
        ("vllm", "Qwen/Qwen3-8B", ("max_tokens",)),
    ],
)
async def test_the_cap_goes_in_each_wire_s_own_output_field(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    provider: str,
    model: str,
    field: tuple[str, ...],
) -> None:
    sim.script(ANSWER)
    prices = {f"{provider}/{model}": ConfiguredPrice(input=Decimal(0), output=Decimal(10))}
    spec = RunSpec(
        request="Explain.",
        tasks=(TaskSpec(name="t", role="engineer", provider=provider, model=model),),
        max_cost=0.005,  # pays for 500 output tokens
    )
    run = await run_hidden(tmp_path / "home", sim_server, environ, spec, prices)
    (request,) = sim.requests
    sent: object = request.body
    for key in field:
        assert isinstance(sent, dict)
        sent = sent[key]
    assert sent == 500
    assert (
        run.tasks[0].budget_notice == "Output capped at 500 tokens to fit the run's $0.0050 budget."
    )

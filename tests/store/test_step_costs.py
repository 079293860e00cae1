"""Each model call's cost is a row of its own (``task_step_costs``), appended as the call
ends: a tool loop writes the same bytes per step at step 300 as at step 10, the snapshot's
``step_costs`` read back as they were priced, a store of the previous version reads the
same after its migration, a copy into PostgreSQL brings them, and deleting a run deletes
them."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline import Orchestrator
from thoughtline.records import Cost, CostParts, Run
from thoughtline.store.base import PreparedWrite
from thoughtline.store.migrations import MIGRATIONS
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

PREVIOUS = MIGRATIONS[:14]
"""The schema as the version before the step cost table shipped it."""
REASONING = (SimReasoning(kind="summary", text="Look it up.", signature="sig-steps"),)


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _loop(steps: int) -> list[Transcript]:
    """A loop of ``steps`` model calls: each but the last calls the tool once."""
    calling = [
        Transcript(
            reasoning=REASONING,
            tool_calls=(
                SimToolCall(
                    call_id=f"c{step}", name="python__lookup", arguments=json.dumps({"key": "k"})
                ),
            ),
            input_tokens=1_000 + step,
            output_tokens=50,
        )
        for step in range(steps - 1)
    ]
    return [*calling, Transcript(reasoning=REASONING, answer="Done.", output_tokens=5)]


def _text_bytes(rows: list[Any]) -> int:
    """The bytes of every text value of ``rows`` (tuples or named rows), as UTF-8."""
    total = 0
    for row in rows:
        for value in row.values() if isinstance(row, dict) else row:
            if isinstance(value, str):
                total += len(value.encode())
    return total


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes of task rows and step cost rows each write of a SQLite store carried."""
    sizes: list[int] = []
    original = SQLiteStore.write_merged

    def counting(self: SQLiteStore, write: PreparedWrite, *, wait: bool) -> bool:
        sizes.append(_text_bytes(write.tasks) + _text_bytes(getattr(write, "step_costs", [])))
        return original(self, write, wait=wait)

    monkeypatch.setattr(SQLiteStore, "write_merged", counting)
    return sizes


async def _run_loop(home: Path, environ: dict[str, str], sim: Simulator, steps: int) -> Run:
    sim.script_turns(*_loop(steps))
    config = thoughtline.Config(path=None)
    async with Orchestrator.open(config, environ={**environ, "THOUGHTLINE_HOME": str(home)}) as o:
        run = await o.start(
            "Look up the key.",
            provider="anthropic",
            model="claude-sonnet-4-6",
            tools=[lookup],
            max_steps=steps,
            chain_of_thought="hidden",
        )
    assert run.tasks[0].status == "done", run.tasks[0].error
    assert run.tasks[0].steps == steps
    return run


@pytest.mark.slow
async def test_a_loop_writes_as_many_cost_bytes_per_step_at_300_steps_as_at_10(
    tmp_path: Path, environ: dict[str, str], sim: Simulator, written: list[int]
) -> None:
    per_step: dict[int, float] = {}
    for steps in (10, 300):
        written.clear()
        sim.reset()
        run = await _run_loop(tmp_path / f"home{steps}", environ, sim, steps)
        per_step[steps] = sum(written) / steps
        with SQLiteStore(tmp_path / f"home{steps}" / "thoughtline.db") as store:
            stored = store.get_run(run.id)
        assert stored is not None
        costs = stored.snapshot()["tasks"][0].get("step_costs")
        assert costs == run.snapshot()["tasks"][0].get("step_costs")
        assert costs is not None and len(costs) == steps
        assert [cost["amount"] for cost in costs] == [
            cost.amount for cost in run.tasks[0].step_costs
        ]
    # The task row, written whole with every cost at each step, made 4.2 KB a step on
    # average over 300 steps against 400 bytes over 10; each step now adds one small row
    # (about 550 bytes a step at either length).
    assert per_step[300] < per_step[10] * 1.25, per_step


# -- the rows themselves -------------------------------------------------------------------
def _priced(count: int, *, unknown_at: int | None = None) -> list[Cost]:
    costs = [
        Cost(
            amount=0.001 * (step + 1),
            source="genai-prices 0.2.3",
            parts=CostParts(input=0.0005 * (step + 1), output=0.0005 * (step + 1)),
        )
        for step in range(count)
    ]
    if unknown_at is not None:
        costs[unknown_at] = Cost.unknown("no price for m", source="config")
    return costs


def _costed_run(run_id: str) -> Run:
    run = make_run(run_id, tasks=2)
    run.status = "completed"
    for task in run.tasks:
        task.status = "done"
    run.tasks[0].step_costs = _priced(3)
    run.tasks[1].step_costs = _priced(2, unknown_at=1)
    return run


def test_each_step_writes_only_its_own_cost_and_the_run_reads_back_whole(
    backend: StoreBackend,
) -> None:
    run = make_run("run_steps", tasks=1)
    task = run.tasks[0]
    task.status = "running"
    with closing(backend.open()) as store:
        store.create_run(run)
        for step, cost in enumerate(_priced(5), 1):
            task.step_costs.append(cost)
            write = store.prepare(tasks=[task])
            assert [row[:3] for row in write.step_costs] == [(task.id, step, run.id)]
            store.write_prepared([write])
        task.status = "done"
        store.update_task(task)
        stored = store.get_run(run.id)
    assert stored is not None
    assert stored.tasks[0].step_costs == task.step_costs
    assert stored.snapshot() == run.snapshot()
    assert backend.query("SELECT COUNT(*) FROM task_step_costs") == [(5,)]
    assert backend.query("SELECT cost_json FROM tasks") == [('{"steps":5}',)]


def test_a_write_lost_before_the_task_ends_is_made_good_by_its_last_write(
    backend: StoreBackend,
) -> None:
    run = make_run("run_lost", tasks=1)
    task = run.tasks[0]
    task.status = "running"
    with closing(backend.open()) as store:
        store.create_run(run)
        task.step_costs.append(_priced(1)[0])
        store.prepare(tasks=[task])  # never written (the store was down)
        task.step_costs.append(_priced(2)[1])
        store.update_task(task)
        task.status = "done"
        store.update_task(task)
        stored = store.get_run(run.id)
    assert stored is not None
    assert stored.tasks[0].step_costs == task.step_costs


def test_deleting_a_run_deletes_its_step_costs(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        store.create_run(_costed_run("run_gone"))
        store.create_run(_costed_run("run_kept"))
    if backend.kind == "sqlite":  # foreign keys act on connections that turn them on
        with closing(sqlite3.connect(backend.location, isolation_level=None)) as conn:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("DELETE FROM runs WHERE id = 'run_gone'")
    else:
        backend.sql("DELETE FROM runs WHERE id = 'run_gone'")

    assert backend.query("SELECT DISTINCT run_id FROM task_step_costs") == [("run_kept",)]
    with closing(backend.open()) as store:
        kept = store.get_run("run_kept")
    assert kept is not None
    assert kept.tasks[0].step_costs == _priced(3)


# -- stores written before the table -----------------------------------------------------
def _previous_store(backend: StoreBackend, runs: list[Run]) -> None:
    """A store made by the previous version: its schema, and runs as it wrote them (every
    call's cost in the task row's ``cost_json``, a task stored unpriced beside them)."""
    statements: list[tuple[str, tuple[object, ...]]] = []
    for run in runs:
        statements.append(
            (
                "INSERT INTO runs (id, status, request, chain_of_thought, "
                "chain_of_thought_source, worker_backend, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id, run.status, run.request, run.chain_of_thought,
                    run.chain_of_thought_source, run.worker_backend, run.created_at,
                ),
            )
        )  # fmt: skip
        for task in run.tasks:
            costs = [cost.to_dict() for cost in task.step_costs] if task.priced else None
            statements.append(
                (
                    "INSERT INTO tasks (id, run_id, position, role, name, provider, model, "
                    "chain_of_thought, chain_of_thought_source, effort, after_json, status, "
                    "executor, cost_amount, cost_json, persona_source) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        task.id, run.id, task.position, task.role, task.name, task.provider,
                        task.model, task.chain_of_thought, task.chain_of_thought_source,
                        task.effort, json.dumps(task.after), task.status, task.executor,
                        task.cost.amount if task.priced else None,
                        None if costs is None else json.dumps(costs), task.persona_source,
                    ),
                )
            )  # fmt: skip
    backend.make_earlier(PREVIOUS, statements)


def test_a_store_of_the_previous_version_reads_the_same_after_its_migration(
    backend: StoreBackend,
) -> None:
    run = _costed_run("run_old")
    unpriced = make_run("run_unpriced", tasks=1)
    unpriced.status = "completed"
    unpriced.tasks[0].status = "done"
    unpriced.tasks[0].executor = "provider:anthropic:m"
    unpriced.tasks[0].priced = False
    runs = [run, unpriced]
    before = [old.snapshot() for old in runs]
    _previous_store(backend, runs)

    with closing(backend.open()) as store:
        after = [store.get_run(old.id) for old in runs]

    assert [new.snapshot() if new is not None else None for new in after] == before
    assert before[1]["tasks"][0]["cost"]["amount"] is None  # still unknown, and why
    assert sorted(backend.query("SELECT task_id, step FROM task_step_costs")) == [
        (run.tasks[0].id, 1), (run.tasks[0].id, 2), (run.tasks[0].id, 3),
        (run.tasks[1].id, 1), (run.tasks[1].id, 2),
    ]  # fmt: skip
    totals = dict(backend.query("SELECT id, cost_json FROM tasks"))
    assert totals == {
        run.tasks[0].id: '{"steps":3}',
        run.tasks[1].id: '{"steps":2}',
        unpriced.tasks[0].id: None,
    }


# -- copying into PostgreSQL ---------------------------------------------------------------
@pytest.mark.slow
def test_copy_into_postgres_brings_the_step_costs(tmp_path: Path, postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    runs = [_costed_run("run_a"), _costed_run("run_b")]
    with SQLiteStore(tmp_path / "thoughtline.db") as source:
        for run in runs:
            source.create_run(run)
        with PostgresStore(postgres_dsn) as target:
            target.copy_from(source)
            copied = {run.id: run for run in target.list_runs()}

    assert {run_id: run.snapshot() for run_id, run in copied.items()} == {
        run.id: run.snapshot() for run in runs
    }

"""A task's tool calls are rows of their own (``task_tool_calls``), written as each call
starts and ends, read back with their run in one query, copied, kept by recovery, and
moved out of ``after_json`` in stores written before they had a table."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import ago, make_event, make_run, make_task
from thoughtline.records import Run, Task, ToolCallRecord
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.store.base import RunNotFoundError, Store
from thoughtline.store.migrations import MIGRATIONS
from thoughtline.store.sqlite import SQLiteStore

PREVIOUS = MIGRATIONS[:5]
"""The schema as the version before the tool call table shipped it."""
AT = "2026-01-01T00:00:00.000Z"


def _call(number: int, *, step: int = 1, status: str = "running") -> ToolCallRecord:
    return ToolCallRecord(
        id=f"call_{number}",
        step=step,
        server="git",
        name="git_log",
        arguments=json.dumps({"repo_path": "/tmp/repo", "n": number}),
        started_at=AT,
        status=status,  # type: ignore[arg-type]
    )


def _tool_run(run_id: str, *, tasks: int = 2) -> Run:
    """A run whose first task may call tools (none called yet); the others may not."""
    run = make_run(run_id, tasks=tasks)
    tooled = run.tasks[0]
    tooled.tools, tooled.max_steps, tooled.steps, tooled.tool_calls = ("git", "time.now"), 5, 0, []
    return run


def _finish(call: ToolCallRecord, result: str = "commit abc") -> None:
    call.status, call.result, call.duration_ms = "done", result, 12.5


def _run_calls(store: Store, task: Task, count: int, *, per_step: int = 1) -> None:
    """As the runtime writes them: each call's row as it starts and as it ends, then
    the task's row once per step."""
    assert task.tool_calls is not None
    for number in range(count):
        call = _call(number, step=1 + number // per_step)
        task.tool_calls.append(call)
        position = len(task.tool_calls) - 1
        store.write(tool_calls=[(task, position)])
        _finish(call, f"result {number}")
        store.write(tool_calls=[(task, position)])
        if (number + 1) % per_step == 0:
            task.steps = call.step
            store.update_task(task)


def test_tool_calls_round_trip_and_after_json_holds_only_the_ids(backend: StoreBackend) -> None:
    run = _tool_run("run_tools")
    run.tasks[1].after = [run.tasks[0].id]
    with closing(backend.open()) as store:
        store.create_run(run)
        tooled = run.tasks[0]
        _run_calls(store, tooled, 3)
        # A call with an error, no server (a tool nobody offered) and a cut result.
        denied = ToolCallRecord(
            id="call_x", step=4, server=None, name="rm", arguments="{}", started_at=AT,
            status="denied", is_error=True, result="There is no tool named 'rm' here.",
            result_truncated=True, error="TOOL_NOT_FOUND", duration_ms=None,
            read_only=False, destructive=True,
        )  # fmt: skip
        assert tooled.tool_calls is not None
        tooled.tool_calls.append(denied)
        tooled.steps = 4
        store.write(tasks=[tooled], tool_calls=[(tooled, 3)])

        got = store.get_run("run_tools")
        listed = {found.id: found for found in store.list_runs()}["run_tools"]

    assert got == run
    assert listed == run
    first, second = got.tasks
    assert first.tool_calls is not None
    assert [call.status for call in first.tool_calls] == ["done", "done", "done", "denied"]
    assert first.tool_calls[3] == denied
    assert (first.tools, first.max_steps, first.steps) == (("git", "time.now"), 5, 4)
    assert (second.tool_calls, second.steps) == (None, None)
    assert "tool_calls" not in second.to_dict()
    # after_json means what it meant before tools: the ids the task runs after.
    stored = dict(backend.query("SELECT id, after_json FROM tasks"))
    assert json.loads(str(stored[first.id])) == []
    assert json.loads(str(stored[second.id])) == [first.id]
    rows = backend.query(
        "SELECT position, call_id, status, is_error FROM task_tool_calls ORDER BY position"
    )
    assert rows == [
        (0, "call_0", "done", 0), (1, "call_1", "done", 0), (2, "call_2", "done", 0),
        (3, "call_x", "denied", 1),
    ]  # fmt: skip


def test_a_hundred_steps_with_three_hundred_calls_read_back_in_one_status_call(
    backend: StoreBackend,
) -> None:
    run = _tool_run("run_long", tasks=3)
    run.tasks[2].tools, run.tasks[2].tool_calls = ("time",), []
    with closing(backend.open()) as store:
        store.create_run(run)
        _run_calls(store, run.tasks[0], 300, per_step=3)
        assert run.tasks[2].tool_calls is not None
        run.tasks[2].tool_calls.append(_call(7))  # another task's calls stay its own
        store.write(tool_calls=[(run.tasks[2], 0)])
        got = store.get_run("run_long")

    assert got == run
    long_task = got.tasks[0]
    assert long_task.steps == 100
    assert long_task.tool_calls is not None
    assert len(long_task.tool_calls) == 300
    assert [call.id for call in long_task.tool_calls] == [f"call_{n}" for n in range(300)]
    assert [call.step for call in long_task.tool_calls[:7]] == [1, 1, 1, 2, 2, 2, 3]
    assert long_task.tool_calls[299].result == "result 299"
    assert got.tasks[1].tool_calls is None
    assert [call.id for call in got.tasks[2].tool_calls or ()] == ["call_7"]


def test_a_status_call_reads_each_table_once(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        runs = [_tool_run(f"run_{n}", tasks=4) for n in range(5)]
        for run in runs:
            for task in run.tasks:
                task.tools, task.tool_calls = ("git",), []
            store.create_run(run)
            for task in run.tasks:
                _run_calls(store, task, 5)
        statements: list[str] = []
        reader = store._reader  # the store's read connection
        assert reader is not None
        reader.set_trace_callback(statements.append)
        one = store.get_run("run_2")
        listed = store.list_runs(5)
        reader.set_trace_callback(None)

    assert one == runs[2]
    assert listed == runs[::-1]
    tables = [re.search(r"FROM (\w+)", text) for text in statements if text.startswith("SELECT")]
    assert [found.group(1) for found in tables if found] == [
        "runs", "tasks", "task_tool_calls"
    ] * 2  # fmt: skip


def test_duplicate_call_ids_of_one_task_stay_separate_calls(backend: StoreBackend) -> None:
    run = _tool_run("run_dup")
    task = run.tasks[0]
    with closing(backend.open()) as store:
        store.create_run(run)
        assert task.tool_calls is not None
        # Some providers send no id (or the same one) for calls of different steps.
        task.tool_calls += [_call(0, step=1), _call(0, step=2)]
        task.tool_calls[0].id = task.tool_calls[1].id = ""
        store.write(tool_calls=[(task, 0), (task, 1)])
        _finish(task.tool_calls[1])
        store.write(tool_calls=[(task, 1)])
        got = store.get_run("run_dup")

    assert got is not None
    assert [(c.step, c.status) for c in got.tasks[0].tool_calls or ()] == [
        (1, "running"),
        (2, "done"),
    ]


def test_a_call_of_a_task_not_stored_is_refused_with_the_rest_of_its_write(
    backend: StoreBackend,
) -> None:
    run = _tool_run("run_here")
    stray = make_task("run_here", 9, tools=("git",), tool_calls=[_call(1)])
    with closing(backend.open()) as store:
        store.create_run(run)
        assert run.tasks[0].tool_calls is not None
        run.tasks[0].tool_calls.append(_call(0))
        with pytest.raises(RunNotFoundError, match="run_here_task9") as refused:
            store.write(trace=[make_event("run_here")], tool_calls=[(run.tasks[0], 0), (stray, 0)])
        got = store.get_run("run_here")
        assert store.trace("run_here") == []
    assert got is not None
    assert got.tasks[0].tool_calls == []
    assert refused.value.code == "RUN_NOT_FOUND"


def test_recovery_keeps_finished_calls_and_cancels_the_unfinished(backend: StoreBackend) -> None:
    run = _tool_run("run_dead")
    task = run.tasks[0]
    with closing(backend.open()) as store:
        store.create_run(run)
        task.status = "running"
        task.timings.started_at = AT
        store.update_task(task)
        _run_calls(store, task, 2)
        assert task.tool_calls is not None
        task.tool_calls.append(_call(2, step=3))
        store.write(tool_calls=[(task, 2)])  # started, and the process died
    backend.sql("UPDATE runs SET owner_host = 'other-machine', owner_pid = 1")
    backend.sql("UPDATE runs SET heartbeat_at = ?", (ago(backend.stale_after_s + 60),))

    with closing(backend.open()) as store:
        assert recover_interrupted(store) == ["run_dead"]
        got = store.get_run("run_dead")

    assert got is not None
    recovered = got.tasks[0]
    assert recovered.status == "interrupted"
    assert [(c.id, c.status, c.error) for c in recovered.tool_calls or ()] == [
        ("call_0", "done", None),
        ("call_1", "done", None),
        ("call_2", "cancelled", "TOOL_CANCELLED"),
    ]
    assert recovered.reasoning_notice is not None
    assert "2 of its 3 tool calls had finished" in recovered.reasoning_notice
    assert backend.query("SELECT status FROM task_tool_calls WHERE position = 2") == [
        ("cancelled",)
    ]


def test_deleting_a_run_deletes_its_tool_calls(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        for run_id in ("run_gone", "run_kept"):
            run = _tool_run(run_id)
            store.create_run(run)
            _run_calls(store, run.tasks[0], 4)
    if backend.kind == "sqlite":  # foreign keys act on connections that turn them on
        with closing(sqlite3.connect(backend.location, isolation_level=None)) as conn:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("DELETE FROM runs WHERE id = 'run_gone'")
    else:
        backend.sql("DELETE FROM runs WHERE id = 'run_gone'")

    assert backend.query("SELECT DISTINCT run_id FROM task_tool_calls") == [("run_kept",)]
    with closing(backend.open()) as store:
        assert store.get_run("run_gone") is None
        kept = store.get_run("run_kept")
    assert kept is not None
    assert len(kept.tasks[0].tool_calls or ()) == 4


# -- stores written before the table -----------------------------------------------------
OLD_CALLS = [
    {
        "id": "toolu_1", "step": 1, "server": "git", "name": "git_status",
        "arguments": '{"repo_path": "/r"}', "status": "done", "is_error": False,
        "result": "clean \u00e9\u0000", "result_truncated": True, "error": None,
        "started_at": AT, "duration_ms": 3.25,
    },
    {
        "id": "toolu_2", "step": 2, "server": None, "name": "nope", "arguments": "{}",
        "status": "denied", "is_error": True, "result": "There is no tool named 'nope' here.",
        "result_truncated": False, "error": "TOOL_NOT_FOUND", "started_at": AT,
        "duration_ms": None,
    },
]  # fmt: skip
OLD_AFTER = json.dumps(
    {"after": ["task_first"], "tools": ["git"], "max_steps": 6, "steps": 3, "tool_calls": OLD_CALLS}
)
OLD_TASK = (
    "INSERT INTO tasks (id, run_id, position, role, name, provider, model, "
    "chain_of_thought, chain_of_thought_source, effort, after_json, status, executor) "
    "VALUES (?, 'run_old', ?, 'engineer', 'engineer', 'anthropic', 'm', 'hidden', "
    "'default', 'provider-default', ?, 'done', 'provider:anthropic:m')"
)
OLD_RUN = (
    "INSERT INTO runs (id, status, request, chain_of_thought, chain_of_thought_source, "
    "worker_backend, created_at) VALUES ('run_old', 'completed', 'r', 'hidden', "
    "'default', 'provider', '2025-01-01T00:00:00.000Z')"
)


def _previous_store(backend: StoreBackend) -> None:
    """A store made by the previous version: its schema, a task without tools and one
    whose steps and calls are inside ``after_json``, as that version wrote them."""
    rows: list[tuple[str, tuple[object, ...]]] = [
        (OLD_RUN, ()),
        (OLD_TASK, ("task_first", 0, "[]")),
        (OLD_TASK, ("task_tooled", 1, OLD_AFTER)),
    ]
    backend.make_earlier(PREVIOUS, rows)


def test_a_store_of_the_previous_version_moves_its_calls_out_of_after_json(
    backend: StoreBackend,
) -> None:
    _previous_store(backend)

    with closing(backend.open()) as store:
        run = store.get_run("run_old")

    assert run is not None
    plain, tooled = run.tasks
    assert (plain.after, plain.tool_calls, plain.steps, plain.max_steps) == ([], None, None, 8)
    assert tooled.after == ["task_first"]
    assert (tooled.tools, tooled.max_steps, tooled.steps) == (("git",), 6, 3)
    assert tooled.tool_calls is not None
    # An escaped U+0000 becomes U+FFFD (PostgreSQL text holds none).
    # Calls stored before annotations were kept read as neither read-only nor destructive.
    unannotated = {"read_only": False, "destructive": False}
    expected = [
        {**OLD_CALLS[0], "result": "clean \u00e9\ufffd", **unannotated},
        {**OLD_CALLS[1], **unannotated},
    ]
    assert [call.to_dict() for call in tooled.tool_calls] == expected
    stored = dict(backend.query("SELECT id, after_json FROM tasks"))
    assert json.loads(str(stored["task_tooled"])) == ["task_first"]
    assert json.loads(str(stored["task_first"])) == []
    assert ("m006_task_tool_calls",) in backend.query("SELECT name FROM migrations")


# -- copying into PostgreSQL ---------------------------------------------------------------
@pytest.mark.slow
def test_copy_into_postgres_brings_the_tool_calls(tmp_path: Path, postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    runs = [_tool_run("run_a"), _tool_run("run_b", tasks=1)]
    with SQLiteStore(tmp_path / "thoughtline.db") as source:
        for run in runs:
            run.status = "completed"
            source.create_run(run)
            _run_calls(source, run.tasks[0], 3)
        with PostgresStore(postgres_dsn) as target:
            counts = target.copy_from(source)
            copied = {run.id: run for run in target.list_runs()}

    assert counts.tool_calls == 6
    assert copied == {run.id: run for run in runs}


def test_a_call_started_and_ended_in_one_batch_is_one_row_in_one_transaction(
    backend: StoreBackend,
) -> None:
    import asyncio

    from tests.store.test_group_commit import CountingStore
    from thoughtline.runtime.engine.store_writer import StoreWriter

    run = _tool_run("run_batch")
    task = run.tasks[0]
    store = backend.open()
    counting = CountingStore(store)
    writer = StoreWriter(counting)  # type: ignore[arg-type]

    async def main() -> None:
        await writer.write(store.prepare(create=run))
        assert task.tool_calls is not None
        for number in range(2):
            task.tool_calls.append(_call(number))
            writer.submit(store.prepare(tool_calls=[(task, number)]))
        for number, call in enumerate(task.tool_calls):
            _finish(call, f"result {number}")
            writer.submit(store.prepare(tool_calls=[(task, number)]))
        task.steps = 1
        writer.submit(store.prepare(tasks=[task]))
        await writer.flush()
        await writer.aclose()

    asyncio.run(main())
    got = store.get_run("run_batch")

    assert counting.transactions == [1, 5]
    assert got is not None
    assert [(c.status, c.result) for c in got.tasks[0].tool_calls or ()] == [
        ("done", "result 0"),
        ("done", "result 1"),
    ]
    assert backend.query("SELECT COUNT(*) FROM task_tool_calls") == [(2,)]


def test_trace_retention_removes_the_traced_calls_and_keeps_the_tasks_calls(
    backend: StoreBackend,
) -> None:
    from thoughtline.runtime.policy.retention import purge

    run = _tool_run("run_aged")
    task = run.tasks[0]
    traced = make_event(
        "run_aged", type_="tool.completed", task_id=task.id, at=ago(400 * 86_400),
        metadata={"id": "call_0", "result": "result 0"},
    )  # fmt: skip
    with closing(backend.open()) as store:
        store.create_run(run)
        _run_calls(store, task, 2)
        store.append_trace([traced])
        removed = purge(store, {"answer": 86_400, "reasoning": None, "provider_raw": None})
        assert store.trace("run_aged") == []
        kept = store.get_run("run_aged")

    assert removed["answer"] == 1
    assert kept == run
    assert [call.result for call in kept.tasks[0].tool_calls or ()] == ["result 0", "result 1"]

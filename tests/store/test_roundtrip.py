"""Runs, tasks and trace events come back exactly as written."""

from __future__ import annotations

import threading
from contextlib import closing

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import make_event, make_run, make_task
from thoughtline.model.requests import GenerationSettings
from thoughtline.records import (
    ReasoningPartView,
    Run,
    TaskError,
    TaskTimings,
    TaskUsage,
)
from thoughtline.store.base import RunNotFoundError, Store, StoreError
from thoughtline.tools.recorded import RecordedServer


def _run_in_every_state() -> Run:
    run = make_run(
        "run_all", request="Überprüfe den Patch — 请审查 🧪", created_at="2026-03-01T10:00:00.000Z"
    )
    t = [make_task(run.id, position) for position in range(7)]
    t[0].status = "queued"
    t[0].after = ["run_all_task1", "run_all_task2"]
    t[1].status = "running"
    t[1].timings = TaskTimings(started_at="2026-03-01T10:00:01.000Z")
    t[2].status = "done"
    t[2].name = "reviewer ✍"
    t[2].effort = "high"
    t[2].executor = "provider:anthropic:claude-sonnet-4-6"
    t[2].output = "Looks good — 👍\nline two"
    t[2].reasoning = "Let me think… ∑ steps"
    t[2].reasoning_parts = [
        ReasoningPartView(kind="summary", text="Let me think…"),
        ReasoningPartView(kind="redacted", text=""),
    ]
    t[2].reasoning_status = "shown"
    t[2].reasoning_notice = "Reasoning shown as the provider summarized it."
    t[2].usage = TaskUsage(
        input_tokens=0,
        output_tokens=900,
        reasoning_tokens=None,
        cached_input_tokens=0,
        cache_write_tokens=1_500_000_000_000,
    )
    t[2].finish_reason = "length"
    t[2].generation = GenerationSettings(max_output_tokens=64_000, temperature=0.35)
    t[4].generation = GenerationSettings(temperature=0.0)
    t[2].timings = TaskTimings(
        started_at="2026-03-01T10:00:01.000Z",
        finished_at="2026-03-01T10:00:04.500Z",
        first_reasoning_ms=310.25,
        first_answer_ms=2200.0,
        total_ms=3500.5,
    )
    t[3].status = "prepared"
    t[3].chain_of_thought = "hidden"
    t[3].chain_of_thought_source = "default"
    t[3].reasoning_parts = []
    t[3].reasoning_status = "not_applicable"
    t[4].status = "failed"
    t[4].error = TaskError(code="PROVIDER_RATE_LIMITED", message="Slow down ⏳", retryable=True)
    t[4].usage = TaskUsage(input_tokens=None, output_tokens=0, reasoning_tokens=0)
    t[5].status = "cancelled"
    t[5].error = TaskError(code="PROVIDER_BAD_REQUEST", message="bad", retryable=False)
    t[6].status = "interrupted"
    t[6].output = ""
    t[6].reasoning_status = "interrupted"
    # Stored out of position order: reads must order by position.
    run.tasks = [t[3], t[0], t[6], t[2], t[5], t[1], t[4]]
    return run


def test_run_with_tasks_in_every_state_round_trips(backend: StoreBackend) -> None:
    store = backend.open()
    run = _run_in_every_state()
    store.create_run(run)

    loaded = store.get_run("run_all")

    expected = _run_in_every_state()
    expected.tasks.sort(key=lambda task: task.position)
    assert loaded == expected
    assert [task.position for task in loaded.tasks] == [0, 1, 2, 3, 4, 5, 6]
    assert loaded.snapshot() == expected.snapshot()
    # None (not reported) stays distinct from 0, and "no parts" from "not displayed".
    assert loaded.tasks[2].usage == TaskUsage(
        input_tokens=0,
        output_tokens=900,
        reasoning_tokens=None,
        cached_input_tokens=0,
        cache_write_tokens=1_500_000_000_000,
    )
    assert loaded.tasks[2].finish_reason == "length"
    assert loaded.tasks[2].generation == GenerationSettings(
        max_output_tokens=64_000, temperature=0.35
    )
    assert loaded.tasks[4].generation == GenerationSettings(temperature=0.0)
    assert loaded.tasks[0].finish_reason is None
    assert loaded.tasks[4].usage == TaskUsage(
        input_tokens=None, output_tokens=0, reasoning_tokens=0
    )
    assert loaded.tasks[3].reasoning_parts == []
    assert loaded.tasks[0].reasoning_parts is None
    assert loaded.tasks[6].output == ""
    assert loaded.tasks[1].output is None
    assert loaded.tasks[4].error == TaskError(
        code="PROVIDER_RATE_LIMITED", message="Slow down ⏳", retryable=True
    )
    assert loaded.tasks[5].error is not None and loaded.tasks[5].error.retryable is False


def test_updates_are_read_back(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        run = make_run("run_u", tasks=2)
        store.create_run(run)
        task = run.tasks[1]
        task.status = "done"
        task.output = "answer"
        task.reasoning = "because"
        task.reasoning_parts = [ReasoningPartView(kind="raw", text="because")]
        task.usage = TaskUsage(input_tokens=3, output_tokens=4, reasoning_tokens=5)
        store.update_task(task)
        run.status = "completed"
        run.finished_at = "2026-03-01T10:05:00.000Z"
        run.request = "not written by update_run"
        store.update_run(run)

        loaded = store.get_run("run_u")

    assert loaded is not None
    assert loaded.status == "completed"
    assert loaded.finished_at == "2026-03-01T10:05:00.000Z"
    assert loaded.request == "review the patch"
    assert loaded.tasks[1] == task
    assert loaded.tasks[0] == make_task("run_u", 0)


def test_a_runs_tool_servers_are_read_back(backend: StoreBackend) -> None:
    servers = [
        RecordedServer(
            name="demo", origin="mcp.json", command="python3", args=("-m", "demo"),
            env=("API_TOKEN",), file="/home/me/mcp.json",
        ),
        RecordedServer(name="web", origin="editor", url="https://***@x.example/mcp",
                       headers=("Authorization",)),
        RecordedServer(name="python", origin="python", tools=("add", "greet")),
    ]  # fmt: skip
    with closing(backend.open()) as store:
        store.create_run(make_run("run_tools", tool_servers=servers))
        store.create_run(make_run("run_none"))
        loaded, none = store.get_run("run_tools"), store.get_run("run_none")
        listed = {run.id: run.tool_servers for run in store.list_runs()}
    assert loaded is not None and loaded.tool_servers == servers
    assert none is not None and none.tool_servers == []
    assert listed == {"run_tools": servers, "run_none": []}


def test_unknown_ids(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        assert store.get_run("run_missing") is None
        assert store.latest_run() is None
        assert store.list_runs() == []
        assert store.trace("run_missing") == []
        with pytest.raises(RunNotFoundError, match="run_missing") as missing_run:
            store.update_run(make_run("run_missing"))
        assert missing_run.value.code == "RUN_NOT_FOUND"
        with pytest.raises(RunNotFoundError, match="run_missing") as missing_task:
            store.update_task(make_task("run_missing", 0))
        assert missing_task.value.code == "RUN_NOT_FOUND"
        assert store.list_runs() == []  # a refused update writes nothing


def test_list_and_latest_are_newest_first(backend: StoreBackend) -> None:
    store: Store = backend.open()
    store.create_run(make_run("run_b", created_at="2026-03-02T00:00:00.000Z", tasks=2))
    store.create_run(make_run("run_c", created_at="2026-03-03T00:00:00.000Z", tasks=0))
    store.create_run(make_run("run_a", created_at="2026-03-01T00:00:00.000Z", tasks=3))
    # Same millisecond as run_c, written later: counts as newer.
    store.create_run(make_run("run_d", created_at="2026-03-03T00:00:00.000Z", tasks=1))

    assert [run.id for run in store.list_runs()] == ["run_d", "run_c", "run_b", "run_a"]
    assert [run.id for run in store.list_runs(limit=2)] == ["run_d", "run_c"]
    assert store.list_runs(limit=0) == []
    assert [len(run.tasks) for run in store.list_runs()] == [1, 0, 2, 3]
    assert [task.id for task in store.list_runs()[3].tasks] == [
        "run_a_task0",
        "run_a_task1",
        "run_a_task2",
    ]
    latest = store.latest_run()
    assert latest is not None and latest.id == "run_d"
    store.close()


def test_trace_keeps_write_order_and_filters_by_layer(backend: StoreBackend) -> None:
    store = backend.open()
    store.create_run(make_run("run_t"))
    store.create_run(make_run("run_other"))
    # ``at`` deliberately out of order: the trace follows the order of writing.
    first = make_event("run_t", event_id="e1", type_="run.started", at="2026-03-01T10:00:05.000Z")
    second = make_event(
        "run_t",
        event_id="e2",
        type_="worker.reasoning",
        layer="reasoning",
        at="2026-03-01T10:00:01.000Z",
        task_id="run_t_task0",
        metadata={"reasoning": "думаю…", "parts": [{"kind": "raw", "text": "думаю…"}], "n": None},
    )
    third = make_event(
        "run_t",
        event_id="e3",
        type_="provider.exchange",
        layer="provider_raw",
        at="2026-03-01T10:00:03.000Z",
        metadata={"request": {"headers": {"x-api-key": "[REDACTED]"}}, "status": 200},
    )
    store.append_trace([first, second])
    store.append_trace([make_event("run_other", event_id="x1")])
    store.append_trace([third])
    fourth = make_event(
        "run_t", event_id="e4", type_="run.completed", at="2026-03-01T10:00:00.000Z"
    )
    fourth.expires_at = "2027-03-01T10:00:00.000Z"
    store.append_trace([fourth])
    store.append_trace([])

    assert store.trace("run_t") == [first, second, third, fourth]
    assert store.trace("run_t", layer="answer") == [first, fourth]
    assert store.trace("run_t", layer="reasoning") == [second]
    assert store.trace("run_t", layer="provider_raw") == [third]
    assert [event.id for event in store.trace("run_other")] == ["x1"]
    store.close()


def test_threads_share_one_store(backend: StoreBackend) -> None:
    store = backend.open()

    def work(worker: int) -> None:
        for n in range(50):
            run = make_run(f"run_t{worker}_{n}")
            store.create_run(run)
            store.append_trace([make_event(run.id, event_id=f"evt_t{worker}_{n}")])

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(store.list_runs(limit=1000)) == 200
    assert [event.id for event in store.trace("run_t3_49")] == ["evt_t3_49"]
    store.close()


def test_closed_store_refuses_use(backend: StoreBackend) -> None:
    store = backend.open()
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed") as raised:
        store.get_run("run_x")
    assert raised.value.problem == "closed"
    assert raised.value.code == "STORE_UNAVAILABLE"
    assert backend.named_in_messages in raised.value.message
    with pytest.raises(StoreError, match="closed"):
        store.create_run(make_run("run_x"))

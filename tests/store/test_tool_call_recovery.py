"""Recovery of a run whose process died during a tool loop: the calls that finished are
kept, the one in flight ends cancelled, and the notice says how many finished."""

from __future__ import annotations


def test_recovery_keeps_the_calls_that_finished_and_cancels_the_one_in_flight() -> None:
    from dataclasses import replace

    from thoughtline.records import Task
    from thoughtline.records.event_log import to_wire
    from thoughtline.records.run_events import TaskToolCallCompleted, TaskToolCallStarted
    from thoughtline.runtime.policy.recovery import Stop, interrupted_task

    at = "2026-01-01T00:00:00.000Z"
    task = Task(
        id="task_1",
        run_id="run_1",
        position=0,
        role="reader",
        provider="anthropic",
        model="claude-sonnet-4-6",
        chain_of_thought="hidden",
        chain_of_thought_source="default",
        status="running",
        tools=("time",),
        tool_calls=[],
    )
    call = {
        "id": "c1", "step": 1, "server": "time", "name": "now", "arguments": "{}",
        "status": "running", "is_error": False, "result": None, "result_truncated": False,
        "error": None, "started_at": at, "duration_ms": None,
    }  # fmt: skip
    told = [
        TaskToolCallStarted(run_id="run_1", seq=1, at=at, task_id="task_1", call=call),  # type: ignore[arg-type]
        TaskToolCallCompleted(
            run_id="run_1", seq=2, at=at, task_id="task_1",
            call={**call, "status": "done", "result": "12:00"},  # type: ignore[typeddict-item]
        ),
        TaskToolCallStarted(
            run_id="run_1", seq=3, at=at, task_id="task_1", call={**call, "id": "c2", "step": 2},  # type: ignore[typeddict-item]
        ),
    ]  # fmt: skip
    stop = Stop(reason="owner_exited", detail="process 4242 that ran it has exited", at=at)
    recovered = interrupted_task(
        replace(task), [to_wire(event) for event in told], stop, log_complete=True
    )
    assert recovered.tool_calls is not None
    assert [(c.id, c.status, c.error) for c in recovered.tool_calls] == [
        ("c1", "done", None),
        ("c2", "cancelled", "TOOL_CANCELLED"),
    ]
    assert recovered.reasoning_notice is not None
    assert "1 of its 2 tool calls had finished" in recovered.reasoning_notice


def test_recovery_keeps_calls_that_share_an_id_apart() -> None:
    from thoughtline.records import Task, ToolCallRecord
    from thoughtline.runtime.policy.recovery import Stop, interrupted_task

    at = "2026-01-01T00:00:00.000Z"

    def call(step: int, status: str) -> ToolCallRecord:
        # A provider that sends no call id: every call of the task has the same one.
        return ToolCallRecord(
            id="", step=step, server="time", name="now", arguments="{}", started_at=at,
            status=status,  # type: ignore[arg-type]
        )  # fmt: skip

    task = Task(
        id="task_1", run_id="run_1", position=0, role="reader", provider="anthropic",
        model="claude-sonnet-4-6", chain_of_thought="hidden", chain_of_thought_source="default",
        status="running", tools=("time",), tool_calls=[call(1, "done"), call(2, "running")],
    )  # fmt: skip
    stop = Stop(reason="owner_exited", detail="process 4242 that ran it has exited", at=at)

    recovered = interrupted_task(task, [], stop, log_complete=True)

    assert [(c.step, c.status) for c in recovered.tool_calls or ()] == [
        (1, "done"),
        (2, "cancelled"),
    ]


def test_recovery_keeps_stored_calls_that_share_an_id_apart_when_the_log_tells_of_them() -> None:
    from thoughtline.records import Task, ToolCallRecord
    from thoughtline.records.event_log import to_wire
    from thoughtline.records.run_events import TaskToolCallCompleted, TaskToolCallStarted
    from thoughtline.runtime.policy.recovery import Stop, interrupted_task

    at = "2026-01-01T00:00:00.000Z"

    def call(step: int, status: str) -> ToolCallRecord:
        return ToolCallRecord(
            id="", step=step, server="time", name="now", arguments="{}", started_at=at,
            status=status,  # type: ignore[arg-type]
        )  # fmt: skip

    task = Task(
        id="task_1", run_id="run_1", position=0, role="reader", provider="anthropic",
        model="claude-sonnet-4-6", chain_of_thought="hidden", chain_of_thought_source="default",
        status="running", tools=("time",), tool_calls=[call(1, "done"), call(2, "running")],
    )  # fmt: skip
    # The rows were written with these events; recovery reads both.
    told = [
        TaskToolCallStarted(run_id="run_1", seq=1, at=at, task_id="task_1", call=call(1, "running").to_dict()),
        TaskToolCallCompleted(run_id="run_1", seq=2, at=at, task_id="task_1", call=call(1, "done").to_dict()),
        TaskToolCallStarted(run_id="run_1", seq=3, at=at, task_id="task_1", call=call(2, "running").to_dict()),
    ]  # fmt: skip
    stop = Stop(reason="owner_exited", detail="process 4242 that ran it has exited", at=at)

    recovered = interrupted_task(task, [to_wire(event) for event in told], stop, log_complete=True)

    assert [(c.step, c.status) for c in recovered.tool_calls or ()] == [
        (1, "done"),
        (2, "cancelled"),
    ]

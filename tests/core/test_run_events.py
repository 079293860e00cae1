"""The run event union: one wire name per member, and the event log round trip."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

import thoughtline
from tests.support import untimed_deltas
from thoughtline.records import Cost, RunEventRecord, RunStatus, ToolCallSnapshot
from thoughtline.records.event_log import (
    UnknownRunEvent,
    from_records,
    from_wire,
    to_records,
    to_wire,
)
from thoughtline.records.run_events import (
    MEMBERS,
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
    TaskStepPriced,
    TaskToolCallCompleted,
    TaskToolCallStarted,
    ToolServerStart,
    is_terminal,
    run_finished,
    sse_data,
)

AT = "2026-01-01T00:00:00.000Z"
TASK = {"id": "task_1", "name": "engineer", "status": "running", "output": None}
CALL: ToolCallSnapshot = {
    "id": "call_1", "step": 1, "server": "time", "name": "now", "arguments": "{}",
    "status": "running", "is_error": False, "result": None, "result_truncated": False,
    "error": None, "started_at": AT, "duration_ms": None,
}  # fmt: skip
SNAPSHOT = {"schema": "thoughtline.run/v1", "id": "run_1", "status": "running", "tasks": [TASK]}

PRICED = Cost(amount=0.0031).to_dict()
ONE_OF_EACH: list[RunEvent] = [
    RunStarted(run_id="run_1", seq=1, at=AT, snapshot=SNAPSHOT),
    TaskStarted(run_id="run_1", seq=2, at=AT, task_id="task_1", task=TASK),
    TaskReasoningDelta(run_id="run_1", seq=3, at=AT, task_id="task_1", text="Hmm"),
    TaskReasoningDelta(
        run_id="run_1", seq=4, at=AT, task_id="task_1", text="!", part_id="rs_1", kind="summary"
    ),
    TaskAnswerDelta(run_id="run_1", seq=5, at=AT, task_id="task_1", text="Hi"),
    TaskCompleted(run_id="run_1", seq=6, at=AT, task_id="task_1", task={**TASK, "status": "done"}),
    RunCompleted(run_id="run_1", seq=7, at=AT, snapshot={**SNAPSHOT, "status": "completed"}),
    RunFailed(run_id="run_1", seq=7, at=AT, snapshot={**SNAPSHOT, "status": "failed"}),
    RunCancelled(run_id="run_1", seq=7, at=AT, snapshot={**SNAPSHOT, "status": "cancelled"}),
    RunInterrupted(run_id="run_1", seq=7, at=AT, snapshot={**SNAPSHOT, "status": "interrupted"}),
    ToolServerStart(run_id="run_1", seq=1, at=AT, server="time", state="starting"),
    ToolServerStart(
        run_id="run_1", seq=2, at=AT, server="time", state="ready", duration_ms=412, tools=2
    ),
    ToolServerStart(
        run_id="run_1",
        seq=3,
        at=AT,
        server="git",
        state="failed",
        duration_ms=90,
        error={"code": "TOOL_SERVER_UNAVAILABLE", "message": "It exited."},
    ),
    TaskStepPriced(run_id="run_1", seq=4, at=AT, task_id="task_1", step=1, cost=PRICED),
    TaskToolCallStarted(run_id="run_1", seq=5, at=AT, task_id="task_1", call=CALL),
    TaskToolCallCompleted(
        run_id="run_1", seq=6, at=AT, task_id="task_1", call={**CALL, "status": "done"}
    ),
]


def test_the_members_are_the_union_and_each_has_its_own_wire_name() -> None:
    assert set(MEMBERS) == set(typing.get_args(RunEvent))
    names = [member.wire_name for member in MEMBERS]
    assert len(set(names)) == len(names)
    assert names == [
        "tool_server.start",
        "run.started",
        "task.started",
        "answer.delta",
        "reasoning.delta",
        "task.tool_call.started",
        "task.tool_call.completed",
        "task.step.priced",
        "task.completed",
        "run.completed",
        "run.failed",
        "run.cancelled",
        "run.interrupted",
    ]
    assert {type(event) for event in ONE_OF_EACH} == set(MEMBERS)


def test_members_are_frozen_slotted_and_keyword_only() -> None:
    for member in MEMBERS:
        assert all(field.kw_only for field in dataclasses.fields(member)), member
        assert "__slots__" in vars(member), member
        assert member.__name__ in thoughtline.__all__
    for event in ONE_OF_EACH:
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.seq = 0  # type: ignore[misc]


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda event: type(event).__name__)
def test_every_event_round_trips_through_the_event_log(event: RunEvent) -> None:
    record = to_wire(event)
    assert record.type == event.wire_name
    assert (record.run_id, record.seq, record.at) == (event.run_id, event.seq, event.at)
    assert from_wire(record) == event


def test_the_wire_data_is_what_the_log_and_the_stream_always_carried() -> None:
    answer, reasoning, named = ONE_OF_EACH[4], ONE_OF_EACH[2], ONE_OF_EACH[3]
    assert to_wire(answer).data == {"text": "Hi"}
    assert to_wire(answer).task_id == "task_1"
    assert to_wire(reasoning).data == {"text": "Hmm"}
    assert to_wire(named).data == {"text": "!", "part_id": "rs_1", "kind": "summary"}
    assert sse_data(answer) == {"task_id": "task_1", "text": "Hi"}
    assert sse_data(named) == {"task_id": "task_1", "text": "!"}
    assert to_wire(ONE_OF_EACH[1]).data is TASK and sse_data(ONE_OF_EACH[1]) is TASK
    assert to_wire(ONE_OF_EACH[0]).task_id is None
    assert sse_data(ONE_OF_EACH[0]) is SNAPSHOT
    started = ONE_OF_EACH[-2]
    assert to_wire(started).data is CALL and to_wire(started).task_id == "task_1"
    assert sse_data(started) == {"task_id": "task_1", "call": CALL}
    priced = ONE_OF_EACH[-3]
    assert to_wire(priced).data == {"step": 1, "cost": PRICED}
    assert sse_data(priced) == {"task_id": "task_1", "step": 1, "cost": PRICED}
    assert from_wire(to_wire(priced)) == priced
    starting, ready, failed = ONE_OF_EACH[10:13]
    assert to_wire(starting).data == {"server": "time", "state": "starting"}
    assert to_wire(ready).data == {
        "server": "time",
        "state": "ready",
        "duration_ms": 412,
        "tools": 2,
    }
    assert to_wire(ready).task_id is None
    assert sse_data(failed) == {
        "server": "git",
        "state": "failed",
        "duration_ms": 90,
        "error": {"code": "TOOL_SERVER_UNAVAILABLE", "message": "It exited."},
    }


def test_terminal_events_follow_the_run_status() -> None:
    expected: dict[RunStatus, type[RunEvent]] = {
        "completed": RunCompleted,
        "completed_with_failures": RunCompleted,
        "completed_prepare_only": RunCompleted,
        "failed": RunFailed,
        "cancelled": RunCancelled,
        "interrupted": RunInterrupted,
    }
    for status, member in expected.items():
        event = run_finished(status, run_id="run_1", seq=9, at=AT, snapshot=SNAPSHOT)
        assert type(event) is member and is_terminal(event)
    assert [is_terminal(event) for event in ONE_OF_EACH[:6]] == [False] * 6


def test_an_unknown_type_in_the_log_is_an_error_naming_it() -> None:
    record = RunEventRecord(run_id="run_1", seq=3, type="task.paused", task_id=None, at=AT, data={})
    with pytest.raises(UnknownRunEvent, match=r"task\.paused"):
        from_wire(record)


def unknown(seq: int, type_: str, data: dict[str, object]) -> RunEventRecord:
    return RunEventRecord(
        run_id="run_1",
        seq=seq,
        type=type_,
        task_id="task_1",
        at=AT,
        data=data,  # type: ignore[arg-type]
    )


def test_the_log_reader_skips_types_of_a_newer_version_between_known_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A daemon one version behind the process writing a run reads its log: an event type
    (single or a batch of deltas) it does not know is left out, at debug level, and every
    known event around it is read in order."""
    known = [
        delta(1, "a"),
        delta(2, "b"),
        TaskCompleted(run_id="run_1", seq=6, at=AT, task_id="task_1", task=TASK),
    ]
    records = [
        *to_records(known[:2]),
        unknown(3, "task.paused", {"until": "later"}),
        unknown(5, "thought.delta", {"texts": ["x", "y"]}),
        *to_records(known[2:]),
    ]
    with caplog.at_level("DEBUG", logger="thoughtline.records.event_log"):
        read = from_records(records)
    assert untimed_deltas(read) == untimed_deltas(known)
    assert from_records(records, joined=True)[-1] == known[-1]
    assert from_records(records, after_seq=2) == known[2:]
    skipped = [r.getMessage() for r in caplog.records if r.levelname == "DEBUG"]
    assert len(skipped) == 2
    assert "'task.paused'" in skipped[0]
    assert "'thought.delta'" in skipped[1]


def delta(seq: int, text: str, *, task: str = "task_1", reasoning: bool = False) -> RunEvent:
    kind = TaskReasoningDelta if reasoning else TaskAnswerDelta
    return kind(
        run_id="run_1", seq=seq, at=f"2026-01-01T00:00:00.{seq:03d}Z", task_id=task, text=text
    )


def test_consecutive_deltas_of_one_task_and_stream_share_one_record() -> None:
    events = [
        RunStarted(run_id="run_1", seq=1, at=AT, snapshot=SNAPSHOT),
        delta(2, "Hm", reasoning=True),
        delta(3, "m.", reasoning=True),
        delta(4, "He"),
        delta(5, "llo"),
        delta(6, "Other", task="task_2"),
        delta(7, " world"),
        TaskReasoningDelta(
            run_id="run_1", seq=8, at=AT, task_id="task_1", text="!", part_id="rs_1", kind="raw"
        ),
        TaskReasoningDelta(
            run_id="run_1", seq=9, at=AT, task_id="task_1", text="?", part_id="rs_1", kind="raw"
        ),
        delta(10, "<b>[/INST]</b>\udcff"),
        delta(11, ""),
        TaskCompleted(run_id="run_1", seq=12, at=AT, task_id="task_1", task=TASK),
    ]
    records = to_records(events)
    assert [(r.seq, r.type, r.task_id, r.data) for r in records[1:-1]] == [
        (3, "reasoning.delta", "task_1", {"texts": ["Hm", "m."]}),
        (5, "answer.delta", "task_1", {"texts": ["He", "llo"]}),
        (6, "answer.delta", "task_2", {"text": "Other"}),
        (7, "answer.delta", "task_1", {"text": " world"}),
        (8, "reasoning.delta", "task_1", {"text": "!", "part_id": "rs_1", "kind": "raw"}),
        (9, "reasoning.delta", "task_1", {"text": "?", "part_id": "rs_1", "kind": "raw"}),
        (11, "answer.delta", "task_1", {"texts": ["<b>[/INST]</b>\udcff", ""]}),
    ]
    assert records[1].at == events[2].at  # a batch is stamped once, with its last delta's time
    assert untimed_deltas(from_records(records)) == untimed_deltas(events)
    # Resuming inside a batch starts right after the id the reader has.
    assert [e.seq for e in from_records(records, after_seq=4)] == list(range(5, 13))
    assert from_records(records, after_seq=12) == []
    with pytest.raises(UnknownRunEvent, match="from_records"):
        from_wire(records[1])


DELTA_STEPS = st.lists(
    st.tuples(st.sampled_from(["task_1", "task_2"]), st.booleans(), st.text(max_size=3)),
    max_size=40,
)
"""Deltas of two tasks, each of the answer or the reasoning, as (task, reasoning?, text)."""
RESUME_POINTS = st.integers(min_value=0, max_value=45)


def deltas_of(steps: list[tuple[str, bool, str]]) -> list[RunEvent]:
    return [
        delta(seq, text, task=task, reasoning=reasoning)
        for seq, (task, reasoning, text) in enumerate(steps, start=1)
    ]


@given(DELTA_STEPS, RESUME_POINTS)
def test_any_stream_of_deltas_replays_exactly_from_any_resume_point(
    steps: list[tuple[str, bool, str]], after: int
) -> None:
    events = deltas_of(steps)
    records = to_records(events)
    assert [record.seq for record in records] == sorted({record.seq for record in records})
    assert untimed_deltas(from_records(records, after_seq=after)) == untimed_deltas(
        [event for event in events if event.seq > after]
    )


@given(DELTA_STEPS, RESUME_POINTS)
def test_joined_batches_carry_the_same_text_from_any_resume_point(
    steps: list[tuple[str, bool, str]], after: int
) -> None:
    """``joined=True`` (what folding a long log reads): one delta per record, its texts
    joined, numbered by the last; the text of each task and stream, and the last seq,
    are what the deltas one by one give."""
    events = deltas_of(steps)
    records = to_records(events)

    def texts(deltas: list[RunEvent]) -> dict[tuple[str, str], str]:
        joined: dict[tuple[str, str], str] = {}
        for event in deltas:
            assert isinstance(event, TaskAnswerDelta | TaskReasoningDelta)
            key = (event.task_id, event.wire_name)
            joined[key] = joined.get(key, "") + event.text
        return joined

    one_by_one = from_records(records, after_seq=after)
    batched = from_records(records, after_seq=after, joined=True)
    assert texts(batched) == texts(one_by_one)
    assert len(batched) <= len(records)
    assert [e.seq for e in batched][-1:] == [e.seq for e in one_by_one][-1:]


def test_the_log_keeps_joined_reasoning_once_and_gives_it_back() -> None:
    from thoughtline.store._rows import without_reasoning

    parts = [{"kind": "summary", "text": "First."}, {"kind": "summary", "text": "Then."}]
    shown = {**TASK, "status": "done", "reasoning": "First.\n\nThen.", "reasoning_parts": parts}
    completed = TaskCompleted(run_id="run_1", seq=6, at=AT, task_id="task_1", task=shown)
    finished = RunCompleted(
        run_id="run_1", seq=7, at=AT, snapshot={**SNAPSHOT, "status": "completed", "tasks": [shown]}
    )
    task_record, run_record = to_records([completed, finished])
    assert task_record.data["reasoning"] is None and task_record.data["reasoning_joined"] is True
    assert run_record.data["tasks"][0]["reasoning"] is None
    assert shown["reasoning"] == "First.\n\nThen."  # the event's own dict is left alone
    assert from_records([task_record, run_record]) == [completed, finished]
    # Reasoning that is not exactly its parts joined is logged as it is.
    edited = {**shown, "reasoning": "something else"}
    record = to_wire(TaskCompleted(run_id="run_1", seq=6, at=AT, task_id="task_1", task=edited))
    assert record.data == edited
    # The reasoning retention clears the parts: nothing is rebuilt.
    data = json.loads(json.dumps(task_record.data))
    assert without_reasoning(data)
    cleared = from_wire(dataclasses.replace(task_record, data=data))
    assert isinstance(cleared, TaskCompleted)
    assert cleared.task["reasoning"] is None and cleared.task["reasoning_parts"] == []
    assert "reasoning_joined" not in cleared.task

"""Rows of a store ↔ thoughtline's records, shared by the SQLite and PostgreSQL stores
(their tables have the same columns), and the statements that write them, in SQLite's
spelling (:mod:`thoughtline.store._sql_dialect` renders them for PostgreSQL). Columns
are named like the records' fields, so most of them map by name."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

import orjson

from thoughtline.records import (
    ReasoningPartView,
    Run,
    RunEventRecord,
    Task,
    TaskError,
    TaskTimings,
    TaskUsage,
    ToolCallRecord,
    TraceEvent,
    parse_epoch,
)
from thoughtline.requests import GenerationSettings
from thoughtline.store.base import PreparedWrite


class Row(Protocol):
    """A fetched row whose columns are read by name (``sqlite3.Row``, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...


RUN_FIELDS = (
    "id", "status", "request", "chain_of_thought", "chain_of_thought_source",
    "worker_backend", "created_at", "finished_at",
)  # fmt: skip
TASK_FIELDS = (
    "id", "run_id", "position", "role", "name", "provider", "model", "chain_of_thought",
    "chain_of_thought_source", "effort", "status", "executor", "output", "reasoning",
    "reasoning_status", "reasoning_notice", "finish_reason",
)  # fmt: skip
USAGE_FIELDS = (
    "input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens",
    "cache_write_tokens",
)  # fmt: skip
GENERATION_FIELDS = ("max_output_tokens", "temperature")
TIMING_FIELDS = ("started_at", "finished_at", "first_reasoning_ms", "first_answer_ms", "total_ms")
TASK_COLUMNS = (
    *TASK_FIELDS, *USAGE_FIELDS, *TIMING_FIELDS, *GENERATION_FIELDS,
    "after_json", "reasoning_parts_json", "error_code", "error_message", "error_retryable",
)  # fmt: skip
INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(TASK_COLUMNS)}) "
    f"VALUES ({', '.join(':' + column for column in TASK_COLUMNS)})"
)
UPDATED_TASK_COLUMNS = tuple(
    column for column in TASK_COLUMNS if column not in ("id", "run_id", "position")
)
"""What a task update writes: a task never moves to another run or place, and leaving
the indexed columns out spares SQLite the index upkeep (half of each update's cost)."""
UPDATE_TASK = (
    f"UPDATE tasks SET {', '.join(f'{column} = :{column}' for column in UPDATED_TASK_COLUMNS)} "
    "WHERE id = :id"
)
INSERT_TRACE = (
    "INSERT INTO trace_events (id, run_id, task_id, type, layer, at, at_epoch, "
    "expires_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
RUN_EVENT_COLUMNS = "run_id, seq, type, task_id, at, data_json"
INSERT_RUN_EVENT = f"INSERT INTO run_events ({RUN_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"


def dump(value: object) -> str:
    """Compact JSON text with non-ASCII kept as UTF-8 (``\\u`` escapes would double or
    triple the bytes of most scripts). A lone surrogate (from provider text) is not valid
    UTF-8: such a value is stored with ASCII escapes instead."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, or a non-JSON value
        return json.dumps(value, separators=(",", ":"))


def load(text: str) -> Any:
    """What :func:`dump` wrote: orjson reads it (a long run's event log is read row by
    row), the standard library the rare value stored with a lone surrogate's escape,
    which orjson refuses."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def event_epoch(at: str) -> float:
    """When a trace event happened, for retention; an unparsable ``at`` counts from the
    write, so retention still reaches the event."""
    parsed = parse_epoch(at)
    return time.time() if parsed is None else parsed


def trace_params(event: TraceEvent) -> tuple[object, ...]:
    return (
        event.id, event.run_id, event.task_id, event.type, event.layer,
        event.at, event_epoch(event.at), event.expires_at, dump(event.metadata),
    )  # fmt: skip


def run_event_params(event: RunEventRecord) -> tuple[object, ...]:
    return (event.run_id, event.seq, event.type, event.task_id, event.at, dump(event.data))


def task_params(task: Task) -> dict[str, Any]:
    parts, error = task.reasoning_parts, task.error
    return {
        **{name: getattr(task, name) for name in TASK_FIELDS},
        **{name: getattr(task.usage, name) for name in USAGE_FIELDS},
        **{name: getattr(task.timings, name) for name in TIMING_FIELDS},
        **{name: getattr(task.generation, name) for name in GENERATION_FIELDS},
        "after_json": _after_json(task),
        # NULL (not displayed) differs from "[]" (displayed, no parts).
        "reasoning_parts_json": None if parts is None else dump([p.to_dict() for p in parts]),
        "error_code": None if error is None else error.code,
        "error_message": None if error is None else error.message,
        "error_retryable": None if error is None else int(error.retryable),
    }


class TransitionWrites:
    """``create_run``, ``update_run``, ``update_task``, ``write`` and ``prepare`` for a
    store that writes prepared writes (:meth:`write_prepared`) and says how its rows
    look (:meth:`new_run_row`, :meth:`task_row`): the same in both stores."""

    @staticmethod
    def new_run_row(run: Run) -> tuple[object, ...]:
        """A new run's row parameters (its fields and its owner)."""
        raise NotImplementedError

    @staticmethod
    def task_row(task: Task) -> dict[str, object]:
        """A task's row parameters."""
        raise NotImplementedError

    def write_merged(self, write: PreparedWrite, *, wait: bool) -> bool:
        """Write ``write`` in one transaction (False: ``wait`` was False and the store
        was busy)."""
        raise NotImplementedError

    def write_prepared(self, writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        if not writes:
            return True
        write = merged(writes)
        try:
            return self.write_merged(write, wait=wait)
        except UnicodeEncodeError:
            # Text neither database takes (a lone surrogate, from a path or environment
            # value that was not UTF-8). The transaction was rolled back: written again
            # with such characters escaped, rather than losing every row with it.
            return self.write_merged(storable(write), wait=wait)

    def create_run(self, run: Run) -> None:
        self.write_prepared([self.prepare(create=run)])

    def update_run(self, run: Run) -> None:
        self.write(run=run)

    def update_task(self, task: Task) -> None:
        self.write(tasks=[task])

    def write(
        self,
        *,
        events: Sequence[RunEventRecord] = (),
        run: Run | None = None,
        tasks: Sequence[Task] = (),
        trace: Sequence[TraceEvent] = (),
    ) -> None:
        if events or run or tasks or trace:
            self.write_prepared([self.prepare(events=events, run=run, tasks=tasks, trace=trace)])

    def prepare(
        self,
        *,
        create: Run | None = None,
        events: Sequence[RunEventRecord] = (),
        run: Run | None = None,
        tasks: Sequence[Task] = (),
        trace: Sequence[TraceEvent] = (),
    ) -> PreparedWrite:
        """The rows, built now from the objects as they are now."""
        run_ids = {event.run_id for event in events} | {task.run_id for task in tasks}
        run_ids |= {event.run_id for event in trace}
        if run is not None:
            run_ids.add(run.id)
        if create is not None:
            run_ids.add(create.id)
        return PreparedWrite(
            created=[]
            if create is None
            else [(self.new_run_row(create), [self.task_row(task) for task in create.tasks])],
            events=[run_event_params(event) for event in events],
            runs=[] if run is None else [(run.status, run.finished_at, run.id)],
            tasks=[self.task_row(task) for task in tasks],
            trace=[trace_params(event) for event in trace],
            run_ids=frozenset(run_ids),
        )


def merged(writes: Sequence[PreparedWrite]) -> PreparedWrite:
    """Many prepared writes as one, in order: later rows of the same run or task win
    (each holds the whole row), appended rows are kept in order."""
    if len(writes) == 1:
        return writes[0]
    created: list[tuple[tuple[object, ...], list[dict[str, object]]]] = []
    events: list[tuple[object, ...]] = []
    trace: list[tuple[object, ...]] = []
    runs: dict[str, tuple[str, str | None, str]] = {}
    tasks: dict[object, dict[str, object]] = {}
    run_ids: set[str] = set()
    for write in writes:
        created += write.created
        events += write.events
        trace += write.trace
        for run in write.runs:
            runs[run[2]] = run
        for task in write.tasks:
            tasks[task["id"]] = task
        run_ids |= write.run_ids
    return PreparedWrite(
        events=events,
        trace=trace,
        tasks=list(tasks.values()),
        run_ids=frozenset(run_ids),
        runs=list(runs.values()),
        created=created,
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF: Python's stand-in for a byte that was not UTF-8 (surrogateescape).
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def storable_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a byte that was not UTF-8 written ``\\xff``, any
    other lone surrogate ``\\udXXX``."""
    return _LONE_SURROGATE.sub(_escaped, text)


def _storable(value: object) -> object:
    return storable_text(value) if isinstance(value, str) else value


def _storable_row(row: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(_storable(value) for value in row)


def _storable_named(row: dict[str, object]) -> dict[str, object]:
    return {name: _storable(value) for name, value in row.items()}


def storable(write: PreparedWrite) -> PreparedWrite:
    """``write`` with every text made storable (:func:`storable_text`). Only used once a
    write was refused for such text: the rows are not scanned otherwise."""
    return PreparedWrite(
        created=[
            (_storable_row(run), [_storable_named(task) for task in tasks])
            for run, tasks in write.created
        ],
        events=[_storable_row(event) for event in write.events],
        runs=list(write.runs),
        tasks=[_storable_named(task) for task in write.tasks],
        trace=[_storable_row(event) for event in write.trace],
        run_ids=write.run_ids,
    )


def _after_json(task: Task) -> str:
    """A task's ``after_json`` column: the ids it runs after (a JSON array), or, for a
    task that may call tools, an object that also holds its steps and tool calls. The
    column is free JSON text in both stores, so this needs no change of schema."""
    if task.tool_calls is None:
        return dump(task.after)
    head = dump(
        {
            "after": task.after,
            "tools": list(task.tools),
            "max_steps": task.max_steps,
            "steps": task.steps or 0,
        }
    )
    # The row is rewritten at every step: each ended call is serialised once, so a long
    # loop does not serialise all its earlier calls again at every step.
    calls = ",".join(_call_json(call) for call in task.tool_calls)
    return f'{head[:-1]},"tool_calls":[{calls}]}}'


def _call_json(call: ToolCallRecord) -> str:
    """A tool call as JSON text, kept on the record once the call has ended (an ended
    call's record does not change)."""
    if call.status == "running":
        return dump(call.to_dict())
    if call.ended_json is None:
        call.ended_json = dump(call.to_dict())
    return call.ended_json


def task_from_row(row: Row) -> Task:
    parts = row["reasoning_parts_json"]
    after = load(row["after_json"])
    tooled: dict[str, Any] = after if isinstance(after, dict) else {}
    task = Task(
        **{name: row[name] for name in TASK_FIELDS},
        after=tooled.get("after", []) if tooled else after,
        reasoning_parts=None
        if parts is None
        else [
            ReasoningPartView(kind=part["kind"], text=part["text"], step=part.get("step"))
            for part in json.loads(parts)
        ],
        usage=TaskUsage(**{name: row[name] for name in USAGE_FIELDS}),
        timings=TaskTimings(**{name: row[name] for name in TIMING_FIELDS}),
        generation=GenerationSettings(**{name: row[name] for name in GENERATION_FIELDS}),
        error=None
        if row["error_code"] is None
        else TaskError(
            code=row["error_code"],
            message=row["error_message"],
            retryable=bool(row["error_retryable"]),
        ),
    )
    if tooled:
        task.tools = tuple(tooled.get("tools", ()))
        task.max_steps = tooled.get("max_steps", task.max_steps)
        task.steps = tooled.get("steps", 0)
        task.tool_calls = [ToolCallRecord.from_dict(call) for call in tooled.get("tool_calls", [])]
    return task


def run_from_row(row: Row, tasks: list[Task]) -> Run:
    return Run(**{name: row[name] for name in RUN_FIELDS}, tasks=tasks)


def runs_with_tasks(run_rows: Sequence[Row], task_rows: Sequence[Row]) -> list[Run]:
    """Runs in the order of ``run_rows``, each with its tasks from ``task_rows`` (read
    in position order)."""
    tasks_by_run: dict[str, list[Task]] = {row["id"]: [] for row in run_rows}
    for task_row in task_rows:
        tasks_by_run[task_row["run_id"]].append(task_from_row(task_row))
    return [run_from_row(row, tasks_by_run[row["id"]]) for row in run_rows]


def run_event_from_row(row: Row) -> RunEventRecord:
    return RunEventRecord(
        run_id=row["run_id"],
        seq=row["seq"],
        type=row["type"],
        task_id=row["task_id"],
        at=row["at"],
        data=load(row["data_json"]),
    )


def trace_event_from_row(row: Row) -> TraceEvent:
    return TraceEvent(
        id=row["id"],
        run_id=row["run_id"],
        task_id=row["task_id"],
        type=row["type"],
        layer=row["layer"],
        at=row["at"],
        metadata=load(row["metadata_json"]),
        expires_at=row["expires_at"],
    )


def without_reasoning(data: dict[str, Any]) -> bool:
    """Clear the reasoning of the task (or of every task of the run) a logged snapshot
    holds, in place; True when there was any."""
    tasks = data["tasks"] if isinstance(data.get("tasks"), list) else [data]
    changed = False
    for task in tasks:
        if isinstance(task, dict) and (task.get("reasoning") or task.get("reasoning_parts")):
            task["reasoning"], task["reasoning_parts"] = None, []
            changed = True
    return changed

"""Rows of a store ↔ thoughtline's records, shared by the SQLite and PostgreSQL stores
(their tables have the same columns), and the statements that write them, in SQLite's
spelling (:mod:`thoughtline.store._sql_dialect` renders them for PostgreSQL). Columns
are named like the records' fields, so most of them map by name."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Protocol

import orjson

from thoughtline.model import threads
from thoughtline.model.requests import GenerationSettings
from thoughtline.records import (
    Cost,
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
from thoughtline.store._step_costs import cost_totals, step_costs_by_task
from thoughtline.store.base import RunUpdate
from thoughtline.tools.recorded import RecordedServer


class Row(Protocol):
    """A fetched row whose columns are read by name (``sqlite3.Row``, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...


RUN_FIELDS = (
    "id", "status", "request", "chain_of_thought", "chain_of_thought_source",
    "worker_backend", "created_at", "finished_at", "conversation_id", "continues",
    "max_cost", "client", "client_asked",
)  # fmt: skip
RUN_COLUMNS = (*RUN_FIELDS, "tool_servers_json", "tool_server_starts_json")
"""A run's columns: its fields by name, then the records of its tool servers and its
servers' starts as JSON."""
UPDATE_RUN = "UPDATE runs SET status = ?, finished_at = ?, tool_server_starts_json = ? WHERE id = ?"
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
    "tools_json", "max_steps", "steps", "history_json", "cost_amount", "cost_json",
    "max_cost", "persona_source", "system_prompt", "budget_notice", "cost_known_amount",
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
TRACE_COLUMNS = "id, run_id, task_id, type, layer, at, at_epoch, expires_at, metadata_json"
INSERT_TRACE = f"INSERT INTO trace_events ({TRACE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
TOOL_CALL_COLUMNS = (
    "task_id", "position", "run_id", "call_id", "step", "server", "name", "arguments",
    "status", "is_error", "result", "result_truncated", "error", "started_at", "duration_ms",
    "read_only", "destructive",
)  # fmt: skip
UPSERT_TOOL_CALL = (
    f"INSERT INTO task_tool_calls ({', '.join(TOOL_CALL_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(TOOL_CALL_COLUMNS))}) "
    "ON CONFLICT (task_id, position) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in TOOL_CALL_COLUMNS[2:])
)
"""A tool call's row, written as the call starts and again as it ends (a run event each):
a task's calls are numbered in the order it made them."""
THREAD_COLUMNS = (
    "task_id", "run_id", "at_epoch", "system_digest", "tools_digest", "answer_json",
    "carriers_json",
)  # fmt: skip
INSERT_THREAD = (
    f"INSERT INTO task_threads ({', '.join(THREAD_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(THREAD_COLUMNS))}) ON CONFLICT (task_id) DO NOTHING"
)
"""A task's thread, written once, when it ends (a later write of the task changes nothing)."""
TOOL_CALLS_OF_RUNS = (
    f"SELECT {', '.join(TOOL_CALL_COLUMNS)} FROM task_tool_calls WHERE {{runs}} "
    "ORDER BY run_id, task_id, position"
)
"""The tool calls of the runs ``{runs}`` selects, in the order of their index."""
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
        "after_json": dump(task.after),
        # NULL: a task offered no tools (its calls are rows of task_tool_calls).
        "tools_json": None if task.tool_calls is None else dump(list(task.tools)),
        "max_steps": task.max_steps,
        "max_cost": task.max_cost,
        "persona_source": task.persona_source,
        "system_prompt": task.system,
        "budget_notice": task.budget_notice,
        "steps": task.steps,
        "history_json": None if task.history is None else dump(task.history),
        # The total for the store's own sums, and how many calls were priced (each
        # call's cost is a row of task_step_costs).
        "cost_amount": task.cost.amount,
        "cost_known_amount": task.cost.known_amount,
        "cost_json": cost_totals(task),
        # NULL (not displayed) differs from "[]" (displayed, no parts).
        "reasoning_parts_json": None if parts is None else dump([p.to_dict() for p in parts]),
        # NULL where it is the parts' texts joined, as the runtime makes it: read back
        # from the parts (the text was stored twice, a fifth of a displayed delta's bytes).
        "reasoning": None
        if parts is not None and task.reasoning == joined_reasoning(parts)
        else task.reasoning,
        "error_code": None if error is None else error.code,
        "error_message": None if error is None else error.message,
        "error_retryable": None if error is None else int(error.retryable),
    }


def joined_reasoning(parts: Sequence[ReasoningPartView]) -> str | None:
    """A task's ``reasoning`` as the runtime makes it from its parts: their texts joined
    by a blank line, ``None`` without parts (``runtime/engine/steps.py``'s
    ``task_text``)."""
    if not parts:
        return None
    return "\n\n".join(part.text for part in parts if part.text)


def tool_call_params(task: Task, position: int) -> tuple[object, ...]:
    """The row of ``task``'s tool call at ``position`` (in the order the task made them)."""
    assert task.tool_calls is not None
    call = task.tool_calls[position]
    return (
        task.id, position, task.run_id, call.id, call.step, call.server, call.name,
        call.arguments, call.status, int(call.is_error), call.result,
        int(call.result_truncated), call.error, call.started_at, call.duration_ms,
        int(call.read_only), int(call.destructive),
    )  # fmt: skip


def thread_params(task: Task) -> tuple[object, ...]:
    """The ``task_threads`` row of a task that ended with a thread."""
    thread = task.thread
    assert thread is not None
    return (
        task.id, task.run_id, time.time(), thread.system_digest, thread.tools_digest,
        threads.encode(thread.answer),
        None if thread.carriers is None else threads.encode(thread.carriers),
    )  # fmt: skip


def task_from_row(
    row: Row, tool_calls: list[ToolCallRecord] | None = None, step_costs: list[Cost] | None = None
) -> Task:
    """The task of ``row``; ``tool_calls`` are its calls' rows and ``step_costs`` its
    calls' costs, read with it (none read: a task that has made no such call)."""
    parts_json = row["reasoning_parts_json"]
    parts = (
        None
        if parts_json is None
        else [
            ReasoningPartView(kind=part["kind"], text=part["text"], step=part.get("step"))
            for part in json.loads(parts_json)
        ]
    )
    fields = {name: row[name] for name in TASK_FIELDS}
    if fields["reasoning"] is None and parts is not None:
        fields["reasoning"] = joined_reasoning(parts)
    task = Task(
        **fields,
        after=load(row["after_json"]),
        reasoning_parts=parts,
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
    if row["max_steps"] is not None:
        task.max_steps = row["max_steps"]
    task.max_cost = row["max_cost"]
    # NULL: stored before the persona's source was recorded.
    task.persona_source = row["persona_source"] or "unrecorded"
    task.system = row["system_prompt"]
    task.budget_notice = row["budget_notice"]
    if row["history_json"] is not None:
        task.history = load(row["history_json"])
    if row["cost_json"] is not None:
        task.step_costs = [] if step_costs is None else step_costs
    elif task.executor.startswith("provider:"):
        task.priced = False  # stored by a thoughtline that did not price calls
    if row["tools_json"] is not None:
        task.tools = tuple(load(row["tools_json"]))
        task.steps = row["steps"]
        task.tool_calls = [] if tool_calls is None else tool_calls
    return task


def tool_calls_by_task(call_rows: Sequence[Sequence[Any]]) -> dict[str, list[ToolCallRecord]]:
    """Tool calls grouped by task, from their rows' values in :data:`TOOL_CALL_COLUMNS`
    order (read as plain tuples: a named row costs more than the rest of the work)."""
    by_task: dict[str, list[tuple[int, ToolCallRecord]]] = {}
    unordered: set[str] = set()
    for (
        task_id, position, _run_id, call_id, step, server, name, arguments, status,
        is_error, result, result_truncated, error, started_at, duration_ms,
        read_only, destructive,
    ) in call_rows:  # fmt: skip
        calls = by_task.setdefault(task_id, [])
        if calls and position < calls[-1][0]:
            unordered.add(task_id)
        record = ToolCallRecord(
            id=call_id, step=step, server=server, name=name, arguments=arguments,
            status=status, is_error=bool(is_error), result=result,
            result_truncated=bool(result_truncated), error=error, started_at=started_at,
            duration_ms=None if duration_ms is None else float(duration_ms),
            read_only=bool(read_only), destructive=bool(destructive),
        )  # fmt: skip
        calls.append((position, record))
    for task_id in unordered:  # the database sends them in order; should one not
        by_task[task_id].sort(key=lambda item: item[0])
    return {task_id: [record for _, record in calls] for task_id, calls in by_task.items()}


def run_values(run: Run) -> tuple[object, ...]:
    """A run's :data:`RUN_COLUMNS` values."""
    servers = dump([server.to_dict() for server in run.tool_servers]) if run.tool_servers else None
    return (*(getattr(run, name) for name in RUN_FIELDS), servers, server_starts_json(run))


def run_update(run: Run) -> RunUpdate:
    """What a write of ``run`` changes of its row (:data:`UPDATE_RUN`'s parameters)."""
    return (run.status, run.finished_at, server_starts_json(run), run.id)


def server_starts_json(run: Run) -> str | None:
    """The run's ``tool_server_starts`` as stored; ``None`` when it has none."""
    return dump(run.server_starts) if run.server_starts else None


def run_from_row(row: Row, tasks: list[Task]) -> Run:
    servers, starts = row["tool_servers_json"], row["tool_server_starts_json"]
    return Run(
        **{name: row[name] for name in RUN_FIELDS},
        tool_servers=[]
        if servers is None
        else [RecordedServer.from_dict(server) for server in load(servers)],
        tasks=tasks,
        server_starts=[] if starts is None else load(starts),
    )


def runs_with_tasks(
    run_rows: Sequence[Row],
    task_rows: Sequence[Row],
    call_rows: Sequence[Sequence[Any]] = (),
    cost_rows: Sequence[Sequence[Any]] = (),
) -> list[Run]:
    """Runs in the order of ``run_rows``, each with its tasks from ``task_rows`` (read
    in position order), their tool calls from ``call_rows``
    (:func:`tool_calls_by_task`) and their calls' costs from ``cost_rows``
    (:func:`~thoughtline.store._step_costs.step_costs_by_task`)."""
    calls = tool_calls_by_task(call_rows)
    costs = step_costs_by_task(cost_rows, load)
    tasks_by_run: dict[str, list[Task]] = {row["id"]: [] for row in run_rows}
    for task_row in task_rows:
        task_id = task_row["id"]
        tasks_by_run[task_row["run_id"]].append(
            task_from_row(task_row, calls.get(task_id), costs.get(task_id))
        )
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

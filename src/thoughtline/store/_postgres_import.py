"""Copying a whole store into an empty PostgreSQL store, in one transaction.

Everything a run is made of comes across as written: the run, its tasks, their tool
calls, the costs of their model calls and conversation threads, every trace event of every layer (ids, times, expiries and metadata unchanged, in
the order they were written), and the numbered run event log. The source is read through the
:class:`~thoughtline.store.base.Store` protocol, so any store can be copied. Runs are
written oldest first, so the newest-first order (ties included) stays the same. Owner
columns stay empty: the processes that ran the runs are not owners of the copies.

The copy refuses a target that already holds runs (nothing is duplicated or mixed) and a
source with unfinished runs (their owner may still be writing). One transaction: when
anything fails, the target is left as it was.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from thoughtline.errors import ThoughtlineError
from thoughtline.records import TRACE_LAYERS, TraceLayer
from thoughtline.store import _rows as rows
from thoughtline.store._postgres_connection import Connection
from thoughtline.store._postgres_schema import (
    INSERT_RUN_EVENT,
    INSERT_TASK,
    INSERT_TRACE,
    UPSERT_TOOL_CALL,
    run_params,
    task_params,
    tool_call_params,
)
from thoughtline.store._sql_dialect import POSTGRES
from thoughtline.store._sql_store import SET_META
from thoughtline.store._step_costs import INSERT_STEP_COST as _INSERT_STEP_COST
from thoughtline.store.base import Store

INSERT_STEP_COST = POSTGRES.sql(_INSERT_STEP_COST)
COPIED_META_KEYS = ("last_purge_at",)
"""Meta values that describe the data (when retention last ran) and travel with it."""


@dataclass(slots=True)
class CopyCounts:
    """What a copy moved."""

    runs: int = 0
    tasks: int = 0
    tool_calls: int = 0
    run_events: int = 0
    trace_events: dict[TraceLayer, int] = field(
        default_factory=lambda: dict.fromkeys(TRACE_LAYERS, 0)
    )
    meta: list[str] = field(default_factory=list)

    @property
    def trace_total(self) -> int:
        return sum(self.trace_events.values())


class CopyRefused(ThoughtlineError):
    """The copy would duplicate, mix or lose runs; nothing was written."""

    def __init__(self, message: str) -> None:
        super().__init__("STORE_COPY_REFUSED", message)


def copy_store(source: Store, conn: Connection, *, target: str) -> CopyCounts:
    """Copy every run of ``source`` into the (empty) database of ``conn``, within the
    transaction ``conn`` is in. ``target`` names it in messages."""
    found = conn.execute("SELECT COUNT(*) AS n FROM runs").fetchone()
    if found is not None and found["n"]:
        raise CopyRefused(
            f"The PostgreSQL store at {target} already holds {found['n']} run(s); "
            "thoughtline store migrate copies into an empty store only, so nothing is "
            "duplicated or mixed: point --to at a new database."
        )
    unfinished = source.unfinished_runs()
    if unfinished:
        names = ", ".join(run.run_id for run in unfinished[:3])
        raise CopyRefused(
            f"{len(unfinished)} run(s) of the store being copied are still running "
            f"({names}); wait until they finish (or their process is gone), then copy."
        )
    counts = CopyCounts()
    # list_runs is newest first; oldest first keeps the order of runs created together.
    for run in reversed(source.list_runs(limit=sys.maxsize)):
        conn.execute(
            f"INSERT INTO runs ({', '.join(rows.RUN_COLUMNS)}) "
            f"VALUES ({', '.join(['%s'] * len(rows.RUN_COLUMNS))})",
            run_params(run),
        )
        trace = source.trace(run.id)
        events = source.run_events(run.id)
        with conn.cursor() as cursor:
            cursor.executemany(INSERT_TASK, [task_params(task) for task in run.tasks])
            calls = [
                tool_call_params(task, position)
                for task in run.tasks
                for position in range(len(task.tool_calls or ()))
            ]
            cursor.executemany(UPSERT_TOOL_CALL, calls)
            cursor.executemany(
                INSERT_STEP_COST,
                [
                    (task.id, step, task.run_id, rows.dump(cost.to_dict()))
                    for task in run.tasks
                    for step, cost in enumerate(task.step_costs if task.priced else (), 1)
                ],
            )
            cursor.executemany(INSERT_TRACE, [rows.trace_params(event) for event in trace])
            cursor.executemany(INSERT_RUN_EVENT, [rows.run_event_params(event) for event in events])
            cursor.executemany(
                "INSERT INTO task_threads (task_id, run_id, at_epoch, system_digest, "
                "tools_digest, answer_json, carriers_json, carriers_cleared) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        task_id,
                        run.id,
                        thread.at_epoch,
                        thread.system_digest,
                        thread.tools_digest,
                        thread.answer_json,
                        thread.carriers_json,
                        int(thread.carriers_cleared),
                    )
                    for task_id, thread in source.task_threads([run.id]).items()
                ],
            )
        counts.runs += 1
        counts.tasks += len(run.tasks)
        counts.tool_calls += len(calls)
        counts.run_events += len(events)
        for event in trace:
            counts.trace_events[event.layer] += 1
    for key in COPIED_META_KEYS:
        value = source.get_meta(key)
        if value is not None:
            conn.execute(POSTGRES.sql(SET_META), (key, value))
            counts.meta.append(key)
    return counts

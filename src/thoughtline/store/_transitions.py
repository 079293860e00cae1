"""A run's transitions as writes, the same in both stores: each transition's rows
built when it happens (:meth:`TransitionWrites.prepare`), many of them merged into one
write (:func:`merged`), written in one transaction by the store."""

from __future__ import annotations

from collections.abc import Sequence

from thoughtline.records import Run, RunEventRecord, Task, TraceEvent
from thoughtline.store._rows import (
    dump,
    run_event_params,
    run_update,
    thread_params,
    trace_params,
)
from thoughtline.store._step_costs import StepCostRows
from thoughtline.store._storable import storable
from thoughtline.store.base import PreparedWrite, RunUpdate


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

    @staticmethod
    def tool_call_row(task: Task, position: int) -> tuple[object, ...]:
        """The row parameters of ``task``'s tool call at ``position``."""
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
        tool_calls: Sequence[tuple[Task, int]] = (),
    ) -> None:
        if events or run or tasks or trace or tool_calls:
            self.write_prepared(
                [
                    self.prepare(
                        events=events, run=run, tasks=tasks, trace=trace, tool_calls=tool_calls
                    )
                ]
            )

    def prepare(
        self,
        *,
        create: Run | None = None,
        events: Sequence[RunEventRecord] = (),
        run: Run | None = None,
        tasks: Sequence[Task] = (),
        trace: Sequence[TraceEvent] = (),
        tool_calls: Sequence[tuple[Task, int]] = (),
    ) -> PreparedWrite:
        """The rows, built now from the objects as they are now."""
        run_ids = {event.run_id for event in events} | {task.run_id for task in tasks}
        run_ids |= {event.run_id for event in trace}
        run_ids |= {task.run_id for task, _position in tool_calls}
        if run is not None:
            run_ids.add(run.id)
        if create is not None:
            run_ids.add(create.id)
            # The calls of tasks created with some already (a run written whole).
            tool_calls = [
                *(
                    (task, position)
                    for task in create.tasks
                    for position in range(len(task.tool_calls or ()))
                ),
                *tool_calls,
            ]
        costs = self.step_cost_rows
        priced = [
            row
            for task in (*(() if create is None else create.tasks), *tasks)
            for row in costs.rows(task, dump)
        ]
        return PreparedWrite(
            created=[]
            if create is None
            else [(self.new_run_row(create), [self.task_row(task) for task in create.tasks])],
            events=[run_event_params(event) for event in events],
            runs=[] if run is None else [run_update(run)],
            tasks=[self.task_row(task) for task in tasks],
            threads=[thread_params(task) for task in tasks if task.thread is not None],
            trace=[trace_params(event) for event in trace],
            tool_calls=[self.tool_call_row(task, position) for task, position in tool_calls],
            step_costs=priced,
            run_ids=frozenset(run_ids),
        )

    @property
    def step_cost_rows(self) -> StepCostRows:
        """Which of a task's costs each write carries (one per store, made when first
        asked for)."""
        found: StepCostRows | None = self.__dict__.get("_step_cost_rows")
        if found is None:
            found = self.__dict__["_step_cost_rows"] = StepCostRows()
        return found


def merged(writes: Sequence[PreparedWrite]) -> PreparedWrite:
    """Many prepared writes as one, in order: later rows of the same run or task win
    (each holds the whole row), appended rows are kept in order."""
    if len(writes) == 1:
        return writes[0]
    created: list[tuple[tuple[object, ...], list[dict[str, object]]]] = []
    events: list[tuple[object, ...]] = []
    trace: list[tuple[object, ...]] = []
    runs: dict[str, RunUpdate] = {}
    tasks: dict[object, dict[str, object]] = {}
    calls: dict[tuple[object, object], tuple[object, ...]] = {}
    task_threads: list[tuple[object, ...]] = []
    step_costs: list[tuple[object, ...]] = []
    run_ids: set[str] = set()
    replayed = False
    for write in writes:
        replayed = replayed or write.replayed
        created += write.created
        task_threads += write.threads
        step_costs += write.step_costs
        for call in write.tool_calls:
            calls[call[0], call[1]] = call
        events += write.events
        trace += write.trace
        for run in write.runs:
            runs[run[-1]] = run
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
        tool_calls=list(calls.values()),
        threads=task_threads,
        step_costs=step_costs,
        replayed=replayed,
    )

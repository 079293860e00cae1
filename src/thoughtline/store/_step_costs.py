"""What each model call of a task cost, as rows of ``task_step_costs`` (migration m015):
one small row appended per call, where the task's row once carried every call's cost
and was written whole at every step (60 KB a write at step 300: a loop's bytes grew with
the square of its steps). The task's row keeps the totals (``cost_amount``, and in
``cost_json`` how many calls were priced); the snapshot's ``step_costs`` are read back
from these rows, the same as before.

Which rows a write carries is decided by :class:`StepCostRows`, per store: the costs a
task appended since its last write, and every cost again when the task ends (inserted
only where missing, so a write lost earlier is made good and nothing is written twice).
What it remembers only saves work: a task it does not know gets all its rows."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from thoughtline.records import Cost, Task
from thoughtline.records.snapshot import CostSnapshot

STEP_COST_COLUMNS = ("task_id", "step", "run_id", "cost_json")
INSERT_STEP_COST = (
    f"INSERT INTO task_step_costs ({', '.join(STEP_COST_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(STEP_COST_COLUMNS))}) "
    "ON CONFLICT (task_id, step) DO NOTHING"
)
"""A call's cost, priced once as the call ends: a row already stored is kept."""
STEP_COSTS_OF_RUNS = (
    f"SELECT {', '.join(STEP_COST_COLUMNS)} FROM task_step_costs WHERE {{runs}} "
    "ORDER BY run_id, task_id, step"
)
"""The step costs of the runs ``{runs}`` selects, in the order of their index."""

TERMINAL = frozenset(("done", "prepared", "failed", "cancelled", "interrupted"))
"""Task statuses after which the runtime writes a task no more (its rows all go again,
inserted where missing, and the task is forgotten)."""
REMEMBERED = 4096
"""Tasks whose written costs a store remembers at once (one entry per running task; a
task forgotten early only has its rows sent again)."""


NO_STEPS = '{"steps":0}'
"""The ``cost_json`` of a task that made no priced call (it has no rows to read)."""


def cost_totals(task: Task) -> str | None:
    """The task row's ``cost_json``: how many calls were priced, as a JSON object (the
    amount is the row's ``cost_amount``); ``None`` for a task an older thoughtline stored
    unpriced, which reads as unknown."""
    return f'{{"steps":{len(task.step_costs)}}}' if task.priced else None


class StepCostRows:
    """The ``task_step_costs`` rows each write of a task carries: those of the calls
    priced since the task's last write."""

    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written: OrderedDict[str, tuple[list[Cost], int]] = OrderedDict()
        """Per task id: its ``step_costs`` list and how many of its costs went in a write."""

    def rows(self, task: Task, dump: Any) -> list[tuple[object, ...]]:
        """The rows of ``task``'s costs not yet written (``dump``: JSON text of a cost)."""
        costs = task.step_costs
        if not task.priced:
            return []
        written = self._written
        done = 0
        known = written.get(task.id)
        if known is not None and known[0] is costs and known[1] <= len(costs):
            done = known[1]
        if task.status in TERMINAL:
            done = 0  # once more, where missing
            written.pop(task.id, None)
        elif done < len(costs) or known is None:
            written[task.id] = (costs, len(costs))
            written.move_to_end(task.id)
            if len(written) > REMEMBERED:
                written.popitem(last=False)
        if done == len(costs):
            return []
        dicts: Sequence[CostSnapshot] = task.step_cost_dicts()
        return [
            (task.id, step, task.run_id, dump(dicts[step - 1]))
            for step in range(done + 1, len(costs) + 1)
        ]


def step_costs_by_task(cost_rows: Sequence[Sequence[Any]], load: Any) -> dict[str, list[Cost]]:
    """Each task's costs in step order, from rows in :data:`STEP_COST_COLUMNS` order."""
    by_task: dict[str, list[tuple[int, Cost]]] = {}
    for task_id, step, _run_id, cost_json in cost_rows:
        by_task.setdefault(task_id, []).append((int(step), Cost.from_dict(load(cost_json))))
    for costs in by_task.values():
        costs.sort(key=lambda item: item[0])  # the database sends them in order; should one not
    return {task_id: [cost for _, cost in costs] for task_id, costs in by_task.items()}

"""A task's budget around its model calls: the model's prices (a budget is never run
unpriced), each call fitted to what the task and its run have left, held from the run's
budget while it runs and settled with its real cost
(:mod:`~thoughtline.runtime.policy.budget`), and the one notice of the output caps it set."""

from __future__ import annotations

import math

from thoughtline.config.pricing import Prices, Unpriced, format_amount
from thoughtline.model.requests import ModelRequest
from thoughtline.records import Cost, Task, TaskError
from thoughtline.runtime.engine.task_sink import TaskSink
from thoughtline.runtime.policy import budget


class TaskBudget:
    """What one task may still spend, asked before and told after each of its calls."""

    def __init__(self, sink: TaskSink, task: Task) -> None:
        self.sink = sink
        self.task = task
        self.prices: Prices | None = None
        """The model's prices, when a budget applies to the task (else ``None``)."""
        self.spent = 0.0
        self.held = 0.0
        """The worst case the running call reserved of the run's budget."""
        self.caps: list[tuple[int, int]] = []
        """(step, tokens) of each call whose output the budget capped."""

    def priced(self) -> TaskError | None:
        """Under a budget, the model's prices (kept for each call's worst case); the
        refusal when they are unknown: a budget is never run unpriced."""
        task = self.task
        if task.max_cost is None and self.sink.budget.limit is None:
            return None
        found = self.sink.pricer.prices(task.provider, task.model)
        if isinstance(found, Unpriced):
            return budget.budget_error(
                f"A budget is set but the price of {task.model} is unknown ({found.reason}); "
                f'set [prices."{task.provider}/{task.model}"] or remove max_cost. No call '
                "was made."
            )
        self.prices = found
        return None

    def reserve(self, request: ModelRequest, *, calls: int) -> ModelRequest | TaskError:
        """Before a call: fitted to what the task and the run have left (its output
        capped when its worst case does not fit, :func:`~thoughtline.runtime.policy.budget.fit`),
        its worst case held from the run's budget until it ends; the request to send, or
        the refusal when not even the fewest output tokens fit."""
        if self.prices is None:
            return request
        task = self.task
        client = self.sink.client_for(task.provider)
        capability = client.capabilities.lookup(client.endpoint.capability_key, task.model)
        run_budget = self.sink.budget
        task_left = math.inf if task.max_cost is None else max(task.max_cost - self.spent, 0.0)
        left = min(task_left, run_budget.left)
        bounds = client.output_bounds(request)
        fitted = budget.fit(self.prices, request, bounds, capability, left)
        if isinstance(fitted, budget.Unfit):
            advice = budget.advice(fitted, request.max_output_tokens, called=calls > 0)
            if task.max_cost is not None and task_left <= run_budget.left:
                message = budget.task_refusal(self.spent, task.max_cost, calls, fitted)
            else:
                message = run_budget.refusal(fitted, waiting=run_budget.reserved)
            return budget.budget_error(f"Budget exceeded: {message}; {advice}.")
        run_budget.hold(fitted.worst)
        self.held = fitted.worst
        if fitted.cap is not None:
            self.capped(fitted.cap, step=calls + 1, run_wide=task_left > run_budget.left)
        return fitted.request

    def capped(self, cap: int, *, step: int, run_wide: bool) -> None:
        """The budget capped this step's output: traced, and the task's one notice of it
        (:func:`~thoughtline.runtime.policy.budget.cap_notice`) says so."""
        task = self.task
        limit = self.sink.budget.limit if run_wide else task.max_cost
        assert limit is not None
        whose = "the run's" if run_wide else "the task's"
        self.caps.append((step, cap))
        task.budget_notice = budget.cap_notice(
            self.caps, f"{whose} {format_amount(limit)} budget", steps=bool(task.tools)
        )
        self.sink.add_trace(
            "budget.output_capped",
            task_id=task.id,
            metadata={
                "step": step,
                "output_cap": cap,
                "max_output_tokens": task.generation.max_output_tokens,
                "budget": whose.removeprefix("the ").removesuffix("'s"),
                "max_cost": limit,
                "notice": task.budget_notice,
            },
        )

    def settle(self, held: float, cost: Cost) -> None:
        """A call ended: its real cost counted (its worst case, were it unknown)."""
        if self.prices is None:
            return
        self.spent += held if cost.amount is None else cost.amount
        self.sink.budget.settle(held, cost)

    def overspent(self, *, calls: int) -> TaskError | None:
        """After a step: the refusal when the real costs went past a budget."""
        task = self.task
        if task.max_cost is not None and self.spent > task.max_cost:
            message = budget.task_overspent(self.spent, task.max_cost, calls)
            return budget.budget_error(f"Budget exceeded: {message}.")
        if self.prices is not None and self.sink.budget.exceeded:
            return budget.budget_error(f"Budget exceeded: {self.sink.budget.overspent()}.")
        return None

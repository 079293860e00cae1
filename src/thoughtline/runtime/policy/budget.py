"""Budgets: ``max_cost`` in USD per run and per task, checked around each model call.

Before a call, its worst case is priced: its input estimated from the request's bytes
(system prompt, history and tools, one token per :data:`BYTES_PER_TOKEN` bytes, more
tokens than any tokenizer the providers use makes of ordinary text: an upper estimate)
and its output taken as the request's ``max_output_tokens``, else the model's context
window from the capability data (no model answers with more). The call is made only
when what was spent so far plus that worst case fits the task's budget and the run's.

Tasks of one run share the run's budget. A call reserves its worst case before it is
made and settles it with its real cost when it ends, so two tasks running at the same
time cannot both pass the check and together spend more than the budget. Once the run
has spent its budget, every other task fails before its next call.

A budget needs prices: a model without one is refused before its first call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import orjson

from thoughtline.config import MAX_COST_CEILING
from thoughtline.config.pricing import Prices, format_amount
from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.requests import ModelRequest
from thoughtline.records import Cost, TaskError, TaskUsage

BYTES_PER_TOKEN: Final = 2
"""Bytes of UTF-8 counted as one input token for a call's worst case (tokenizers make
about one token of 3 to 4 bytes of English or code: 2 overestimates on purpose)."""


def check_max_cost(value: object, where: str) -> float:
    """``value`` as a budget in USD: a finite number from 0 up; else ``REQUEST_INVALID``
    naming ``where`` (the file and key, or the flag)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_COST_CEILING
    ):
        raise ThoughtlineError(
            "REQUEST_INVALID",
            f"max_cost must be a number of US dollars from 0 to {MAX_COST_CEILING:,.0f}, "
            f"got {value!r} ({where}).",
        )
    return float(value)


def estimated_input_tokens(request: ModelRequest) -> int:
    """An upper estimate of the tokens ``request`` sends (see :data:`BYTES_PER_TOKEN`)."""
    size = len((request.system or "").encode("utf-8", "surrogatepass"))
    size += len(threads.encode_tools(request.tools).encode("utf-8", "surrogatepass"))
    for message in request.messages:
        size += len(orjson.dumps(message.parts, default=str))
    return math.ceil(size / BYTES_PER_TOKEN)


def worst_case(prices: Prices, request: ModelRequest, context_window: int | None) -> Cost | None:
    """What ``request`` could cost at most; ``None`` when its answer has no known bound
    (no ``max_output_tokens``, no context window) and its output is not free."""
    output = request.max_output_tokens or context_window
    if output is None:
        free = prices.cost(TaskUsage(input_tokens=0, output_tokens=1_000_000))
        if free.amount != 0:
            return None
        output = 0
    usage = TaskUsage(input_tokens=estimated_input_tokens(request), output_tokens=output)
    return prices.cost(usage)


def budget_error(message: str) -> TaskError:
    return TaskError(code="BUDGET_EXCEEDED", message=message, retryable=False)


@dataclass(slots=True)
class RunBudget:
    """What a run may spend, what its tasks spent and what their running calls may
    still spend (reserved). ``limit`` ``None``: the run has no budget of its own."""

    limit: float | None = None
    spent: float = 0.0
    reserved: float = 0.0
    calls: int = 0

    def reserve(self, worst: float) -> bool:
        """Hold ``worst`` for a call about to be made, if it fits (no await between the
        check and the hold: tasks of the run take turns on one event loop)."""
        if self.limit is not None and self.spent + self.reserved + worst > self.limit:
            return False
        self.reserved += worst
        return True

    def release(self, worst: float) -> None:
        """A reserved call was never made (or raised before it ended)."""
        self.reserved = max(self.reserved - worst, 0.0)

    def settle(self, worst: float, cost: Cost) -> None:
        """A reserved call ended and cost ``cost`` (an unknown cost counts its worst case)."""
        self.reserved = max(self.reserved - worst, 0.0)
        self.spent += worst if cost.amount is None else cost.amount
        self.calls += 1

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.spent > self.limit

    def refusal(self, worst: float, *, waiting: float) -> str:
        """Why a call whose worst case is ``worst`` may not be made, run-wide."""
        assert self.limit is not None
        held = f" and {format_amount(waiting)} held for calls still running" if waiting > 0 else ""
        return (
            f"spent {format_amount(self.spent)} of the run's {format_amount(self.limit)} "
            f"budget after {_calls(self.calls)}{held}; the next call could cost up to "
            f"{format_amount(worst)}"
        )

    def overspent(self) -> str:
        assert self.limit is not None
        return (
            f"spent {format_amount(self.spent)} of the run's {format_amount(self.limit)} "
            f"budget after {_calls(self.calls)}; what arrived is kept"
        )


def task_refusal(spent: float, limit: float, calls: int, worst: float) -> str:
    """Why a task's next call (worst case ``worst``) may not be made under its own budget."""
    return (
        f"spent {format_amount(spent)} of the task's {format_amount(limit)} budget after "
        f"{_calls(calls)}; the next call could cost up to {format_amount(worst)}"
    )


def advice(request: ModelRequest, context_window: int | None, *, called: bool) -> str:
    """What a refused call's task kept, and the two settings that make a call fit: its
    budget, and the output allowance its worst case counts."""
    kept = "what arrived is kept" if called else "no call was made"
    if request.max_output_tokens is not None:
        bound = (
            f"lower max_output_tokens (the worst case counts all "
            f"{request.max_output_tokens:,} output tokens it allows)"
        )
    else:
        window = f"{context_window:,}-token " if context_window else ""
        bound = (
            "set max_output_tokens (without it the worst case counts the model's whole "
            f"{window}context window as output)"
        )
    return f"{kept}; raise max_cost, or {bound}"


def task_overspent(spent: float, limit: float, calls: int) -> str:
    return (
        f"spent {format_amount(spent)} of the task's {format_amount(limit)} budget after "
        f"{_calls(calls)}; what arrived is kept"
    )


def _calls(count: int) -> str:
    return f"{count} model call" if count == 1 else f"{count} model calls"

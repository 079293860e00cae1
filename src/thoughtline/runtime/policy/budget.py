"""Budgets: ``max_cost`` in USD per run and per task, checked around each model call.

Before a call, its worst case is priced: its input estimated from the request's bytes
(system prompt, history and tools, one token per :data:`BYTES_PER_TOKEN` bytes, more
tokens than any tokenizer the providers use makes of ordinary text: an upper estimate)
and its output taken as what the request lets the model generate as its wire API sends
it (:meth:`~thoughtline.providers.wire.Wire.output_bounds`: ``max_output_tokens``, plus a
thinking budget where the wire adds one), at most the model's max output from the
capability data (no provider lets a call ask for more); the max output alone where the
request sets no limit, and the context window only where the max output is unknown (no
model answers with more), at the higher of the output and reasoning prices.

A budget fits the call to what is left (:func:`fit`): when that worst case does not fit
what the task and the run have left, the call's output is capped at what the rest pays
for after its input (``ModelRequest.output_cap``, which each wire keeps its output field
within; a cap is below the model's max output, since the worst case at that max did
not fit), and the call is refused only when not even :data:`MIN_OUTPUT_TOKENS` fit (or
the least the wire can keep a valid request at). The task says so once
(:func:`cap_notice`).

Tasks of one run share the run's budget. A call reserves its worst case before it is
made and settles it with its real cost when it ends, so two tasks running at the same
time cannot both pass the check and together spend more than the budget. Once the run
has spent its budget, every other task fails before its next call.

A budget needs prices: a model without one is refused before its first call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

import orjson

from thoughtline.config import MAX_COST_CEILING
from thoughtline.config.pricing import Prices, format_amount
from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.base import OutputBounds
from thoughtline.providers.capabilities import ModelCapability
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


MIN_OUTPUT_TOKENS: Final = 256
"""The fewest output tokens a budget caps a call at: a call whose input leaves the budget
too little for that many is refused (``BUDGET_EXCEEDED``) instead of being sent to be
cut short at once."""


@dataclass(frozen=True, slots=True)
class Fitted:
    """A call that fits its budget: the request to send (with an ``output_cap`` when the
    budget set one), its worst case in USD, and the cap (``None``: the budget needed
    none, the call is sent as asked)."""

    request: ModelRequest
    worst: float
    cap: int | None = None


@dataclass(frozen=True, slots=True)
class Unfit:
    """A call the budget cannot pay for: what it would cost at least (its input and the
    fewest output tokens it may be capped at), and those tokens."""

    least: float
    tokens: int
    why: str | None = None
    """Why ``tokens`` is more than :data:`MIN_OUTPUT_TOKENS` (the wire's rule)."""


def output_ceiling(bounds: OutputBounds, capability: ModelCapability) -> int | None:
    """The most output tokens a call may make: the lower of what its request lets the
    model generate (``bounds.most``) and the model's max output; whichever of them is
    known; else the context window (``None``: nothing is known)."""
    most, limit = bounds.most, capability.max_output_tokens
    if most is not None and limit is not None:
        return min(most, limit)
    if most is not None:
        return most
    return limit if limit is not None else capability.context_window


def fit(
    prices: Prices,
    request: ModelRequest,
    bounds: OutputBounds,
    capability: ModelCapability,
    left: float,
) -> Fitted | Unfit:
    """``request`` fitted to ``left`` USD: sent as asked when its worst case (output at
    :func:`output_ceiling`) fits; else its output capped at the tokens ``left`` pays for
    after the input, which is then fewer than that ceiling; :class:`Unfit` when that is
    fewer than :data:`MIN_OUTPUT_TOKENS` (or ``bounds.least``)."""
    input_tokens = estimated_input_tokens(request)
    base = _amount(prices, TaskUsage(input_tokens=input_tokens, output_tokens=0))
    rate = output_rate(prices, input_tokens)
    ceiling = output_ceiling(bounds, capability)
    if rate == 0 or ceiling is not None:
        worst = base + (ceiling or 0) * rate
        if worst <= left:
            return Fitted(request, worst)
    least = max(MIN_OUTPUT_TOKENS, bounds.least)
    if ceiling is not None and ceiling < least:  # asked for fewer, and even that is too much
        least = ceiling
    # Rounded first: $1.00 at $0.00001 a token is 100,000 tokens, not 99,999.99999.
    affordable = math.floor(round((left - base) / rate, 6)) if left > base and rate > 0 else 0
    if affordable < least or (ceiling is not None and ceiling <= least):
        why = bounds.why if least == bounds.least and bounds.least > MIN_OUTPUT_TOKENS else None
        return Unfit(base + least * rate, least, why)
    return Fitted(replace(request, output_cap=affordable), base + affordable * rate, affordable)


def output_rate(prices: Prices, input_tokens: int) -> float:
    """USD per output token at most for a call with ``input_tokens`` of input: the
    higher of the output and reasoning prices (tiered prices at that input)."""
    usage = TaskUsage(input_tokens=input_tokens, output_tokens=_PER)
    plain = _amount(prices, usage)
    reasoned = _amount(prices, replace(usage, reasoning_tokens=_PER))
    base = _amount(prices, TaskUsage(input_tokens=input_tokens, output_tokens=0))
    return (max(plain, reasoned) - base) / _PER


def cap_notice(caps: Sequence[tuple[int, int]], budget: str, *, steps: bool) -> str:
    """The one sentence a task says of the output caps its budget set: ``caps`` holds
    (step, tokens) in step order; ``budget`` is "the run's $0.010 budget" or the
    task's; ``steps``: the task may call tools (its calls are steps)."""
    step, tokens = caps[0]
    if len(caps) == 1:
        where = f" at step {step}" if steps else ""
        return f"Output capped at {tokens:,} tokens{where} to fit {budget}."
    last_step, last = caps[-1]
    return (
        f"Output capped to fit {budget} on {len(caps)} steps: {tokens:,} tokens at step "
        f"{step}, {last:,} at step {last_step}."
    )


def _amount(prices: Prices, usage: TaskUsage) -> float:
    return prices.cost(usage).amount or 0.0


_PER: Final = 1_000_000


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

    def hold(self, worst: float) -> None:
        """Hold ``worst`` for a call about to be made, fitted to :attr:`left` (no await
        between the fit and the hold: tasks of the run take turns on one event loop)."""
        self.reserved += worst

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

    @property
    def left(self) -> float:
        """What the run may still reserve (infinite without a budget of its own)."""
        if self.limit is None:
            return math.inf
        return max(self.limit - self.spent - self.reserved, 0.0)

    def refusal(self, unfit: Unfit, *, waiting: float) -> str:
        """Why a call that needs at least ``unfit.least`` may not be made, run-wide."""
        assert self.limit is not None
        held = f" and {format_amount(waiting)} held for calls still running" if waiting > 0 else ""
        return (
            f"spent {format_amount(self.spent)} of the run's {format_amount(self.limit)} "
            f"budget after {_calls(self.calls)}{held}; {_needs(unfit)}"
        )

    def overspent(self) -> str:
        assert self.limit is not None
        return (
            f"spent {format_amount(self.spent)} of the run's {format_amount(self.limit)} "
            f"budget after {_calls(self.calls)}; what arrived is kept"
        )


def task_refusal(spent: float, limit: float, calls: int, unfit: Unfit) -> str:
    """Why a task's next call may not be made under its own budget."""
    return (
        f"spent {format_amount(spent)} of the task's {format_amount(limit)} budget after "
        f"{_calls(calls)}; {_needs(unfit)}"
    )


def advice(unfit: Unfit, asked: int | None, *, called: bool) -> str:
    """What a refused call's task kept, and the settings that would make a call fit: its
    budget, and the output allowance (``asked``: the request's ``max_output_tokens``)."""
    kept = "what arrived is kept" if called else "no call was made"
    if unfit.why is not None:
        return f"{kept}; raise max_cost ({unfit.why}, so a call needs room for {unfit.tokens:,})"
    if asked is not None and asked <= unfit.tokens:
        return f"{kept}; raise max_cost, or lower max_output_tokens"
    return (
        f"{kept}; raise max_cost, or set max_output_tokens below {MIN_OUTPUT_TOKENS:,} (a "
        f"budget caps a call's output at no fewer than {MIN_OUTPUT_TOKENS:,} tokens)"
    )


def _needs(unfit: Unfit) -> str:
    return (
        f"the next call needs at least {format_amount(unfit.least)} (its input and "
        f"{unfit.tokens:,} output tokens)"
    )


def task_overspent(spent: float, limit: float, calls: int) -> str:
    return (
        f"spent {format_amount(spent)} of the task's {format_amount(limit)} budget after "
        f"{_calls(calls)}; what arrived is kept"
    )


def _calls(count: int) -> str:
    return f"{count} model call" if count == 1 else f"{count} model calls"

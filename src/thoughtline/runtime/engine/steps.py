"""A task's model calls, one :class:`Step` each, and what the task reports from them.

A step is one model call after the disclosure gate: only the gate's cleaned copy of the
response, and the reasoning it routed, are kept. :class:`Steps` derives the task's
totals (usage summed over the calls, reasoning joined in step order, timings from the
start of the first call), so a task of one step reports exactly what its one call did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from thoughtline.config.pricing import reasoning_cost_clause
from thoughtline.model.accumulator import ModelResponse
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.exchange import Exchange
from thoughtline.records import Cost, ReasoningPartView, TaskUsage, TracedReasoningPart
from thoughtline.runtime.engine.telemetry_hooks import RequestedToolCall, StepReport, first_chunk_ms
from thoughtline.runtime.policy.disclosure import Captured


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One model call of a task, as the gate let it through.

    ``number`` counts from 1 and tags everything the call produced, its reasoning parts
    included. ``started`` is the ``time.perf_counter()`` at which the call began (after
    waiting for the endpoint's slot); the ``*_ms`` timings are measured from it.
    ``started_ns`` / ``ended_ns`` are the same start and the call's end on the wall clock
    (``time.time_ns()``), for telemetry. ``exchange`` is ``None`` when the call was
    cancelled before it built one."""

    number: int
    captured: Captured
    capability: ModelCapability
    exchange: Exchange | None
    cancelled: bool
    overlapped: bool
    started: float
    first_reasoning_ms: float | None
    first_answer_ms: float | None
    total_ms: float | None
    started_ns: int
    ended_ns: int

    @property
    def response(self) -> ModelResponse:
        """The gate's cleaned copy of the call's response: the only one read."""
        return self.captured.response

    @property
    def billed(self) -> bool:
        """Whether the provider may have charged for the call: not when it never reached
        the provider, or the provider refused it with an HTTP error status, and nothing
        was generated nor counted (such a call costs $0, not "unknown")."""
        response = self.response
        error = response.error
        refused = error is not None and (
            error.code == "PROVIDER_UNREACHABLE" or (error.status or 0) >= 400
        )
        usage = response.usage
        generated = bool(response.text or response.reasoning_parts or response.tool_calls)
        counted = usage.input_tokens is not None or usage.output_tokens is not None
        return not refused or generated or counted

    def usage(self) -> TaskUsage:
        """The call's tokens as a task reports them (a count no call can have: ``None``)."""
        usage = self.response.usage
        return TaskUsage(
            input_tokens=count(usage.input_tokens),
            output_tokens=count(usage.output_tokens),
            reasoning_tokens=count(usage.reasoning_tokens),
            cached_input_tokens=count(usage.cached_input_tokens),
            cache_write_tokens=count(usage.cache_write_tokens),
        )

    def report(self) -> StepReport:
        """What telemetry is told of this call: only the gate's copy (its reasoning only
        as routed to the trace), and tool calls without their provider carriers."""
        response = self.response
        usage = response.usage
        exchange = self.exchange
        return StepReport(
            number=self.number,
            started_ns=self.started_ns,
            ended_ns=max(self.ended_ns, self.started_ns),
            recorded_reasoning=self.captured.for_trace,
            output=self.captured.output,
            tool_calls=tuple(
                RequestedToolCall(id=call.tool_call_id, name=call.name, arguments=call.arguments)
                for call in response.tool_calls
            ),
            response_model=response.model,
            response_id=response.response_id,
            finish_reason=None if response.finish is None else response.finish.reason,
            input_tokens=count(usage.input_tokens),
            output_tokens=count(usage.output_tokens),
            reasoning_tokens=count(usage.reasoning_tokens),
            cached_input_tokens=count(usage.cached_input_tokens),
            streamed=exchange is not None and exchange.streamed,
            time_to_first_chunk_ms=first_chunk_ms(exchange),
            error_code=None if response.error is None else response.error.code,
            cancelled=self.cancelled,
        )


_Measure: TypeAlias = Callable[[Step], float | None]


class Steps:
    """The steps of one task so far, in order (never empty once the task has called)."""

    __slots__ = ("_steps",)

    def __init__(self) -> None:
        self._steps: list[Step] = []

    def append(self, step: Step) -> None:
        self._steps.append(step)

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self._steps)

    @property
    def last(self) -> Step:
        """The step that ended the task: its answer, finish and error are the task's."""
        return self._steps[-1]

    def usage(self) -> TaskUsage:
        """Tokens summed over the steps; a count no step reported stays ``None``."""
        usages = [step.response.usage for step in self._steps]
        return TaskUsage(
            input_tokens=_total(usage.input_tokens for usage in usages),
            output_tokens=_total(usage.output_tokens for usage in usages),
            reasoning_tokens=_total(usage.reasoning_tokens for usage in usages),
            cached_input_tokens=_total(usage.cached_input_tokens for usage in usages),
            cache_write_tokens=_total(usage.cache_write_tokens for usage in usages),
        )

    def for_task(self) -> list[ReasoningPartView] | None:
        """The reasoning parts the gate attached for display, in step order, or ``None``
        when the mode displays none. Over several steps each part says its step."""
        routed = [step.captured.for_task for step in self._steps]
        if all(parts is None for parts in routed):
            return None
        if len(self._steps) == 1:
            return [part for parts in routed if parts is not None for part in parts]
        return [
            replace(part, step=step.number)
            for step, parts in zip(self._steps, routed, strict=True)
            if parts is not None
            for part in parts
        ]

    def reasoning_account(
        self, displays: bool, costs: Sequence[Cost] = (), *, stopped: int | None = None
    ) -> str:
        """A sentence on reasoning over several steps, for the task's notice: for how
        many steps it was shown, and which returned none (with the tokens the provider
        counted, when it did, and what they cost where ``costs``, one per step, know).
        ``stopped`` is the step whose call was stopped: the notice already said what
        of its reasoning arrived, so it is not said to have returned none."""
        total = len(self._steps)
        if not displays:
            return f" The task made {total} model calls."
        empty = [step for step in self._steps if not step.captured.for_task]
        if not empty:
            return f" Reasoning shown for all {total} steps."
        shown = total - len(empty)
        empty = [step for step in empty if step.number != stopped]
        if not empty:
            return f" Reasoning shown for {shown} of {total} steps."
        missing = "; ".join(
            f"step {step.number} returned none"
            + (
                f" (the model reasoned for {tokens} tokens"
                f"{reasoning_cost_clause(costs[step.number - 1] if costs else None)})"
                if (tokens := step.response.usage.reasoning_tokens)
                else ""
            )
            for step in empty
        )
        return f" Reasoning shown for {shown} of {total} steps; {missing}."

    def task_text(self) -> str | None:
        """The joined text for ``task.reasoning``; ``None`` when there is none to show."""
        parts = self.for_task()
        if not parts:
            return None
        return "\n\n".join(part.text for part in parts if part.text)

    def reports(self) -> tuple[StepReport, ...]:
        """One report per call, in order, for telemetry."""
        return tuple(step.report() for step in self._steps)

    def for_trace(self) -> list[TracedReasoningPart] | None:
        """The reasoning parts the gate let into the trace, in step order, or ``None``
        when the mode records none."""
        routed = [step.captured.for_trace for step in self._steps]
        if all(parts is None for parts in routed):
            return None
        return [part for parts in routed if parts is not None for part in parts]

    def first_reasoning_ms(self) -> float | None:
        """When the first reasoning arrived, from the start of the first call."""
        return self._first(lambda step: step.first_reasoning_ms)

    def first_answer_ms(self) -> float | None:
        """When the first answer text arrived, from the start of the first call."""
        return self._first(lambda step: step.first_answer_ms)

    def total_ms(self) -> float | None:
        """From the start of the first call to the end of the last."""
        last = self.last
        return self._since_start(last, last.total_ms)

    def _first(self, measure: _Measure) -> float | None:
        for step in self._steps:
            value = measure(step)
            if value is not None:
                return self._since_start(step, value)
        return None

    def _since_start(self, step: Step, ms: float | None) -> float | None:
        if ms is None or step is self._steps[0]:
            return ms  # one step: its call's own timing, as measured
        return round((step.started - self._steps[0].started) * 1000.0 + ms, 3)


_MAX_COUNT = 2**53 - 1  # exact in every JSON reader, and storable by every store


def count(value: int | None) -> int | None:
    """A token count as the provider reported it, or ``None`` (not reported) for one no
    real call can have: negative, or too large to store and read back exactly."""
    return value if value is None or 0 <= value <= _MAX_COUNT else None


def _total(values: Iterable[int | None]) -> int | None:
    reported = [value for value in map(count, values) if value is not None]
    return count(sum(reported)) if reported else None

"""The optional telemetry hook the runtime calls as runs and model calls finish.

The runtime knows nothing about OpenTelemetry: it calls a :class:`RunTelemetry` (when one
is given) at three points — a run starts, a task's model calls end, a run ends.
``thoughtline.telemetry`` implements it for OTLP export; tests can pass their own. A task
of a tool loop reports each of its model calls as a :class:`StepReport`.

Reasoning reaches the hook only as the disclosure gate hands it to the trace
(``recorded_reasoning``: ``None`` unless the task's mode records reasoning). The hook
never sees the provider response itself, so it cannot route reasoning around the gate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from thoughtline.providers.exchange import Exchange
from thoughtline.records import Run, Task, TracedReasoningPart

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestedToolCall:
    """A tool call as the model asked for it, after the gate: the name the model used and
    its arguments with loaded key values removed. Provider carriers (a Gemini thought
    signature on the call) are not part of it."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StepReport:
    """One model call of a task, as the gate let it through.

    ``number`` counts from 1. ``started_ns`` / ``ended_ns`` are wall-clock nanoseconds
    since the epoch: from when the call began (after waiting for the endpoint's slot) to
    when its response ended. ``recorded_reasoning`` is the gate's trace copy of this
    call's reasoning (``None`` unless the mode records). ``output`` is the call's text,
    ``tool_calls`` what it asked to run, ``error_code`` the code it failed with."""

    number: int
    started_ns: int
    ended_ns: int
    recorded_reasoning: Sequence[TracedReasoningPart] | None
    output: str | None = None
    tool_calls: tuple[RequestedToolCall, ...] = ()
    response_model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    streamed: bool = False
    time_to_first_chunk_ms: float | None = None
    error_code: str | None = None
    cancelled: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CallReport:
    """What the runtime reports about a task's model calls besides the task itself: the
    last call's response (its answer ends the task), and ``steps``, one report per call
    in order. ``recorded_reasoning`` is the gate's trace copy over all of them (``None``
    unless the mode records)."""

    recorded_reasoning: Sequence[TracedReasoningPart] | None
    response_model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    cached_input_tokens: int | None = None
    streamed: bool = False
    time_to_first_chunk_ms: float | None = None
    steps: tuple[StepReport, ...] = ()


class RunTelemetry(Protocol):
    """Receives finished runs and model calls. Called synchronously on the event loop,
    so implementations must be quick (queue, do not export inline). An exception raised
    here is logged and ignored: telemetry never fails a run."""

    def run_started(self, run: Run) -> None:
        """The run began executing (its tasks are about to be scheduled)."""

    def task_finished(self, run: Run, task: Task, report: CallReport) -> None:
        """A task's model calls ended (done, failed, cancelled or interrupted).

        ``task`` is final: status, error, usage, ``reasoning_status`` and timings
        (``started_at``/``finished_at`` are the task's real start and end). Its
        ``reasoning`` is whatever the gate attached for display surfaces; telemetry uses
        ``recorded_reasoning`` only — the parts the gate let into the ``reasoning`` trace
        layer (``kind``, ``text``, ``complete``, ``provider_metadata``), or ``None`` when
        the mode does not record reasoning."""

    def run_finished(self, run: Run) -> None:
        """The run reached its final status (every task is final)."""


def notify(hook: RunTelemetry | None, call: Callable[[RunTelemetry], None]) -> None:
    """Call the hook if there is one; a failing hook is logged (type only, since its
    message could quote content) and the run goes on."""
    if hook is None:
        return
    try:
        call(hook)
    except Exception as exc:  # telemetry must never fail or stop a run
        logger.warning("telemetry hook failed (%s); the run continues", type(exc).__name__)


def first_chunk_ms(exchange: Exchange | None) -> float | None:
    """Time to the first chunk of a streamed, successful response (``None`` otherwise:
    an error body is not a response chunk)."""
    if exchange is None or not exchange.streamed:
        return None
    if exchange.status is not None and exchange.status >= 400:
        return None
    return exchange.timings.first_byte_ms

"""What a task keeps when the process running it dies: the policy, above any SQL.

A task's row gets its output and reasoning when the task ends. While it runs, what
arrives goes to the run event log instead (``answer.delta``, and ``reasoning.delta`` only
when the task's mode displays reasoning), flushed every fraction of a second. When the
process dies first (SIGKILL, out of memory, power loss), recovery rebuilds each
unfinished task from that log:

- ``output`` is the answer deltas that reached the log, in order: exactly what every
  surface had shown.
- ``reasoning`` comes back only where the task's mode displays reasoning and the log
  holds reasoning deltas for it. Hidden and telemetry_only tasks never have any (the
  disclosure gate filters before events are logged), and nothing here looks elsewhere
  for reasoning. When the reasoning retention already removed part of the run's log
  (the run's event numbers have gaps), none is rebuilt: a remainder would claim to be
  what arrived, and it would bring back text whose older part retention removed.
- ``reasoning_status``/``reasoning_notice`` say what was kept, in characters, and never
  claim reasoning that was not displayed.
- ``finished_at`` is when the last of its output arrived (recovery may notice much
  later), so the reasoning retention ages a rebuilt copy like the log it came from.

Pure functions over records, so every store applies the same policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from thoughtline.events import REASONING_KINDS
from thoughtline.records import (
    ReasoningPartView,
    ReasoningStatus,
    RunEventRecord,
    Task,
    TaskError,
)
from thoughtline.runtime.disclosure import DisclosureGate

UNFINISHED_TASK_STATUSES: tuple[str, ...] = ("queued", "running")
"""Statuses of tasks recovery rebuilds; every other status is final and left alone."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Why a run's owner is considered gone, and when recovery noticed."""

    reason: str
    """``owner_exited``, ``owner_pid_reused``, ``host_rebooted`` or ``heartbeat_stale``."""
    detail: str
    """For people, e.g. ``process 4242 that ran it has exited``."""
    at: str


def log_is_complete(count: int, last_seq: int | None) -> bool:
    """True when a run's event log has every event it was written with: events are
    numbered from 1 without gaps, and only the reasoning retention deletes any."""
    return count == (last_seq or 0)


def interrupted_task(
    task: Task, events: Sequence[RunEventRecord], stop: Stop, *, log_complete: bool
) -> Task:
    """``task`` (queued or running when its process died) as recovery records it.

    ``events`` are the run's events; only this task's deltas are used, in ``seq``
    order. ``log_complete`` is :func:`log_is_complete` for the whole run.
    """
    gate = DisclosureGate(task.chain_of_thought)
    own = sorted(
        (event for event in events if event.task_id == task.id and _is_delta(event)),
        key=lambda event: event.seq,
    )
    answer = "".join(_text(event) for event in own if event.type == "answer.delta")
    reasoning_events = [event for event in own if event.type == "reasoning.delta"]

    reasoning: str | None = None
    parts: list[ReasoningPartView] | None = None
    if gate.displays:
        parts = []
        if reasoning_events and log_complete:
            reasoning, parts = _rebuild_reasoning(reasoning_events)

    if task.status == "queued":
        notice = f"The process running this run stopped ({stop.detail}) before this task started"
        if not gate.requests_reasoning:
            notice += "; reasoning was not requested (chain_of_thought is hidden)"
    else:
        kept = (
            f"the {len(answer)} characters of answer that arrived before it are kept"
            if answer
            else "no answer had arrived"
        )
        notice = f"The process running this task stopped ({stop.detail}); {kept}"
        notice += "; " + _reasoning_clause(
            gate,
            reasoning,
            bool(reasoning_events),
            answer_kept=bool(answer),
            log_complete=log_complete,
        )
    status: ReasoningStatus = "interrupted" if gate.requests_reasoning else "not_requested"
    return replace(
        task,
        status="interrupted",
        output=answer or task.output,
        reasoning=reasoning,
        reasoning_parts=parts,
        reasoning_status=status,
        reasoning_notice=notice + ".",
        error=TaskError(
            code="RUN_INTERRUPTED",
            message=f"The process running this task stopped ({stop.detail}). Run it again.",
            retryable=True,
        ),
        timings=replace(
            task.timings, finished_at=task.timings.finished_at or (own[-1].at if own else stop.at)
        ),
    )


def _reasoning_clause(
    gate: DisclosureGate,
    reasoning: str | None,
    logged: bool,
    *,
    answer_kept: bool,
    log_complete: bool,
) -> str:
    if not gate.requests_reasoning:
        return "reasoning was not requested (chain_of_thought is hidden)"
    if not gate.displays:
        # telemetry_only: reasoning reaches the trace when a task ends, never the log.
        return "its reasoning was not recorded (the trace records reasoning when a task ends)"
    if reasoning is not None:
        if answer_kept:
            return (
                f"so are the {len(reasoning)} characters of reasoning that arrived, marked partial"
            )
        return f"the {len(reasoning)} characters of reasoning that arrived are kept, marked partial"
    if not log_complete:
        return (
            "no reasoning is shown, because the reasoning retention removed part of this "
            "run's event log"
        )
    if logged:  # deltas with empty text only
        return "no reasoning text had arrived"
    return "no reasoning had arrived"


def _rebuild_reasoning(
    events: Sequence[RunEventRecord],
) -> tuple[str | None, list[ReasoningPartView]]:
    """The reasoning text as it was displayed, and its parts where the log names them.

    A delta that names its part (``part_id``) and ``kind`` extends that part; parts are
    joined like the runtime joins them. Deltas that do not name a kind are kept in the
    text only: a part's kind is never guessed.
    """
    named = [event for event in events if event.data.get("kind") in REASONING_KINDS]
    if len(named) != len(events):
        text = "".join(_text(event) for event in events)
        return text or None, []
    parts: list[ReasoningPartView] = []
    last_key: tuple[object, object] | None = None
    for event in events:
        key = (event.data.get("part_id"), event.data["kind"])
        if parts and key == last_key:
            parts[-1].text += _text(event)
        else:
            parts.append(ReasoningPartView(kind=str(event.data["kind"]), text=_text(event)))
        last_key = key
    parts = [part for part in parts if part.text]
    text = "\n\n".join(part.text for part in parts)
    return text or None, parts


def _is_delta(event: RunEventRecord) -> bool:
    return event.type in ("answer.delta", "reasoning.delta")


def _text(event: RunEventRecord) -> str:
    text = event.data.get("text")
    return text if isinstance(text, str) else ""

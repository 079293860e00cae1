"""Writing the layered trace: ``answer`` always, ``reasoning`` and ``provider_raw`` only
when the runtime hands them over (the disclosure gate decides; this module does not).

Each event carries its layer's expiry (from ``[trace.retention]``) so retention can reach
into every row; credentials never get here (the provider layer redacted them already).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from thoughtline.config import parse_duration
from thoughtline.records import Run, TraceEvent, TraceLayer, new_id, now_iso, short_run_id
from thoughtline.runtime.policy.disclosure import DisclosureGate


def retention_seconds(retention: Mapping[str, str]) -> dict[TraceLayer, int | None]:
    """``{"provider_raw": "7d", ...}`` → seconds per layer (``None`` = forever)."""
    seconds: dict[TraceLayer, int | None] = {
        "answer": None,
        "reasoning": None,
        "provider_raw": None,
    }
    for layer in seconds:
        value = retention.get(layer)
        if value is not None:
            seconds[layer] = parse_duration(value)
    return seconds


class TraceWriter:
    """Builds the trace events of one run. Events wait in ``pending`` until the runtime
    writes them together with the task transition they belong to (one transaction)."""

    def __init__(self, run_id: str, retention: Mapping[TraceLayer, int | None]) -> None:
        self.run_id = run_id
        self.retention = retention
        self.pending: list[TraceEvent] = []

    def take(self) -> list[TraceEvent]:
        events, self.pending = self.pending, []
        return events

    def add(
        self,
        type_: str,
        *,
        layer: TraceLayer = "answer",
        task_id: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> TraceEvent:
        keep = self.retention.get(layer)
        expires = (
            None
            if keep is None
            else (datetime.now(UTC) + timedelta(seconds=keep))
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
        event = TraceEvent(
            id=new_id("evt"),
            run_id=self.run_id,
            task_id=task_id,
            type=type_,
            layer=layer,
            at=now_iso(),
            metadata=metadata or {},
            expires_at=expires,
        )
        self.pending.append(event)
        return event


def empty_layer_reason(run: Run, layer: TraceLayer) -> str:
    """Why ``layer`` of ``run`` holds no events, as far as the run itself can tell (the
    modes that record reasoning are the runtime's to know, not a surface's)."""
    empty = f"The {layer} layer of run {short_run_id(run.id)} is empty"  # the id people type
    if layer == "reasoning":
        modes = sorted({task.chain_of_thought for task in run.tasks})
        if not any(DisclosureGate(mode).records for mode in modes):
            shown = (
                " (surface shows the reasoning with the answer but keeps it out of the trace)"
                if any(DisclosureGate(mode).displays for mode in modes)
                else ""
            )
            return (
                f"{empty}: its tasks ran with chain_of_thought={', '.join(modes)}, which does "
                f"not record reasoning{shown}; telemetry_only and surface_and_telemetry do."
            )
        statuses = ", ".join(f"{task.name}: {task.reasoning_status or '-'}" for task in run.tasks)
        return (
            f"{empty}: no reasoning text was recorded ({statuses}), or the reasoning "
            "retention ([trace.retention] reasoning) has removed it."
        )
    if layer == "provider_raw":
        return (
            f"{empty}: raw exchanges are kept only with [trace] provider_raw = true, "
            "for as long as [trace.retention] provider_raw allows."
        )
    return f"{empty}."

"""Writing the layered trace: ``answer`` always, ``reasoning`` and ``provider_raw`` only
when the runtime hands them over (the disclosure gate decides; this module does not).

Each event carries its layer's expiry (from ``[trace.retention]``) so retention can reach
into every row; credentials never get here (the provider layer redacted them already).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from thoughtline.config import parse_duration
from thoughtline.runtime.models import TraceEvent, TraceLayer, new_id, now_iso
from thoughtline.store.base import Store


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
    """Appends trace events of one run to the store."""

    def __init__(
        self, store: Store, run_id: str, retention: Mapping[TraceLayer, int | None]
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.retention = retention

    def write(
        self,
        type_: str,
        *,
        layer: TraceLayer = "answer",
        task_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> TraceEvent:
        at = now_iso()
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
            at=at,
            metadata=metadata or {},
            expires_at=expires,
        )
        self.store.append_trace([event])
        return event

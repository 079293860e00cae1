"""The disclosure decision: which mode applies, and the one gate that applies it.

Every byte of reasoning passes :class:`DisclosureGate` on its way from the provider layer
to anything else. The gate decides, from the mode alone, whether reasoning may reach the
task (display surfaces), the ``reasoning`` trace layer and telemetry, or nowhere. No other
module looks at the mode to route reasoning; surfaces only render ``task.reasoning``.

=========================  =================  =================  ===========================
mode                       request reasoning  attach to task     write trace.reasoning/OTel
=========================  =================  =================  ===========================
hidden (default)           no                 no                 no
surface                    yes                yes                no
telemetry_only             yes                no                 yes
surface_and_telemetry      yes                yes                yes
=========================  =================  =================  ===========================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thoughtline.accumulator import ModelResponse, ReasoningPart
from thoughtline.errors import ThoughtlineError
from thoughtline.events import ReasoningDelta, ReasoningEnd, ReasoningStart, StreamEvent
from thoughtline.runtime.models import (
    CHAIN_OF_THOUGHT_MODES,
    ChainOfThought,
    ModeSource,
    ReasoningPartView,
)


class UnknownModeError(ThoughtlineError):
    def __init__(self, value: str, where: str) -> None:
        super().__init__(
            "CHAIN_OF_THOUGHT_UNKNOWN",
            f"Unknown chain_of_thought mode {value!r} ({where}). "
            f"Allowed values: {', '.join(CHAIN_OF_THOUGHT_MODES)}.",
        )


def check_mode(value: str, where: str) -> ChainOfThought:
    """The mode, or a clear error naming where the bad value came from."""
    if value not in CHAIN_OF_THOUGHT_MODES:
        raise UnknownModeError(value, where)
    return value


@dataclass(frozen=True, slots=True)
class ResolvedMode:
    mode: ChainOfThought
    source: ModeSource


def resolve_mode(
    *,
    explicit: str | None,
    run: str | None,
    role: str | None,
    by_role: Mapping[str, str],
    configured: str | None,
) -> ResolvedMode:
    """explicit (flag / API argument) > run spec > per-role config > config > ``hidden``.

    ``configured`` is the config file's ``orchestration.chain_of_thought`` only when the
    file sets it; ``role=None`` resolves the run-level mode (no role step).
    """
    if explicit is not None:
        return ResolvedMode(check_mode(explicit, "explicit argument"), "explicit")
    if run is not None:
        return ResolvedMode(check_mode(run, "run spec"), "run")
    if role is not None and role in by_role:
        value = by_role[role]
        return ResolvedMode(
            check_mode(value, f"orchestration.chain_of_thought_by_role.{role}"), "role_config"
        )
    if configured is not None:
        return ResolvedMode(check_mode(configured, "orchestration.chain_of_thought"), "config")
    return ResolvedMode("hidden", "default")


@dataclass(frozen=True, slots=True)
class CapturedReasoning:
    """What the gate let through at the end of a task.

    ``for_task`` is attached to the task (display surfaces) — ``None`` unless the mode
    displays reasoning. ``for_trace`` goes to the ``reasoning`` trace layer and telemetry
    (with opaque provider data) — ``None`` unless the mode records reasoning.
    """

    for_task: list[ReasoningPartView] | None
    for_trace: list[dict[str, Any]] | None

    @property
    def task_text(self) -> str | None:
        """The joined text for ``task.reasoning``; ``None`` when there is none to show."""
        if not self.for_task:
            return None
        return "\n\n".join(part.text for part in self.for_task if part.text)

    @property
    def trace_text(self) -> str | None:
        if self.for_trace is None:
            return None
        return "\n\n".join(str(part["text"]) for part in self.for_trace if part["text"])


class DisclosureGate:
    """The one place reasoning is routed. See the module docstring."""

    __slots__ = ("mode",)

    def __init__(self, mode: ChainOfThought) -> None:
        self.mode = mode

    @property
    def requests_reasoning(self) -> bool:
        return self.mode != "hidden"

    @property
    def displays(self) -> bool:
        return self.mode in ("surface", "surface_and_telemetry")

    @property
    def records(self) -> bool:
        return self.mode in ("telemetry_only", "surface_and_telemetry")

    def live(self, event: StreamEvent) -> StreamEvent | None:
        """A streamed event for live surfaces, or ``None`` when the mode hides it."""
        if isinstance(event, ReasoningStart | ReasoningDelta | ReasoningEnd):
            return event if self.displays else None
        return event

    def capture(self, response: ModelResponse) -> CapturedReasoning:
        """Route the response's reasoning parts (the only copy anything else receives)."""
        parts = response.reasoning_parts
        for_task = (
            [ReasoningPartView(kind=part.kind, text=part.text) for part in parts if part.text]
            if self.displays
            else None
        )
        for_trace = [_trace_part(part) for part in parts] if self.records else None
        return CapturedReasoning(for_task=for_task, for_trace=for_trace)


def _trace_part(part: ReasoningPart) -> dict[str, Any]:
    return {
        "kind": part.kind,
        "text": part.text,
        "complete": part.complete,
        "provider_metadata": dict(part.provider_metadata),
    }

"""The disclosure decision: which mode applies, and the one gate that applies it.

Every byte of model output passes :class:`DisclosureGate` on its way from the provider
layer to anything else. The gate decides, from the mode alone, whether reasoning may reach
the task (display surfaces), the ``reasoning`` trace layer and telemetry, or nowhere. No
other module looks at the mode to route reasoning; surfaces only render ``task.reasoning``.

The gate is also where loaded credential values are removed from what the model wrote
(answer, reasoning, tool-call arguments, provider error messages), once, before anything
reaches a task, the event log, the trace, a surface or telemetry: a model that echoes a
key from its prompt, or a proxy that reflects a header, leaks nothing. Streamed text is
redacted as it arrives (:class:`~thoughtline.providers.redaction.StreamRedactor`), so the
final output equals the concatenation of the deltas surfaces were shown.

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
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias, assert_never

import orjson

from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import (
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextStart,
)
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.providers.redaction import Redactor, StreamRedactor
from thoughtline.records import ChainOfThought, ModeSource, ReasoningPartView, TracedReasoningPart
from thoughtline.records.run_events import ReasoningEdge
from thoughtline.runtime.policy.checks import UnknownModeError as UnknownModeError
from thoughtline.runtime.policy.checks import check_mode as check_mode


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


LiveStream: TypeAlias = Literal["answer", "reasoning"]
"""Which of a task's texts a live delta extends."""

LiveText: TypeAlias = tuple[LiveStream, str]
"""The text a live surface may show, and which of the task's texts it extends."""


@dataclass(frozen=True, slots=True)
class Captured:
    """What the gate let through at the end of a task.

    ``response`` is the call's response with new parts: loaded credential values removed
    from the answer, tool-call arguments and the reasoning text (when the mode requests
    reasoning; hidden keeps no reasoning text, only its carriers), and from warnings and
    the error message. It is the only copy anything else reads: the task, the history of
    the task's next call, its stored thread, the trace, telemetry and events. ``for_task``
    is attached to the task (display surfaces) — ``None`` unless the mode displays
    reasoning. ``for_trace`` goes to the ``reasoning`` trace layer and telemetry (with
    opaque provider data) — ``None`` unless the mode records reasoning.
    ``echoed_credential`` says the model wrote a loaded credential value (in the answer,
    tool-call arguments, or reasoning the mode requested): its raw body may hold the value
    cut across strings.
    """

    response: ModelResponse
    for_task: list[ReasoningPartView] | None
    for_trace: list[TracedReasoningPart] | None
    echoed_credential: bool = False
    reasoned: bool = False
    """Reasoning text arrived, whether or not the mode let it through."""

    @property
    def output(self) -> str | None:
        return self.response.text or None

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
        return "\n\n".join(part["text"] for part in self.for_trace if part["text"])


def shareable_carriers(redactor: Redactor, carriers: ProviderMetadata) -> ProviderMetadata:
    """A reasoning part's carriers as a client that sees reasoning may get them: none
    when they hold a loaded credential value (a carrier cannot be redacted without
    breaking it, so it stays with the task's own next call)."""
    if carriers and redactor.has_secrets:
        dumped = orjson.dumps(dict(carriers)).decode()
        if redactor.values(dumped) != dumped:
            return {}
    return carriers


class GateStream:
    """The gate's live side for ONE model call: what a live surface may show of the
    call's events, credentials removed. Each call gets a fresh stream
    (:meth:`DisclosureGate.stream`), so a tail held back as a possible credential, a
    preamble or a reasoning part never carries over into the next call of a task."""

    __slots__ = (
        "_answer",
        "_answered",
        "_commentary",
        "_displays",
        "_preamble",
        "_reasoning",
        "_redactor",
    )

    def __init__(self, redactor: Redactor, *, displays: bool) -> None:
        self._displays = displays
        self._redactor = redactor
        # One stream for the answer (task.output is every text part joined), one per
        # displayed reasoning part (each part is shown on its own).
        self._answer = redactor.stream()
        self._reasoning: dict[str, StreamRedactor] = {}
        # A preamble (Responses ``phase: "commentary"``) is not the answer: held back, and
        # released as the answer only if no final answer comes (as the accumulator does).
        self._commentary: set[str] = set()
        self._preamble: list[str] = []
        self._answered = False

    def live(self, event: StreamEvent) -> LiveText | None:
        """What live surfaces may show for this event, credentials removed, or ``None``
        (nothing to show: not a delta, reasoning the mode hides, or a tail held back
        because it could be the start of a credential)."""
        if isinstance(event, TextDelta):
            if self._commentary and event.part_id in self._commentary:
                self._preamble.append(event.text)
                return None
            self._answered = True
            text = self._answer.feed(event.text)
            return ("answer", text) if text else None
        if isinstance(event, TextStart):
            if event.provider_metadata.get("phase") == "commentary":
                self._commentary.add(event.part_id)
            return None
        if not self._displays:
            return None
        if isinstance(event, ReasoningDelta):
            stream = self._reasoning.get(event.part_id)
            if stream is None:
                stream = self._reasoning[event.part_id] = self._redactor.stream()
            text = stream.feed(event.text)
            return ("reasoning", text) if text else None
        if isinstance(event, ReasoningEnd):
            ended = self._reasoning.pop(event.part_id, None)
            text = ended.flush() if ended is not None else ""
            return ("reasoning", text) if text else None
        return None

    def edge(self, event: ReasoningStart | ReasoningEnd) -> ReasoningEdge | None:
        """Where a displayed reasoning part opens or closes, with its carriers (for a
        client of the gateway whose mode shows reasoning); ``None`` when the mode hides
        it. Carriers holding a loaded credential value are left out: a carrier cannot
        be redacted without breaking it."""
        if not self._displays:
            return None
        carriers = shareable_carriers(self._redactor, event.provider_metadata)
        edge: Literal["start", "end"] = "start" if isinstance(event, ReasoningStart) else "end"
        return ReasoningEdge(edge=edge, part_id=event.part_id, kind=event.kind, carriers=carriers)

    def finish(self) -> list[LiveText]:
        """The tails still held when the call's stream ends (completed, broken or
        cancelled)."""
        released: list[LiveText] = []
        for stream in self._reasoning.values():
            text = stream.flush()
            if text:
                released.append(("reasoning", text))
        self._reasoning.clear()
        text = "" if self._answered else self._answer.feed("".join(self._preamble))
        text += self._answer.flush()
        if text:
            released.append(("answer", text))
        return released


class DisclosureGate:
    """The one place model output is routed and cleaned, per task: the mode is decided
    once, for every model call of the task. See the module docstring. Feed each call's
    events to a fresh :meth:`stream`, :meth:`~GateStream.finish` it, then
    :meth:`capture` the call's response."""

    __slots__ = ("displays", "mode", "records", "redactor")

    def __init__(self, mode: ChainOfThought, redactor: Redactor | None = None) -> None:
        self.mode = mode
        self.displays = mode in ("surface", "surface_and_telemetry")
        self.records = mode in ("telemetry_only", "surface_and_telemetry")
        self.redactor = redactor or Redactor()

    @property
    def requests_reasoning(self) -> bool:
        return self.mode != "hidden"

    def stream(self) -> GateStream:
        """The live side of the gate for one model call."""
        return GateStream(self.redactor, displays=self.displays)

    def capture(self, response: ModelResponse) -> Captured:
        """Clean the response and route its reasoning parts (the only copy anything else
        receives)."""
        cleaned = self._clean(response)
        parts = cleaned.reasoning_parts
        for_task = (
            [ReasoningPartView(kind=part.kind, text=part.text) for part in parts if part.text]
            if self.displays
            else None
        )
        for_trace = [_trace_part(part) for part in parts] if self.records else None
        return Captured(
            response=cleaned,
            for_task=for_task,
            for_trace=for_trace,
            echoed_credential=self._echoed(response),
            reasoned=any(part.text for part in response.reasoning_parts),
        )

    def _echoed(self, response: ModelResponse) -> bool:
        holds = self.redactor.holds_value
        if not self.redactor.has_secrets:
            return False
        if holds(response.text) or any(holds(call.arguments) for call in response.tool_calls):
            return True
        return self.requests_reasoning and any(
            holds(part.text) for part in response.reasoning_parts
        )

    def _clean(self, response: ModelResponse) -> ModelResponse:
        """The response with new parts: loaded credential values removed from the answer
        and tool-call arguments, reasoning as the mode allows (:meth:`_reasoning`)."""
        redactor = self.redactor
        error = response.error
        if error is not None:
            error = replace(error, message=redactor.text(error.message))
        return replace(
            response,
            parts=tuple(self._part(part) for part in response.parts),
            warnings=tuple(
                replace(warning, message=redactor.text(warning.message))
                for warning in response.warnings
            ),
            error=error,
        )

    def _part(self, part: Part) -> Part:
        values = self.redactor.values
        match part:
            case TextPart():
                text = values(part.text)
                return part if text == part.text else replace(part, text=text)
            case ToolCallPart():
                arguments = values(part.arguments)
                return part if arguments == part.arguments else replace(part, arguments=arguments)
            case ReasoningPart():
                return self._reasoning(part)
            case ToolResultPart():
                return part
            case _:
                assert_never(part)

    def _reasoning(self, part: ReasoningPart) -> ReasoningPart:
        """A reasoning part as the mode allows: hidden, no text; otherwise the text with
        loaded credential values removed. A part's carriers (signature, encrypted content,
        ids) stay as they came, and a text the gate took out or changed is kept aside,
        in memory only, for the task's next call to send back (``withheld``): a part
        whose carriers hold a credential value (they cannot be redacted) likewise."""
        if not self.requests_reasoning:
            return replace(part, text="", withheld=part.text) if part.text else part
        redactor = self.redactor
        if not redactor.has_secrets:
            return part
        carriers = orjson.dumps(dict(part.provider_metadata)).decode()
        text = redactor.values(part.text)
        if text == part.text and redactor.values(carriers) == carriers:
            return part
        return replace(part, text=text, withheld=part.text)


def _trace_part(part: ReasoningPart) -> TracedReasoningPart:
    return {
        "kind": part.kind,
        "text": part.text,
        "complete": part.complete,
        "provider_metadata": dict(part.provider_metadata),
    }

"""One accumulator builds the final response from events, for streams and whole bodies alike.

Text is gathered as lists of deltas and joined once, so a response of a million deltas
costs linear time and memory proportional to its text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias, assert_never

from thoughtline.model.events import (
    Finish,
    MetadataValue,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    merge_usage,
)
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message

__all__ = [
    "ModelResponse",
    "ReasoningPart",
    "ResponseAccumulator",
    "ToolCall",
    "accumulate",
]


ToolCall: TypeAlias = ToolCallPart
"""One tool call the model made (the tool-call part of a response)."""

_COMMENTARY = "commentary"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ModelResponse:
    """Everything one call returned: its parts in arrival order, and what came with them.

    ``parts`` is the only content: ``text``, ``commentary``, ``text_metadata``,
    ``reasoning_parts`` and ``tool_calls`` are views derived from it when the response is
    built (it is frozen), so no view can disagree with the parts. A cleaner (the
    disclosure gate) returns a response with new parts, never new views.

    Two responses are equal when every view, and everything else, is: the order *between*
    kinds is left out, since where a wire API gives none (a Chat Completions body holds
    reasoning, content and tool calls in separate fields) a body and its stream arrive in
    different orders yet say the same thing.
    """

    parts: tuple[Part, ...] = ()
    """Every text, reasoning and tool-call part in arrival order."""
    usage: Usage = field(default_factory=Usage)
    finish: Finish | None = None
    warnings: tuple[StreamWarning, ...] = ()
    error: StreamError | None = None
    response_id: str | None = None
    model: str | None = None
    _views: _Views = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_views", _Views.of(self.parts))

    @classmethod
    def of(
        cls,
        text: str = "",
        *,
        reasoning: Iterable[ReasoningPart] = (),
        tool_calls: Iterable[ToolCallPart] = (),
        usage: Usage | None = None,
        finish: Finish | None = None,
        warnings: tuple[StreamWarning, ...] = (),
        error: StreamError | None = None,
        response_id: str | None = None,
        model: str | None = None,
    ) -> ModelResponse:
        """A response made of ``reasoning``, then ``text`` (one part, when not empty),
        then ``tool_calls``: the order every wire API gives them in."""
        parts: list[Part] = list(reasoning)
        if text:
            parts.append(TextPart(text=text))
        parts.extend(tool_calls)
        return cls(
            parts=tuple(parts),
            usage=usage or Usage(),
            finish=finish,
            warnings=warnings,
            error=error,
            response_id=response_id,
            model=model,
        )

    @property
    def text(self) -> str:
        """The answer: every text part but the preamble, joined; when no such part has
        text, the preamble (it is all there is)."""
        return self._views.text

    @property
    def commentary(self) -> str:
        """Text the provider marked as a preamble, not the answer (OpenAI Responses
        ``phase: "commentary"``). Kept apart from ``text`` whenever a final answer
        arrived; when none did, the preamble is all there is and is ``text`` too."""
        return self._views.commentary

    @property
    def text_metadata(self) -> tuple[ProviderMetadata, ...]:
        """The provider data of every text part that has some, in order."""
        return self._views.text_metadata

    @property
    def reasoning_parts(self) -> tuple[ReasoningPart, ...]:
        return self._views.reasoning

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self._views.tool_calls

    @property
    def reasoning_text(self) -> str:
        """Reasoning text of every part, joined by blank lines (empty parts skipped)."""
        return "\n\n".join(part.text for part in self.reasoning_parts if part.text)

    def to_message(self) -> Message:
        """The assistant message to append to a history for the next call: every part
        in arrival order, carriers byte for byte."""
        return Message(role="assistant", parts=self.parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelResponse):
            return NotImplemented
        return (
            self._views == other._views
            and self.usage == other.usage
            and self.finish == other.finish
            and self.warnings == other.warnings
            and self.error == other.error
            and self.response_id == other.response_id
            and self.model == other.model
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class _Views:
    """What a response's parts say, kind by kind (equal for the same parts in another
    order between kinds)."""

    text: str
    commentary: str
    text_metadata: tuple[ProviderMetadata, ...]
    reasoning: tuple[ReasoningPart, ...]
    tool_calls: tuple[ToolCallPart, ...]

    @classmethod
    def of(cls, parts: tuple[Part, ...]) -> _Views:
        texts: list[str] = []
        commentary: list[str] = []
        metadata: list[ProviderMetadata] = []
        reasoning: list[ReasoningPart] = []
        tools: list[ToolCallPart] = []
        for part in parts:
            match part:
                case TextPart():
                    if part.provider_metadata.get("phase") == _COMMENTARY:
                        commentary.append(part.text)
                    else:
                        texts.append(part.text)
                    if part.provider_metadata:
                        metadata.append(part.provider_metadata)
                case ReasoningPart():
                    reasoning.append(part)
                case ToolCallPart():
                    tools.append(part)
                case ToolResultPart():
                    raise ValueError("a model response holds no tool result")
                case _:
                    assert_never(part)
        answer = "".join(texts)
        preamble = "".join(commentary)
        return cls(
            text=answer or preamble,
            commentary=preamble,
            text_metadata=tuple(metadata),
            reasoning=tuple(reasoning),
            tool_calls=tuple(tools),
        )


_BLOCK_DELTAS = 512


class _OpenPart:
    """A part being built. Deltas are gathered in a small list and folded into blocks
    of ``_BLOCK_DELTAS`` deltas, so memory stays close to the text's own size (a million
    tiny strings would cost ~60 bytes each) and every character is copied at most twice."""

    __slots__ = ("blocks", "chunks", "kind", "metadata", "name", "order", "tool_call_id")

    def __init__(self, order: int, kind: str, metadata: ProviderMetadata) -> None:
        self.order = order
        self.kind = kind
        self.metadata: dict[str, MetadataValue] = dict(metadata)
        self.chunks: list[str] = []
        self.blocks: list[str] = []
        self.tool_call_id = ""
        self.name = ""

    def append(self, text: str) -> None:
        chunks = self.chunks
        chunks.append(text)
        if len(chunks) >= _BLOCK_DELTAS:
            self.blocks.append("".join(chunks))
            chunks.clear()

    def text(self) -> str:
        if not self.blocks:
            return "".join(self.chunks)
        return "".join(self.blocks) + "".join(self.chunks)


class ResponseAccumulator:
    """Feed events with :meth:`add`; read the result with :meth:`result` at any time."""

    def __init__(self, *, provider: str | None = None, model: str | None = None) -> None:
        # Who the call went to: stamped on reasoning parts and tool calls, whose
        # carriers are only valid there.
        self._provider = provider
        self._requested_model = model
        self._parts: dict[str, _OpenPart] = {}
        self._closed: set[str] = set()
        self._order = 0
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self._warnings: list[StreamWarning] = []
        self._error: StreamError | None = None
        self._response_id: str | None = None
        self._model: str | None = None

    def add(self, event: StreamEvent) -> None:
        match event:
            case TextDelta():
                self._part(event.part_id, "text").append(event.text)
            case ReasoningDelta():
                # A delta without a start still counts as reasoning, never as answer text.
                self._part(event.part_id, "raw").append(event.text)
            case ToolCallDelta():
                self._part(event.part_id, "tool").append(event.arguments_delta)
            case ReasoningStart():
                self._open(event.part_id, event.kind, event.provider_metadata)
            case ReasoningEnd():
                part = self._part(event.part_id, event.kind)
                part.kind = event.kind
                part.metadata.update(event.provider_metadata)
                self._closed.add(event.part_id)
            case TextStart():
                self._open(event.part_id, "text", event.provider_metadata)
            case TextEnd():
                self._part(event.part_id, "text").metadata.update(event.provider_metadata)
                self._closed.add(event.part_id)
            case ToolCallStart():
                part = self._open(event.part_id, "tool", event.provider_metadata)
                part.tool_call_id = event.tool_call_id
                part.name = event.name
            case ToolCallEnd():
                self._part(event.part_id, "tool").metadata.update(event.provider_metadata)
                self._closed.add(event.part_id)
            case Usage():
                self._usage = merge_usage(self._usage, event)
            case Finish():
                self._finish = event
            case StreamWarning():
                self._warnings.append(event)
            case StreamError():
                self._error = event
            case ResponseStarted():
                self._response_id = event.response_id or self._response_id
                self._model = event.model or self._model
            case _:
                assert_never(event)

    def add_all(self, events: Iterable[StreamEvent]) -> None:
        for event in events:
            self.add(event)

    def _open(self, part_id: str, kind: str, metadata: ProviderMetadata) -> _OpenPart:
        part = self._parts.get(part_id)
        if part is None:
            part = _OpenPart(self._order, kind, metadata)
            self._order += 1
            self._parts[part_id] = part
        else:
            part.metadata.update(metadata)
        return part

    def _part(self, part_id: str, kind: str) -> _OpenPart:
        # Tolerate a delta without a start (some servers skip it): open the part then.
        part = self._parts.get(part_id)
        if part is None:
            part = self._open(part_id, kind, {})
        return part

    def result(self) -> ModelResponse:
        parts: list[Part] = []
        provider, model = self._provider, self._requested_model
        for part_id, part in sorted(self._parts.items(), key=lambda item: item[1].order):
            complete = part_id in self._closed
            joined = part.text()
            if part.kind == "text":
                parts.append(TextPart(text=joined, provider_metadata=dict(part.metadata)))
            elif part.kind == "tool":
                parts.append(
                    ToolCallPart(
                        tool_call_id=part.tool_call_id,
                        name=part.name,
                        arguments=joined,
                        provider_metadata=dict(part.metadata),
                        complete=complete,
                        provider=provider,
                        model=model,
                    )
                )
            else:
                parts.append(
                    ReasoningPart(
                        kind=part.kind,  # type: ignore[arg-type]
                        text=joined,
                        provider_metadata=dict(part.metadata),
                        complete=complete,
                        provider=provider,
                        model=model,
                    )
                )
        return ModelResponse(
            parts=tuple(parts),
            usage=self._usage or Usage(),
            finish=self._finish,
            warnings=tuple(self._warnings),
            error=self._error,
            response_id=self._response_id,
            model=self._model,
        )


def accumulate(events: Iterable[StreamEvent]) -> ModelResponse:
    """The final response for a complete sequence of events."""
    accumulator = ResponseAccumulator()
    accumulator.add_all(events)
    return accumulator.result()

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
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """Everything one call returned, in order."""

    text: str
    reasoning_parts: tuple[ReasoningPart, ...]
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish: Finish | None
    warnings: tuple[StreamWarning, ...]
    error: StreamError | None
    response_id: str | None = None
    model: str | None = None
    text_metadata: tuple[ProviderMetadata, ...] = ()
    commentary: str = ""
    """Text the provider marked as a preamble, not the answer (OpenAI Responses
    ``phase: "commentary"``). Kept apart from ``text`` whenever a final answer arrived;
    when none did, the preamble is all there is and stays in ``text`` too."""
    parts: tuple[Part, ...] = field(default=(), compare=False)
    """Every text, reasoning and tool-call part in arrival order. ``text``,
    ``reasoning_parts`` and ``tool_calls`` are views of the same parts.

    Left out of equality: where a wire API gives no order between kinds (a Chat
    Completions body holds reasoning, content and tool calls in separate fields), a
    body and its stream arrive in different orders yet say the same thing."""

    @property
    def reasoning_text(self) -> str:
        """Reasoning text of every part, joined by blank lines (empty parts skipped)."""
        return "\n\n".join(part.text for part in self.reasoning_parts if part.text)

    def to_message(self) -> Message:
        """The assistant message to append to a history for the next call: every part
        in arrival order, carriers byte for byte."""
        return Message(role="assistant", parts=self.parts)


_BLOCK_DELTAS = 512
_COMMENTARY = "commentary"


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
        reasoning: list[ReasoningPart] = []
        tools: list[ToolCallPart] = []
        texts: list[str] = []
        commentary: list[str] = []
        text_metadata: list[ProviderMetadata] = []
        provider, model = self._provider, self._requested_model
        for part_id, part in sorted(self._parts.items(), key=lambda item: item[1].order):
            complete = part_id in self._closed
            joined = part.text()
            if part.kind == "text":
                if part.metadata.get("phase") == _COMMENTARY:
                    commentary.append(joined)
                else:
                    texts.append(joined)
                if part.metadata:
                    text_metadata.append(dict(part.metadata))
                parts.append(TextPart(text=joined, provider_metadata=dict(part.metadata)))
            elif part.kind == "tool":
                call = ToolCallPart(
                    tool_call_id=part.tool_call_id,
                    name=part.name,
                    arguments=joined,
                    provider_metadata=dict(part.metadata),
                    complete=complete,
                    provider=provider,
                    model=model,
                )
                tools.append(call)
                parts.append(call)
            else:
                thought = ReasoningPart(
                    kind=part.kind,  # type: ignore[arg-type]
                    text=joined,
                    provider_metadata=dict(part.metadata),
                    complete=complete,
                    provider=provider,
                    model=model,
                )
                reasoning.append(thought)
                parts.append(thought)
        answer = "".join(texts)
        preamble = "".join(commentary)
        return ModelResponse(
            text=answer if answer else preamble,
            reasoning_parts=tuple(reasoning),
            tool_calls=tuple(tools),
            usage=self._usage or Usage(),
            finish=self._finish,
            warnings=tuple(self._warnings),
            error=self._error,
            response_id=self._response_id,
            model=self._model,
            text_metadata=tuple(text_metadata),
            commentary=preamble,
            parts=tuple(parts),
        )


def accumulate(events: Iterable[StreamEvent]) -> ModelResponse:
    """The final response for a complete sequence of events."""
    accumulator = ResponseAccumulator()
    accumulator.add_all(events)
    return accumulator.result()

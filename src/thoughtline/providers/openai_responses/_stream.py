"""Responses API stream events → thoughtline events.

Each SSE frame carries ``{"type": ..., "sequence_number": n, ...}``. The translator keeps
just enough state to open and close parts exactly once:

- reasoning items yield one part per summary entry (``kind="summary"``), one per raw
  ``reasoning_text`` entry (``kind="raw"``, gpt-oss style servers) and, from the
  *final* item in ``response.output_item.done``, one ``kind="encrypted"`` part carrying
  ``encrypted_content`` byte-for-byte (the item announced by ``output_item.added`` may
  hold an incomplete carrier);
- message items yield text parts (``output_text`` and ``refusal``);
- ``function_call`` items yield tool-call parts.

Part ids are derived from the provider's item id and index (``rs_1/summary/0``,
``msg_1/text/0``, ``fc_1/call``), so they are unique and deterministic. Whatever a
final item holds that was never streamed (some compatible servers skip delta events) is
emitted from the item itself; the non-streaming body is decoded the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from thoughtline.events import (
    Error,
    Finish,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Warning,
)
from thoughtline.providers.base import PayloadTranslator
from thoughtline.providers.openai_responses._errors import error_event, failed_response
from thoughtline.providers.openai_responses._usage import incomplete_finish, usage_event

Payload = dict[str, Any]
Events = list[StreamEvent]

# Known events that carry nothing thoughtline models (hosted-tool progress, annotations,
# audio, lifecycle echoes). They are skipped without a warning; anything else unknown
# becomes one UNKNOWN_EVENT warning per type.
_INFORMATIONAL: Final[frozenset[str]] = frozenset(
    {
        "response.output_text.annotation.added",
        "keepalive",
    }
)
_INFORMATIONAL_PREFIXES: Final[tuple[str, ...]] = (
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.audio.",
    "response.custom_tool_call_input.",
    "response.shell_call",
    "response.compaction",
)

# Open part bookkeeping: what to emit when the part closes.
_REASONING: Final = 0
_TEXT: Final = 1
_TOOL: Final = 2


class _OpenPart:
    __slots__ = ("category", "kind", "metadata")

    def __init__(
        self, category: int, kind: ReasoningKind | None, metadata: ProviderMetadata
    ) -> None:
        self.category = category
        self.kind = kind
        self.metadata = metadata


class ResponsesTranslator(PayloadTranslator):
    """Per-stream state for one Responses API response (also replays whole bodies)."""

    def __init__(self) -> None:
        self.finished = False
        self._started = False
        self._open: dict[str, _OpenPart] = {}
        self._emitted: set[str] = set()
        self._arguments_seen: set[str] = set()
        self._phases: dict[str, str] = {}
        self._unknown: set[str] = set()
        self._tool_calls = 0
        self._refusal = False
        self._text_at: tuple[str, object, str] | None = None
        self._summary_at: tuple[str, object, str] | None = None
        self._raw_at: tuple[str, object, str] | None = None
        self._handlers: dict[str, Callable[[Payload], Events]] = {
            "response.output_text.delta": self._text_delta,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_text.delta": self._raw_delta,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.created": self._lifecycle,
            "response.in_progress": self._lifecycle,
            "response.queued": self._lifecycle,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done_event,
            "response.reasoning_summary_part.added": self._summary_part_added,
            "response.reasoning_summary_text.done": self._summary_done,
            "response.reasoning_summary_part.done": self._summary_done,
            "response.reasoning_text.done": self._raw_done,
            "response.content_part.added": self._content_part_added,
            "response.content_part.done": self._content_part_done,
            "response.output_text.done": self._text_done,
            "response.refusal.done": self._text_done,
            "response.function_call_arguments.done": self._arguments_done,
            "response.completed": self._completed,
            "response.incomplete": self._incomplete,
            "response.failed": self._failed,
            "error": self._error,
        }

    # ------------------------------------------------------------------ dispatch

    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = event_name
        handler = self._handlers.get(kind)
        if handler is None:
            return self._unhandled(kind)
        return handler(payload)

    def finish(self) -> list[StreamEvent]:
        return self._close_all()

    def _unhandled(self, kind: str) -> Events:
        if kind in _INFORMATIONAL or kind.startswith(_INFORMATIONAL_PREFIXES):
            return []
        if kind in self._unknown:
            return []
        self._unknown.add(kind)
        return [
            Warning(
                code="UNKNOWN_EVENT",
                message=f"Skipped an unknown OpenAI Responses stream event {kind!r}.",
            )
        ]

    def _unknown_part(self, what: str, kind: object) -> Events:
        key = f"{what}:{kind}"
        if key in self._unknown:
            return []
        self._unknown.add(key)
        return [
            Warning(
                code="UNKNOWN_PART",
                message=f"Skipped an OpenAI Responses {what} of unknown type {kind!r}.",
            )
        ]

    # ------------------------------------------------------------------ hot path: deltas

    # Deltas of one part arrive back to back, so the last part each delta type wrote to
    # is remembered as (item id, index, part id): the common case is two dict reads and
    # one event, without building the part id again.

    def _text_delta(self, payload: Payload) -> Events:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        at = self._text_at
        if (
            at is not None
            and payload.get("item_id") == at[0]
            and payload.get("content_index", 0) == at[1]
        ):
            return [TextDelta(part_id=at[2], text=delta)]
        return self._text_delta_first(payload, delta, refusal=False)

    def _refusal_delta(self, payload: Payload) -> Events:
        self._refusal = True
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        return self._text_delta_first(payload, delta, refusal=True)

    def _text_delta_first(self, payload: Payload, delta: str, *, refusal: bool) -> Events:
        item_id = _item_id(payload)
        index = payload.get("content_index", 0)
        part_id = f"{item_id}/text/{index}"
        if item_id == payload.get("item_id"):
            self._text_at = (item_id, index, part_id)
        if part_id in self._emitted:
            return [TextDelta(part_id=part_id, text=delta)]
        return [
            self._open_text(part_id, item_id, refusal=refusal),
            TextDelta(part_id=part_id, text=delta),
        ]

    def _summary_delta(self, payload: Payload) -> Events:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        at = self._summary_at
        if (
            at is not None
            and payload.get("item_id") == at[0]
            and payload.get("summary_index", 0) == at[1]
        ):
            return [ReasoningDelta(part_id=at[2], text=delta)]
        item_id = _item_id(payload)
        index = payload.get("summary_index", 0)
        part_id = f"{item_id}/summary/{index}"
        if item_id == payload.get("item_id"):
            self._summary_at = (item_id, index, part_id)
        if part_id in self._emitted:
            return [ReasoningDelta(part_id=part_id, text=delta)]
        start = self._open_reasoning(
            part_id, "summary", {"item_id": item_id, "summary_index": index}
        )
        return [start, ReasoningDelta(part_id=part_id, text=delta)]

    def _raw_delta(self, payload: Payload) -> Events:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        at = self._raw_at
        if (
            at is not None
            and payload.get("item_id") == at[0]
            and payload.get("content_index", 0) == at[1]
        ):
            return [ReasoningDelta(part_id=at[2], text=delta)]
        item_id = _item_id(payload)
        index = payload.get("content_index", 0)
        part_id = f"{item_id}/raw/{index}"
        if item_id == payload.get("item_id"):
            self._raw_at = (item_id, index, part_id)
        if part_id in self._emitted:
            return [ReasoningDelta(part_id=part_id, text=delta)]
        start = self._open_reasoning(part_id, "raw", {"item_id": item_id, "content_index": index})
        return [start, ReasoningDelta(part_id=part_id, text=delta)]

    def _arguments_delta(self, payload: Payload) -> Events:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        item_id = _item_id(payload)
        part_id = f"{item_id}/call"
        self._arguments_seen.add(part_id)
        if part_id in self._emitted:
            return [ToolCallDelta(part_id=part_id, arguments_delta=delta)]
        # Arguments before the item was announced: the call id and name are not known.
        start = self._open_tool(part_id, item_id, item_id, "")
        return [start, ToolCallDelta(part_id=part_id, arguments_delta=delta)]

    # ------------------------------------------------------------------ lifecycle

    def _lifecycle(self, payload: Payload) -> Events:
        if self._started:
            return []
        response = payload.get("response")
        return self.started(response if isinstance(response, Mapping) else {})

    def started(self, response: Mapping[str, Any]) -> Events:
        """``ResponseStarted`` once per response."""
        if self._started:
            return []
        self._started = True
        response_id = response.get("id")
        model = response.get("model")
        return [
            ResponseStarted(
                response_id=response_id if isinstance(response_id, str) else None,
                model=model if isinstance(model, str) else None,
            )
        ]

    # ------------------------------------------------------------------ items

    def _item_added(self, payload: Payload) -> Events:
        item = payload.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        item_id = _own_id(item, payload)
        if kind == "function_call":
            part_id = f"{item_id}/call"
            if part_id in self._emitted:
                return []
            return [
                self._open_tool(
                    part_id, item_id, _str(item.get("call_id")) or item_id, _str(item.get("name"))
                )
            ]
        if kind == "message":
            phase = item.get("phase")
            if isinstance(phase, str):
                self._phases[item_id] = phase
            return []
        if kind == "reasoning":
            return []  # parts open with their summary/content events
        return self._unknown_part("output item", kind)

    def _item_done_event(self, payload: Payload) -> Events:
        item = payload.get("item")
        if not isinstance(item, Mapping):
            return []
        return self.item_done(item, _own_id(item, payload))

    def item_done(self, item: Mapping[str, Any], item_id: str) -> Events:
        """Complete an item from its final state: close what is open, emit what never
        streamed. Also the whole decoding of an item in a non-streaming body."""
        kind = item.get("type")
        if kind == "reasoning":
            return self._reasoning_done(item, item_id)
        if kind == "message":
            return self._message_done(item, item_id)
        if kind == "function_call":
            return self._function_call_done(item, item_id)
        return self._unknown_part("output item", kind)

    def _reasoning_done(self, item: Mapping[str, Any], item_id: str) -> Events:
        out: Events = []
        summary = item.get("summary")
        if isinstance(summary, list):
            for index, entry in enumerate(summary):
                if isinstance(entry, Mapping):
                    self._complete_reasoning(
                        out,
                        f"{item_id}/summary/{index}",
                        "summary",
                        entry.get("text"),
                        {"item_id": item_id, "summary_index": index},
                    )
        content = item.get("content")
        if isinstance(content, list):
            for index, entry in enumerate(content):
                if not isinstance(entry, Mapping):
                    continue
                if entry.get("type") != "reasoning_text":
                    out.extend(self._unknown_part("reasoning content", entry.get("type")))
                    continue
                self._complete_reasoning(
                    out,
                    f"{item_id}/raw/{index}",
                    "raw",
                    entry.get("text"),
                    {"item_id": item_id, "content_index": index},
                )
        encrypted = item.get("encrypted_content")
        part_id = f"{item_id}/encrypted"
        if isinstance(encrypted, str) and encrypted and part_id not in self._emitted:
            self._emitted.add(part_id)
            metadata = {"item_id": item_id, "encrypted_content": encrypted}
            out.append(
                ReasoningStart(part_id=part_id, kind="encrypted", provider_metadata=metadata)
            )
            out.append(ReasoningEnd(part_id=part_id, kind="encrypted", provider_metadata=metadata))
        return out

    def _complete_reasoning(
        self,
        out: Events,
        part_id: str,
        kind: ReasoningKind,
        text: object,
        metadata: ProviderMetadata,
    ) -> None:
        if part_id in self._open:
            out.append(self._close(part_id))
            return
        if part_id in self._emitted:
            return
        out.append(self._open_reasoning(part_id, kind, metadata))
        if isinstance(text, str) and text:
            out.append(ReasoningDelta(part_id=part_id, text=text))
        out.append(self._close(part_id))

    def _message_done(self, item: Mapping[str, Any], item_id: str) -> Events:
        out: Events = []
        phase = item.get("phase")
        if isinstance(phase, str):
            self._phases.setdefault(item_id, phase)
        content = item.get("content")
        if not isinstance(content, list):
            return out
        for index, part in enumerate(content):
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "output_text":
                text, refusal = part.get("text"), False
            elif kind == "refusal":
                text, refusal = part.get("refusal"), True
                self._refusal = True
            else:
                out.extend(self._unknown_part("message content part", kind))
                continue
            part_id = f"{item_id}/text/{index}"
            if part_id in self._open:
                out.append(self._close(part_id))
            elif part_id not in self._emitted:
                out.append(self._open_text(part_id, item_id, refusal=refusal))
                if isinstance(text, str) and text:
                    out.append(TextDelta(part_id=part_id, text=text))
                out.append(self._close(part_id))
        return out

    def _function_call_done(self, item: Mapping[str, Any], item_id: str) -> Events:
        out: Events = []
        part_id = f"{item_id}/call"
        if part_id not in self._emitted:
            call_id = _str(item.get("call_id")) or item_id
            out.append(self._open_tool(part_id, item_id, call_id, _str(item.get("name"))))
        if part_id in self._open:
            arguments = item.get("arguments")
            if part_id not in self._arguments_seen and isinstance(arguments, str) and arguments:
                self._arguments_seen.add(part_id)
                out.append(ToolCallDelta(part_id=part_id, arguments_delta=arguments))
            out.append(self._close(part_id))
        return out

    # ------------------------------------------------------------------ part events

    def _summary_part_added(self, payload: Payload) -> Events:
        item_id = _item_id(payload)
        index = payload.get("summary_index", 0)
        part_id = f"{item_id}/summary/{index}"
        if part_id in self._emitted:
            return []
        return [
            self._open_reasoning(part_id, "summary", {"item_id": item_id, "summary_index": index})
        ]

    def _summary_done(self, payload: Payload) -> Events:
        part_id = f"{_item_id(payload)}/summary/{payload.get('summary_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _raw_done(self, payload: Payload) -> Events:
        part_id = f"{_item_id(payload)}/raw/{payload.get('content_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _content_part_added(self, payload: Payload) -> Events:
        part = payload.get("part")
        kind = part.get("type") if isinstance(part, Mapping) else None
        item_id = _item_id(payload)
        index = payload.get("content_index", 0)
        if kind == "output_text" or kind == "refusal":
            part_id = f"{item_id}/text/{index}"
            if part_id in self._emitted:
                return []
            if kind == "refusal":
                self._refusal = True
            return [self._open_text(part_id, item_id, refusal=kind == "refusal")]
        if kind == "reasoning_text":
            part_id = f"{item_id}/raw/{index}"
            if part_id in self._emitted:
                return []
            return [
                self._open_reasoning(part_id, "raw", {"item_id": item_id, "content_index": index})
            ]
        return self._unknown_part("content part", kind)

    def _content_part_done(self, payload: Payload) -> Events:
        part = payload.get("part")
        kind = part.get("type") if isinstance(part, Mapping) else None
        index = payload.get("content_index", 0)
        section = "raw" if kind == "reasoning_text" else "text"
        part_id = f"{_item_id(payload)}/{section}/{index}"
        return [self._close(part_id)] if part_id in self._open else []

    def _text_done(self, payload: Payload) -> Events:
        part_id = f"{_item_id(payload)}/text/{payload.get('content_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _arguments_done(self, payload: Payload) -> Events:
        item_id = _item_id(payload)
        part_id = f"{item_id}/call"
        out: Events = []
        if part_id not in self._emitted:
            out.append(self._open_tool(part_id, item_id, item_id, _str(payload.get("name"))))
        if part_id not in self._open:
            return out
        arguments = payload.get("arguments")
        if part_id not in self._arguments_seen and isinstance(arguments, str) and arguments:
            self._arguments_seen.add(part_id)
            out.append(ToolCallDelta(part_id=part_id, arguments_delta=arguments))
        out.append(self._close(part_id))
        return out

    # ------------------------------------------------------------------ terminal events

    def _completed(self, payload: Payload) -> Events:
        response = payload.get("response")
        response = response if isinstance(response, Mapping) else {}
        out = self.replay_output(response)
        out.extend(self.completed(response))
        return out

    def _incomplete(self, payload: Payload) -> Events:
        response = payload.get("response")
        response = response if isinstance(response, Mapping) else {}
        out = self.replay_output(response)
        out.extend(self.incomplete(response))
        return out

    def replay_output(self, response: Mapping[str, Any]) -> Events:
        """Complete every item of a final response's ``output``. For a stream this only
        adds what never streamed (minimal compatible servers send little more than
        ``response.completed``); for a non-streaming body it is the whole decoding."""
        out = self.started(response)
        output = response.get("output")
        if not isinstance(output, list):
            return out
        for index, item in enumerate(output):
            if isinstance(item, Mapping):
                item_id = item.get("id")
                if not isinstance(item_id, str) or not item_id:
                    item_id = f"output_{index}"
                out.extend(self.item_done(item, item_id))
        return out

    def _failed(self, payload: Payload) -> Events:
        response = payload.get("response")
        return self.failed(response if isinstance(response, Mapping) else {})

    def _error(self, payload: Payload) -> Events:
        # Open parts stay open: the accumulator then marks them incomplete, which is
        # the truth about them.
        self.finished = True
        return [error_event(payload)]

    def completed(self, response: Mapping[str, Any]) -> Events:
        """The response finished normally: close parts, report usage and the finish."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        status = _str(response.get("status")) or "completed"
        if self._refusal:
            out.append(Finish(reason="refusal", raw_reason="refusal"))
        elif self._tool_calls:
            out.append(Finish(reason="tool_calls", raw_reason=status))
        else:
            out.append(Finish(reason="stop", raw_reason=status))
        self.finished = True
        return out

    def incomplete(self, response: Mapping[str, Any]) -> Events:
        """Stopped early (output budget, content filter): still a finish, not an error."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        out.append(incomplete_finish(response))
        self.finished = True
        return out

    def failed(self, response: Mapping[str, Any]) -> Events:
        """The provider failed the response: the error is the last event, and parts
        still open stay open (incomplete)."""
        out = self.started(response)
        self._append_usage(out, response)
        out.append(failed_response(response))
        self.finished = True
        return out

    def ended(self, response: Mapping[str, Any], finish: Finish) -> Events:
        """A terminal status without its own event type (``cancelled``)."""
        out = self.started(response)
        out.extend(self._close_all())
        self._append_usage(out, response)
        out.append(finish)
        self.finished = True
        return out

    def pending(self, response: Mapping[str, Any], status: str) -> Events:
        """A body whose response is not done yet (``queued``, ``in_progress``)."""
        out = self.started(response)
        out.append(
            Error(
                code="PROVIDER_INCOMPLETE",
                message=f"The OpenAI Responses API returned a response that is still {status}; "
                "thoughtline does not poll background responses.",
                retryable=False,
                provider_error_type=status,
            )
        )
        self.finished = True
        return out

    @staticmethod
    def _append_usage(out: Events, response: Mapping[str, Any]) -> None:
        usage = usage_event(response.get("usage"))
        if usage is not None:
            out.append(usage)

    # ------------------------------------------------------------------ part helpers

    def _open_reasoning(
        self, part_id: str, kind: ReasoningKind, metadata: ProviderMetadata
    ) -> ReasoningStart:
        self._emitted.add(part_id)
        self._open[part_id] = _OpenPart(_REASONING, kind, metadata)
        return ReasoningStart(part_id=part_id, kind=kind, provider_metadata=metadata)

    def _open_text(self, part_id: str, item_id: str, *, refusal: bool) -> TextStart:
        metadata: dict[str, str | bool] = {"item_id": item_id}
        phase = self._phases.get(item_id)
        if phase is not None:
            metadata["phase"] = phase
        if refusal:
            metadata["refusal"] = True
        self._emitted.add(part_id)
        self._open[part_id] = _OpenPart(_TEXT, None, metadata)
        return TextStart(part_id=part_id, provider_metadata=metadata)

    def _open_tool(self, part_id: str, item_id: str, call_id: str, name: str) -> ToolCallStart:
        metadata = {"item_id": item_id}
        self._emitted.add(part_id)
        self._tool_calls += 1
        self._open[part_id] = _OpenPart(_TOOL, None, metadata)
        return ToolCallStart(
            part_id=part_id, tool_call_id=call_id, name=name, provider_metadata=metadata
        )

    def _close(self, part_id: str) -> StreamEvent:
        part = self._open.pop(part_id)
        if part.category == _REASONING:
            assert part.kind is not None
            return ReasoningEnd(part_id=part_id, kind=part.kind, provider_metadata=part.metadata)
        if part.category == _TEXT:
            return TextEnd(part_id=part_id, provider_metadata=part.metadata)
        return ToolCallEnd(part_id=part_id, provider_metadata=part.metadata)

    def _close_all(self) -> Events:
        return [self._close(part_id) for part_id in list(self._open)]


def _item_id(payload: Payload) -> str:
    item_id = payload.get("item_id")
    if isinstance(item_id, str) and item_id:
        return item_id
    # Some compatible servers omit ids; the output index is stable within a response.
    return f"output_{payload.get('output_index', 0)}"


def _own_id(item: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    item_id = item.get("id")
    if isinstance(item_id, str) and item_id:
        return item_id
    return f"output_{payload.get('output_index', 0)}"


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""

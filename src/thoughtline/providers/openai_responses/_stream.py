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
emitted from the item itself; the non-streaming body is decoded the same way. Items
are correlated by ``output_index`` (see ``_parts``), so servers whose item ids change
between events never get a part emitted twice; a ``[DONE]`` after the terminal event
is skipped by the SSE decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from thoughtline.model.events import (
    ReasoningDelta,
    StreamEvent,
    StreamWarning,
    TextDelta,
    ToolCallDelta,
)
from thoughtline.providers.base import PayloadTranslator
from thoughtline.providers.openai_responses._errors import error_event
from thoughtline.providers.openai_responses._finish import ResponseEnding
from thoughtline.providers.openai_responses._parts import (
    Events,
    Payload,
    as_str,
)

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


class ResponsesTranslator(ResponseEnding, PayloadTranslator):
    """Per-stream state for one Responses API response (also replays whole bodies).

    Event dispatch and the delta hot path live here; part bookkeeping, item completion
    and the terminal mapping come from the layers below (``_parts``, ``_items``,
    ``_finish``).
    """

    def __init__(self) -> None:
        super().__init__()
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
            StreamWarning(
                code="UNKNOWN_EVENT",
                message=f"Skipped an unknown OpenAI Responses stream event {kind!r}.",
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
        item_id = self.item_id_of(payload)
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
        item_id = self.item_id_of(payload)
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
        item_id = self.item_id_of(payload)
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
        item_id = self.item_id_of(payload)
        part_id = f"{item_id}/call"
        self._arguments_seen.add(part_id)
        if part_id in self._emitted:
            return [ToolCallDelta(part_id=part_id, arguments_delta=delta)]
        # Arguments before the item was announced: the call id and name are not known.
        start = self._open_tool(part_id, item_id, item_id, "")
        return [start, ToolCallDelta(part_id=part_id, arguments_delta=delta)]

    # ------------------------------------------------------------------ lifecycle and items

    def _lifecycle(self, payload: Payload) -> Events:
        if self._started:
            return []
        response = payload.get("response")
        return self.started(response if isinstance(response, Mapping) else {})

    def _item_added(self, payload: Payload) -> Events:
        item = payload.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        item_id = self.item_id_of(payload, item)
        if kind == "function_call":
            part_id = f"{item_id}/call"
            if part_id in self._emitted:
                return []
            return [
                self._open_tool(
                    part_id,
                    item_id,
                    as_str(item.get("call_id")) or item_id,
                    as_str(item.get("name")),
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
        return self.item_done(item, self.item_id_of(payload, item))

    # ------------------------------------------------------------------ part events

    def _summary_part_added(self, payload: Payload) -> Events:
        item_id = self.item_id_of(payload)
        index = payload.get("summary_index", 0)
        part_id = f"{item_id}/summary/{index}"
        if part_id in self._emitted:
            return []
        return [
            self._open_reasoning(part_id, "summary", {"item_id": item_id, "summary_index": index})
        ]

    def _summary_done(self, payload: Payload) -> Events:
        part_id = f"{self.item_id_of(payload)}/summary/{payload.get('summary_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _raw_done(self, payload: Payload) -> Events:
        part_id = f"{self.item_id_of(payload)}/raw/{payload.get('content_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _content_part_added(self, payload: Payload) -> Events:
        part = payload.get("part")
        kind = part.get("type") if isinstance(part, Mapping) else None
        item_id = self.item_id_of(payload)
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
        part_id = f"{self.item_id_of(payload)}/{section}/{index}"
        return [self._close(part_id)] if part_id in self._open else []

    def _text_done(self, payload: Payload) -> Events:
        part_id = f"{self.item_id_of(payload)}/text/{payload.get('content_index', 0)}"
        return [self._close(part_id)] if part_id in self._open else []

    def _arguments_done(self, payload: Payload) -> Events:
        item_id = self.item_id_of(payload)
        part_id = f"{item_id}/call"
        out: Events = []
        if part_id not in self._emitted:
            out.append(self._open_tool(part_id, item_id, item_id, as_str(payload.get("name"))))
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

    def _failed(self, payload: Payload) -> Events:
        response = payload.get("response")
        return self.failed(response if isinstance(response, Mapping) else {})

    def _error(self, payload: Payload) -> Events:
        # Open parts stay open: the accumulator then marks them incomplete, which is
        # the truth about them.
        self.finished = True
        return [error_event(payload)]

"""Completing Responses API output items from their final state: close what is open,
emit what never streamed. Also the whole decoding of a non-streaming body's items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.model.events import (
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    TextDelta,
    ToolCallDelta,
)
from thoughtline.providers.openai_responses._parts import Events, ResponseParts, as_str


class ResponseItems(ResponseParts):
    """Item completion on top of the part bookkeeping."""

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
                # The position in ``output`` is the item's output index.
                out.extend(self.item_done(item, self.item_id_at(index, item.get("id"))))
        return out

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
            call_id = as_str(item.get("call_id")) or item_id
            out.append(self._open_tool(part_id, item_id, call_id, as_str(item.get("name"))))
        if part_id in self._open:
            arguments = item.get("arguments")
            if part_id not in self._arguments_seen and isinstance(arguments, str) and arguments:
                self._arguments_seen.add(part_id)
                out.append(ToolCallDelta(part_id=part_id, arguments_delta=arguments))
            out.append(self._close(part_id))
        return out

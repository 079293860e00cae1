"""Part bookkeeping for one Responses API response: which parts are open, which were
emitted, and the events that open and close them.

Part ids are derived from the provider's item id and index (``rs_1/summary/0``,
``msg_1/text/0``, ``fc_1/call``), so they are unique and deterministic.

Items are correlated by ``output_index``, not by id: some compatible servers (OpenRouter,
Copilot, Azure, LM Studio) send a new ``item_id`` with every event, or another id in
``response.completed.output`` than in the stream. The first id seen at an output index
names that item for the whole response, so its parts are emitted once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.model.events import (
    ProviderMetadata,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    StreamWarning,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallStart,
)

Payload = dict[str, Any]
Events = list[StreamEvent]

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


class ResponseParts:
    """The state of one response's parts, shared by the stream translator's layers
    (item completion, terminal mapping, event dispatch)."""

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
        self._id_at_index: dict[int, str] = {}
        self._id_by_alias: dict[str, str] = {}

    def item_id_of(self, payload: Mapping[str, Any], item: Mapping[str, Any] | None = None) -> str:
        """The id that names the item an event (or an announced item) belongs to."""
        raw_id = (item if item is not None else payload).get(
            "id" if item is not None else "item_id"
        )
        return self.item_id_at(payload.get("output_index"), raw_id)

    def item_id_at(self, output_index: object, raw_id: object) -> str:
        """The first id seen at ``output_index`` (see the module docstring); without an
        index, the id itself (or an alias recorded for it)."""
        given = raw_id if isinstance(raw_id, str) and raw_id else None
        if isinstance(output_index, int) and not isinstance(output_index, bool):
            known = self._id_at_index.get(output_index)
            if known is None:
                known = given or f"output_{output_index}"
                self._id_at_index[output_index] = known
            if given is not None:
                self._id_by_alias.setdefault(given, known)
            return known
        if given is not None:
            return self._id_by_alias.get(given, given)
        return "output_0"

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

    def _unknown_part(self, what: str, kind: object) -> Events:
        key = f"{what}:{kind}"
        if key in self._unknown:
            return []
        self._unknown.add(key)
        return [
            StreamWarning(
                code="UNKNOWN_PART",
                message=f"Skipped an OpenAI Responses {what} of unknown type {kind!r}.",
            )
        ]

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


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""

"""Reasoning and answer text that arrive as alternating runs.

Gemini (thought parts) and Ollama (``message.thinking`` / ``message.content``) send no
part boundaries: consecutive pieces of one kind continue one part, and a change of kind
closes it and opens the next. This is that bookkeeping, once.
"""

from __future__ import annotations

from collections.abc import Callable

from thoughtline.model.events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
)

_NONE, _REASONING, _TEXT = 0, 1, 2


class AlternatingRuns:
    """Appends the events for each piece to ``out``; ``new_id(prefix)`` names new parts."""

    __slots__ = ("_new_id", "_open", "_open_id", "_reasoning_kind")

    def __init__(self, reasoning_kind: ReasoningKind, new_id: Callable[[str], str]) -> None:
        self._reasoning_kind: ReasoningKind = reasoning_kind
        self._new_id = new_id
        self._open = _NONE
        self._open_id = ""

    def reasoning(self, text: str, out: list[StreamEvent]) -> None:
        if self._open != _REASONING:
            self.close(out)
            self._open, self._open_id = _REASONING, self._new_id("reasoning")
            out.append(ReasoningStart(part_id=self._open_id, kind=self._reasoning_kind))
        out.append(ReasoningDelta(part_id=self._open_id, text=text))

    def text(self, text: str, out: list[StreamEvent]) -> None:
        if self._open != _TEXT:
            self.close(out)
            self._open, self._open_id = _TEXT, self._new_id("text")
            out.append(TextStart(part_id=self._open_id))
        out.append(TextDelta(part_id=self._open_id, text=text))

    def close(self, out: list[StreamEvent]) -> None:
        """Close the open run, if any (before a tool call, a signature, or the end)."""
        if self._open == _REASONING:
            out.append(ReasoningEnd(part_id=self._open_id, kind=self._reasoning_kind))
        elif self._open == _TEXT:
            out.append(TextEnd(part_id=self._open_id))
        self._open = _NONE

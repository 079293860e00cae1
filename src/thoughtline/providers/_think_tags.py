"""Sans-IO streaming splitter for ``<think>…</think>`` reasoning inline in ``content``.

Servers that do not parse reasoning out of tag-based models (llama.cpp with
``--reasoning-format none``, plain chat templates, Ollama when ``think`` is not honoured,
some upstreams behind OpenRouter) send it inline in the answer text::

    "<think>\\nThe user wants…\\n</think>\\n\\nThe answer is 4."

:class:`ThinkTagSplitter` takes ``content`` deltas as they arrive and returns segments
tagged ``reasoning`` or ``text``. Tags may be split across deltas at any character
boundary (``"<thi"`` + ``"nk>"``): the longest suffix that could still start a tag is
held back, and released unchanged as soon as it turns out not to be one. Each input
character is examined a bounded number of times, so work is linear in the input size.

Modes:

- ``think_tags``: every ``<think>`` … ``</think>`` block anywhere in the content is
  reasoning.
- ``auto``: only a ``<think>`` at the very start of the content (after optional
  whitespace) opens reasoning, and only once; anything else passes through as text, so
  an answer that merely mentions ``<think>`` is left alone. The decision is made per
  response: when the server's reasoning field arrives before any content
  (:meth:`ThinkTagSplitter.reasoning_arrived`), that field is the reasoning and the
  content is answer text as it comes. Until the decision, at most the leading
  whitespace and a prefix of ``<think>`` (six characters) are held back.

Whitespace between ``</think>`` and the answer is dropped: it is an artefact of the tag
format (templates put ``"\\n\\n"`` there), not part of the answer.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

SegmentKind: TypeAlias = Literal["reasoning", "text"]
Segment: TypeAlias = tuple[SegmentKind, str]
SplitMode: TypeAlias = Literal["think_tags", "auto"]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"
_WHITESPACE = " \t\r\n"


def _partial_tag_suffix(text: str, start: int, tag: str) -> int:
    """Length of the longest suffix of ``text[start:]`` that is a proper prefix of ``tag``.

    Both tags contain ``<`` only at their start, so the only candidate suffix starts at
    the last ``<`` within the final ``len(tag) - 1`` characters.
    """
    bracket = text.rfind("<", max(start, len(text) - len(tag) + 1))
    if bracket < 0:
        return 0
    return len(text) - bracket if tag.startswith(text[bracket:]) else 0


class ThinkTagSplitter:
    """Feed ``content`` deltas; get ``(kind, text)`` segments back. See the module docstring."""

    __slots__ = ("_held_space", "_inside", "_mode", "_passthrough", "_pending", "_strip_space")

    def __init__(self, mode: SplitMode = "think_tags") -> None:
        self._mode = mode
        self._inside = False
        # A possible partial tag at the end of the last delta (shorter than the tag).
        self._pending = ""
        # auto mode, before the first non-whitespace character: whitespace held until we
        # know whether a <think> follows (then it is dropped) or text (then released).
        self._held_space: list[str] | None = [] if mode == "auto" else None
        self._passthrough = False
        self._strip_space = False

    def reasoning_arrived(self) -> None:
        """The server's own reasoning field arrived. In ``auto`` mode, before any
        content, it settles this response: the reasoning is in that field, and the
        content is answer text, ``<think>`` or not. Once content has started, the
        decision it led to stands."""
        if self._held_space is not None and not self._held_space and not self._pending:
            self._held_space = None
            self._passthrough = True

    @property
    def inside_reasoning(self) -> bool:
        """True while inside an unclosed ``<think>`` block."""
        return self._inside

    def feed(self, chunk: str) -> list[Segment]:
        """Segments completed by this delta (adjacent segments of one kind are merged)."""
        out: list[Segment] = []
        if not chunk:
            return out
        if self._passthrough and not self._strip_space:
            out.append(("text", chunk))
            return out
        text = self._pending + chunk if self._pending else chunk
        self._pending = ""
        position = 0
        length = len(text)
        while position < length:
            if self._held_space is not None:
                position = self._scan_start(text, position, out)
                if self._passthrough:
                    if position < length:
                        _emit(out, "text", text[position:])
                    return out
                continue
            if self._inside:
                end = self._until(CLOSE_TAG, "reasoning", text, position, out)
                if end < 0:
                    return out
                position = end + len(CLOSE_TAG)
                self._inside = False
                self._strip_space = True
                if self._mode == "auto":
                    # auto mode honours one leading block only; the rest is answer text.
                    self._passthrough = True
                continue
            if self._strip_space:
                while position < length and text[position] in _WHITESPACE:
                    position += 1
                if position == length:
                    return out
                self._strip_space = False
            if self._passthrough:
                _emit(out, "text", text[position:])
                return out
            start = self._until(OPEN_TAG, "text", text, position, out)
            if start < 0:
                return out
            position = start + len(OPEN_TAG)
            self._inside = True
        return out

    def _until(
        self, tag: str, kind: SegmentKind, text: str, position: int, out: list[Segment]
    ) -> int:
        """``text[position:]`` up to ``tag`` emitted as ``kind``; the tag's index, or -1
        when it is not there (a possible partial tag at the end is then kept for the
        next delta)."""
        found = text.find(tag, position)
        if found < 0:
            keep = _partial_tag_suffix(text, position, tag)
            _emit(out, kind, text[position : len(text) - keep])
            self._pending = text[len(text) - keep :]
            return -1
        _emit(out, kind, text[position:found])
        return found

    def _scan_start(self, text: str, position: int, out: list[Segment]) -> int:
        """auto mode, before anything but whitespace: look for a leading ``<think>``."""
        held = self._held_space
        assert held is not None
        length = len(text)
        first = position
        while first < length and text[first] in _WHITESPACE:
            first += 1
        if first > position:
            held.append(text[position:first])
        if first == length:
            return length
        rest_length = length - first
        if rest_length >= len(OPEN_TAG) or not OPEN_TAG.startswith(text[first:]):
            self._held_space = None
            if text.startswith(OPEN_TAG, first):
                self._inside = True  # leading whitespace before the tag is dropped
                return first + len(OPEN_TAG)
            self._passthrough = True
            if held:
                _emit(out, "text", "".join(held))
            return first
        # Only a prefix of "<think>" so far: wait for more.
        self._pending = text[first:]
        return length

    def flush(self) -> list[Segment]:
        """The content ended: release whatever was held back, unchanged."""
        out: list[Segment] = []
        if self._held_space is not None:
            held = "".join(self._held_space)
            self._held_space = None
            if held or self._pending:
                _emit(out, "text", held + self._pending)
            self._pending = ""
            return out
        if self._pending:
            _emit(out, "reasoning" if self._inside else "text", self._pending)
            self._pending = ""
        return out


def content_splitter(reasoning_field: str, *, think_tags: bool) -> ThinkTagSplitter | None:
    """The splitter one response's answer text goes through, on a wire (and dialect)
    whose servers may leave ``<think>`` tags in it; ``None`` when the text is taken as
    it comes. ``think_tags``: the endpoint may also split every block
    (``reasoning_field = "think_tags"``, the raw-reasoning dialect); otherwise only
    ``auto``, every built-in endpoint's default, splits. Each wire decides whether its
    answer text is tagged (``openai_chat``, ``ollama``); its adapter and its provider-raw
    scrubber both build their splitter here, so they split alike."""
    if think_tags and reasoning_field == "think_tags":
        return ThinkTagSplitter("think_tags")
    if reasoning_field == "auto":
        return ThinkTagSplitter("auto")
    return None


def _emit(out: list[Segment], kind: SegmentKind, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == kind:
        out[-1] = (kind, out[-1][1] + text)
    else:
        out.append((kind, text))

"""``chat.completion.chunk`` payloads → events, for every dialect.

One translator serves streams and whole bodies (``_response.py`` turns a
``chat.completion`` into the chunk it would have streamed), so the two paths cannot
drift. Per chunk, only ``choices[0]`` is read (thoughtline never asks for ``n > 1``), in
this order: reasoning, content (through the ``<think>`` splitter when configured),
refusal, tool calls, ``finish_reason``, then ``usage``.

Parts are sequential: a reasoning or text part stays open while deltas for it keep
coming and closes when something else starts; tool calls stay open (by ``index``) until
the finish. Part ids are ``reasoning-N``, ``text-N``, ``tool-N`` in order of appearance.

Reasoning sources by dialect:

- ``openai``: none (hosted chat completions never return reasoning text); only
  ``usage.completion_tokens_details.reasoning_tokens``.
- ``openrouter``: ``delta.reasoning_details[]`` is the structured source of truth,
  grouped into parts by ``(type, index)``; the plain ``delta.reasoning`` string repeats
  their text and is used only when no details arrive.
- ``raw-reasoning``: ``delta.reasoning_content`` or ``delta.reasoning`` (vLLM sent both
  with the same text for a while, so one is read per chunk), plus ``<think>`` tags in
  ``content`` when the endpoint's ``reasoning_field`` is ``think_tags`` or ``auto``
  (the built-in endpoints' default: a leading block, unless a reasoning field came
  first; decided per response).
- ``openrouter`` also splits a leading ``<think>`` block out of ``content`` when no
  reasoning arrived first and ``reasoning_field`` is ``auto`` (the default).

In every dialect ``content`` may also be a list of typed chunks (Mistral / Magistral:
``thinking`` chunks are raw reasoning, ``text`` chunks the answer; other chunk types are
skipped with a warning), and usage may come as Groq's ``x_groq.usage`` (``_usage.py``).
"""

from __future__ import annotations

from typing import Any, Final

from thoughtline.model.events import (
    Finish,
    FinishReason,
    MetadataValue,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from thoughtline.providers._think_tags import Segment, ThinkTagSplitter, content_splitter
from thoughtline.providers.base import PayloadTranslator
from thoughtline.providers.endpoints import ChatDialect, ReasoningField
from thoughtline.providers.openai_chat._content_chunks import content_pieces
from thoughtline.providers.openai_chat._errors import stream_error_event
from thoughtline.providers.openai_chat._usage import chunk_usage
from thoughtline.providers.openai_chat._usage import int_or_none as _int
from thoughtline.wire.openrouter import SUMMARY_FORMATS

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
}

# OpenRouter models whose upstream returns summaries, for the rare plain ``reasoning``
# string without ``reasoning_details`` (which would name the format). gpt-oss is raw.
_SUMMARY_MODEL_PREFIXES: Final[tuple[str, ...]] = ("anthropic/", "google/", "openai/")
_RAW_MODEL_PREFIXES: Final[tuple[str, ...]] = ("openai/gpt-oss",)

_DETAIL_KEYS: Final[tuple[str, ...]] = ("type", "format", "id", "index")


class _Part:
    """The open reasoning or text part."""

    __slots__ = (
        "base_kind",
        "data",
        "has_text",
        "key",
        "metadata",
        "part_id",
        "reasoning",
        "signature",
    )

    def __init__(self, key: tuple[Any, ...], part_id: str, reasoning: bool) -> None:
        self.key = key
        self.part_id = part_id
        self.reasoning = reasoning
        self.base_kind: ReasoningKind = "raw"
        self.metadata: dict[str, MetadataValue] = {}
        self.has_text = False
        self.signature: list[str] = []
        self.data: list[str] = []

    def final_kind(self) -> ReasoningKind:
        if not self.has_text and (self.signature or self.data):
            return "encrypted"
        return self.base_kind

    def final_metadata(self) -> dict[str, MetadataValue]:
        metadata = dict(self.metadata)
        if self.signature:
            metadata["signature"] = "".join(self.signature)
        if self.data:
            metadata["data"] = "".join(self.data)
        return metadata


def _detail_metadata(detail: dict[str, Any]) -> dict[str, MetadataValue]:
    metadata: dict[str, MetadataValue] = {}
    for key in _DETAIL_KEYS:
        if key in detail:
            value = detail[key]
            if value is None or isinstance(value, str | int | float | bool):
                metadata[key] = value
    return metadata


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def answer_splitter(dialect: str | None, reasoning_field: str) -> ThinkTagSplitter | None:
    """The ``<think>`` splitter of one choice's answer text: raw-reasoning servers split
    with ``think_tags`` or ``auto``, OpenRouter with ``auto`` (an upstream may leave its
    ``<think>`` in the answer); hosted OpenAI's text is taken as it comes."""
    raw = dialect == "raw-reasoning"
    if not raw and dialect != "openrouter":
        return None
    return content_splitter(reasoning_field, think_tags=raw)


class ChatTranslator(PayloadTranslator):
    """Translator for ``chat.completion.chunk`` payloads (see the module docstring)."""

    def __init__(
        self,
        *,
        dialect: ChatDialect,
        reasoning_field: ReasoningField,
        provider: str,
        model: str,
        raw_text_model: bool = False,
    ) -> None:
        self._provider = provider
        self._openrouter = dialect == "openrouter"
        self._raw = dialect == "raw-reasoning"
        self._splitter = answer_splitter(dialect, reasoning_field)
        # The model's capability data wins over the wire format: Claude 3.7 Sonnet
        # returns full thinking although OpenRouter labels it anthropic-claude-v1.
        self._raw_text_model = raw_text_model
        self._plain_kind: ReasoningKind = "raw"
        if self._openrouter and not raw_text_model:
            self._plain_kind = self._plain_kind_for(model)
        self._started = False
        self._current: _Part | None = None
        self._tools: dict[int, str] = {}
        self._tool_ids: dict[str, int] = {}
        self._counts = {"reasoning": 0, "text": 0, "tool": 0}
        self._details_seen = False
        self._refused = False
        self._warned: set[tuple[str, str]] = set()

    @staticmethod
    def _plain_kind_for(model: str) -> ReasoningKind:
        if model.startswith(_RAW_MODEL_PREFIXES):
            return "raw"
        return "summary" if model.startswith(_SUMMARY_MODEL_PREFIXES) else "raw"

    # ------------------------------------------------------------------ payloads

    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        error = payload.get("error")
        if error:
            out.append(stream_error_event(error, provider=self._provider))
            return out
        choices = payload.get("choices")
        if not self._started and (payload.get("id") or payload.get("model") or choices):
            self._started = True
            response_id = payload.get("id")
            model = payload.get("model")
            out.append(
                ResponseStarted(
                    response_id=response_id
                    if isinstance(response_id, str) and response_id
                    else None,
                    model=model if isinstance(model, str) and model else None,
                )
            )
        if choices and isinstance(choices, list):
            choice = choices[0]
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                delta = choice.get("delta")
                if isinstance(delta, dict) and delta:
                    self._delta(delta, out)
                finish_reason = choice.get("finish_reason")
                if finish_reason:
                    self._finish_reason(str(finish_reason), out)
        usage = chunk_usage(payload)
        if usage is not None:
            out.append(usage)
        return out

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        if self._openrouter:
            details = delta.get("reasoning_details")
            if details:
                self._details_seen = True
                self._reasoning_arrived()
                self._details(details, out)
            elif not self._details_seen:
                plain = delta.get("reasoning")
                if plain and isinstance(plain, str):
                    self._reasoning_arrived()
                    self._reasoning_text(("plain",), self._plain_kind, plain, out)
        elif self._raw:
            plain = delta.get("reasoning_content") or delta.get("reasoning")
            if plain and isinstance(plain, str):
                self._reasoning_arrived()
                self._reasoning_text(("plain",), "raw", plain, out)
        content = delta.get("content")
        if content and isinstance(content, str):
            self._content_text(content, out)
        elif content and isinstance(content, list):
            self._content_list(content, out)
        refusal = delta.get("refusal")
        if refusal and isinstance(refusal, str):
            self._refused = True
            self._text(refusal, out, refusal=True)
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._tool_calls(tool_calls, out)

    def _reasoning_arrived(self) -> None:
        if self._splitter is not None:
            self._splitter.reasoning_arrived()

    def _content_text(self, content: str, out: list[StreamEvent]) -> None:
        if self._splitter is None:
            self._text(content, out)
        else:
            self._segments(self._splitter.feed(content), out)

    def _content_list(self, content: list[Any], out: list[StreamEvent]) -> None:
        """Mistral's typed chunks: thinking is raw reasoning, text is the answer."""
        for piece in content_pieces(content):
            if piece.kind == "text":
                self._content_text(piece.text, out)
            elif piece.kind == "reasoning":
                part = self._current
                if part is None or part.key != ("thinking",):
                    part = self._reasoning_part(("thinking",), "raw", {}, out)
                if piece.text:
                    part.has_text = True
                    out.append(ReasoningDelta(part_id=part.part_id, text=piece.text))
                if piece.signature:
                    part.signature.append(piece.signature)
            else:
                self._warn_unknown(piece.chunk_type, out, what="a content chunk")

    def _segments(self, segments: list[Segment], out: list[StreamEvent]) -> None:
        for kind, text in segments:
            if kind == "reasoning":
                self._reasoning_text(("think",), "raw", text, out)
            else:
                self._text(text, out)

    # ------------------------------------------------------------------ parts

    def _next_id(self, kind: str) -> str:
        number = self._counts[kind]
        self._counts[kind] = number + 1
        return f"{kind}-{number}"

    def _close_current(self, out: list[StreamEvent]) -> None:
        part = self._current
        if part is None:
            return
        self._current = None
        if part.reasoning:
            out.append(
                ReasoningEnd(
                    part_id=part.part_id,
                    kind=part.final_kind(),
                    provider_metadata=part.final_metadata(),
                )
            )
        else:
            out.append(TextEnd(part_id=part.part_id, provider_metadata=part.metadata))

    def _reasoning_part(
        self,
        key: tuple[Any, ...],
        kind: ReasoningKind,
        metadata: dict[str, MetadataValue],
        out: list[StreamEvent],
        *,
        start_kind: ReasoningKind | None = None,
    ) -> _Part:
        part = self._current
        if part is not None and part.key == key:
            return part
        self._close_current(out)
        part = _Part(key, self._next_id("reasoning"), reasoning=True)
        part.base_kind = kind
        part.metadata = metadata
        self._current = part
        out.append(
            ReasoningStart(
                part_id=part.part_id, kind=start_kind or kind, provider_metadata=dict(metadata)
            )
        )
        return part

    def _reasoning_text(
        self, key: tuple[Any, ...], kind: ReasoningKind, text: str, out: list[StreamEvent]
    ) -> None:
        part = self._current
        if part is None or part.key != key:
            part = self._reasoning_part(key, kind, {}, out)
        part.has_text = True
        out.append(ReasoningDelta(part_id=part.part_id, text=text))

    def _text(self, text: str, out: list[StreamEvent], *, refusal: bool = False) -> None:
        key = ("refusal",) if refusal else ("text",)
        part = self._current
        if part is None or part.key != key:
            self._close_current(out)
            part = _Part(key, self._next_id("text"), reasoning=False)
            if refusal:
                part.metadata = {"refusal": True}
            self._current = part
            out.append(TextStart(part_id=part.part_id, provider_metadata=dict(part.metadata)))
        out.append(TextDelta(part_id=part.part_id, text=text))

    # ------------------------------------------------------------------ openrouter details

    def _details(self, details: Any, out: list[StreamEvent]) -> None:
        if not isinstance(details, list):
            return
        for detail in details:
            if not isinstance(detail, dict):
                continue
            detail_type = detail.get("type")
            if detail_type == "reasoning.text":
                self._text_detail(detail, out)
            elif detail_type == "reasoning.summary":
                self._summary_detail(detail, out)
            elif detail_type == "reasoning.encrypted":
                self._encrypted_detail(detail, out)
            else:
                self._warn_unknown(str(detail_type), out)

    def _detail_part(
        self,
        detail: dict[str, Any],
        kind: ReasoningKind,
        out: list[StreamEvent],
        *,
        start_kind: ReasoningKind | None = None,
    ) -> _Part:
        key = ("detail", detail.get("type"), detail.get("index"))
        current = self._current
        if current is not None and current.key == key:
            # Later details of the same part may fill in format/id; keep the values.
            for name, value in _detail_metadata(detail).items():
                if value is not None or name not in current.metadata:
                    current.metadata[name] = value
            if detail.get("format") is not None:
                current.base_kind = kind
            return current
        return self._reasoning_part(key, kind, _detail_metadata(detail), out, start_kind=start_kind)

    def _text_detail(self, detail: dict[str, Any], out: list[StreamEvent]) -> None:
        text = _text_of(detail.get("text"))
        signature = _text_of(detail.get("signature"))
        if not text and not signature:
            return
        fmt = detail.get("format")
        summary = fmt in SUMMARY_FORMATS and not self._raw_text_model
        kind: ReasoningKind = "summary" if summary else "raw"
        part = self._detail_part(detail, kind, out, start_kind=None if text else "encrypted")
        if text:
            part.has_text = True
            out.append(ReasoningDelta(part_id=part.part_id, text=text))
        if signature:
            part.signature.append(signature)

    def _summary_detail(self, detail: dict[str, Any], out: list[StreamEvent]) -> None:
        summary = _text_of(detail.get("summary"))
        if not summary:
            return
        part = self._detail_part(detail, "summary", out)
        part.has_text = True
        out.append(ReasoningDelta(part_id=part.part_id, text=summary))

    def _encrypted_detail(self, detail: dict[str, Any], out: list[StreamEvent]) -> None:
        data = _text_of(detail.get("data"))
        if not data:
            return
        part = self._detail_part(detail, "encrypted", out)
        part.data.append(data)

    def _warn_unknown(
        self, detail_type: str, out: list[StreamEvent], *, what: str = "a reasoning detail"
    ) -> None:
        if (what, detail_type) in self._warned:
            return
        self._warned.add((what, detail_type))
        out.append(
            StreamWarning(
                code="UNKNOWN_PART",
                message=f"{self._provider} sent {what} of unknown type "
                f"{detail_type!r}; it was skipped.",
            )
        )

    # ------------------------------------------------------------------ tool calls

    def _tool_calls(self, calls: Any, out: list[StreamEvent]) -> None:
        if not isinstance(calls, list):
            return
        for call in calls:
            if not isinstance(call, dict):
                continue
            index = _int(call.get("index"))
            if index is None:
                index = self._index_without_index(call.get("id"))
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            part_id = self._tools.get(index)
            if part_id is None:
                self._close_current(out)
                part_id = self._next_id("tool")
                self._tools[index] = part_id
                call_id = call.get("id")
                out.append(
                    ToolCallStart(
                        part_id=part_id,
                        tool_call_id=call_id
                        if isinstance(call_id, str) and call_id
                        else f"call_{index}",
                        name=_text_of(function.get("name")),
                    )
                )
            arguments = function.get("arguments")
            if arguments and isinstance(arguments, str):
                out.append(ToolCallDelta(part_id=part_id, arguments_delta=arguments))

    def _index_without_index(self, call_id: Any) -> int:
        """Some servers omit ``index``: a new id starts a new call, else continue the last."""
        if isinstance(call_id, str) and call_id:
            known = self._tool_ids.get(call_id)
            if known is not None:
                return known
            index = max(self._tools, default=-1) + 1
            self._tool_ids[call_id] = index
            return index
        return max(self._tools, default=0)

    # ------------------------------------------------------------------ the end

    def _close_all(self, out: list[StreamEvent]) -> None:
        if self._splitter is not None:
            self._segments(self._splitter.flush(), out)
        self._close_current(out)
        for part_id in self._tools.values():
            out.append(ToolCallEnd(part_id=part_id))
        self._tools.clear()

    def _finish_reason(self, raw: str, out: list[StreamEvent]) -> None:
        self._close_all(out)
        reason = FINISH_REASONS.get(raw, "other")
        if reason == "stop" and self._refused:
            reason = "refusal"
        out.append(Finish(reason=reason, raw_reason=raw))

    def finish(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        self._close_all(out)
        return out

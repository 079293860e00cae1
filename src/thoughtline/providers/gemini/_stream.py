"""Gemini ``GenerateContentResponse`` chunks → events.

Each SSE ``data:`` line is a whole ``GenerateContentResponse``; there are no event names
and no ``[DONE]``: a candidate's ``finishReason`` (or a ``promptFeedback.blockReason``
without candidates) ends the response, and the connection then simply closes. The same
translator reads the single non-streaming body, so both paths yield the same events.

Parts:

- ``{"text": ..., "thought": true}`` → reasoning of kind ``summary`` (Gemini only ever
  returns thought summaries);
- ``{"text": ...}`` → answer text;
- ``{"functionCall": {"name", "args", "id"?}}`` → a complete tool call;
- ``thoughtSignature`` may sit on ANY part — a thought, text, a function call or an
  empty-text part — and may arrive in a later chunk than the text it belongs to. Each
  signature becomes its own ``encrypted`` reasoning part whose ``provider_metadata``
  keeps the value byte-for-byte with what it was attached to, so none is lost or merged.
  A function call's signature is also kept on the tool call (Gemini 3 requires it back
  on the same part in the next turn).

Consecutive thought parts (across chunks) continue one reasoning part until a non-thought
part arrives; consecutive text parts likewise continue one text part.
"""

from __future__ import annotations

from typing import Any, Final

from thoughtline.model.events import (
    Finish,
    FinishReason,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    StreamWarning,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.providers._call_ids import synthetic_call_id
from thoughtline.providers._runs import AlternatingRuns
from thoughtline.providers._text import sentence
from thoughtline.providers.base import PayloadTranslator
from thoughtline.providers.gemini._errors import stream_error
from thoughtline.wire.jsonio import dumps

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    # Vertex AI's Model Armor screening stopped the response: a safety block like SAFETY.
    "MODEL_ARMOR": "content_filter",
    # The model called a tool the request did not declare: the turn ended on a tool
    # call, so callers look for one (none is emitted: there is no declared tool to run).
    "UNEXPECTED_TOOL_CALL": "tool_calls",
    "MALFORMED_FUNCTION_CALL": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
}
"""Gemini ``finishReason`` → normalized reason; anything else (``LANGUAGE``, ``OTHER``,
``TOO_MANY_TOOL_CALLS``, ``NO_IMAGE``, ``ESCALATION``, …) is ``other`` with the raw value
kept. A blocked prompt (``promptFeedback.blockReason``, any value) is ``content_filter``."""

# Part fields that describe a part rather than carry data: a part with only these
# (typically ``thoughtSignature`` on an empty part) has no content of its own.
_PART_METADATA_KEYS: Final = frozenset(
    {"thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"}
)


class GeminiTranslator(PayloadTranslator):
    """Per-response state: the open thought/text run, ids, tool calls, last usage reported."""

    def __init__(self) -> None:
        self.finished = False
        self._started = False
        self._next_id = 0
        self._tool_calls = 0
        self._runs = AlternatingRuns("summary", self._new_id)
        self._last_usage: dict[str, Any] | None = None

    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        error = payload.get("error")
        if error is not None:
            out.append(stream_error(error))
            return out
        if not self._started:
            self._started = True
            out.append(
                ResponseStarted(
                    response_id=_opt_str(payload.get("responseId")),
                    model=_opt_str(payload.get("modelVersion")),
                )
            )

        candidates = payload.get("candidates")
        raw_reason: str | None = None
        if candidates and isinstance(candidates, list):
            # thoughtline never asks for more than one candidate; the first is the answer.
            candidate = candidates[0]
            if isinstance(candidate, dict):
                content = candidate.get("content")
                if isinstance(content, dict):
                    parts = content.get("parts")
                    if parts and isinstance(parts, list):
                        self._parts(parts, out)
                finish = candidate.get("finishReason")
                if isinstance(finish, str):
                    raw_reason = finish
                    message = candidate.get("finishMessage")
                    if finish != "STOP" and isinstance(message, str) and message.strip(" ."):
                        # Why Gemini stopped (a Model Armor block, an undeclared tool).
                        out.append(
                            StreamWarning(
                                code="PROVIDER_FINISH_MESSAGE",
                                message=sentence(f"Gemini stopped ({finish}): {message}"),
                            )
                        )

        usage = payload.get("usageMetadata")
        if raw_reason is not None:
            self._finish(raw_reason, self._reason_for(raw_reason), usage, out)
        elif not candidates and isinstance(block := _block_reason(payload), str):
            # The prompt itself was blocked: no candidate will come.
            self._finish(block, "content_filter", usage, out)
        elif isinstance(usage, dict):
            self._usage(usage, out)
        return out

    def finish(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        self._runs.close(out)
        return out

    def _usage(self, usage: dict[str, Any], out: list[StreamEvent]) -> None:
        # Gemini repeats the cumulative usageMetadata on many chunks: report it only when
        # it changed, and as soon as it changes, so counts survive a broken stream.
        if usage != self._last_usage:
            self._last_usage = usage
            out.append(usage_from_metadata(usage))

    # ------------------------------------------------------------------ parts

    def _parts(self, parts: list[Any], out: list[StreamEvent]) -> None:
        for part in parts:
            if not isinstance(part, dict):
                continue
            signature = part.get("thoughtSignature")
            text = part.get("text")
            if text is not None:
                if not isinstance(text, str) or not text:
                    attached = "empty"
                elif part.get("thought") is True:
                    self._runs.reasoning(text, out)
                    attached = "thought"
                else:
                    self._runs.text(text, out)
                    attached = "text"
            elif (call := part.get("functionCall")) is not None:
                self._tool_call(call, signature, out)
                attached = "function_call"
            else:
                attached = self._other_part(part, out)
            if signature is not None:
                self._signature(signature, attached, out)

    def _tool_call(self, call: Any, signature: Any, out: list[StreamEvent]) -> None:
        self._runs.close(out)
        part_id = self._new_id("tool")
        index = self._tool_calls
        self._tool_calls += 1
        if not isinstance(call, dict):
            call = {}
        call_id = _opt_str(call.get("id")) or synthetic_call_id(index)
        name = _opt_str(call.get("name")) or ""
        args = call.get("args")
        out.append(ToolCallStart(part_id=part_id, tool_call_id=call_id, name=name))
        out.append(
            ToolCallDelta(part_id=part_id, arguments_delta=dumps({} if args is None else args))
        )
        out.append(
            ToolCallEnd(
                part_id=part_id,
                provider_metadata={"thought_signature": signature}
                if isinstance(signature, str)
                else {},
            )
        )

    def _other_part(self, part: dict[str, Any], out: list[StreamEvent]) -> str:
        unknown = [key for key in part if key not in _PART_METADATA_KEYS]
        if not unknown:
            return "empty"
        out.append(
            StreamWarning(
                code="UNKNOWN_PART",
                message=f"Gemini sent a part of type {', '.join(unknown)} that thoughtline "
                "does not handle; it was skipped.",
            )
        )
        return "other"

    def _signature(self, signature: Any, attached: str, out: list[StreamEvent]) -> None:
        if not isinstance(signature, str):
            out.append(
                StreamWarning(
                    code="UNKNOWN_PART",
                    message="Gemini sent a thoughtSignature that is not a string; it was skipped.",
                )
            )
            return
        part_id = self._new_id("signature")
        metadata = {"thought_signature": signature, "attached_to": attached}
        out.append(ReasoningStart(part_id=part_id, kind="encrypted", provider_metadata=metadata))
        out.append(ReasoningEnd(part_id=part_id, kind="encrypted", provider_metadata=metadata))

    # ------------------------------------------------------------------ finish

    def _reason_for(self, raw_reason: str) -> FinishReason:
        if raw_reason == "STOP" and self._tool_calls:
            return "tool_calls"
        return FINISH_REASONS.get(raw_reason, "other")

    def _finish(
        self, raw_reason: str, reason: FinishReason, usage: Any, out: list[StreamEvent]
    ) -> None:
        self._runs.close(out)
        if isinstance(usage, dict):
            self._usage(usage, out)
        out.append(Finish(reason=reason, raw_reason=raw_reason))
        self.finished = True

    def _new_id(self, prefix: str) -> str:
        number = self._next_id
        self._next_id = number + 1
        return f"{prefix}_{number}"


def usage_from_metadata(metadata: dict[str, Any]) -> Usage:
    """``usageMetadata`` → Usage.

    ``candidatesTokenCount`` excludes thoughts on Gemini, while every other provider's
    output count includes reasoning; ``output_tokens`` is therefore answer plus thoughts
    (``candidatesTokenCount + thoughtsTokenCount``) so counts compare across providers,
    and ``reasoning_tokens`` is ``thoughtsTokenCount`` alone.
    """
    candidates = _opt_int(metadata.get("candidatesTokenCount"))
    thoughts = _opt_int(metadata.get("thoughtsTokenCount"))
    if candidates is None and thoughts is None:
        output = None
    else:
        output = (candidates or 0) + (thoughts or 0)
    return Usage(
        input_tokens=_opt_int(metadata.get("promptTokenCount")),
        output_tokens=output,
        reasoning_tokens=thoughts,
        cached_input_tokens=_opt_int(metadata.get("cachedContentTokenCount")),
        total_tokens=_opt_int(metadata.get("totalTokenCount")),
    )


def _block_reason(payload: dict[str, Any]) -> Any:
    feedback = payload.get("promptFeedback")
    return feedback.get("blockReason") if isinstance(feedback, dict) else None


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

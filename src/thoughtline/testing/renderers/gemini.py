"""Gemini simulator renderer: transcripts → ``GenerateContentResponse`` JSON and SSE.

Renders what the Gemini API returns for the request it received:

- thought parts (``"thought": true``) only when the request set
  ``thinkingConfig.includeThoughts``; Gemini returns summaries only, so every reasoning
  block with text is rendered as a thought summary;
- no reasoning at all when ``thinkingBudget`` is ``0``;
- whenever the model reasoned, a ``thoughtSignature`` (the last block's ``signature``,
  or a deterministic base64 value) on the first ``functionCall`` part of a step with tool
  calls, else on the first answer part — or, with
  ``signature_placement="late_empty"``, on an empty-text part in the final chunk, the
  edge case real streams show — and ``thoughtsTokenCount`` in ``usageMetadata``;
- ``candidatesTokenCount`` excludes thoughts, as on the real API.

Each SSE chunk is one ``data:`` line ended by ``\\r\\n\\r\\n``, as Google's servers send.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import unquote

from thoughtline.testing.conversation import SimConversation, read_gemini
from thoughtline.testing.transcript import (
    Frame,
    SimFinish,
    SimRequest,
    StreamErrorKind,
    Transcript,
    chunks,
)

SignaturePlacement = Literal["first_text", "late_empty"]

_FINISH: Final[dict[SimFinish, str]] = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_calls": "STOP",
    "content_filter": "SAFETY",
    # Gemini has no refusal finish: a refusal is an ordinary answer.
    "refusal": "STOP",
}

_RPC_STATUS: Final[dict[int, str]] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_STREAM_ERRORS: Final[dict[StreamErrorKind, tuple[int, str]]] = {
    "overloaded": (503, "UNAVAILABLE"),
    "server_error": (500, "INTERNAL"),
    "rate_limited": (429, "RESOURCE_EXHAUSTED"),
}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sse(payload: Mapping[str, Any]) -> bytes:
    return f"data: {_dumps(payload)}\r\n\r\n".encode()


class GeminiRenderer:
    """Renders transcripts as the Gemini API (``v1beta``) would. Pure; no I/O."""

    stream_content_type = "text/event-stream"

    def __init__(
        self,
        *,
        signature_placement: SignaturePlacement = "first_text",
        retry_delay: str | None = None,
    ) -> None:
        """``retry_delay`` (e.g. ``"12s"``) adds a ``RetryInfo`` detail to 429 bodies."""
        self.signature_placement = signature_placement
        self.retry_delay = retry_delay

    # ------------------------------------------------------------------ request

    def conversation(self, request: SimRequest) -> SimConversation:
        return read_gemini(request.body or {})

    def model_of(self, request: SimRequest) -> str | None:
        """The model from ``/v1beta/models/{model}:verb`` (percent-encoding undone; the
        verb follows the last colon, as a client may send an id's ``:`` unencoded)."""
        _, found, rest = request.path.partition("/models/")
        if not found:
            return None
        return unquote(rest.rpartition(":")[0]) or None

    def is_stream(self, request: SimRequest) -> bool:
        return ":streamGenerateContent" in request.path

    @staticmethod
    def _thinking_config(request: SimRequest) -> Mapping[str, Any]:
        body = request.body or {}
        config = body.get("generationConfig") or {}
        thinking = config.get("thinkingConfig") if isinstance(config, Mapping) else None
        return thinking if isinstance(thinking, Mapping) else {}

    def _shows_thoughts(self, request: SimRequest) -> bool:
        return bool(self._thinking_config(request).get("includeThoughts"))

    def _reasons(self, transcript: Transcript, request: SimRequest) -> bool:
        if self._thinking_config(request).get("thinkingBudget") == 0:
            return False
        return bool(transcript.reasoning) or bool(transcript.reasoning_tokens)

    def _signature(self, transcript: Transcript) -> str:
        for block in reversed(transcript.reasoning):
            if block.signature:
                return block.signature
        return base64.b64encode(f"sim-thought-signature:{transcript.response_id}".encode()).decode()

    # ------------------------------------------------------------------ payloads

    def _envelope(
        self, transcript: Transcript, request: SimRequest, parts: list[dict[str, Any]]
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        return {
            "candidates": [candidate],
            "modelVersion": self.model_of(request) or "gemini",
            "responseId": transcript.response_id,
        }

    def _usage(self, transcript: Transcript, reasons: bool) -> dict[str, Any]:
        thoughts = transcript.effective_reasoning_tokens()
        # effective_output_tokens counts reasoning; Gemini's candidatesTokenCount does not.
        answer = max(transcript.effective_output_tokens() - thoughts, 0)
        if not reasons:
            thoughts = 0
        usage: dict[str, Any] = {
            "promptTokenCount": transcript.input_tokens,
            "candidatesTokenCount": answer,
            "totalTokenCount": transcript.input_tokens + answer + thoughts,
        }
        if reasons:
            usage["thoughtsTokenCount"] = thoughts
        return usage

    def _thought_texts(self, transcript: Transcript, request: SimRequest) -> list[str]:
        if not self._shows_thoughts(request) or not self._reasons(transcript, request):
            return []
        # Redacted blocks carry no readable text; Gemini returns summaries only.
        return [
            block.text
            for block in transcript.reasoning
            if block.text and block.kind in ("summary", "raw")
        ]

    def _tool_parts(self, transcript: Transcript) -> list[dict[str, Any]]:
        return [
            {
                "functionCall": {
                    "id": call.call_id,
                    "name": call.name,
                    "args": json.loads(call.arguments),
                }
            }
            for call in transcript.tool_calls
        ]

    # ------------------------------------------------------------------ renderer API

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        """One chunk per thought/answer delta, one per tool call, then the final chunk."""
        reasons = self._reasons(transcript, request)
        signature = self._signature(transcript) if reasons else None
        early_signature = signature if self.signature_placement == "first_text" else None
        frames: list[Frame] = []

        def emit(role: Literal["reasoning", "text", "tool"], part: dict[str, Any]) -> None:
            frames.append(Frame(role=role, data=_sse(self._envelope(transcript, request, [part]))))

        for text in self._thought_texts(transcript, request):
            for piece in chunks(text, transcript.chunk_chars):
                emit("reasoning", {"text": piece, "thought": True})
        for piece in chunks(transcript.answer, transcript.chunk_chars):
            part: dict[str, Any] = {"text": piece}
            if early_signature is not None and not transcript.tool_calls:
                part["thoughtSignature"] = early_signature
                early_signature = None
            emit("text", part)
        for part in self._tool_parts(transcript):
            if early_signature is not None:
                part["thoughtSignature"] = early_signature
                early_signature = None
            emit("tool", part)

        final_parts: list[dict[str, Any]] = []
        if early_signature is not None or (
            signature is not None and self.signature_placement == "late_empty"
        ):
            # Nothing carried it yet (e.g. an empty answer), or the late placement.
            final_parts.append({"text": "", "thoughtSignature": signature})
        final = self._envelope(transcript, request, final_parts)
        candidate = final["candidates"][0]
        if not final_parts:
            del candidate["content"]
        candidate["finishReason"] = _FINISH[transcript.finish]
        final["usageMetadata"] = self._usage(transcript, reasons)
        frames.append(Frame(role="end", data=_sse(final)))
        return frames

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        """The whole ``generateContent`` response."""
        reasons = self._reasons(transcript, request)
        signature = self._signature(transcript) if reasons else None
        parts: list[dict[str, Any]] = [
            {"text": text, "thought": True} for text in self._thought_texts(transcript, request)
        ]
        answer_parts: list[dict[str, Any]] = []
        if transcript.answer:
            answer_parts.append({"text": transcript.answer})
        answer_parts.extend(self._tool_parts(transcript))
        if signature is not None:
            if self.signature_placement == "first_text" and answer_parts:
                # A step with tool calls signs its first call, as Gemini 3 does.
                signed = (
                    len(answer_parts) - len(transcript.tool_calls) if transcript.tool_calls else 0
                )
                answer_parts[signed]["thoughtSignature"] = signature
            else:
                answer_parts.append({"text": "", "thoughtSignature": signature})
        parts.extend(answer_parts)
        payload = self._envelope(transcript, request, parts)
        candidate = payload["candidates"][0]
        if not parts:
            del candidate["content"]
        candidate["finishReason"] = _FINISH[transcript.finish]
        payload["usageMetadata"] = self._usage(transcript, reasons)
        return _dumps(payload).encode()

    def error_body(self, status: int, message: str) -> bytes:
        """A google.rpc status body; with ``retry_delay`` set, 429 carries ``RetryInfo``."""
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _RPC_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN"),
        }
        if status == 429 and self.retry_delay is not None:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": self.retry_delay,
                }
            ]
        return _dumps({"error": error}).encode()

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        code, status = _STREAM_ERRORS[kind]
        return _sse({"error": {"code": code, "message": message, "status": status}})

    def malformed_frame(self) -> bytes:
        return b'data: {"candidates":[{"content":{"parts":[{"text":"cut\r\n\r\n'

    def keep_alive_frame(self) -> bytes:
        return b": keep-alive\r\n\r\n"

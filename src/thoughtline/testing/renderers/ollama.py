"""Ollama simulator renderer: transcripts → native ``/api/chat`` NDJSON and JSON bodies.

Renders what an Ollama server returns for the request it received:

- ``message.thinking`` (raw reasoning) only when the model thinks: the request set
  ``think`` to ``true`` or an effort, or left ``think`` out and the model thinks by
  default (capability ``reasoning_by_default``). ``think: false`` turns thinking off,
  except for a model that always thinks (capability ``always_reasons``: gpt-oss);
- ``eval_count`` covers thinking and answer together (Ollama has no separate count);
  thinking the model did not do is not counted;
- tool calls carry ``arguments`` as a JSON object, in one line;
- the last line has ``done: true``, ``done_reason`` and the counts.

``stream`` defaults to ``true`` on Ollama when the request leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.testing.conversation import SimConversation, read_chat
from thoughtline.testing.transcript import (
    Frame,
    SimFinish,
    SimRequest,
    StreamErrorKind,
    Transcript,
    chunks,
)

CREATED_AT: Final = "2026-01-15T09:30:00.000000Z"
"""A fixed timestamp so rendering stays a pure function."""

_DONE_REASONS: Final[dict[SimFinish, str]] = {
    "stop": "stop",
    "length": "length",
    # Ollama ends tool calls, refusals and filtered answers with a plain "stop".
    "tool_calls": "stop",
    "content_filter": "stop",
    "refusal": "stop",
}


def _line(payload: Mapping[str, Any]) -> bytes:
    return (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class OllamaRenderer:
    """Renders transcripts as Ollama's native chat API would. Pure; no I/O.

    ``reasoning_by_default`` overrides the capability table's answer to "does this model
    think when ``think`` is left out?".
    """

    stream_content_type = "application/x-ndjson"

    def __init__(self, *, reasoning_by_default: bool | None = None) -> None:
        self.reasoning_by_default = reasoning_by_default

    def conversation(self, request: SimRequest) -> SimConversation:
        return read_chat(request.body or {})

    def model_of(self, request: SimRequest) -> str | None:
        model = (request.body or {}).get("model")
        return model if isinstance(model, str) else None

    def is_stream(self, request: SimRequest) -> bool:
        return (request.body or {}).get("stream", True) is not False

    def _thinks(self, request: SimRequest) -> bool:
        body = request.body or {}
        model = self.model_of(request) or ""
        if builtin_capabilities().lookup("ollama", model).always_reasons:
            return True  # gpt-oss: think takes levels; false is ignored
        if "think" in body and body["think"] is not None:
            return body["think"] is not False
        if self.reasoning_by_default is not None:
            return self.reasoning_by_default
        model = self.model_of(request) or ""
        return builtin_capabilities().lookup("ollama", model).reasoning_by_default

    def _base(self, request: SimRequest, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model_of(request) or "unknown",
            "created_at": CREATED_AT,
            "message": message,
            "done": False,
        }

    def _final(
        self, transcript: Transcript, request: SimRequest, message: dict[str, Any]
    ) -> dict[str, Any]:
        thinks = self._thinks(request) and bool(transcript.reasoning)
        output = transcript.effective_output_tokens()
        if not thinks:
            output -= transcript.effective_reasoning_tokens()
        payload = self._base(request, message)
        payload.update(
            {
                "done": True,
                "done_reason": _DONE_REASONS[transcript.finish],
                "total_duration": 1_250_000_000,
                "load_duration": 20_000_000,
                "prompt_eval_count": transcript.input_tokens,
                "prompt_eval_duration": 30_000_000,
                "eval_count": max(output, 0),
                "eval_duration": 1_200_000_000,
            }
        )
        return payload

    def _thinking(self, transcript: Transcript, request: SimRequest) -> str:
        if not self._thinks(request):
            return ""
        return "\n\n".join(
            block.text
            for block in transcript.reasoning
            if block.text and block.kind in ("raw", "summary")
        )

    @staticmethod
    def _tool_calls(transcript: Transcript) -> list[dict[str, Any]]:
        return [
            {
                "id": call.call_id,
                "function": {
                    "index": index,
                    "name": call.name,
                    "arguments": json.loads(call.arguments),
                },
            }
            for index, call in enumerate(transcript.tool_calls)
        ]

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        """One line per thinking/content delta, one line with the tool calls, the done line."""
        frames: list[Frame] = []

        def emit(role: Literal["reasoning", "text", "tool"], message: dict[str, Any]) -> None:
            frames.append(Frame(role=role, data=_line(self._base(request, message))))

        for piece in chunks(self._thinking(transcript, request), transcript.chunk_chars):
            emit("reasoning", {"role": "assistant", "content": "", "thinking": piece})
        for piece in chunks(transcript.answer, transcript.chunk_chars):
            emit("text", {"role": "assistant", "content": piece})
        if transcript.tool_calls:
            emit(
                "tool",
                {"role": "assistant", "content": "", "tool_calls": self._tool_calls(transcript)},
            )
        final = self._final(transcript, request, {"role": "assistant", "content": ""})
        frames.append(Frame(role="end", data=_line(final)))
        return frames

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        """The whole ``"stream": false`` response: one object with ``done: true``."""
        message: dict[str, Any] = {"role": "assistant", "content": transcript.answer}
        thinking = self._thinking(transcript, request)
        if thinking:
            message["thinking"] = thinking
        if transcript.tool_calls:
            message["tool_calls"] = self._tool_calls(transcript)
        return _line(self._final(transcript, request, message)).rstrip(b"\n")

    def error_body(self, status: int, message: str) -> bytes:
        return _line({"error": message}).rstrip(b"\n")

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        """``{"error": "..."}``; Ollama has no error types, so the kind is said in words
        the way Ollama's own messages say it."""
        if kind == "overloaded":
            text = f"server busy, please try again. maximum pending requests exceeded: {message}"
        elif kind == "rate_limited":
            text = f"too many requests: {message}"
        else:
            text = message
        return _line({"error": text})

    def malformed_frame(self) -> bytes:
        return b'{"model":"qwen3","message":{"role":"assistant","content":"cut\n'

    def keep_alive_frame(self) -> bytes:
        return b"\n"

"""Transcripts → Anthropic Messages bytes, the way the API would answer the request.

What is rendered depends on the request, as on the real API:

- Thinking blocks appear only when the request turned thinking on (``thinking.type``
  ``enabled`` or ``adaptive``), or when it sent no ``thinking`` and the model reasons by
  default (capability ``reasoning_by_default``, e.g. Sonnet 5).
- Their text appears only when the display is ``summarized``: explicitly, or by default
  (``enabled`` without ``display`` is summarized on every model; ``adaptive`` without
  ``display`` follows the family's ``default_display``). Otherwise the block has empty
  text and a signature (``display: "omitted"``).
- ``SimReasoning(kind="redacted")`` becomes a ``redacted_thinking`` block whose ``data``
  is the block's signature.

Usage reports ``output_tokens_details.thinking_tokens`` whenever the model thought.
A transcript's ``input_transformations`` (what the API changed in the request, e.g.
thinking blocks dropped by a binding check) are sent on the message, also in
``message_start``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.testing.conversation import SimConversation, read_anthropic
from thoughtline.testing.renderers._json import dumps
from thoughtline.testing.transcript import (
    Frame,
    FrameRole,
    SimFinish,
    SimRequest,
    StreamErrorKind,
    Transcript,
    chunks,
)
from thoughtline.wire.api_errors import anthropic_error_type

STOP_REASON_FOR_FINISH: Final[dict[SimFinish, str]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    # Anthropic has no separate content-filter finish: classifiers end with a refusal.
    "content_filter": "refusal",
    "refusal": "refusal",
}

STREAM_ERROR_TYPE: Final[dict[StreamErrorKind, str]] = {
    "overloaded": "overloaded_error",
    "server_error": "api_error",
    "rate_limited": "rate_limit_error",
}


def fake_signature(seed: str) -> str:
    """A deterministic opaque value shaped like Anthropic's base64 signatures."""
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    return "Eq" + base64.b64encode(digest * 2).decode("ascii")


class AnthropicRenderer:
    """Renders transcripts as ``/v1/messages`` responses (see the module docstring)."""

    stream_content_type = "text/event-stream"

    def conversation(self, request: SimRequest) -> SimConversation:
        return read_anthropic(request.body or {})

    def model_of(self, request: SimRequest) -> str | None:
        body = request.body or {}
        model = body.get("model")
        return model if isinstance(model, str) else request.model

    def is_stream(self, request: SimRequest) -> bool:
        body = request.body or {}
        return bool(body.get("stream", request.stream))

    # ------------------------------------------------------------------ bodies

    def content_blocks(self, transcript: Transcript, request: SimRequest) -> list[dict[str, Any]]:
        """The response's content blocks, complete (as in a non-streaming body)."""
        blocks: list[dict[str, Any]] = []
        display = self.thinking_display(request)
        if display is not None:
            for position, block in enumerate(transcript.reasoning):
                seed = f"{transcript.response_id}:{position}:{block.text}"
                signature = block.signature or fake_signature(seed)
                if block.kind == "redacted":
                    blocks.append({"type": "redacted_thinking", "data": signature})
                    continue
                shown = display == "summarized" and block.kind != "encrypted"
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": block.text if shown else "",
                        "signature": signature,
                    }
                )
        if transcript.answer:
            blocks.append({"type": "text", "text": transcript.answer})
        for call in transcript.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.call_id,
                    "name": call.name,
                    "input": json.loads(call.arguments) if call.arguments else {},
                }
            )
        return blocks

    def usage(self, transcript: Transcript, request: SimRequest) -> dict[str, Any]:
        """Final usage: ``output_tokens`` includes thinking, detailed when it happened."""
        thought = self.thinking_display(request) is not None and bool(transcript.reasoning)
        output_tokens = transcript.effective_output_tokens()
        if not thought and transcript.output_tokens is None:
            output_tokens = max(output_tokens - transcript.effective_reasoning_tokens(), 1)
        usage: dict[str, Any] = {
            "input_tokens": transcript.input_tokens,
            "output_tokens": output_tokens,
        }
        if thought:
            usage["output_tokens_details"] = {
                "thinking_tokens": transcript.effective_reasoning_tokens()
            }
        return usage

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        message = self._message_shell(transcript, request)
        message["content"] = self.content_blocks(transcript, request)
        message["stop_reason"] = STOP_REASON_FOR_FINISH[transcript.finish]
        message["usage"] = self.usage(transcript, request)
        return dumps(message).encode("utf-8")

    # ------------------------------------------------------------------ streams

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        message = self._message_shell(transcript, request)
        message["content"] = []
        message["usage"] = {"input_tokens": transcript.input_tokens, "output_tokens": 1}
        frames = [
            _frame("meta", {"type": "message_start", "message": message}),
            _frame("meta", {"type": "ping"}),
        ]
        size = transcript.chunk_chars
        for index, block in enumerate(self.content_blocks(transcript, request)):
            frames.extend(_block_frames(index, block, size))
        frames.append(
            _frame(
                "end",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": STOP_REASON_FOR_FINISH[transcript.finish],
                        "stop_sequence": None,
                    },
                    "usage": self.usage(transcript, request),
                },
            )
        )
        frames.append(_frame("end", {"type": "message_stop"}))
        return frames

    # ------------------------------------------------------------------ errors

    def error_body(self, status: int, message: str) -> bytes:
        error_type = anthropic_error_type(status)
        return dumps(
            {
                "type": "error",
                "error": {"type": error_type, "message": message},
                "request_id": f"req_sim_{status}",
            }
        ).encode("utf-8")

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        payload = {"type": "error", "error": {"type": STREAM_ERROR_TYPE[kind], "message": message}}
        return _sse("error", payload)

    def malformed_frame(self) -> bytes:
        return (
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",\n\n'
        )

    def keep_alive_frame(self) -> bytes:
        return _sse("ping", {"type": "ping"})

    # ------------------------------------------------------------------ helpers

    def thinking_display(self, request: SimRequest) -> str | None:
        """``summarized`` / ``omitted`` when the model thinks for this request, else None."""
        body: Mapping[str, Any] = request.body or {}
        model = self.model_of(request) or ""
        capability = builtin_capabilities().lookup("anthropic", model)
        thinking = body.get("thinking")
        if thinking is None:
            if capability.reasoning_by_default:
                return capability.default_display or "summarized"
            return None
        if not isinstance(thinking, dict):
            return None
        thinking_type = thinking.get("type")
        if thinking_type not in ("enabled", "adaptive"):
            return None
        display = thinking.get("display")
        if display in ("summarized", "omitted"):
            return str(display)
        if thinking_type == "enabled":
            return "summarized"
        return capability.default_display or "summarized"

    def _message_shell(self, transcript: Transcript, request: SimRequest) -> dict[str, Any]:
        shell: dict[str, Any] = {
            "id": transcript.response_id,
            "type": "message",
            "role": "assistant",
            "model": self.model_of(request) or "claude-unknown",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {},
        }
        if transcript.input_transformations:
            shell["input_transformations"] = [dict(t) for t in transcript.input_transformations]
        return shell


def _block_frames(index: int, block: dict[str, Any], size: int) -> Iterator[Frame]:
    block_type = block["type"]
    if block_type == "thinking":
        yield _start("reasoning", index, {"type": "thinking", "thinking": "", "signature": ""})
        for piece in chunks(block["thinking"], size):
            yield _delta("reasoning", index, {"type": "thinking_delta", "thinking": piece})
        yield _delta(
            "reasoning", index, {"type": "signature_delta", "signature": block["signature"]}
        )
        role: FrameRole = "reasoning"
    elif block_type == "redacted_thinking":
        yield _start("reasoning", index, block)
        role = "reasoning"
    elif block_type == "text":
        yield _start("text", index, {"type": "text", "text": ""})
        for piece in chunks(block["text"], size):
            yield _delta("text", index, {"type": "text_delta", "text": piece})
        role = "text"
    else:  # tool_use
        yield _start("tool", index, {**block, "input": {}})
        arguments = dumps(block["input"]) if block["input"] else ""
        for piece in chunks(arguments, size):
            yield _delta("tool", index, {"type": "input_json_delta", "partial_json": piece})
        role = "tool"
    yield _frame(role, {"type": "content_block_stop", "index": index})


def _start(role: FrameRole, index: int, block: dict[str, Any]) -> Frame:
    return _frame(role, {"type": "content_block_start", "index": index, "content_block": block})


def _delta(role: FrameRole, index: int, delta: dict[str, Any]) -> Frame:
    return _frame(role, {"type": "content_block_delta", "index": index, "delta": delta})


def _frame(role: FrameRole, payload: dict[str, Any]) -> Frame:
    return Frame(role=role, data=_sse(payload["type"], payload))


def _sse(event: str, payload: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {dumps(payload)}\n\n".encode()

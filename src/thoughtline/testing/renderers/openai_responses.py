"""Transcripts rendered as the OpenAI Responses API would send them.

The simulated hosted OpenAI model behaves like the real one:

- it reasons whenever its capability says it can (``thinking_control != "none"``) and the
  request did not set ``reasoning.effort: "none"``, whether or not anything was asked
  for: the reasoning item is then present with ``summary: []`` and the usage still
  counts ``output_tokens_details.reasoning_tokens``;
- summary text (``SimReasoning(kind="summary")``) comes back only when the request set
  ``reasoning.summary``;
- ``encrypted_content`` comes back only when ``include`` names
  ``reasoning.encrypted_content`` (the transcript's signature, or a deterministic
  base64-looking value);
- raw reasoning (``kind="raw"``) is sent as ``reasoning_text`` content, as gpt-oss style
  servers do; redacted blocks have no Responses equivalent and are not sent.

Frames are one SSE event each, so a test server can cut the stream between any two.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.testing.conversation import SimConversation, read_openai_responses
from thoughtline.testing.renderers._json import dumps
from thoughtline.testing.transcript import (
    Frame,
    FrameRole,
    SimRequest,
    StreamErrorKind,
    Transcript,
    chunks,
)
from thoughtline.wire.api_errors import openai_error

CREATED_AT = 1_767_225_600  # fixed, so rendered bytes are deterministic
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"


@dataclass(slots=True)
class _Plan:
    """What the simulated model returns for one request, before framing."""

    model: str
    reasons: bool
    summaries: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    encrypted: str | None = None
    reasoning_tokens: int = 0
    output_tokens: int = 0


class OpenAIResponsesRenderer:
    """:class:`~thoughtline.testing.transcript.WireRenderer` for ``POST /v1/responses``."""

    stream_content_type = "text/event-stream"

    def __init__(self, endpoint: str = "openai") -> None:
        self._endpoint = endpoint

    # ------------------------------------------------------------------ request facts

    def conversation(self, request: SimRequest) -> SimConversation:
        return read_openai_responses(request.body or {})

    def model_of(self, request: SimRequest) -> str | None:
        """The ``model`` field of the request body."""
        model = (request.body or {}).get("model")
        return model if isinstance(model, str) else None

    def is_stream(self, request: SimRequest) -> bool:
        """``"stream": true`` in the body (the Responses API default is false)."""
        return (request.body or {}).get("stream") is True

    # ------------------------------------------------------------------ whole responses

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        """The non-streaming response object."""
        plan = self._plan(transcript, request)
        output = self._output_items(transcript, plan)
        return dumps(self._response(transcript, request, plan, output, final=True)).encode()

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        """Every stream event, one frame each, ending with the terminal event."""
        plan = self._plan(transcript, request)
        writer = _FrameWriter()
        opening = self._response(transcript, request, plan, [], final=False)
        writer.add("meta", "response.created", {"response": opening})
        writer.add("meta", "response.in_progress", {"response": opening})
        output_index = 0
        if plan.reasons:
            self._stream_reasoning(writer, transcript, plan, output_index)
            output_index += 1
        if transcript.answer or not transcript.tool_calls:
            self._stream_message(writer, transcript, output_index)
            output_index += 1
        for call_index, call in enumerate(transcript.tool_calls):
            item_id = f"fc_{transcript.response_id}_{call_index}"
            added = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": "",
            }
            writer.add(
                "tool", "response.output_item.added", {"output_index": output_index, "item": added}
            )
            for delta in chunks(call.arguments, transcript.chunk_chars):
                writer.add(
                    "tool",
                    "response.function_call_arguments.delta",
                    {"item_id": item_id, "output_index": output_index, "delta": delta},
                )
            writer.add(
                "tool",
                "response.function_call_arguments.done",
                {"item_id": item_id, "output_index": output_index, "arguments": call.arguments},
            )
            done = {**added, "status": "completed", "arguments": call.arguments}
            writer.add(
                "tool", "response.output_item.done", {"output_index": output_index, "item": done}
            )
            output_index += 1
        final = self._response(
            transcript, request, plan, self._output_items(transcript, plan), final=True
        )
        terminal = (
            "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        )
        writer.add("end", terminal, {"response": final})
        return writer.frames

    # ------------------------------------------------------------------ errors and faults

    def error_body(self, status: int, message: str) -> bytes:
        """``{"error": {"message", "type", "param", "code"}}`` as OpenAI sends it."""
        error_type, code = openai_error(status)
        return dumps(
            {"error": {"message": message, "type": error_type, "param": None, "code": code}}
        ).encode()

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        """Overload and rate limits arrive as an ``error`` event; a server error fails the
        response (``response.failed`` with ``response.error``)."""
        if kind == "server_error":
            failed = {
                "id": "resp_failed",
                "object": "response",
                "created_at": CREATED_AT,
                "status": "failed",
                "model": "unknown",
                "output": [],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "error": {"code": "server_error", "message": message},
                "incomplete_details": None,
                "usage": None,
            }
            return _sse(
                "response.failed",
                {"type": "response.failed", "sequence_number": 9999, "response": failed},
            )
        code = "rate_limit_exceeded" if kind == "rate_limited" else "server_is_overloaded"
        payload = {
            "type": "error",
            "sequence_number": 9999,
            "code": code,
            "message": message,
            "param": None,
        }
        return _sse("error", payload)

    def malformed_frame(self) -> bytes:
        """A complete SSE frame whose JSON is cut short."""
        return (
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","delta":"unterminated\n\n'
        )

    def keep_alive_frame(self) -> bytes:
        return b": keep-alive\n\n"

    # ------------------------------------------------------------------ planning

    def _plan(self, transcript: Transcript, request: SimRequest) -> _Plan:
        body = request.body or {}
        model = self.model_of(request) or "gpt-5"
        reasoning = body.get("reasoning")
        reasoning = reasoning if isinstance(reasoning, Mapping) else {}
        include = body.get("include")
        include = include if isinstance(include, list) else []
        capability = builtin_capabilities().lookup(self._endpoint, model)
        reasons = (
            capability.thinking_control != "none"
            and reasoning.get("effort") != "none"
            and (bool(transcript.reasoning) or bool(transcript.reasoning_tokens))
        )
        reasoning_tokens = transcript.effective_reasoning_tokens() if reasons else 0
        output_tokens = transcript.effective_output_tokens()
        if not reasons:
            output_tokens -= transcript.effective_reasoning_tokens()
        plan = _Plan(
            model=model,
            reasons=reasons,
            reasoning_tokens=reasoning_tokens,
            output_tokens=output_tokens,
        )
        if not reasons:
            return plan
        wants_summary = bool(reasoning.get("summary") or reasoning.get("generate_summary"))
        for block in transcript.reasoning:
            if block.kind == "summary" and wants_summary and block.text:
                plan.summaries.append(block.text)
            elif block.kind == "raw" and block.text:
                plan.raw.append(block.text)
        if ENCRYPTED_INCLUDE in include:
            plan.encrypted = _encrypted_content(transcript, model)
        return plan

    # ------------------------------------------------------------------ items

    def _reasoning_item(self, transcript: Transcript, plan: _Plan) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": f"rs_{transcript.response_id}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text} for text in plan.summaries],
        }
        if plan.raw:
            item["content"] = [{"type": "reasoning_text", "text": text} for text in plan.raw]
        if plan.encrypted is not None:
            item["encrypted_content"] = plan.encrypted
        return item

    def _message_item(self, transcript: Transcript, *, final: bool) -> dict[str, Any]:
        part: dict[str, Any]
        if transcript.finish == "refusal":
            part = {"type": "refusal", "refusal": transcript.answer}
        else:
            part = {
                "type": "output_text",
                "text": transcript.answer,
                "annotations": [],
                "logprobs": [],
            }
        status = "completed"
        if transcript.finish in ("length", "content_filter"):
            status = "incomplete"
        return {
            "id": f"msg_{transcript.response_id}",
            "type": "message",
            "status": status if final else "in_progress",
            "role": "assistant",
            "content": [part] if final else [],
        }

    def _output_items(self, transcript: Transcript, plan: _Plan) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if plan.reasons:
            items.append(self._reasoning_item(transcript, plan))
        if transcript.answer or not transcript.tool_calls:
            items.append(self._message_item(transcript, final=True))
        for index, call in enumerate(transcript.tool_calls):
            items.append(
                {
                    "id": f"fc_{transcript.response_id}_{index}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
        return items

    def _response(
        self,
        transcript: Transcript,
        request: SimRequest,
        plan: _Plan,
        output: list[dict[str, Any]],
        *,
        final: bool,
    ) -> dict[str, Any]:
        body = request.body or {}
        status = "in_progress"
        incomplete: dict[str, str] | None = None
        usage: dict[str, Any] | None = None
        if final:
            status = "completed"
            if transcript.finish == "length":
                status, incomplete = "incomplete", {"reason": "max_output_tokens"}
            elif transcript.finish == "content_filter":
                status, incomplete = "incomplete", {"reason": "content_filter"}
            usage = {
                "input_tokens": transcript.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": plan.output_tokens,
                "output_tokens_details": {"reasoning_tokens": plan.reasoning_tokens},
                "total_tokens": transcript.input_tokens + plan.output_tokens,
            }
        reasoning = body.get("reasoning")
        tools = body.get("tools")
        return {
            "id": transcript.response_id,
            "object": "response",
            "created_at": CREATED_AT,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": plan.model,
            "output": output,
            "parallel_tool_calls": True,
            "reasoning": dict(reasoning) if isinstance(reasoning, Mapping) else None,
            "store": False,
            "tool_choice": "auto",
            "tools": list(tools) if isinstance(tools, list) else [],
            "usage": usage,
        }

    # ------------------------------------------------------------------ streamed items

    def _stream_reasoning(
        self, writer: _FrameWriter, transcript: Transcript, plan: _Plan, output_index: int
    ) -> None:
        item_id = f"rs_{transcript.response_id}"
        where = {"item_id": item_id, "output_index": output_index}
        writer.add(
            "reasoning",
            "response.output_item.added",
            {
                "output_index": output_index,
                "item": {"id": item_id, "type": "reasoning", "summary": []},
            },
        )
        for index, text in enumerate(plan.summaries):
            at = {**where, "summary_index": index}
            writer.add(
                "reasoning",
                "response.reasoning_summary_part.added",
                {**at, "part": {"type": "summary_text", "text": ""}},
            )
            for delta in chunks(text, transcript.chunk_chars):
                writer.add(
                    "reasoning", "response.reasoning_summary_text.delta", {**at, "delta": delta}
                )
            writer.add("reasoning", "response.reasoning_summary_text.done", {**at, "text": text})
            writer.add(
                "reasoning",
                "response.reasoning_summary_part.done",
                {**at, "part": {"type": "summary_text", "text": text}},
            )
        for index, text in enumerate(plan.raw):
            at = {**where, "content_index": index}
            writer.add(
                "reasoning",
                "response.content_part.added",
                {**at, "part": {"type": "reasoning_text", "text": ""}},
            )
            for delta in chunks(text, transcript.chunk_chars):
                writer.add("reasoning", "response.reasoning_text.delta", {**at, "delta": delta})
            writer.add("reasoning", "response.reasoning_text.done", {**at, "text": text})
            writer.add(
                "reasoning",
                "response.content_part.done",
                {**at, "part": {"type": "reasoning_text", "text": text}},
            )
        writer.add(
            "reasoning",
            "response.output_item.done",
            {"output_index": output_index, "item": self._reasoning_item(transcript, plan)},
        )

    def _stream_message(
        self, writer: _FrameWriter, transcript: Transcript, output_index: int
    ) -> None:
        item_id = f"msg_{transcript.response_id}"
        at = {"item_id": item_id, "output_index": output_index, "content_index": 0}
        writer.add(
            "text",
            "response.output_item.added",
            {"output_index": output_index, "item": self._message_item(transcript, final=False)},
        )
        refusal = transcript.finish == "refusal"
        empty = (
            {"type": "refusal", "refusal": ""}
            if refusal
            else {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        )
        writer.add("text", "response.content_part.added", {**at, "part": empty})
        for delta in chunks(transcript.answer, transcript.chunk_chars):
            if refusal:
                writer.add("text", "response.refusal.delta", {**at, "delta": delta})
            else:
                writer.add(
                    "text", "response.output_text.delta", {**at, "delta": delta, "logprobs": []}
                )
        full: dict[str, Any]
        if refusal:
            writer.add("text", "response.refusal.done", {**at, "refusal": transcript.answer})
            full = {"type": "refusal", "refusal": transcript.answer}
        else:
            writer.add(
                "text",
                "response.output_text.done",
                {**at, "text": transcript.answer, "logprobs": []},
            )
            full = {
                "type": "output_text",
                "text": transcript.answer,
                "annotations": [],
                "logprobs": [],
            }
        writer.add("text", "response.content_part.done", {**at, "part": full})
        writer.add(
            "text",
            "response.output_item.done",
            {"output_index": output_index, "item": self._message_item(transcript, final=True)},
        )


class _FrameWriter:
    """Numbers events (``sequence_number``) and frames them as SSE."""

    __slots__ = ("_sequence", "frames")

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self._sequence = 0

    def add(self, role: FrameRole, event: str, fields: Mapping[str, Any]) -> None:
        payload = {"type": event, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        self.frames.append(Frame(role=role, data=_sse(event, payload)))


def _sse(event: str, payload: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {dumps(payload)}\n\n".encode()


def _encrypted_content(transcript: Transcript, model: str) -> str:
    for block in transcript.reasoning:
        if block.signature:
            return block.signature
    # No carrier in the transcript: a stable opaque value shaped like OpenAI's (Fernet).
    seed = "\x00".join(
        [model, transcript.response_id, *(block.text for block in transcript.reasoning)]
    )
    digest = hashlib.sha256(seed.encode()).digest()
    return "gAAAAAB" + base64.urlsafe_b64encode(digest * 3).decode().rstrip("=")

"""Writing an Anthropic Messages reply: the stream's events, a whole body, an error (see
the package docstring)."""

from __future__ import annotations

from typing import Any, Final

import orjson

from thoughtline.errors import ErrorCode
from thoughtline.gateway.call import GatewayCall
from thoughtline.gateway.dialects._common import Rendering, as_asked, dumps, sse
from thoughtline.gateway.dialects._sequence import SequencedStream
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import (
    Finish,
    ProviderMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart
from thoughtline.wire.api_errors import anthropic_error_type

_STOP: Final[dict[str, str]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "refusal": "refusal",
    "error": "end_turn",
    "other": "end_turn",
}


def _stop_reason(finish: Finish | None, called: bool) -> str:
    if finish is None:
        return "tool_use" if called else "end_turn"
    if finish.raw_reason == "stop_sequence":
        return "stop_sequence"
    return _STOP[finish.reason]


def _usage(usage: Usage | None, rendering: Rendering) -> dict[str, Any]:
    """Anthropic's usage: ``input_tokens`` counts the input read neither from nor into
    the cache, which thoughtline's ``input_tokens`` includes."""
    usage = usage or Usage()
    cached = usage.cached_input_tokens or 0
    written = usage.cache_write_tokens or 0
    out: dict[str, Any] = {
        "input_tokens": max(0, (usage.input_tokens or 0) - cached - written),
        "output_tokens": usage.output_tokens or 0,
    }
    if usage.cached_input_tokens is not None:
        out["cache_read_input_tokens"] = cached
    if usage.cache_write_tokens is not None:
        out["cache_creation_input_tokens"] = written
    if rendering.shows_reasoning and usage.reasoning_tokens is not None:
        out["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return out


def _thinking_block(kind: str, metadata: ProviderMetadata) -> dict[str, Any] | None:
    """The block a reasoning part opens as, or ``None`` for a carrier this API has no
    block for (an OpenAI ``encrypted_content``, a Gemini signature)."""
    if kind == "redacted":
        data = metadata.get("data")
        return {"type": "redacted_thinking", "data": data} if isinstance(data, str) else None
    if kind == "encrypted" and not isinstance(metadata.get("signature"), str):
        return None
    return {"type": "thinking", "thinking": "", "signature": ""}


class MessagesStream(SequencedStream):
    """One streamed reply: :meth:`feed` each gated event, then :meth:`close`. Blocks
    stream one at a time (parts that interleave are held, :mod:`._sequence`), each with
    its own index; hidden reasoning is dropped before anything else sees it."""

    __slots__ = (
        "_blocks",
        "_called",
        "_index",
        "_omitted",
        "_open",
        "_skipped",
        "_started",
    )

    content_type: Final = "text/event-stream"

    def __init__(self, call: GatewayCall, rendering: Rendering) -> None:
        super().__init__(call, rendering)
        # display "omitted": thinking blocks with their signatures and no text.
        self._omitted = call.reasoning.display == "omitted"
        self._index = -1
        self._open: str | None = None  # the part whose block is open
        self._blocks: dict[str, str] = {}  # part → its block type
        self._skipped: set[str] = set()
        self._called = False
        self._started = False

    def _begin(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message: dict[str, Any] = {
            "id": f"msg_{self._rendering.reply_id}",
            "type": "message",
            "role": "assistant",
            "model": self._call.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(self._usage, self._rendering),
        }
        return sse("message_start", dumps({"type": "message_start", "message": message}))

    def _start(self, part: str, block: dict[str, Any]) -> bytes:
        self._index += 1
        self._open = part
        self._blocks[part] = block["type"]
        payload = {"type": "content_block_start", "index": self._index, "content_block": block}
        return self._begin() + sse("content_block_start", dumps(payload))

    def _delta(self, delta: dict[str, Any]) -> bytes:
        payload = {"type": "content_block_delta", "index": self._index, "delta": delta}
        return sse("content_block_delta", dumps(payload))

    def _stop(self) -> bytes:
        self._open = None
        return sse(
            "content_block_stop", dumps({"type": "content_block_stop", "index": self._index})
        )

    def _render(self, event: StreamEvent) -> bytes:
        match event:
            case ReasoningStart():
                block = _thinking_block(event.kind, event.provider_metadata)
                if block is None:
                    self._skipped.add(event.part_id)
                    return b""
                return self._start(event.part_id, block)
            case TextStart():
                return self._start(event.part_id, {"type": "text", "text": ""})
            case ToolCallStart():
                self._called = True
                block = {
                    "type": "tool_use",
                    "id": event.tool_call_id,
                    "name": event.name,
                    "input": {},
                }
                return self._start(event.part_id, block)
            case _ if getattr(event, "part_id", None) != self._open:
                return b""  # a skipped part, or one whose start never came
            case ReasoningDelta():
                if self._blocks[event.part_id] != "thinking" or not event.text or self._omitted:
                    return b""
                return self._delta({"type": "thinking_delta", "thinking": event.text})
            case TextDelta():
                return (
                    self._delta({"type": "text_delta", "text": event.text}) if event.text else b""
                )
            case ToolCallDelta():
                if not event.arguments_delta:
                    return b""
                return self._delta(
                    {"type": "input_json_delta", "partial_json": event.arguments_delta}
                )
            case ReasoningEnd():
                out = b""
                signature = event.provider_metadata.get("signature")
                if self._blocks[event.part_id] == "thinking" and isinstance(signature, str):
                    out = self._delta({"type": "signature_delta", "signature": signature})
                return out + self._stop()
            case TextEnd() | ToolCallEnd():
                return self._stop()
            case _:
                return b""

    def close(self) -> bytes:
        """The end of the reply: any block left open closed, ``message_delta`` with the
        stop reason and usage, ``message_stop``; after a failure, the API's ``error``
        event instead."""
        out = b""
        for event in self._sequencer.flush():
            out += self._render(event)
        if self._open is not None:
            out += self._stop()
        error = self._error
        if error is not None:
            _, body = error_response(error.code, error.message, status=error.status or 500)  # type: ignore[arg-type]
            return out + sse("error", dumps(body))
        out = self._begin() + out
        delta = {
            "type": "message_delta",
            "delta": {
                "stop_reason": _stop_reason(self._finish, self._called),
                "stop_sequence": None,
            },
            "usage": _usage(self._usage, self._rendering),
        }
        return (
            out
            + sse("message_delta", dumps(delta))
            + sse("message_stop", b'{"type":"message_stop"}')
        )


def _input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object ``input`` must be; arguments that are not one
    (cut by a broken stream) are ``{}``, as every wire sends such a call back."""
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def render(call: GatewayCall, rendering: Rendering, response: ModelResponse) -> dict[str, Any]:
    """The ``message`` body for a reply that was not streamed."""
    rendering = as_asked(rendering, call)
    content: list[dict[str, Any]] = []
    called = False
    for part in response.parts:
        if isinstance(part, ReasoningPart):
            if not rendering.shows_reasoning:
                continue
            block = _thinking_block(part.kind, part.provider_metadata)
            if block is not None and block["type"] == "thinking":
                signature = part.provider_metadata.get("signature")
                block = {
                    "type": "thinking",
                    "thinking": "" if call.reasoning.display == "omitted" else part.text,
                    "signature": signature if isinstance(signature, str) else "",
                }
            if block is not None:
                content.append(block)
        elif isinstance(part, TextPart):
            if part.text:
                content.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            called = True
            content.append(
                {
                    "type": "tool_use",
                    "id": part.tool_call_id,
                    "name": part.name,
                    "input": _input(part.arguments),
                }
            )
    return {
        "id": f"msg_{rendering.reply_id}",
        "type": "message",
        "role": "assistant",
        "model": call.model,
        "content": content,
        "stop_reason": _stop_reason(response.finish, called),
        "stop_sequence": None,
        "usage": _usage(response.usage, rendering),
    }


def error_response(
    code: ErrorCode, message: str, *, status: int, param: str | None = None
) -> tuple[int, dict[str, Any]]:
    """The status and body of a refusal or failure, in Anthropic's error shape, with
    thoughtline's code beside the type (``param`` is already in Anthropic's message)."""
    del param
    kind = anthropic_error_type(status)
    return status, {"type": "error", "error": {"type": kind, "message": message, "code": code}}

"""A non-streaming ``/v1/messages`` body → the same events the stream would give.

The body is rewritten as the stream payloads Anthropic would have sent for it
(``message_start``, one start/delta/stop group per content block, ``message_delta``,
``message_stop``) and run through the stream translator, so the two paths cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from thoughtline.model.events import ReasoningKind, StreamEvent
from thoughtline.providers.anthropic._errors import stream_error
from thoughtline.providers.anthropic._stream import AnthropicStreamTranslator
from thoughtline.providers.base import interrupted_error, malformed_error
from thoughtline.wire.jsonio import MalformedJSON, dumps, loads_object


def decode_body(body: bytes, *, thinking_kind: ReasoningKind = "summary") -> list[StreamEvent]:
    """Events for a complete non-streaming response body."""
    try:
        message = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    if message.get("type") == "error":
        return [stream_error(message)]
    translator = AnthropicStreamTranslator(thinking_kind=thinking_kind)
    events: list[StreamEvent] = []
    for payload in stream_payloads(message):
        events.extend(translator.translate(payload["type"], payload))
    events.extend(translator.finish())
    if not translator.finished:  # pragma: no cover - stream_payloads always ends with a stop
        events.append(interrupted_error("the body did not end the message"))
    return events


def stream_payloads(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The stream payloads equivalent to a whole ``Message`` body."""
    start_message = {key: value for key, value in message.items() if key != "content"}
    start_message["content"] = []
    yield {"type": "message_start", "message": start_message}
    content = message.get("content")
    if isinstance(content, list):
        for index, block in enumerate(content):
            if isinstance(block, dict):
                yield from _block_payloads(index, block)
    delta: dict[str, Any] = {
        "stop_reason": message.get("stop_reason"),
        "stop_sequence": message.get("stop_sequence"),
    }
    if "stop_details" in message:
        delta["stop_details"] = message["stop_details"]
    message_delta: dict[str, Any] = {"type": "message_delta", "delta": delta}
    usage = message.get("usage")
    if isinstance(usage, dict):
        message_delta["usage"] = usage
    yield message_delta
    yield {"type": "message_stop"}


def _block_payloads(index: int, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    block_type = block.get("type")
    if block_type == "thinking":
        yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
        text = block.get("thinking")
        if isinstance(text, str) and text:
            yield _delta(index, {"type": "thinking_delta", "thinking": text})
        signature = block.get("signature")
        if isinstance(signature, str) and signature:
            yield _delta(index, {"type": "signature_delta", "signature": signature})
    elif block_type == "text":
        yield _start(index, {"type": "text", "text": ""})
        text = block.get("text")
        if isinstance(text, str) and text:
            yield _delta(index, {"type": "text_delta", "text": text})
        citations = block.get("citations")
        if isinstance(citations, list):
            for citation in citations:
                yield _delta(index, {"type": "citations_delta", "citation": citation})
    elif block_type == "tool_use":
        arguments = block.get("input")
        yield _start(index, {**block, "input": {}})
        yield _delta(
            index,
            {"type": "input_json_delta", "partial_json": dumps(arguments) if arguments else ""},
        )
    else:  # redacted_thinking and blocks this adapter does not know arrive whole
        yield _start(index, block)
    yield {"type": "content_block_stop", "index": index}


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}

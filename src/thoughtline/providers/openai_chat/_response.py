"""A whole ``chat.completion`` body → the same events its stream would have produced.

The body is rewritten as the chunks a server would have streamed (the message as one
``delta`` with ``finish_reason``, then a usage-only chunk) and run through the stream
translator, so streaming and non-streaming responses share one parser and one
accumulator and cannot drift.
"""

from __future__ import annotations

from typing import Any

from thoughtline.model.events import StreamError, StreamEvent
from thoughtline.providers.base import malformed_error
from thoughtline.providers.openai_chat._errors import stream_error_event
from thoughtline.providers.openai_chat._stream import ChatTranslator
from thoughtline.wire.jsonio import MalformedJSON, loads_object


def completion_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` payloads equivalent to a ``chat.completion``."""
    head: dict[str, Any] = {
        key: completion[key] for key in ("id", "model", "created") if key in completion
    }
    chunks: list[dict[str, Any]] = []
    choices: list[dict[str, Any]] = []
    for choice in completion.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        delta: dict[str, Any] = dict(message) if isinstance(message, dict) else {}
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            # Whole messages carry no stream index; their position is the index.
            delta["tool_calls"] = [
                {"index": position, **call} if isinstance(call, dict) else call
                for position, call in enumerate(tool_calls)
            ]
        choices.append(
            {
                "index": choice.get("index", 0),
                "delta": delta,
                "finish_reason": choice.get("finish_reason"),
            }
        )
    chunks.append({**head, "choices": choices})
    usage = completion.get("usage")
    if isinstance(usage, dict):
        chunks.append({**head, "choices": [], "usage": usage})
    return chunks


def decode_completion(
    body: bytes, translator: ChatTranslator, *, provider: str
) -> list[StreamEvent]:
    """Events for a complete non-streaming body; an ``StreamError`` is always last."""
    try:
        completion = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    error = completion.get("error")
    if error:
        # OpenRouter reports failures after routing under HTTP 200, in the body.
        return [stream_error_event(error, provider=provider)]
    if not isinstance(completion.get("choices"), list):
        return [malformed_error("a chat completion without a 'choices' list")]
    out: list[StreamEvent] = []
    for chunk in completion_chunks(completion):
        events = translator.translate("", chunk)
        out.extend(events)
        if events and isinstance(events[-1], StreamError):
            # As in streams: parts still open stay open, the error is last.
            return out
    out.extend(translator.finish())
    return out

"""Writing a Chat Completions reply: streamed chunks, a whole body, an error (see the
package docstring)."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.errors import ErrorCode
from thoughtline.gateway.call import GatewayCall
from thoughtline.gateway.dialects._common import (
    Rendering,
    as_asked,
    dumps,
)
from thoughtline.gateway.dialects._openai import (
    error_type,
)
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolCallStart,
    Usage,
    merge_usage,
)
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart

_FINISH: Final[dict[str, str]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "stop",  # a refusal is a stop whose text is in ``refusal``
    "error": "stop",
    "other": "stop",
}


def _usage(usage: Usage | None, rendering: Rendering) -> dict[str, Any]:
    usage = usage or Usage()
    prompt = usage.input_tokens or 0
    completion = usage.output_tokens or 0
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if usage.cached_input_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if rendering.shows_reasoning and usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def _finish(finish: Finish | None, called: bool) -> str:
    if finish is None:
        return "tool_calls" if called else "stop"
    return _FINISH[finish.reason]


class ChatCompletionsStream:
    """One streamed reply: :meth:`feed` each gated event, then :meth:`close`. Each
    returns the bytes to send (often none); the work per event is one small JSON
    document, whatever came before."""

    __slots__ = (
        "_call",
        "_calls",
        "_error",
        "_finish",
        "_head",
        "_prefix",
        "_refusals",
        "_rendering",
        "_started",
        "_suffix",
        "_usage",
    )

    content_type: Final = "text/event-stream"

    def __init__(self, call: GatewayCall, rendering: Rendering) -> None:
        self._call = call
        self._rendering = as_asked(rendering, call)
        self._head: dict[str, Any] = {
            "id": f"chatcmpl-{rendering.reply_id}",
            "object": "chat.completion.chunk",
            "created": rendering.created,
            "model": call.model,
        }
        # Every chunk is this prefix, the delta, this suffix: one dumps per event.
        self._prefix = b"data: " + dumps(self._head)[:-1] + b',"choices":[{"index":0,"delta":'
        usage = b',"usage":null' if call.include_usage else b""
        self._suffix = b',"logprobs":null,"finish_reason":null}]' + usage + b"}\n\n"
        self._started = False
        self._calls: dict[str, int] = {}  # tool call part → its index
        self._refusals: set[str] = set()
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self._error: StreamError | None = None

    def _chunk(self, delta: dict[str, Any]) -> bytes:
        return self._prefix + dumps(delta) + self._suffix

    def feed(self, event: StreamEvent) -> bytes:
        out = b""
        if not self._started:
            self._started = True
            out = self._chunk({"role": "assistant", "content": ""})
        match event:
            case TextDelta():
                key = "refusal" if event.part_id in self._refusals else "content"
                return out + self._chunk({key: event.text}) if event.text else out
            case ReasoningDelta():
                if self._rendering.shows_reasoning and event.text:
                    return out + self._chunk({"reasoning_content": event.text})
            case ToolCallStart():
                index = self._calls[event.part_id] = len(self._calls)
                opening = {
                    "index": index,
                    "id": event.tool_call_id,
                    "type": "function",
                    "function": {"name": event.name, "arguments": ""},
                }
                return out + self._chunk({"tool_calls": [opening]})
            case ToolCallDelta():
                at = self._calls.get(event.part_id)
                if at is not None and event.arguments_delta:
                    piece = {"index": at, "function": {"arguments": event.arguments_delta}}
                    return out + self._chunk({"tool_calls": [piece]})
            case TextStart():
                if event.provider_metadata.get("refusal") is True:
                    self._refusals.add(event.part_id)
            case Usage():
                self._usage = merge_usage(self._usage, event)
            case Finish():
                self._finish = event
            case StreamError():
                self._error = event
            case _:
                pass  # the other events carry nothing this API sends
        return out

    def close(self) -> bytes:
        """The end of the reply: the finish chunk, the usage chunk when asked for, and
        ``[DONE]``; after a failure, the API's error frame instead."""
        out = b"" if self._started else self._chunk({"role": "assistant", "content": ""})
        self._started = True
        error = self._error
        if error is not None:
            _, body = error_response(error.code, error.message, status=error.status or 500)  # type: ignore[arg-type]
            return out + b"data: " + dumps(body) + b"\n\n"
        finish = _finish(self._finish, bool(self._calls))
        closing = (
            self._prefix
            + b"{}"
            + self._suffix.replace(b'"finish_reason":null', b'"finish_reason":' + dumps(finish))
        )
        out += closing
        if self._call.include_usage:
            usage = dict(self._head, choices=[], usage=_usage(self._usage, self._rendering))
            out += b"data: " + dumps(usage) + b"\n\n"
        return out + b"data: [DONE]\n\n"


def render(call: GatewayCall, rendering: Rendering, response: ModelResponse) -> dict[str, Any]:
    """The ``chat.completion`` body for a reply that was not streamed."""
    rendering = as_asked(rendering, call)
    content: list[str] = []
    refusal: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            (refusal if part.provider_metadata.get("refusal") is True else content).append(
                part.text
            )
        elif isinstance(part, ReasoningPart):
            if rendering.shows_reasoning and part.kind in ("raw", "summary") and part.text:
                reasoning.append(part.text)
        elif isinstance(part, ToolCallPart):
            calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": part.arguments},
                }
            )
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(content) or None,
        "refusal": "".join(refusal) or None,
    }
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{rendering.reply_id}",
        "object": "chat.completion",
        "created": rendering.created,
        "model": call.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish(response.finish, bool(calls)),
                "logprobs": None,
            }
        ],
        "usage": _usage(response.usage, rendering),
    }


def error_response(
    code: ErrorCode, message: str, *, status: int, param: str | None = None
) -> tuple[int, dict[str, Any]]:
    """The status and body of a refusal or failure, in OpenAI's error shape with
    thoughtline's code as ``code``."""
    return status, {
        "error": {"message": message, "type": error_type(status), "param": param, "code": code}
    }

"""Writing an OpenAI Responses reply: the stream's events, a whole body, an error (see
the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from thoughtline.errors import ErrorCode
from thoughtline.gateway.call import GatewayCall
from thoughtline.gateway.dialects._common import Rendering, as_asked, dumps, sse
from thoughtline.gateway.dialects._openai import error_type
from thoughtline.gateway.dialects._sequence import SequencedStream
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import (
    MetadataValue,
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
from thoughtline.model.parts import ReasoningPart, TextPart, ToolCallPart, ToolResultPart

_INCOMPLETE: Final[dict[str, str]] = {
    "length": "max_output_tokens",
    "content_filter": "content_filter",
}


@dataclass(slots=True)
class _Item:
    """The output item being streamed: what ``output_item.done`` will carry."""

    kind: Literal["reasoning", "message", "function_call"]
    index: int
    body: dict[str, Any]
    upstream: MetadataValue = None  # a reasoning item's id at the provider
    pieces: list[str] = field(default_factory=list)  # the current part's text
    at: int = 0  # the current part's summary or content index
    raw: bool = False  # the current reasoning part is raw text, not a summary


def _usage(usage: Usage | None, rendering: Rendering) -> dict[str, Any]:
    """The API's usage; both details are required by its schema, so a hidden reply says
    ``reasoning_tokens: 0``."""
    usage = usage or Usage()
    prompt = usage.input_tokens or 0
    output = usage.output_tokens or 0
    reasoning = (usage.reasoning_tokens or 0) if rendering.shows_reasoning else 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": usage.cached_input_tokens or 0,
            "cache_write_tokens": usage.cache_write_tokens or 0,
        },
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + output,
    }


class ResponsesStream(SequencedStream):
    """One streamed reply: :meth:`feed` each gated event, then :meth:`close`. Output
    items stream one at a time (:mod:`._sequence`), numbered by ``output_index``; the
    summaries of one reasoning item at the provider stay one item; every event carries
    its ``sequence_number``. Hidden reasoning is dropped before anything sees it; an
    ``encrypted_content`` goes out only when the client's ``include`` asked for it."""

    __slots__ = (
        "_item",
        "_number",
        "_output",
        "_skipped",
        "_started",
    )

    content_type: Final = "text/event-stream"

    def __init__(self, call: GatewayCall, rendering: Rendering) -> None:
        super().__init__(call, rendering)
        self._number = 0
        self._output: list[dict[str, Any]] = []  # items done, in order
        self._item: _Item | None = None
        self._skipped: set[str] = set()
        self._started = False

    # ------------------------------------------------------------------ frames

    def _event(self, kind: str, fields: dict[str, Any]) -> bytes:
        payload = {"type": kind, "sequence_number": self._number, **fields}
        self._number += 1
        return sse(kind, dumps(payload))

    def _begin(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        opening = self.response("in_progress")
        return self._event("response.created", {"response": opening}) + self._event(
            "response.in_progress", {"response": opening}
        )

    def response(self, status: str) -> dict[str, Any]:
        """The response object as it stands (``status``: ``in_progress``, or how it
        ended), with the items done so far."""
        call = self._call
        choice: Any = "auto"
        if call.tool_choice is not None:
            mode = call.tool_choice.mode
            choice = {"type": "function", "name": call.tool_choice.name} if mode == "tool" else mode
        ended = status != "in_progress"
        reasoning: dict[str, Any] = {
            "effort": call.reasoning.effort,
            "summary": call.reasoning.summary,
        }
        finish = self._finish
        incomplete = _INCOMPLETE.get(finish.reason) if finish is not None else None
        return {
            "id": f"resp_{self._rendering.reply_id}",
            "object": "response",
            "created_at": self._rendering.created,
            "status": status,
            "model": call.model,
            "output": list(self._output),
            "parallel_tool_calls": call.parallel_tool_calls is not False,
            "tool_choice": choice,
            "tools": [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description or None,
                    "parameters": dict(tool.parameters),
                    "strict": False,
                }
                for tool in call.tools
            ],
            "instructions": call.system,
            "metadata": {},
            "temperature": call.temperature,
            "top_p": call.top_p,
            "max_output_tokens": call.max_output_tokens,
            "reasoning": reasoning,
            "store": False,
            "text": {"format": {"type": "text"}},
            "error": None,
            "incomplete_details": {"reason": incomplete} if status == "incomplete" else None,
            "usage": _usage(self._usage, self._rendering) if ended else None,
        }

    # ------------------------------------------------------------------ events

    def _open(
        self,
        kind: Literal["reasoning", "message", "function_call"],
        body: dict[str, Any],
        upstream: MetadataValue = None,
    ) -> bytes:
        out = self._close_item() + self._begin()
        index = len(self._output)
        prefix = {"reasoning": "rs", "message": "msg", "function_call": "fc"}[kind]
        # A reasoning item keeps the id a Responses upstream gave it: a client that sends
        # the item back (its encrypted_content with it) sends the id that server made.
        own = upstream if kind == "reasoning" and isinstance(upstream, str) and upstream else None
        body = {"id": own or f"{prefix}_{self._rendering.reply_id}_{index}", **body}
        self._item = _Item(kind=kind, index=index, body=body, upstream=upstream)
        return out + self._event(
            "response.output_item.added", {"output_index": index, "item": dict(body)}
        )

    def _close_item(self, *, ended: bool = False) -> bytes:
        """``output_item.done`` for the open item. One its part's end never reached (the
        stream broke) is done with what arrived, ``incomplete``."""
        item = self._item
        if item is None:
            return b""
        self._item = None
        if not ended:
            self._cut_short(item)
        elif item.kind != "reasoning":
            item.body["status"] = "completed"
        self._output.append(item.body)
        return self._event(
            "response.output_item.done", {"output_index": item.index, "item": item.body}
        )

    @staticmethod
    def _cut_short(item: _Item) -> None:
        text = "".join(item.pieces)
        if item.kind == "message":
            item.body["status"] = "incomplete"
            if not item.body["content"]:
                kind = "refusal" if item.raw else "output_text"
                part = {"type": kind, kind if item.raw else "text": text}
                item.body["content"] = [part if item.raw else {**part, "annotations": []}]
        elif item.kind == "function_call":
            item.body["status"] = "incomplete"
            item.body["arguments"] = text
        elif item.pieces and item.at >= 0:
            where = item.body["content"] if item.raw else item.body["summary"]
            where[item.at]["text"] = text

    def _reasoning_item(self, metadata: ProviderMetadata) -> bytes:
        """The reasoning item a part belongs to: the open one when the provider's item
        id matches, else a new one."""
        upstream = metadata.get("item_id")
        item = self._item
        if (
            item is not None
            and item.kind == "reasoning"
            and upstream is not None
            and item.upstream == upstream
        ):
            return b""
        return self._open("reasoning", {"type": "reasoning", "summary": []}, upstream)

    def _encrypted(self, metadata: ProviderMetadata) -> None:
        carrier = metadata.get("encrypted_content")
        if (
            self._call.reasoning.include_encrypted
            and isinstance(carrier, str)
            and self._item is not None
        ):
            self._item.body["encrypted_content"] = carrier

    def _render(self, event: StreamEvent) -> bytes:
        item = self._item
        match event:
            case ReasoningStart():
                return self._reasoning_start(event)
            case TextStart():
                refusal = event.provider_metadata.get("refusal") is True
                body: dict[str, Any] = {
                    "type": "message",
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                }
                phase = event.provider_metadata.get("phase")
                if isinstance(phase, str):
                    body["phase"] = phase
                out = self._open("message", body)
                assert self._item is not None
                self._item.raw = refusal
                opening: dict[str, Any] = (
                    {"type": "refusal", "refusal": ""}
                    if refusal
                    else {"type": "output_text", "text": "", "annotations": []}
                )
                return out + self._event(
                    "response.content_part.added", self._at(content_index=0, part=opening)
                )
            case ToolCallStart():
                body = {
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": event.tool_call_id,
                    "name": event.name,
                    "arguments": "",
                }
                return self._open("function_call", body)
            case _ if item is None or getattr(event, "part_id", None) in self._skipped:
                return b""
            case ReasoningDelta():
                if not event.text:
                    return b""
                item.pieces.append(event.text)
                kind = (
                    "response.reasoning_text.delta"
                    if item.raw
                    else "response.reasoning_summary_text.delta"
                )
                index = "content_index" if item.raw else "summary_index"
                return self._event(kind, self._at(**{index: item.at, "delta": event.text}))
            case ReasoningEnd():
                return self._reasoning_end(item, event)
            case TextDelta():
                if not event.text:
                    return b""
                item.pieces.append(event.text)
                kind = "response.refusal.delta" if item.raw else "response.output_text.delta"
                extra: dict[str, Any] = {} if item.raw else {"logprobs": []}
                return self._event(kind, self._at(content_index=0, delta=event.text, **extra))
            case TextEnd():
                text = "".join(item.pieces)
                part: dict[str, Any]
                if item.raw:
                    part = {"type": "refusal", "refusal": text}
                    out = self._event(
                        "response.refusal.done", self._at(content_index=0, refusal=text)
                    )
                else:
                    part = {"type": "output_text", "text": text, "annotations": []}
                    out = self._event(
                        "response.output_text.done",
                        self._at(content_index=0, text=text, logprobs=[]),
                    )
                item.body["content"] = [part]
                out += self._event(
                    "response.content_part.done", self._at(content_index=0, part=part)
                )
                return out + self._close_item(ended=True)
            case ToolCallDelta():
                if not event.arguments_delta:
                    return b""
                item.pieces.append(event.arguments_delta)
                return self._event(
                    "response.function_call_arguments.delta", self._at(delta=event.arguments_delta)
                )
            case ToolCallEnd():
                arguments = item.body["arguments"] = "".join(item.pieces)
                out = self._event(
                    "response.function_call_arguments.done", self._at(arguments=arguments)
                )
                return out + self._close_item(ended=True)
            case _:
                return b""

    def _at(self, **fields: Any) -> dict[str, Any]:
        assert self._item is not None
        return {"item_id": self._item.body["id"], "output_index": self._item.index, **fields}

    def _reasoning_start(self, event: ReasoningStart) -> bytes:
        metadata = event.provider_metadata
        if event.kind == "redacted" or (
            event.kind == "encrypted"
            and not (
                self._call.reasoning.include_encrypted
                and isinstance(metadata.get("encrypted_content"), str)
            )
        ):
            self._skipped.add(event.part_id)  # no carrier this client may see
            return b""
        out = self._reasoning_item(metadata)
        item = self._item
        assert item is not None
        item.pieces = []
        if event.kind == "encrypted":
            self._encrypted(metadata)
            item.at = -1
            return out
        item.raw = event.kind == "raw"
        if item.raw:
            content = item.body.setdefault("content", [])
            item.at = len(content)
            content.append({"type": "reasoning_text", "text": ""})
            return out
        item.at = len(item.body["summary"])
        part = {"type": "summary_text", "text": ""}
        item.body["summary"].append(dict(part))
        return out + self._event(
            "response.reasoning_summary_part.added", self._at(summary_index=item.at, part=part)
        )

    def _reasoning_end(self, item: _Item, event: ReasoningEnd) -> bytes:
        self._encrypted(event.provider_metadata)
        if item.at < 0:
            return b""
        text = "".join(item.pieces)
        item.pieces = []
        if item.raw:
            item.body["content"][item.at]["text"] = text
            return self._event(
                "response.reasoning_text.done", self._at(content_index=item.at, text=text)
            )
        part = {"type": "summary_text", "text": text}
        item.body["summary"][item.at] = part
        out = self._event(
            "response.reasoning_summary_text.done", self._at(summary_index=item.at, text=text)
        )
        return out + self._event(
            "response.reasoning_summary_part.done", self._at(summary_index=item.at, part=part)
        )

    def close(self) -> bytes:
        """The end of the reply: items left open closed, then ``response.completed``
        (``response.incomplete`` when the output was cut, ``response.failed`` after a
        failure) with the whole response."""
        out = self._begin()
        for event in self._sequencer.flush():
            out += self._render(event)
        out += self._close_item()
        error = self._error
        if error is not None:
            # The API's ``error`` event carries any code (thoughtline's); the failed
            # response's error takes one of the API's own.
            out += self._event(
                "error", {"code": error.code, "message": error.message, "param": None}
            )
            failed = self.response("failed")
            kind = "rate_limit_exceeded" if error.status == 429 else "server_error"
            failed["error"] = {"code": kind, "message": error.message}
            return out + self._event("response.failed", {"response": failed})
        finish = self._finish
        status = (
            "incomplete" if finish is not None and finish.reason in _INCOMPLETE else "completed"
        )
        return out + self._event(f"response.{status}", {"response": self.response(status)})


def _events(response: ModelResponse) -> list[StreamEvent]:
    """A response's parts as the events that would have built it."""
    events: list[StreamEvent] = []
    for number, part in enumerate(response.parts):
        pid = str(number)
        if isinstance(part, ReasoningPart):
            events.append(
                ReasoningStart(
                    part_id=pid, kind=part.kind, provider_metadata=part.provider_metadata
                )
            )
            events.append(ReasoningDelta(part_id=pid, text=part.text))
            events.append(
                ReasoningEnd(part_id=pid, kind=part.kind, provider_metadata=part.provider_metadata)
            )
        elif isinstance(part, TextPart):
            events.append(TextStart(part_id=pid, provider_metadata=part.provider_metadata))
            events.append(TextDelta(part_id=pid, text=part.text))
            events.append(TextEnd(part_id=pid))
        elif isinstance(part, ToolCallPart):
            events.append(
                ToolCallStart(part_id=pid, tool_call_id=part.tool_call_id, name=part.name)
            )
            events.append(ToolCallDelta(part_id=pid, arguments_delta=part.arguments))
            events.append(ToolCallEnd(part_id=pid))
        else:
            assert isinstance(part, ToolResultPart)  # never in a response
    events.append(response.usage)
    if response.finish is not None:
        events.append(response.finish)
    return events


def render(call: GatewayCall, rendering: Rendering, response: ModelResponse) -> dict[str, Any]:
    """The ``response`` body for a reply that was not streamed: the same object the
    stream's terminal event carries, built by the same steps."""
    rendering = as_asked(rendering, call)
    stream = ResponsesStream(call, rendering)
    for event in _events(response):
        stream.feed(event)
    stream.close()
    finish = response.finish
    status = "incomplete" if finish is not None and finish.reason in _INCOMPLETE else "completed"
    return stream.response(status)


def error_response(
    code: ErrorCode, message: str, *, status: int, param: str | None = None
) -> tuple[int, dict[str, Any]]:
    """The status and body of a refusal or failure, in OpenAI's error shape with
    thoughtline's code as ``code``."""
    return status, {
        "error": {"message": message, "type": error_type(status), "param": param, "code": code}
    }

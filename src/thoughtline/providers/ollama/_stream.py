"""Ollama ``/api/chat`` objects → events (one per NDJSON line, or the whole body).

Every object carries a ``message`` fragment: ``thinking`` (the model's raw reasoning),
``content`` (answer text) and, in one object, ``tool_calls`` whose ``arguments`` are a
JSON object (serialized here to JSON text, as every other wire API sends it). The last
object has ``"done": true`` with ``done_reason`` and the token counts; that is the
terminal condition. A line ``{"error": "..."}`` ends the stream with an error.

Consecutive thinking fragments continue one ``raw`` reasoning part until content or a
tool call arrives; consecutive content fragments continue one text part. When no
``thinking`` came first, a ``<think>`` block leading ``content`` (a model that thinks
although ``think`` is off or not honoured) is raw reasoning too, split out as it streams
(``reasoning_field = "auto"``, the default; see :mod:`thoughtline.providers._think_tags`).
"""

from __future__ import annotations

from typing import Any, Final

from thoughtline.model.events import (
    Finish,
    FinishReason,
    ResponseStarted,
    StreamEvent,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.providers._call_ids import synthetic_call_id
from thoughtline.providers._runs import AlternatingRuns
from thoughtline.providers._think_tags import Segment, content_splitter
from thoughtline.providers.base import PayloadTranslator
from thoughtline.providers.ollama._errors import stream_error
from thoughtline.wire.jsonio import dumps

DONE_REASONS: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
}
"""Ollama ``done_reason`` → normalized reason; others (``load``, ``unload``) are ``other``."""


class OllamaTranslator(PayloadTranslator):
    """Per-response state: the open thinking/content run, ids and tool calls."""

    def __init__(self, reasoning_field: str = "auto") -> None:
        self.finished = False
        self._splitter = content_splitter(reasoning_field, think_tags=False)
        self._started = False
        self._next_id = 0
        self._tool_calls = 0
        self._runs = AlternatingRuns("raw", self._new_id)

    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        error = payload.get("error")
        if error is not None:
            out.append(stream_error(error))
            return out
        if not self._started:
            self._started = True
            model = payload.get("model")
            out.append(ResponseStarted(model=model if isinstance(model, str) else None))
        message = payload.get("message")
        if isinstance(message, dict):
            thinking = message.get("thinking")
            if thinking and isinstance(thinking, str):
                if self._splitter is not None:
                    self._splitter.reasoning_arrived()
                self._runs.reasoning(thinking, out)
            content = message.get("content")
            if content and isinstance(content, str):
                if self._splitter is None:
                    self._runs.text(content, out)
                else:
                    self._segments(self._splitter.feed(content), out)
            calls = message.get("tool_calls")
            if calls and isinstance(calls, list):
                for call in calls:
                    self._tool_call(call, out)
        if payload.get("done") is True:
            self._flush(out)
            self._runs.close(out)
            out.append(
                Usage(
                    input_tokens=_opt_int(payload.get("prompt_eval_count")),
                    # eval_count covers thinking and answer alike; Ollama reports no
                    # separate reasoning count, so reasoning_tokens stays unknown.
                    output_tokens=_opt_int(payload.get("eval_count")),
                )
            )
            raw = payload.get("done_reason")
            raw_reason = raw if isinstance(raw, str) and raw else None
            out.append(Finish(reason=self._reason_for(raw_reason), raw_reason=raw_reason))
            self.finished = True
        return out

    def finish(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        self._flush(out)
        self._runs.close(out)
        return out

    def _segments(self, segments: list[Segment], out: list[StreamEvent]) -> None:
        for kind, text in segments:
            if kind == "reasoning":
                self._runs.reasoning(text, out)
            else:
                self._runs.text(text, out)

    def _flush(self, out: list[StreamEvent]) -> None:
        """Release what the splitter held back (the answer text ended)."""
        if self._splitter is not None:
            self._segments(self._splitter.flush(), out)

    def _tool_call(self, call: Any, out: list[StreamEvent]) -> None:
        self._flush(out)
        self._runs.close(out)
        part_id = self._new_id("tool")
        index = self._tool_calls
        self._tool_calls += 1
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            function = {}
        call_id = call.get("id") if isinstance(call, dict) else None
        name = function.get("name")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            arguments_text = arguments  # already JSON text (some servers send it so)
        else:
            arguments_text = dumps({} if arguments is None else arguments)
        metadata = {}
        if isinstance(function.get("index"), int):
            metadata["index"] = function["index"]
        out.append(
            ToolCallStart(
                part_id=part_id,
                tool_call_id=call_id
                if isinstance(call_id, str) and call_id
                else synthetic_call_id(index),
                name=name if isinstance(name, str) else "",
            )
        )
        out.append(ToolCallDelta(part_id=part_id, arguments_delta=arguments_text))
        out.append(ToolCallEnd(part_id=part_id, provider_metadata=metadata))

    def _reason_for(self, raw_reason: str | None) -> FinishReason:
        if raw_reason is None or raw_reason == "stop":
            # Ollama says "stop" after tool calls too; older servers send no reason.
            return "tool_calls" if self._tool_calls else "stop"
        return DONE_REASONS.get(raw_reason, "other")

    def _new_id(self, prefix: str) -> str:
        number = self._next_id
        self._next_id = number + 1
        return f"{prefix}_{number}"


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

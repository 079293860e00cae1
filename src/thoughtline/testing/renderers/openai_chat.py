"""Chat Completions as hosted OpenAI, OpenRouter or a raw-reasoning server would send it.

:class:`OpenAIChatRenderer` renders a :class:`~thoughtline.testing.transcript.Transcript`
given the request the simulated server received:

- ``openai`` dialect: never any reasoning text; ``completion_tokens_details.reasoning_tokens``
  counts the transcript's reasoning.
- ``openrouter``: ``reasoning`` + ``reasoning_details`` only when the request enabled
  reasoning (``enabled``, an effort other than ``none``, or ``max_tokens``) and did not
  say ``exclude``. Raw blocks become ``reasoning.text`` with format ``unknown``; summary
  blocks ``reasoning.text`` with format ``anthropic-claude-v1`` and their signature;
  encrypted blocks ``reasoning.encrypted`` (format ``openai-responses-v1``); redacted
  blocks ``reasoning.encrypted`` with format ``anthropic-claude-v1``. Streams start with
  an ``: OPENROUTER PROCESSING`` comment.
- ``raw-reasoning``: the configured field (``reasoning_content`` for DeepSeek and
  llama.cpp, ``reasoning`` for vLLM) or ``<think>…</think>`` inline in ``content``
  (``think_tags``), when the request switched thinking on, or when the model reasons by
  default and the request did not switch it off. Encrypted and redacted blocks do not
  exist on these servers and are not rendered.

Streams end with a finish chunk, a usage-only chunk and ``data: [DONE]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from thoughtline.providers.endpoints import ChatDialect
from thoughtline.testing.conversation import SimConversation, read_chat
from thoughtline.testing.renderers._json import dumps
from thoughtline.testing.transcript import (
    Frame,
    FrameRole,
    SimReasoning,
    SimRequest,
    StreamErrorKind,
    Transcript,
    chunks,
)

RawField: TypeAlias = Literal["reasoning_content", "reasoning", "think_tags"]
_FrameSink: TypeAlias = Callable[..., None]

_FINISH: dict[str, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "stop",  # a refusal is a normal stop whose text is in ``refusal``
}
_OPENROUTER_STREAM_CODES: dict[str, int] = {
    "overloaded": 503,
    "server_error": 502,
    "rate_limited": 429,
}
_OPENAI_STREAM_ERRORS: dict[str, tuple[str, str]] = {
    "overloaded": ("server_error", "overloaded"),
    "server_error": ("server_error", "server_error"),
    "rate_limited": ("requests", "rate_limit_exceeded"),
}


def _openai_error_type(status: int) -> tuple[str, str | None]:
    if status == 401:
        return "invalid_request_error", "invalid_api_key"
    if status == 404:
        return "invalid_request_error", "model_not_found"
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def _sse(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + dumps(payload).encode("utf-8") + b"\n\n"


class OpenAIChatRenderer:
    """Renders transcripts as one Chat Completions dialect (see the module docstring)."""

    stream_content_type = "text/event-stream"

    def __init__(
        self,
        *,
        dialect: ChatDialect = "openai",
        reasoning_field: RawField = "reasoning_content",
        reasons_by_default: bool = False,
        reports_reasoning_tokens: bool = True,
        upstream_provider: str | None = None,
        created: int = 1767225600,
    ) -> None:
        self.dialect = dialect
        self.reasoning_field = reasoning_field
        self.reasons_by_default = reasons_by_default
        self.reports_reasoning_tokens = reports_reasoning_tokens
        self.upstream_provider = upstream_provider
        self.created = created

    # ------------------------------------------------------------------ request

    def conversation(self, request: SimRequest) -> SimConversation:
        return read_chat(request.body or {})

    def model_of(self, request: SimRequest) -> str | None:
        body = request.body or {}
        model = body.get("model")
        return model if isinstance(model, str) else request.model

    def is_stream(self, request: SimRequest) -> bool:
        body = request.body or {}
        return body.get("stream") is True

    def returns_reasoning(self, request: SimRequest) -> bool:
        """Whether this dialect sends reasoning text for this request."""
        body = request.body or {}
        if self.dialect == "openai":
            return False
        if self.dialect == "openrouter":
            reasoning = body.get("reasoning")
            if not isinstance(reasoning, Mapping) or reasoning.get("exclude") is True:
                return False
            effort = reasoning.get("effort")
            return (
                reasoning.get("enabled") is True
                or (effort is not None and effort != "none")
                or reasoning.get("max_tokens") is not None
            )
        thinking = body.get("thinking")
        if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "disabled"):
            return thinking.get("type") == "enabled"
        template = body.get("chat_template_kwargs")
        if isinstance(template, Mapping) and isinstance(template.get("enable_thinking"), bool):
            return bool(template["enable_thinking"])
        return self.reasons_by_default

    # ------------------------------------------------------------------ shared pieces

    def _visible_blocks(self, transcript: Transcript, request: SimRequest) -> list[SimReasoning]:
        if not self.returns_reasoning(request):
            return []
        if self.dialect == "raw-reasoning":
            return [block for block in transcript.reasoning if block.kind in ("raw", "summary")]
        return list(transcript.reasoning)

    def _usage(self, transcript: Transcript, request: SimRequest) -> dict[str, Any]:
        reasoning_tokens = transcript.effective_reasoning_tokens()
        output_tokens = transcript.effective_output_tokens()
        reasoned = True
        if self.dialect == "raw-reasoning" and not self.returns_reasoning(request):
            # Thinking switched off: the model did not reason at all.
            reasoned = False
            if transcript.output_tokens is None:
                output_tokens -= reasoning_tokens
            reasoning_tokens = 0
        usage: dict[str, Any] = {
            "prompt_tokens": transcript.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": transcript.input_tokens + output_tokens,
        }
        if self.dialect != "raw-reasoning":
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        elif self.reports_reasoning_tokens and reasoned:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        return usage

    def _head(self, transcript: Transcript, request: SimRequest, obj: str) -> dict[str, Any]:
        head: dict[str, Any] = {
            "id": transcript.response_id,
            "object": obj,
            "created": self.created,
            "model": self.model_of(request) or "unknown",
        }
        if self.dialect == "openrouter" and self.upstream_provider:
            head["provider"] = self.upstream_provider
        return head

    @staticmethod
    def _detail(block: SimReasoning, index: int, *, text: str | None) -> dict[str, Any]:
        """The ``reasoning_details`` entry OpenRouter sends for a block (``text`` may be a
        streamed piece, ``""`` for a signature-only entry, or ``None`` for the whole)."""
        body_text = block.text if text is None else text
        if block.kind == "raw":
            return {
                "type": "reasoning.text",
                "text": body_text,
                "format": "unknown",
                "index": index,
            }
        if block.kind == "summary":
            detail: dict[str, Any] = {
                "type": "reasoning.text",
                "text": body_text,
                "format": "anthropic-claude-v1",
                "index": index,
            }
            if text is None and block.signature is not None:
                detail["signature"] = block.signature
            return detail
        if block.kind == "encrypted":
            return {
                "type": "reasoning.encrypted",
                "data": block.signature or "",
                "id": f"rs_{index}",
                "format": "openai-responses-v1",
                "index": index,
            }
        return {
            "type": "reasoning.encrypted",
            "data": block.signature or "",
            "format": "anthropic-claude-v1",
            "index": index,
        }

    # ------------------------------------------------------------------ stream

    def stream_frames(self, transcript: Transcript, request: SimRequest) -> list[Frame]:
        frames: list[Frame] = []
        size = transcript.chunk_chars

        def frame(role: FrameRole, delta: dict[str, Any], finish: str | None = None) -> None:
            payload = self._head(transcript, request, "chat.completion.chunk")
            payload["choices"] = [
                {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            ]
            frames.append(Frame(role=role, data=_sse(payload)))

        if self.dialect == "openrouter":
            frames.append(Frame(role="meta", data=b": OPENROUTER PROCESSING\n\n"))
        frame("meta", {"role": "assistant", "content": ""})

        blocks = self._visible_blocks(transcript, request)
        answer_field = "refusal" if transcript.finish == "refusal" else "content"
        answer = transcript.answer
        if blocks and self.dialect == "openrouter":
            for index, block in enumerate(blocks):
                self._stream_detail(block, index, size, frame)
        elif blocks and self.reasoning_field == "think_tags":
            thought = "".join(block.text for block in blocks)
            for piece in chunks(f"<think>{thought}</think>\n\n", size):
                frame("reasoning", {"content": piece})
        elif blocks:
            for block in blocks:
                for piece in chunks(block.text, size) if block.text else ():
                    frame("reasoning", {"content": None, self.reasoning_field: piece})

        for piece in chunks(answer, size) if answer else ():
            frame("text", {answer_field: piece})
        for index, call in enumerate(transcript.tool_calls):
            opening = {
                "index": index,
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            frame("tool", {"tool_calls": [opening]})
            for piece in chunks(call.arguments, size) if call.arguments else ():
                frame("tool", {"tool_calls": [{"index": index, "function": {"arguments": piece}}]})

        frame("end", {}, _FINISH[transcript.finish])
        usage = self._head(transcript, request, "chat.completion.chunk")
        usage["choices"] = []
        usage["usage"] = self._usage(transcript, request)
        frames.append(Frame(role="end", data=_sse(usage)))
        frames.append(Frame(role="end", data=b"data: [DONE]\n\n"))
        return frames

    def _stream_detail(self, block: SimReasoning, index: int, size: int, frame: _FrameSink) -> None:
        if block.kind in ("raw", "summary"):
            for piece in chunks(block.text, size) if block.text else ():
                detail = self._detail(block, index, text=piece)
                frame("reasoning", {"reasoning": piece, "reasoning_details": [detail]})
            if block.kind == "summary" and block.signature is not None:
                detail = self._detail(block, index, text="")
                detail["signature"] = block.signature
                frame("reasoning", {"reasoning_details": [detail]})
            return
        frame("reasoning", {"reasoning_details": [self._detail(block, index, text=None)]})

    # ------------------------------------------------------------------ whole body

    def body(self, transcript: Transcript, request: SimRequest) -> bytes:
        blocks = self._visible_blocks(transcript, request)
        message: dict[str, Any] = {"role": "assistant"}
        content: str | None = transcript.answer or None
        refusal: str | None = None
        if transcript.finish == "refusal":
            content, refusal = None, transcript.answer
        thought = "".join(block.text for block in blocks if block.kind in ("raw", "summary"))
        if self.dialect == "openrouter":
            message["reasoning"] = thought or None
            if blocks:
                message["reasoning_details"] = [
                    self._detail(block, index, text=None) for index, block in enumerate(blocks)
                ]
        elif self.dialect == "raw-reasoning" and blocks:
            if self.reasoning_field == "think_tags":
                content = f"<think>{thought}</think>\n\n{content or ''}"
            else:
                message[self.reasoning_field] = thought
        message["content"] = content
        message["refusal"] = refusal
        if transcript.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in transcript.tool_calls
            ]
        payload = self._head(transcript, request, "chat.completion")
        payload["choices"] = [
            {
                "index": 0,
                "message": message,
                "finish_reason": _FINISH[transcript.finish],
                "logprobs": None,
            }
        ]
        payload["usage"] = self._usage(transcript, request)
        return dumps(payload).encode("utf-8")

    # ------------------------------------------------------------------ failures

    def error_body(self, status: int, message: str) -> bytes:
        if self.dialect == "openrouter":
            return dumps({"error": {"code": status, "message": message}}).encode("utf-8")
        error_type, code = _openai_error_type(status)
        error = {"message": message, "type": error_type, "param": None, "code": code}
        return dumps({"error": error}).encode("utf-8")

    def stream_error_frame(self, kind: StreamErrorKind, message: str) -> bytes:
        if self.dialect == "openrouter":
            payload: dict[str, Any] = {
                "id": "gen-error",
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": "unknown",
                "error": {"code": _OPENROUTER_STREAM_CODES[kind], "message": message},
                "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
            }
            return _sse(payload)
        error_type, code = _OPENAI_STREAM_ERRORS[kind]
        error = {"message": message, "type": error_type, "param": None, "code": code}
        return _sse({"error": error})

    def malformed_frame(self) -> bytes:
        return b'data: {"id":"chatcmpl-broken","choices":[{"delta":\n\n'

    def keep_alive_frame(self) -> bytes:
        if self.dialect == "openrouter":
            return b": OPENROUTER PROCESSING\n\n"
        return b": keep-alive\n\n"

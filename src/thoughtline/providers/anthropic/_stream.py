"""Anthropic Messages stream payloads → events.

The stream is a sequence of content blocks addressed by ``index``; blocks may
interleave (thinking and tool use alternate), so state is kept per index. Part ids are
``reasoning-N``, ``text-N`` and ``tool-N`` for block index ``N``: unique within one
message and identical for the streamed and the non-streaming form of the same response.

Reasoning parts:

- ``thinking`` blocks are ``summary`` (Claude 4+ never returns raw thinking). A block
  that ends with a signature but no text is ``encrypted`` (``display: "omitted"``). The
  signature arrives in one ``signature_delta`` just before the block stops; it is
  assigned, never appended, and reported in the ``ReasoningEnd`` metadata.
- ``redacted_thinking`` arrives whole in ``content_block_start``: its opaque ``data``
  goes into the ``ReasoningStart`` metadata unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from thoughtline.model.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from thoughtline.providers.anthropic._errors import stream_error
from thoughtline.providers.anthropic._usage import NO_USAGE, anthropic_usage
from thoughtline.providers.base import PayloadTranslator
from thoughtline.wire.jsonio import dumps

FINISH_FOR_STOP_REASON: Final[dict[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
    "pause_turn": "other",
}
"""Anthropic ``stop_reason`` → normalized finish reason (unknown values → ``other``).

``refusal`` is the model declining (``stop_details`` says why, as a warning);
``pause_turn`` means the server paused a long-running turn (server tools) that the caller
may continue by sending the response back: not a normal stop, so ``other``, with a
warning that the answer may be incomplete."""

_PAUSED = StreamWarning(
    code="PROVIDER_PAUSED_TURN",
    message="Anthropic paused the turn before it finished (a long-running server tool); "
    "the answer may be incomplete.",
)

# Block kinds, compared by equality on the hot path.
_THINKING: Final = "thinking"
_REDACTED: Final = "redacted_thinking"
_TEXT: Final = "text"
_TOOL: Final = "tool_use"
_IGNORED: Final = "ignored"

_PART_PREFIX: Final[dict[str, str]] = {
    _THINKING: "reasoning",
    _REDACTED: "reasoning",
    _TEXT: "text",
    _TOOL: "tool",
}


class _Block:
    """One open content block. ``has_content``: thinking text or tool arguments arrived."""

    __slots__ = ("has_content", "index", "kind", "part_id", "signature", "warned")

    def __init__(self, index: int, kind: str, part_id: str) -> None:
        self.index = index
        self.kind = kind
        self.part_id = part_id
        self.has_content = False
        self.signature: str | None = None
        self.warned: set[str] | None = None


class AnthropicStreamTranslator(PayloadTranslator):
    """Translates the payloads of one ``/v1/messages`` stream (``"stream": true``)."""

    def __init__(self, *, thinking_kind: ReasoningKind = "summary") -> None:
        self.finished = False
        # Claude 4+ summarizes its thinking; Claude 3.7 returns it whole (capability data).
        self._thinking_kind: ReasoningKind = thinking_kind
        self._message_open = False
        # Cache reads and writes from message_start, for a message_delta that reports
        # input_tokens without them.
        self._cache: tuple[int | None, int | None] = (None, None)
        self._blocks: dict[int, _Block] = {}
        self._used_part_ids: set[str] = set()
        self._dropped: StreamWarning | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], list[StreamEvent]]] = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "ping": _ignore,
            "error": _error,
        }

    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        payload_type = payload.get("type")
        # The payload's own type is authoritative; the SSE event name repeats it.
        key = payload_type if isinstance(payload_type, str) else event_name
        handler = self._handlers.get(key)
        if handler is None:
            return [
                StreamWarning(
                    code="UNKNOWN_EVENT",
                    message=f"Skipped an Anthropic stream event of unknown type {key!r}.",
                )
            ]
        return handler(payload)

    def finish(self) -> list[StreamEvent]:
        """Close blocks still open when ``message_stop`` arrived (a block without its
        ``content_block_stop``), in start order. Not called after an error: parts cut by
        an error stay open so the accumulator marks them incomplete."""
        out: list[StreamEvent] = []
        for block in list(self._blocks.values()):
            self._close(block, out, complete=False)
        self._blocks.clear()
        return out

    # ------------------------------------------------------------------ message level

    def _message_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._message_open:
            # A second message_start before message_stop (seen behind some proxies): the
            # first message's open blocks never finished. Tool calls among them stay
            # open (incomplete); the new message is read on with fresh part ids.
            out.append(
                StreamWarning(
                    code="PROVIDER_PROTOCOL",
                    message="Anthropic started a new message before the previous one "
                    "ended; what the previous message left unfinished is kept as incomplete.",
                )
            )
            for block in list(self._blocks.values()):
                self._close(block, out, complete=False)
            self._blocks.clear()
        self._message_open = True
        message = payload.get("message")
        if not isinstance(message, dict):
            out.append(ResponseStarted())
            return out
        response_id = message.get("id")
        model = message.get("model")
        out.append(
            ResponseStarted(
                response_id=response_id if isinstance(response_id, str) else None,
                model=model if isinstance(model, str) else None,
            )
        )
        usage = message.get("usage")
        if isinstance(usage, dict):
            # output_tokens here is a placeholder (usually 1); the real count comes with
            # message_delta, so it is not reported yet.
            start_usage = anthropic_usage(usage, output=False)
            self._cache = (start_usage.cached_input_tokens, start_usage.cache_write_tokens)
            if start_usage != NO_USAGE:
                out.append(start_usage)
        self._dropped = _dropped_blocks(message.get("input_transformations"))
        if self._dropped is not None:
            out.append(self._dropped)
        return out

    def _message_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        # Sent again only after a server-side model fallback: the serving model's list,
        # which replaces message_start's.
        dropped = _dropped_blocks(payload.get("input_transformations"))
        if dropped is not None and dropped != self._dropped:
            self._dropped = dropped
            out.append(dropped)
        usage = payload.get("usage")
        if isinstance(usage, dict):
            out.append(anthropic_usage(usage, output=True, cache=self._cache))
        delta = payload.get("delta")
        if isinstance(delta, dict):
            stop_reason = delta.get("stop_reason")
            if isinstance(stop_reason, str):
                details = delta.get("stop_details")
                if isinstance(details, dict):
                    warning = _refusal_warning(details)
                    if warning is not None:
                        out.append(warning)
                if stop_reason == "pause_turn":
                    out.append(_PAUSED)
                out.append(
                    Finish(
                        reason=FINISH_FOR_STOP_REASON.get(stop_reason, "other"),
                        raw_reason=stop_reason,
                    )
                )
        return out

    def _message_stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self.finished = True
        self._message_open = False
        return []

    # ------------------------------------------------------------------ block level

    def _block_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = payload.get("index")
        block_payload = payload.get("content_block")
        if not isinstance(index, int) or not isinstance(block_payload, dict):
            return [_unknown_event("content_block_start without an index or a content_block")]
        out: list[StreamEvent] = []
        previous = self._blocks.pop(index, None)
        if previous is not None:  # a block index reused before it stopped
            self._close(previous, out, complete=False)
        block_type = block_payload.get("type")
        if block_type == "fallback":
            self._blocks[index] = _Block(index, _IGNORED, "")
            out.extend(_fallback(block_payload))
            return out
        prefix = _PART_PREFIX.get(block_type) if isinstance(block_type, str) else None
        if prefix is None:
            self._blocks[index] = _Block(index, _IGNORED, "")
            out.append(
                StreamWarning(
                    code="UNKNOWN_PART",
                    message=f"Skipped an Anthropic content block of type {block_type!r} "
                    f"(index {index}).",
                )
            )
            return out
        assert isinstance(block_type, str)
        block = _Block(index, block_type, self._part_id(prefix, index))
        self._blocks[index] = block
        part_id = block.part_id
        if block_type == _THINKING:
            out.append(ReasoningStart(part_id=part_id, kind=self._thinking_kind))
            text = block_payload.get("thinking")
            if isinstance(text, str) and text:
                block.has_content = True
                out.append(ReasoningDelta(part_id=part_id, text=text))
            signature = block_payload.get("signature")
            if isinstance(signature, str) and signature:
                block.signature = signature
        elif block_type == _TEXT:
            out.append(TextStart(part_id=part_id))
            text = block_payload.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(part_id=part_id, text=text))
        elif block_type == _TOOL:
            tool_call_id = block_payload.get("id")
            name = block_payload.get("name")
            out.append(
                ToolCallStart(
                    part_id=part_id,
                    tool_call_id=tool_call_id if isinstance(tool_call_id, str) else "",
                    name=name if isinstance(name, str) else "",
                )
            )
            arguments = block_payload.get("input")
            # Streams start with an empty input and send it as input_json_delta.
            if isinstance(arguments, dict) and arguments:
                block.has_content = True
                out.append(ToolCallDelta(part_id=part_id, arguments_delta=dumps(arguments)))
        else:  # redacted_thinking: complete on arrival, opaque data kept unchanged
            data = block_payload.get("data")
            out.append(
                ReasoningStart(
                    part_id=part_id,
                    kind="redacted",
                    provider_metadata={"data": data if isinstance(data, str) else None},
                )
            )
        return out

    def _block_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            return [_unknown_event("content_block_delta without a delta")]
        delta_type = delta.get("type")
        index = payload.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None:
            return self._orphan_delta(payload, delta_type)
        kind = block.kind
        if delta_type == "text_delta":
            if kind == _TEXT:
                text = delta.get("text")
                if isinstance(text, str) and text:
                    return [TextDelta(part_id=block.part_id, text=text)]
                return []
        elif delta_type == "thinking_delta":
            if kind == _THINKING:
                text = delta.get("thinking")
                if isinstance(text, str) and text:
                    block.has_content = True
                    return [ReasoningDelta(part_id=block.part_id, text=text)]
                return []
        elif delta_type == "input_json_delta":
            if kind == _TOOL:
                partial = delta.get("partial_json")
                if isinstance(partial, str) and partial:
                    block.has_content = True
                    return [ToolCallDelta(part_id=block.part_id, arguments_delta=partial)]
                return []
        elif delta_type == "signature_delta" and kind == _THINKING:
            signature = delta.get("signature")
            if isinstance(signature, str):
                block.signature = signature  # the complete value: assign, never append
            return []
        if kind == _IGNORED:
            return []  # already reported when the block started
        return self._unknown_delta(block, delta_type)

    def _block_stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = payload.get("index")
        block = self._blocks.pop(index, None) if isinstance(index, int) else None
        out: list[StreamEvent] = []
        if block is None:
            out.append(_unknown_event(f"content_block_stop for index {index!r} that never started"))
            return out
        self._close(block, out, complete=True)
        return out

    def _close(self, block: _Block, out: list[StreamEvent], *, complete: bool) -> None:
        kind = block.kind
        part_id = block.part_id
        if kind == _THINKING:
            signature = block.signature
            metadata = {"signature": signature} if signature is not None else {}
            # A signature with no text is Anthropic's display "omitted": only the carrier.
            final_kind: ReasoningKind = (
                "encrypted" if not block.has_content and signature else self._thinking_kind
            )
            out.append(ReasoningEnd(part_id=part_id, kind=final_kind, provider_metadata=metadata))
        elif kind == _TEXT:
            out.append(TextEnd(part_id=part_id))
        elif kind == _TOOL:
            if not complete:
                # No content_block_stop: the arguments may be cut anywhere. The part is
                # left open, so the accumulator marks the call incomplete; a call marked
                # complete with truncated arguments could be run.
                out.append(
                    StreamWarning(
                        code="INCOMPLETE_PART",
                        message=f"Anthropic never closed the tool_use block at index "
                        f"{block.index}; its arguments may be truncated, so the tool call "
                        "is kept as incomplete.",
                    )
                )
                return
            if not block.has_content:
                # A tool without arguments streams no input; make it the same "{}" the
                # non-streaming body carries.
                out.append(ToolCallDelta(part_id=part_id, arguments_delta="{}"))
            out.append(ToolCallEnd(part_id=part_id))
        elif kind == _REDACTED:
            out.append(ReasoningEnd(part_id=part_id, kind="redacted"))

    def _orphan_delta(self, payload: Mapping[str, Any], delta_type: object) -> list[StreamEvent]:
        """A delta for an index that never started: open the block it implies."""
        index = payload.get("index")
        if isinstance(index, int) and delta_type in ("text_delta", "thinking_delta"):
            block_type = _TEXT if delta_type == "text_delta" else _THINKING
            started = self._block_start({"index": index, "content_block": {"type": block_type}})
            return [*started, *self._block_delta(dict(payload))]
        return [
            _unknown_event(
                f"content_block_delta of type {delta_type!r} for index {index!r} that never started"
            )
        ]

    def _unknown_delta(self, block: _Block, delta_type: object) -> list[StreamEvent]:
        # Report each unknown delta type once per block: citations can arrive by the dozen.
        label = str(delta_type)
        if block.warned is None:
            block.warned = set()
        elif label in block.warned:
            return []
        block.warned.add(label)
        return [
            StreamWarning(
                code="UNKNOWN_EVENT",
                message=f"Skipped Anthropic {label!r} deltas on a {block.kind} block "
                f"(index {block.index}).",
            )
        ]

    def _part_id(self, prefix: str, index: int) -> str:
        part_id = f"{prefix}-{index}"
        if part_id in self._used_part_ids:
            suffix = 1
            while f"{part_id}.{suffix}" in self._used_part_ids:
                suffix += 1
            part_id = f"{part_id}.{suffix}"
        self._used_part_ids.add(part_id)
        return part_id


def _fallback(block: Mapping[str, Any]) -> list[StreamEvent]:
    """A server-side model fallback: the ``from`` model declined, the ``to`` model writes
    what follows. The model that answered is reported as the response's model."""
    source, target = block.get("from"), block.get("to")
    declined = source.get("model") if isinstance(source, Mapping) else None
    answered = target.get("model") if isinstance(target, Mapping) else None
    trigger = block.get("trigger")
    category = trigger.get("category") if isinstance(trigger, Mapping) else None
    why = f" (refusal, category {category})" if isinstance(category, str) else ""
    out: list[StreamEvent] = [
        StreamWarning(
            code="PROVIDER_MODEL_FALLBACK",
            message=f"Anthropic handed the response from {declined or 'the requested model'} "
            f"to {answered or 'a fallback model'}{why}; the rest was written by the fallback "
            "model.",
        )
    ]
    if isinstance(answered, str) and answered:
        out.append(ResponseStarted(model=answered))
    return out


def _refusal_warning(details: Mapping[str, Any]) -> StreamWarning | None:
    category = details.get("category")
    explanation = details.get("explanation")
    if not isinstance(category, str) and not isinstance(explanation, str):
        return None
    message = f"The model refused (category: {category or 'unspecified'})"
    if isinstance(explanation, str) and explanation.strip(" ."):
        message = f"{message}: {explanation.strip().rstrip('.')}"
    if category == "reasoning_extraction":
        message = (
            f"{message}. Asking the model to write out its reasoning is refused; request "
            "reasoning through chain_of_thought instead"
        )
    return StreamWarning(code="PROVIDER_REFUSAL", message=f"{message}.")


_SHOWN_DROPS: Final = 5


def _dropped_blocks(transformations: object) -> StreamWarning | None:
    """``PROVIDER_THINKING_DROPPED`` for the ``thinking_dropped`` entries of a response's
    ``input_transformations``: blocks of the request the API left out, unread by the
    model, because they failed a binding check (another model, another prefix)."""
    if not isinstance(transformations, list):
        return None
    dropped = [
        entry
        for entry in transformations
        if isinstance(entry, dict) and entry.get("type") == "thinking_dropped"
    ]
    if not dropped:
        return None
    where = ", ".join(
        f"{entry.get('path', '?')}: {entry.get('reason', 'unspecified')}"
        for entry in dropped[:_SHOWN_DROPS]
    )
    if len(dropped) > _SHOWN_DROPS:
        where += f", and {len(dropped) - _SHOWN_DROPS} more"
    blocks = "block" if len(dropped) == 1 else "blocks"
    return StreamWarning(
        code="PROVIDER_THINKING_DROPPED",
        message=f"Anthropic left {len(dropped)} thinking {blocks} of the request out "
        f"unread by the model ({where}).",
    )


def _ignore(payload: dict[str, Any]) -> list[StreamEvent]:
    return []


def _error(payload: dict[str, Any]) -> list[StreamEvent]:
    return [stream_error(payload)]


def _unknown_event(detail: str) -> StreamWarning:
    return StreamWarning(
        code="UNKNOWN_EVENT", message=f"Skipped an Anthropic stream event: {detail}."
    )

"""Tolerant parsing: odd but real chunk shapes from OpenAI-compatible servers."""

from __future__ import annotations

import json
from typing import Any

from thoughtline.model.events import (
    Finish,
    MetadataValue,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

from .helpers import decode_stream


def sse(*payloads: dict[str, Any]) -> bytes:
    frames = [f"data: {json.dumps(payload, ensure_ascii=False)}\n\n" for payload in payloads]
    return ("".join(frames) + "data: [DONE]\n\n").encode()


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c-1",
        "model": "m",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


STARTED = ResponseStarted(response_id="c-1", model="m")


def stream(stem: str, *payloads: dict[str, Any]) -> list[StreamEvent]:
    return decode_stream(stem, sse(*payloads))


def test_tool_calls_without_index_and_without_id() -> None:
    events = stream(
        "vllm_reasoning",
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{"}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "[]"}}]}),
        chunk(
            {"tool_calls": [{"index": 7, "function": {"name": "h", "arguments": "1"}}]},
            "tool_calls",
        ),
    )
    assert events == [
        STARTED,
        ToolCallStart(part_id="tool-0", tool_call_id="a", name="f"),
        ToolCallDelta(part_id="tool-0", arguments_delta="{"),
        ToolCallDelta(part_id="tool-0", arguments_delta="}"),
        ToolCallStart(part_id="tool-1", tool_call_id="b", name="g"),
        ToolCallDelta(part_id="tool-1", arguments_delta="[]"),
        ToolCallStart(part_id="tool-2", tool_call_id="call_7", name="h"),
        ToolCallDelta(part_id="tool-2", arguments_delta="1"),
        ToolCallEnd(part_id="tool-0"),
        ToolCallEnd(part_id="tool-1"),
        ToolCallEnd(part_id="tool-2"),
        Finish(reason="tool_calls", raw_reason="tool_calls"),
    ]


def test_other_choices_are_ignored_and_unknown_finish_is_other() -> None:
    second = chunk({"content": "ignored"})
    second["choices"][0]["index"] = 1
    events = stream("vllm_reasoning", chunk({"content": "A"}), second, chunk({}, "eos_token"))
    assert events == [
        STARTED,
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="A"),
        TextEnd(part_id="text-0"),
        Finish(reason="other", raw_reason="eos_token"),
    ]


def test_openrouter_finish_error_without_error_object() -> None:
    events = stream("openrouter_raw", chunk({"content": "x"}, "error"))
    assert events[-1] == Finish(reason="error", raw_reason="error")


def test_azure_style_empty_first_chunk() -> None:
    events = stream(
        "openai_reasoning_tokens",
        {"id": "", "model": "", "object": "", "choices": [], "prompt_filter_results": []},
        chunk({"content": "hi"}, "content_filter"),
    )
    assert events == [
        STARTED,
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="hi"),
        TextEnd(part_id="text-0"),
        Finish(reason="content_filter", raw_reason="content_filter"),
    ]


def test_openai_dialect_ignores_reasoning_fields() -> None:
    events = stream(
        "openai_reasoning_tokens",
        chunk({"reasoning_content": "secret", "reasoning": "secret", "content": "ok"}, "stop"),
    )
    assert events == [
        STARTED,
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="ok"),
        TextEnd(part_id="text-0"),
        Finish(reason="stop", raw_reason="stop"),
    ]


def test_openrouter_plain_reasoning_from_summary_upstream_is_summary() -> None:
    events = stream("openrouter_anthropic_summary", chunk({"reasoning": "s"}), chunk({}, "stop"))
    assert events[1:4] == [
        ReasoningStart(part_id="reasoning-0", kind="summary"),
        ReasoningDelta(part_id="reasoning-0", text="s"),
        ReasoningEnd(part_id="reasoning-0", kind="summary"),
    ]


def test_openrouter_reasoning_string_ignored_once_details_were_seen() -> None:
    detail = {"type": "reasoning.text", "text": "a", "format": "unknown", "index": 0}
    events = stream(
        "openrouter_raw",
        chunk({"reasoning": "a", "reasoning_details": [detail]}),
        chunk({"reasoning": "b"}),
        chunk({}, "stop"),
    )
    meta: dict[str, MetadataValue] = {"type": "reasoning.text", "format": "unknown", "index": 0}
    assert events == [
        STARTED,
        ReasoningStart(part_id="reasoning-0", kind="raw", provider_metadata=meta),
        ReasoningDelta(part_id="reasoning-0", text="a"),
        ReasoningEnd(part_id="reasoning-0", kind="raw", provider_metadata=meta),
        Finish(reason="stop", raw_reason="stop"),
    ]


def test_details_of_different_indexes_are_separate_parts_and_signature_pieces_join() -> None:
    first = {"type": "reasoning.text", "text": "one", "format": "anthropic-claude-v1", "index": 0}
    sig_a = {
        "type": "reasoning.text",
        "signature": "AB",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    sig_b = {
        "type": "reasoning.text",
        "signature": "CD",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    second = {"type": "reasoning.text", "text": "two", "format": "anthropic-claude-v1", "index": 1}
    events = stream(
        "openrouter_anthropic_summary",
        chunk({"reasoning_details": [first, sig_a]}),
        chunk({"reasoning_details": [sig_b, second]}),
        chunk({}, "stop"),
    )
    meta0: dict[str, MetadataValue] = {
        "type": "reasoning.text",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    meta1: dict[str, MetadataValue] = {**meta0, "index": 1}
    assert events == [
        STARTED,
        ReasoningStart(part_id="reasoning-0", kind="summary", provider_metadata=meta0),
        ReasoningDelta(part_id="reasoning-0", text="one"),
        ReasoningEnd(
            part_id="reasoning-0", kind="summary", provider_metadata={**meta0, "signature": "ABCD"}
        ),
        ReasoningStart(part_id="reasoning-1", kind="summary", provider_metadata=meta1),
        ReasoningDelta(part_id="reasoning-1", text="two"),
        ReasoningEnd(part_id="reasoning-1", kind="summary", provider_metadata=meta1),
        Finish(reason="stop", raw_reason="stop"),
    ]


def test_unclosed_think_block_is_flushed_at_finish() -> None:
    events = stream(
        "llamacpp_think_tags", chunk({"content": "<think>still </th"}), chunk({}, "length")
    )
    assert events == [
        STARTED,
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        ReasoningDelta(part_id="reasoning-0", text="still "),
        ReasoningDelta(part_id="reasoning-0", text="</th"),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        Finish(reason="length", raw_reason="length"),
    ]


def test_usage_without_counts_is_not_an_event() -> None:
    events = stream(
        "vllm_reasoning", chunk({"content": "a"}, "stop", usage={}), chunk({}, usage=None)
    )
    assert [event.type for event in events] == [
        "response_started",
        "text_start",
        "text_delta",
        "text_end",
        "finish",
    ]

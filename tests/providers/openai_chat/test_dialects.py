"""OpenAI-compatible servers with their own twists: Mistral's typed content chunks,
Groq's ``x_groq.usage``, servers that report no usage at all."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import ReasoningPart, accumulate
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    Usage,
)

from .helpers import decode_body, decode_stream

MAGISTRAL_UNKNOWN_CHUNK = StreamWarning(
    code="UNKNOWN_PART",
    message="mistral sent a content chunk of unknown type 'reference'; it was skipped.",
)


def test_magistral_stream_reads_thinking_and_text_chunks() -> None:
    assert decode_stream("mistral_magistral_chunks") == [
        ResponseStarted(response_id="7c1e0f5a2b9d4e6f", model="magistral-medium-2509"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        ReasoningDelta(part_id="reasoning-0", text="Die Frage: 17 mal 3 — "),
        ReasoningDelta(part_id="reasoning-0", text="das ist 51. ✓"),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        TextStart(part_id="text-0"),
        # A plain string delta and a text chunk continue one answer part.
        TextDelta(part_id="text-0", text="17 mal 3 "),
        TextDelta(part_id="text-0", text="= 51."),
        MAGISTRAL_UNKNOWN_CHUNK,
        TextEnd(part_id="text-0"),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=21, output_tokens=212, total_tokens=233),
    ]


def test_magistral_body_reads_thinking_and_text_chunks() -> None:
    assert decode_body("mistral_magistral_chunks") == [
        ResponseStarted(response_id="7c1e0f5a2b9d4e6f", model="magistral-medium-2509"),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        ReasoningDelta(part_id="reasoning-0", text="Die Frage: 17 mal 3 — das ist 51. ✓"),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="17 mal 3 = 51."),
        MAGISTRAL_UNKNOWN_CHUNK,
        TextEnd(part_id="text-0"),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=21, output_tokens=212, total_tokens=233),
    ]


def test_magistral_thinking_signature_is_kept() -> None:
    body = (
        b'{"id":"m1","model":"magistral-small-2509","choices":[{"index":0,"message":'
        b'{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text",'
        b'"text":"hm"}],"signature":"c2lnLTE="},{"type":"text","text":"ok"}]},'
        b'"finish_reason":"stop"}]}'
    )
    response = accumulate(decode_body("mistral_magistral_chunks", body))
    assert response.reasoning_parts == (
        ReasoningPart(kind="raw", text="hm", provider_metadata={"signature": "c2lnLTE="}),
    )
    assert response.text == "ok"


def test_groq_usage_from_x_groq_on_the_last_chunk() -> None:
    assert decode_stream("groq_x_groq_usage") == [
        ResponseStarted(
            response_id="chatcmpl-5f0d6c1e-92ab-4c7e-b3a1-0e8d9f2c7a41", model="qwen/qwen3-32b"
        ),
        ReasoningStart(part_id="reasoning-0", kind="raw"),
        ReasoningDelta(part_id="reasoning-0", text="Kurz: 2+2 — "),
        ReasoningDelta(part_id="reasoning-0", text="vier. ✔"),
        ReasoningEnd(part_id="reasoning-0", kind="raw"),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="2 + 2 = 4 🙂"),
        TextEnd(part_id="text-0"),
        Finish(reason="stop", raw_reason="stop"),
        Usage(input_tokens=16, output_tokens=48, total_tokens=64),
    ]


def _without_usage(events: list[StreamEvent]) -> list[StreamEvent]:
    return [event for event in events if not isinstance(event, Usage)]


@pytest.mark.parametrize("stem", ["groq_x_groq_usage", "mistral_magistral_chunks"])
def test_a_server_that_sends_no_usage_reads_as_not_reported(stem: str) -> None:
    # llama.cpp's Python server sends no usage chunk even with include_usage: every
    # count must stay None ("not reported"), never 0.
    raw = (
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"gemma-3-270m",'
        b'"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"gemma-3-270m",'
        b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    events = decode_stream(stem, raw)
    assert events == _without_usage(events)
    assert accumulate(events).usage == Usage()


def test_claude_3_7_through_openrouter_is_raw_thinking_whatever_the_format() -> None:
    # OpenRouter labels Claude's thinking anthropic-claude-v1 (a summary format on Claude
    # 4+), but Claude 3.7 Sonnet returns its full thinking: the model's capability wins.
    signed = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    assert decode_stream("openrouter_claude37_thinking") == [
        ResponseStarted(
            response_id="gen-1767231000-c37Thk", model="anthropic/claude-3.7-sonnet:thinking"
        ),
        ReasoningStart(part_id="reasoning-0", kind="raw", provider_metadata=signed),
        ReasoningDelta(part_id="reasoning-0", text="Okay, 12 mal 12 → "),
        ReasoningDelta(part_id="reasoning-0", text="144, sicher."),
        ReasoningEnd(
            part_id="reasoning-0",
            kind="raw",
            provider_metadata={**signed, "signature": "ErUBCkYIAxgCIkD3c37sig=="},
        ),
        TextStart(part_id="text-0"),
        TextDelta(part_id="text-0", text="12 mal 12 = 144 ✓"),
        TextEnd(part_id="text-0"),
        Finish(reason="stop", raw_reason="stop"),
        Usage(
            input_tokens=41,
            output_tokens=96,
            reasoning_tokens=70,
            cached_input_tokens=0,
            total_tokens=137,
        ),
    ]

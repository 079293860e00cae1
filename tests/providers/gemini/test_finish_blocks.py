"""Gemini safety blocks and tool-call stops: Model Armor is a content filter, an undeclared
tool call ends the turn on a tool call; the provider's finishMessage becomes a warning."""

from __future__ import annotations

from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    Usage,
)

from .helpers import decode_stream


def test_model_armor_block_is_a_content_filter() -> None:
    assert decode_stream("model_armor_stream.sse") == [
        ResponseStarted(response_id="kT0saY2xF9-armor", model="gemini-2.5-pro"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(
            part_id="reasoning_0", text="**Prüfung der Anfrage** — es geht um Schlösser."
        ),
        Usage(input_tokens=19, output_tokens=64, reasoning_tokens=64, total_tokens=83),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="Zuerst öffnest du"),
        Usage(input_tokens=19, output_tokens=68, reasoning_tokens=64, total_tokens=87),
        StreamWarning(
            code="PROVIDER_FINISH_MESSAGE",
            message="Gemini stopped (MODEL_ARMOR): Response blocked by Model Armor.",
        ),
        TextEnd(part_id="text_1"),
        Finish(reason="content_filter", raw_reason="MODEL_ARMOR"),
    ]


def test_unexpected_tool_call_ends_on_a_tool_call() -> None:
    assert decode_stream("unexpected_tool_call_stream.sse") == [
        ResponseStarted(response_id="uTc1aQ-unexpected", model="gemini-3-flash-preview"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text="**Werkzeug wählen** — Suche nach „Wetter“."),
        Usage(input_tokens=24, output_tokens=48, reasoning_tokens=48, total_tokens=72),
        StreamWarning(
            code="PROVIDER_FINISH_MESSAGE",
            message="Gemini stopped (UNEXPECTED_TOOL_CALL): Unexpected tool call: google_search.",
        ),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        Finish(reason="tool_calls", raw_reason="UNEXPECTED_TOOL_CALL"),
    ]

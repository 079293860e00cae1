"""Exact event sequences for recorded Gemini streams and their non-streaming bodies."""

from __future__ import annotations

import pytest

from thoughtline.model.accumulator import ReasoningPart, ToolCall, accumulate
from thoughtline.model.events import (
    Finish,
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.providers.base import decode_whole
from thoughtline.providers.gemini import GeminiTranslator

from .helpers import ADAPTER, context, decode_body, decode_stream, request

SIG_A = "CiQBc2lnLUE6IFBhcmlz4oaSTHlvbvr7/P3+/w=="
SIG_B = "CiQBbGF0ZS1zaWduYXR1cmUtQvv//i8r"
SIG_C = "CiQBb21pdHRlZC1D8J+ahA=="
SIG_D = "CiQBdG9vbC1jYWxsLUQ/Pj4="

T1 = "**Planning the route**\n\nThe user wants Paris → Lyon; "
T2 = "checking café stops, 日本 style 🚄."
A1 = "Take the TGV — about 2 hours"
A2 = " from Gare de Lyon. Bon voyage, é 🎉!"


def signature(part_id: str, value: str, attached_to: str) -> list[StreamEvent]:
    metadata = {"thought_signature": value, "attached_to": attached_to}
    return [
        ReasoningStart(part_id=part_id, kind="encrypted", provider_metadata=metadata),
        ReasoningEnd(part_id=part_id, kind="encrypted", provider_metadata=metadata),
    ]


SUMMARY_USAGE = Usage(
    input_tokens=12,
    output_tokens=330,
    reasoning_tokens=310,
    cached_input_tokens=4,
    total_tokens=342,
)


def test_summary_stream() -> None:
    assert decode_stream("summary_stream.sse") == [
        ResponseStarted(response_id="mFQtaeGvLsmfz7IPk5WV8Ac", model="gemini-2.5-flash"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text=T1),
        Usage(input_tokens=12, total_tokens=12),
        ReasoningDelta(part_id="reasoning_0", text=T2),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text=A1),
        *signature("signature_2", SIG_A, "text"),
        TextDelta(part_id="text_1", text=A2),
        TextEnd(part_id="text_1"),
        SUMMARY_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_summary_body() -> None:
    assert decode_body("summary_body.json") == [
        ResponseStarted(response_id="mFQtaeGvLsmfz7IPk5WV8Ac", model="gemini-2.5-flash"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text=T1 + T2),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text=A1 + A2),
        *signature("signature_2", SIG_A, "text"),
        TextEnd(part_id="text_1"),
        SUMMARY_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_summary_response() -> None:
    response = accumulate(decode_stream("summary_stream.sse"))
    assert response.text == A1 + A2
    assert response.reasoning_parts == (
        ReasoningPart(kind="summary", text=T1 + T2),
        ReasoningPart(
            kind="encrypted",
            text="",
            provider_metadata={"thought_signature": SIG_A, "attached_to": "text"},
        ),
    )
    assert response.usage == SUMMARY_USAGE
    assert response.finish == Finish(reason="stop", raw_reason="STOP")
    assert response.error is None
    assert response.response_id == "mFQtaeGvLsmfz7IPk5WV8Ac"


LATE_USAGE = Usage(input_tokens=9, output_tokens=156, reasoning_tokens=145, total_tokens=165)


def test_late_signature_on_an_empty_part() -> None:
    events = decode_stream("late_signature_stream.sse", "gemini-3-pro-preview")
    assert events == [
        ResponseStarted(response_id="x1VtafyIB8nGz7IP3e6RgQk", model="gemini-3-pro-preview"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(
            part_id="reasoning_0", text="**Weighing the options**\n\nA haiku needs 5-7-5. "
        ),
        Usage(input_tokens=9, total_tokens=9),
        ReasoningDelta(part_id="reasoning_0", text="Counting: «sé-rénité» → 4."),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="Silent pond, "),
        TextDelta(part_id="text_1", text="a frog leaps — 静か."),
        *signature("signature_2", SIG_B, "empty"),
        TextEnd(part_id="text_1"),
        LATE_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_late_signature_body() -> None:
    assert decode_body("late_signature_body.json", "gemini-3-pro-preview") == [
        ResponseStarted(response_id="x1VtafyIB8nGz7IP3e6RgQk", model="gemini-3-pro-preview"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(
            part_id="reasoning_0",
            text="**Weighing the options**\n\nA haiku needs 5-7-5. Counting: «sé-rénité» → 4.",
        ),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="Silent pond, a frog leaps — 静か."),
        *signature("signature_2", SIG_B, "empty"),
        TextEnd(part_id="text_1"),
        LATE_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


OMITTED_USAGE = Usage(input_tokens=25, output_tokens=649, reasoning_tokens=640, total_tokens=674)


def test_signature_only_stream() -> None:
    assert decode_stream("signature_only_stream.sse", "gemini-3-flash-preview") == [
        ResponseStarted(response_id="q2ZtabCnH4Wlz7IPuqKZ4Aw", model="gemini-3-flash-preview"),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="Die Antwort ist "),
        *signature("signature_1", SIG_C, "text"),
        Usage(input_tokens=25, total_tokens=25),
        TextDelta(part_id="text_0", text="42 — ganz sicher ✅."),
        TextEnd(part_id="text_0"),
        OMITTED_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_signature_only_body() -> None:
    assert decode_body("signature_only_body.json", "gemini-3-flash-preview") == [
        ResponseStarted(response_id="q2ZtabCnH4Wlz7IPuqKZ4Aw", model="gemini-3-flash-preview"),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="Die Antwort ist 42 — ganz sicher ✅."),
        *signature("signature_1", SIG_C, "text"),
        TextEnd(part_id="text_0"),
        OMITTED_USAGE,
        Finish(reason="stop", raw_reason="STOP"),
    ]


TOOL_THOUGHT = "**Calling the weather tool**\n\nTwo cities → two calls: Zürich and 東京."
TOOL_USAGE = Usage(input_tokens=58, output_tokens=152, reasoning_tokens=122, total_tokens=210)
TOOL_EVENTS: list[StreamEvent] = [
    ResponseStarted(response_id="Z3dtaYK1E9Tbz7IPnLON-A8", model="gemini-3-pro-preview"),
    ReasoningStart(part_id="reasoning_0", kind="summary"),
    ReasoningDelta(part_id="reasoning_0", text=TOOL_THOUGHT),
    ReasoningEnd(part_id="reasoning_0", kind="summary"),
    ToolCallStart(part_id="tool_1", tool_call_id="call_0", name="get_weather"),
    ToolCallDelta(part_id="tool_1", arguments_delta='{"city":"Zürich","unit":"celsius"}'),
    ToolCallEnd(part_id="tool_1", provider_metadata={"thought_signature": SIG_D}),
    *signature("signature_2", SIG_D, "function_call"),
    ToolCallStart(part_id="tool_3", tool_call_id="call_1", name="get_weather"),
    ToolCallDelta(part_id="tool_3", arguments_delta='{"city":"東京","unit":"celsius"}'),
    ToolCallEnd(part_id="tool_3"),
    TOOL_USAGE,
    Finish(reason="tool_calls", raw_reason="STOP"),
]


def test_tool_call_stream() -> None:
    assert decode_stream("tool_call_stream.sse", "gemini-3-pro-preview") == TOOL_EVENTS


def test_tool_call_body() -> None:
    assert decode_body("tool_call_body.json", "gemini-3-pro-preview") == TOOL_EVENTS


def test_tool_call_response() -> None:
    response = accumulate(TOOL_EVENTS)
    assert response.tool_calls == (
        ToolCall(
            tool_call_id="call_0",
            name="get_weather",
            arguments='{"city":"Zürich","unit":"celsius"}',
            provider_metadata={"thought_signature": SIG_D},
        ),
        ToolCall(
            tool_call_id="call_1", name="get_weather", arguments='{"city":"東京","unit":"celsius"}'
        ),
    )
    assert response.text == ""


def test_max_tokens_while_thinking() -> None:
    assert decode_stream("max_tokens_stream.sse") == [
        ResponseStarted(response_id="bWF4dG9rZW5z", model="gemini-2.5-flash"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text="**Deep dive** into ∑ series…"),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        Usage(input_tokens=7, output_tokens=64, reasoning_tokens=64, total_tokens=71),
        Finish(reason="length", raw_reason="MAX_TOKENS"),
    ]


BLOCKED = [
    ResponseStarted(response_id="YmxvY2tlZA", model="gemini-2.5-flash"),
    Usage(input_tokens=8, total_tokens=8),
    Finish(reason="content_filter", raw_reason="SAFETY"),
]


def test_blocked_prompt_stream_and_body() -> None:
    assert decode_stream("blocked_stream.sse") == BLOCKED
    assert decode_body("blocked_body.json") == BLOCKED


def test_in_stream_error_is_last_and_leaves_the_open_part_incomplete() -> None:
    assert decode_stream("error_stream.sse") == [
        ResponseStarted(response_id="bm9tb3JlcmVzcG9uc2U", model="gemini-2.5-flash"),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text="**Starting** — résumé first…"),
        Usage(input_tokens=12, total_tokens=12),
        StreamError(
            code="PROVIDER_OVERLOADED",
            message="Gemini reported an error mid-stream: UNAVAILABLE: The model is overloaded. "
            "Please try again later. The provider is overloaded; try again shortly.",
            retryable=True,
            status=503,
            provider_error_type="UNAVAILABLE",
        ),
    ]


@pytest.mark.parametrize(
    ("stream", "body", "model"),
    [
        ("summary_stream.sse", "summary_body.json", "gemini-2.5-flash"),
        ("late_signature_stream.sse", "late_signature_body.json", "gemini-3-pro-preview"),
        ("signature_only_stream.sse", "signature_only_body.json", "gemini-3-flash-preview"),
        ("tool_call_stream.sse", "tool_call_body.json", "gemini-3-pro-preview"),
        ("blocked_stream.sse", "blocked_body.json", "gemini-2.5-flash"),
    ],
)
def test_stream_and_body_accumulate_to_the_same_response(
    stream: str, body: str, model: str
) -> None:
    assert accumulate(decode_stream(stream, model)) == accumulate(decode_body(body, model))


# ---------------------------------------------------------------- edge cases, inline payloads


def translate(*payloads: dict[str, object]) -> list[object]:
    translator = GeminiTranslator()
    events: list[object] = []
    for payload in payloads:
        events.extend(translator.translate("", payload))
    events.extend(translator.finish())
    return events


def chunk(*parts: dict[str, object], finish: str | None = None) -> dict[str, object]:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def test_signature_on_a_thought_part_and_several_signatures_kept_apart() -> None:
    events = translate(
        chunk({"text": "a", "thought": True, "thoughtSignature": "AAAA"}),
        chunk({"text": "b", "thought": True}, {"text": "", "thoughtSignature": "BBBB"}),
        chunk({"text": "c", "thoughtSignature": "CCCC"}, finish="STOP"),
    )
    assert events == [
        ResponseStarted(),
        ReasoningStart(part_id="reasoning_0", kind="summary"),
        ReasoningDelta(part_id="reasoning_0", text="a"),
        *signature("signature_1", "AAAA", "thought"),
        ReasoningDelta(part_id="reasoning_0", text="b"),
        *signature("signature_2", "BBBB", "empty"),
        ReasoningEnd(part_id="reasoning_0", kind="summary"),
        TextStart(part_id="text_3"),
        TextDelta(part_id="text_3", text="c"),
        *signature("signature_4", "CCCC", "text"),
        TextEnd(part_id="text_3"),
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_text_then_thought_again_opens_new_parts() -> None:
    events = translate(
        chunk({"text": "x"}, {"text": "think", "thought": True}, {"text": "y"}, finish="STOP")
    )
    assert events == [
        ResponseStarted(),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="x"),
        TextEnd(part_id="text_0"),
        ReasoningStart(part_id="reasoning_1", kind="summary"),
        ReasoningDelta(part_id="reasoning_1", text="think"),
        ReasoningEnd(part_id="reasoning_1", kind="summary"),
        TextStart(part_id="text_2"),
        TextDelta(part_id="text_2", text="y"),
        TextEnd(part_id="text_2"),
        Finish(reason="stop", raw_reason="STOP"),
    ]


def test_unknown_part_is_a_warning_and_its_signature_is_kept() -> None:
    events = translate(
        chunk(
            {
                "executableCode": {"language": "PYTHON", "code": "print(1)"},
                "thoughtSignature": "EEEE",
            },
            {"text": "done"},
            finish="STOP",
        )
    )
    assert events == [
        ResponseStarted(),
        StreamWarning(
            code="UNKNOWN_PART",
            message="Gemini sent a part of type executableCode that thoughtline does not "
            "handle; it was skipped.",
        ),
        *signature("signature_0", "EEEE", "other"),
        TextStart(part_id="text_1"),
        TextDelta(part_id="text_1", text="done"),
        TextEnd(part_id="text_1"),
        Finish(reason="stop", raw_reason="STOP"),
    ]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("MODEL_ARMOR", "content_filter"),
        ("IMAGE_RECITATION", "content_filter"),
        ("UNEXPECTED_TOOL_CALL", "tool_calls"),
        ("MISSING_THOUGHT_SIGNATURE", "error"),
        ("MALFORMED_RESPONSE", "error"),
        ("TOO_MANY_TOOL_CALLS", "other"),
        ("LANGUAGE", "other"),
        ("OTHER", "other"),
        ("SOMETHING_NEW", "other"),
    ],
)
def test_finish_reasons(raw: str, reason: FinishReason) -> None:
    assert translate(chunk(finish=raw))[-1] == Finish(reason=reason, raw_reason=raw)


def test_usage_reported_once_per_change_and_late_usage_after_finish() -> None:
    events = translate(
        {**chunk({"text": "hi"}), "usageMetadata": {"promptTokenCount": 3}},
        {**chunk({"text": "!"}), "usageMetadata": {"promptTokenCount": 3}},
        {**chunk(finish="STOP"), "usageMetadata": {"promptTokenCount": 3}},
        {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}},
    )
    assert events == [
        ResponseStarted(),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="hi"),
        Usage(input_tokens=3),
        TextDelta(part_id="text_0", text="!"),
        TextEnd(part_id="text_0"),
        Finish(reason="stop", raw_reason="STOP"),
        Usage(input_tokens=3, output_tokens=1, total_tokens=4),
    ]


def test_function_call_without_args_and_with_id() -> None:
    events = translate(chunk({"functionCall": {"name": "now", "id": "fc-9"}}, finish="STOP"))
    assert events == [
        ResponseStarted(),
        ToolCallStart(part_id="tool_0", tool_call_id="fc-9", name="now"),
        ToolCallDelta(part_id="tool_0", arguments_delta="{}"),
        ToolCallEnd(part_id="tool_0"),
        Finish(reason="tool_calls", raw_reason="STOP"),
    ]


def test_decoder_marks_finished_on_finish_reason() -> None:
    decoder = ADAPTER.new_decoder(request(), context())
    decoder.feed(b'data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}\r\n\r\n')
    states = [decoder.finished]
    decoder.feed(b'data: {"candidates":[{"finishReason":"STOP"}]}\r\n\r\n')
    states.append(decoder.finished)
    assert states == [False, True]
    assert decode_whole(ADAPTER.new_decoder(request(), context()), b"")[-1].type == "error"


def test_prompt_feedback_without_block_reason_is_not_a_finish() -> None:
    events = translate(
        {"promptFeedback": {"safetyRatings": []}, "usageMetadata": {"promptTokenCount": 5}},
        chunk({"text": "ok"}, finish="STOP"),
    )
    assert events == [
        ResponseStarted(),
        Usage(input_tokens=5),
        TextStart(part_id="text_0"),
        TextDelta(part_id="text_0", text="ok"),
        TextEnd(part_id="text_0"),
        Finish(reason="stop", raw_reason="STOP"),
    ]
